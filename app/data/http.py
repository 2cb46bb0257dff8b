"""Queries and charts of the portal's HTTP page (marts only): runs in one cluster (intercluster = 'none'); runs
across an inter-cluster tool are on the inter-cluster page (intercluster.py)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from edgebench.results.report.marts import Choices

from .common import LAB_FILTER, baseline_scale


HTTP_FILTERS = {
    **LAB_FILTER,
    "service": "Service",
    "path": "Path",
    "placement": "Placement",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
    "tuning_profile": "Tuning profile",
}


_ONE_CLUSTER_RUNS = "(select * from fct_http_runs where intercluster = 'none')"
# the page's selection: substrates with one-cluster HTTP runs (any status), most runs first; values with most ok
# runs first
HTTP = Choices(_ONE_CLUSTER_RUNS, HTTP_FILTERS, order="most_ok")


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


def http_response_boxes(con, substrate: str, **filters) -> pd.DataFrame:
    """Box-plot statistics of the response times per CNI / mode and payload, computed in the warehouse so the browser
    gets one row per box instead of every request: n, q1 / median / q3 (linear interpolation, as Vega-Lite's box plot),
    the whiskers at the most extreme request within 1.5 IQR of the box, and how many requests lie beyond them."""
    where, params = HTTP.where(substrate, filters)
    return con.execute(f"""
        {_BOXES.format(requests=_CHART_REQUESTS.format(where=where))}
        select b.variant, b.is_host_baseline, b.length_bytes, b.n, b.q1, b.median, b.q3,
               min(r.response_ms) filter (where r.response_ms >= b.q1 - 1.5 * (b.q3 - b.q1)) as whisker_lo,
               max(r.response_ms) filter (where r.response_ms <= b.q3 + 1.5 * (b.q3 - b.q1)) as whisker_hi,
               count(*) filter (where {_BEYOND_WHISKERS}) as n_outliers
        from b join r on r.variant = b.variant and r.length_bytes = b.length_bytes
        group by b.variant, b.is_host_baseline, b.length_bytes, b.n, b.q1, b.median, b.q3
        order by b.is_host_baseline desc, b.variant, b.length_bytes""", params).df()


def http_response_outliers(con, substrate: str, **filters) -> pd.DataFrame:
    """The requests beyond the whiskers of http_response_boxes, at most OUTLIERS_PER_BOX per box (farthest from the
    median first): variant, is_host_baseline, length_bytes, response_ms."""
    where, params = HTTP.where(substrate, filters)
    return con.execute(f"""
        {_BOXES.format(requests=_CHART_REQUESTS.format(where=where))},
        o as (
            select r.*, row_number() over (partition by r.variant, r.length_bytes
                                           order by abs(r.response_ms - b.median) desc) as k
            from r join b on r.variant = b.variant and r.length_bytes = b.length_bytes
            where {_BEYOND_WHISKERS}
        )
        select variant, is_host_baseline, length_bytes, response_ms from o where k <= {OUTLIERS_PER_BOX}
        order by is_host_baseline desc, variant, length_bytes, response_ms""", params).df()


def http_kpis(con, substrate: str, **filters) -> pd.DataFrame:
    """The distinct KPI boundaries (from params.kpis_ms) of the selected runs: use_case, kpi_ms."""
    where, params = HTTP.where(substrate, filters)
    return con.execute(f"""
        select use_case, any_value(kpi_ms) as kpi_ms from fct_http_kpi_compliance
        where intercluster = 'none' and {where}
        group by use_case order by kpi_ms, use_case""", params).df()


def http_kpi_shares(con, substrate: str, **filters) -> pd.DataFrame:
    """Per CNI / mode, payload and use case: share of requests beyond the KPI (errors count as beyond) and how
    many runs had their p90 beyond it."""
    where, params = HTTP.where(substrate, filters)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, length_bytes, use_case, any_value(kpi_ms) as kpi_ms,
               count(*) as n_runs, sum(n_requests) as n_requests, sum(n_beyond_kpi) as n_beyond_kpi,
               sum(n_beyond_kpi) / sum(n_requests) * 100 as pct_beyond_kpi,
               count(*) filter (where is_p90_beyond_kpi) as n_runs_p90_beyond
        from fct_http_kpi_compliance where intercluster = 'none' and {where}
        group by cni, cni_mode, length_bytes, use_case
        order by cni = 'host' desc, variant, length_bytes, kpi_ms, use_case""", params).df()


def http_overhead(con, substrate: str, **filters) -> pd.DataFrame:
    """cmp_http_vs_host rows for one substrate and fixed conditions, host baseline first per payload: n runs,
    means and 95% CIs per side, time resolution, verdicts (the one rule) and overheads."""
    where, params = HTTP.where(substrate, filters)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, length_bytes, is_host_baseline, n_runs, n_requests, n_errors,
               response_p50_ms, response_p50_ci95_ms, response_p90_ms, response_p90_ci95_ms, host_n_runs,
               host_response_p50_ms, host_response_p50_ci95_ms, host_response_p90_ms, host_response_p90_ci95_ms,
               resolution_ms, host_resolution_ms, load_clients, response_p50_diff_ms, response_p90_diff_ms,
               response_p50_overhead_pct, response_p90_overhead_pct, response_p50_verdict, verdict, verdict_margin_pct, runs_to_decide
        from cmp_http_vs_host where {where}
        order by length_bytes, is_host_baseline desc, variant""", params).df()


def _us(ms: float) -> str:
    return f"{ms * 1000:g} µs"


def http_vs_host_text(pct, verdict, resolution_ms, host_resolution_ms) -> str:
    """What the overhead column shows: the percentage, "0.0 %" for the host baseline, "no host baseline" without
    one. (A difference below the load generators' time resolution is judged by the verdict, whose margin is never
    below the coarser resolution of the two sides.)"""
    if verdict == "baseline":
        return "0.0 %"
    if pct is None or pd.isna(pct):
        return "no host baseline"
    return f"{pct:+.1f} %"


def http_overhead_table(df: pd.DataFrame) -> pd.DataFrame:
    """The columns the HTTP page shows: per side n runs, mean p50/p90 with their 95% CI half-widths, the time
    resolution, each statistic's difference to host as text (see http_vs_host_text) and its verdict."""
    out = df[["variant", "length_bytes", "n_runs", "response_p50_ms", "response_p50_ci95_ms", "response_p90_ms",
              "response_p90_ci95_ms", "host_n_runs", "host_response_p50_ms", "host_response_p90_ms"]].copy()
    out["resolution_us"] = df[["resolution_ms", "host_resolution_ms"]].max(axis=1) * 1000
    for stat, verdict in (("p50", "response_p50_verdict"), ("p90", "verdict")):
        out[f"{stat}_vs_host"] = [http_vs_host_text(p, v, r, h) for p, v, r, h in zip(
            df[f"response_{stat}_overhead_pct"], df[verdict], df["resolution_ms"], df["host_resolution_ms"])]
        out[f"{stat}_verdict"] = df[verdict].fillna("no verdict (n < 2 or no host)")
    return out.reset_index(drop=True)


def http_problem_runs(con, substrate: str, **filters) -> pd.DataFrame:
    """Failed runs and ok runs with error requests."""
    where, params = HTTP.where(substrate, filters)
    return con.execute(f"""
        select status, cni, cni_mode, service, length_bytes, repetition, n_requests, n_errors, error, attempt,
               sweep_id, run_id, started_at
        from fct_http_runs where (status <> 'ok' or n_errors > 0) and intercluster = 'none' and {where}
        order by status, cni, cni_mode, length_bytes, repetition""", params).df()


def response_chart(boxes: pd.DataFrame, outliers: pd.DataFrame, kpis: pd.DataFrame) -> alt.LayerChart:
    """Box plot of response times per payload and CNI / mode (log scale) from http_response_boxes and
    http_response_outliers, the host baseline in grey, a dashed rule at every KPI boundary."""
    variants = list(dict.fromkeys(boxes["variant"]))
    host = boxes.loc[boxes["is_host_baseline"].astype(bool), "variant"]
    color = alt.Color("variant:N", title="CNI / mode", sort=variants,
                      scale=baseline_scale(variants, host.iloc[0] if len(host) else None))
    x = alt.X("length_bytes:O", title="payload (bytes)")
    offset = alt.XOffset("variant:N", sort=variants)
    y_title = "response time (ms, log scale)"
    tooltip = ["variant:N", "length_bytes:O", "n:Q", alt.Tooltip("median:Q", format=".3f"),
               alt.Tooltip("q1:Q", format=".3f"), alt.Tooltip("q3:Q", format=".3f"),
               alt.Tooltip("whisker_lo:Q", format=".3f"), alt.Tooltip("whisker_hi:Q", format=".3f"), "n_outliers:Q"]
    base = alt.Chart(boxes).encode(x=x, xOffset=offset, color=color, tooltip=tooltip)
    layers = [
        base.mark_rule().encode(y=alt.Y("whisker_lo:Q", title=y_title, scale=alt.Scale(type="log")),
                                y2="whisker_hi:Q"),
        base.mark_bar(size=22).encode(y="q1:Q", y2="q3:Q"),
        base.mark_tick(size=22, thickness=2, color="white").encode(y="median:Q"),
    ]
    if not outliers.empty:
        layers.append(alt.Chart(outliers).mark_point(size=14).encode(
            x=x, xOffset=offset, y="response_ms:Q", color=color,
            tooltip=["variant:N", "length_bytes:O", alt.Tooltip("response_ms:Q", format=".3f")]))
    if not kpis.empty:
        k = kpis.groupby("kpi_ms", as_index=False).agg(use_cases=("use_case", lambda s: ", ".join(s)))
        k["label"] = k.apply(lambda r: f"KPI {r.kpi_ms:g} ms ({r.use_cases})", axis=1)
        rules = alt.Chart(k).mark_rule(strokeDash=[6, 4], color="#d62728").encode(
            y="kpi_ms:Q", tooltip=["label:N"])
        text = alt.Chart(k).mark_text(align="left", dx=4, dy=-6, color="#d62728").encode(
            y="kpi_ms:Q", x=alt.value(0), text="label:N")
        layers += [rules, text]
    return alt.layer(*layers).properties(
        height=380, title="Response time per request (box: quartiles; whiskers: 1.5 IQR; points beyond, at most "
                          f"{OUTLIERS_PER_BOX} per box), KPI boundaries dashed")
