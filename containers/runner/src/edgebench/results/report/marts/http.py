"""The HTTP marts: in one cluster (fct_http_runs, fct_http_requests, fct_http_kpi_compliance, cmp_http_vs_host: the
HTTP page) and across inter-cluster tools (cmp_intercluster_vs_none: the Inter-cluster tools page)."""

from __future__ import annotations

from edgebench.results.report.marts import LAB_FILTER, Choices, frame

HTTP_FILTERS = {
    **LAB_FILTER,
    "service": "Service",
    "path": "Path",
    "placement": "Placement",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
    "tuning_profile": "Tuning profile",
}
ONE_CLUSTER_RUNS = "(select * from fct_http_runs where intercluster = 'none')"
# the HTTP page's selection: substrates with one-cluster HTTP runs (any status), most runs first; values with most ok
# runs first
HTTP = Choices(ONE_CLUSTER_RUNS, HTTP_FILTERS, order="most_ok")


# the requests of the response-time chart: 2xx requests of ok one-cluster runs, labelled per CNI / mode
_CHART_REQUESTS = """
    select cni || ' / ' || cni_mode as variant, cni = 'host' as is_host_baseline, length_bytes, response_ms
    from fct_http_requests where status = 'ok' and not is_error and intercluster = 'none' and {where}"""
OUTLIERS_PER_BOX = 200  # the chart draws at most this many requests beyond a box's whiskers (the most extreme)


# The chart's requests (r) and each box's n and quartiles (b), shared by the box statistics and their outliers.
_BOXES = """with r as ({requests}),
        b as (
            select variant, is_host_baseline, length_bytes, count(*) as n,
                   quantile_cont(response_ms, 0.25) as q1, quantile_cont(response_ms, 0.5) as median,
                   quantile_cont(response_ms, 0.75) as q3
            from r group by all
        )"""
_BEYOND_WHISKERS = "(r.response_ms < b.q1 - 1.5 * (b.q3 - b.q1) or r.response_ms > b.q3 + 1.5 * (b.q3 - b.q1))"


def http_response_boxes(con, substrate: str, **filters):
    """Box-plot statistics of the response times per CNI / mode and payload, computed in the warehouse so the browser
    gets one row per box instead of every request: n, q1 / median / q3 (linear interpolation, as Vega-Lite's box plot),
    the whiskers at the most extreme request within 1.5 IQR of the box, and how many requests lie beyond them."""
    where, params = HTTP.where(substrate, filters)
    return frame(con, f"""
        {_BOXES.format(requests=_CHART_REQUESTS.format(where=where))}
        select b.variant, b.is_host_baseline, b.length_bytes, b.n, b.q1, b.median, b.q3,
               min(r.response_ms) filter (where r.response_ms >= b.q1 - 1.5 * (b.q3 - b.q1)) as whisker_lo,
               max(r.response_ms) filter (where r.response_ms <= b.q3 + 1.5 * (b.q3 - b.q1)) as whisker_hi,
               count(*) filter (where {_BEYOND_WHISKERS}) as n_outliers
        from b join r on r.variant = b.variant and r.length_bytes = b.length_bytes
        group by b.variant, b.is_host_baseline, b.length_bytes, b.n, b.q1, b.median, b.q3
        order by b.is_host_baseline desc, b.variant, b.length_bytes""", params)


def http_response_outliers(con, substrate: str, **filters):
    """The requests beyond the whiskers of http_response_boxes, at most OUTLIERS_PER_BOX per box (farthest from the
    median first): variant, is_host_baseline, length_bytes, response_ms."""
    where, params = HTTP.where(substrate, filters)
    return frame(con, f"""
        {_BOXES.format(requests=_CHART_REQUESTS.format(where=where))},
        o as (
            select r.*, row_number() over (partition by r.variant, r.length_bytes
                                           order by abs(r.response_ms - b.median) desc) as k
            from r join b on r.variant = b.variant and r.length_bytes = b.length_bytes
            where {_BEYOND_WHISKERS}
        )
        select variant, is_host_baseline, length_bytes, response_ms from o where k <= {OUTLIERS_PER_BOX}
        order by is_host_baseline desc, variant, length_bytes, response_ms""", params)


def http_kpis(con, substrate: str, **filters):
    """The distinct KPI boundaries (from params.kpis_ms) of the selected runs: use_case, kpi_ms."""
    where, params = HTTP.where(substrate, filters)
    return frame(con, f"""
        select use_case, any_value(kpi_ms) as kpi_ms from fct_http_kpi_compliance
        where intercluster = 'none' and {where}
        group by use_case order by kpi_ms, use_case""", params)


def http_kpi_shares(con, substrate: str, **filters):
    """Per CNI / mode, payload and use case: share of requests beyond the KPI (errors count as beyond) and how
    many runs had their p90 beyond it."""
    where, params = HTTP.where(substrate, filters)
    return frame(con, f"""
        select cni || ' / ' || cni_mode as variant, length_bytes, use_case, any_value(kpi_ms) as kpi_ms,
               count(*) as n_runs, sum(n_requests) as n_requests, sum(n_beyond_kpi) as n_beyond_kpi,
               sum(n_beyond_kpi) / sum(n_requests) * 100 as pct_beyond_kpi,
               count(*) filter (where is_p90_beyond_kpi) as n_runs_p90_beyond
        from fct_http_kpi_compliance where intercluster = 'none' and {where}
        group by cni, cni_mode, length_bytes, use_case
        order by cni = 'host' desc, variant, length_bytes, kpi_ms, use_case""", params)


def http_overhead(con, substrate: str, **filters):
    """cmp_http_vs_host rows for one substrate and fixed conditions, host baseline first per payload: n runs,
    means and 95% CIs per side, time resolution, verdicts (the one rule) and overheads."""
    where, params = HTTP.where(substrate, filters)
    return frame(con, f"""
        select cni || ' / ' || cni_mode as variant, length_bytes, is_host_baseline, n_runs, n_requests, n_errors,
               response_p50_ms, response_p50_ci95_ms, response_p90_ms, response_p90_ci95_ms, host_n_runs,
               host_response_p50_ms, host_response_p50_ci95_ms, host_response_p90_ms, host_response_p90_ci95_ms,
               resolution_ms, host_resolution_ms, load_clients, response_p50_diff_ms, response_p90_diff_ms,
               response_p50_overhead_pct, response_p90_overhead_pct, response_p50_verdict, verdict, verdict_margin_pct, runs_to_decide
        from cmp_http_vs_host where {where}
        order by length_bytes, is_host_baseline desc, variant""", params)


def http_problem_runs(con, substrate: str, **filters):
    """Failed runs and ok runs with error requests."""
    where, params = HTTP.where(substrate, filters)
    return frame(con, f"""
        select status, cni, cni_mode, service, length_bytes, repetition, n_requests, n_errors, error, attempt,
               sweep_id, run_id, started_at
        from fct_http_runs where (status <> 'ok' or n_errors > 0) and intercluster = 'none' and {where}
        order by status, cni, cni_mode, length_bytes, repetition""", params)


# ---- across inter-cluster tools --------------------------------------------------------------------------------------
# Conditions the page holds fixed (besides substrate); netem scenario (x axis), payload (selector) and the tool
# (series) vary
INTERCLUSTER_FILTERS = {
    **LAB_FILTER,
    "cni": "CNI",
    "cni_mode": "CNI mode",
    "service": "Service",
    "path": "Path",
    "placement": "Placement",
    "distribution": "Distribution",
    "tuning_profile": "Tuning profile",
}
# where the page's choices come from: runs across a tool, any status (a tool that only failed can be selected)
TOOL_RUNS = "(select * from fct_http_runs where intercluster <> 'none')"
INTERCLUSTER = Choices(TOOL_RUNS, INTERCLUSTER_FILTERS, order="most_ok")


def intercluster_rows(con, substrate: str, **filters):
    """cmp_intercluster_vs_none rows of one substrate and the chosen conditions, every payload and netem scenario:
    the tools and the `none` baseline of the conditions they were measured under (baseline rows without a tool are
    left out), unordered."""
    where, params = INTERCLUSTER.where(substrate, filters)
    return frame(con, f"""
        select * from cmp_intercluster_vs_none
        where (n_tools > 0 or not is_baseline) and {where}""", params)


def intercluster_problem_rows(con, substrate: str, **filters):
    """Runs across a tool that failed, could not be carried (unsupported) or had error responses."""
    where, params = INTERCLUSTER.where(substrate, filters)
    return frame(con, f"""
        select status, intercluster, intercluster_implementation, netem_scenario, length_bytes, repetition,
               n_requests, n_errors, error, attempt, sweep_id, run_id, started_at
        from fct_http_runs where intercluster <> 'none' and (status <> 'ok' or n_errors > 0) and {where}
        order by status, intercluster, netem_scenario, length_bytes, repetition""", params)
