"""Queries and charts of the portal's HTTP page (marts only): runs in one cluster (intercluster = 'none'); runs
across an inter-cluster tool are on the inter-cluster page (intercluster.py)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from .common import _filter_values, _substrates, _where_in


HTTP_FILTERS = {
    "service": "Service",
    "path": "Path",
    "placement": "Placement",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
    "tuning_profile": "Tuning profile",
}


_ONE_CLUSTER_RUNS = "(select * from fct_http_runs where intercluster = 'none')"


def http_substrates(con) -> list[str]:
    """Substrates with one-cluster HTTP runs (any status), most runs first."""
    return _substrates(con, _ONE_CLUSTER_RUNS)


def http_filter_values(con, substrate: str, column: str, **chosen) -> list:
    """Values of one HTTP filter column on a substrate given the filters chosen before it (all statuses)."""
    return _filter_values(con, _ONE_CLUSTER_RUNS, HTTP_FILTERS, substrate, column, chosen)


def http_requests(con, substrate: str, **filters) -> pd.DataFrame:
    """Successful (2xx) requests of ok runs, for the response-time distribution, with a `variant` label."""
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, length_bytes, response_ms, run_id, seq, repetition
        from fct_http_requests where status = 'ok' and not is_error and intercluster = 'none' and {where}
        order by cni = 'host' desc, variant, length_bytes, run_id, seq""", params).df()


def http_kpis(con, substrate: str, **filters) -> pd.DataFrame:
    """The distinct KPI boundaries (from params.kpis_ms) of the selected runs: use_case, kpi_ms."""
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
    return con.execute(f"""
        select use_case, any_value(kpi_ms) as kpi_ms from fct_http_kpi_compliance
        where intercluster = 'none' and {where}
        group by use_case order by kpi_ms, use_case""", params).df()


def http_kpi_shares(con, substrate: str, **filters) -> pd.DataFrame:
    """Per CNI / mode, payload and use case: share of requests beyond the KPI (errors count as beyond) and how
    many runs had their p90 beyond it."""
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
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
    means and 95% CIs per side, time resolution, verdicts and overheads (null below resolution)."""
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, length_bytes, is_host_baseline, n_runs, n_requests, n_errors,
               response_p50_ms, response_p50_ci95_ms, response_p90_ms, response_p90_ci95_ms, host_n_runs,
               host_response_p50_ms, host_response_p50_ci95_ms, host_response_p90_ms, host_response_p90_ci95_ms,
               resolution_ms, host_resolution_ms, load_clients, response_p50_diff_ms, response_p90_diff_ms,
               response_p50_overhead_pct, response_p90_overhead_pct, response_p50_verdict, verdict, is_significant
        from cmp_http_vs_host where {where}
        order by length_bytes, is_host_baseline desc, variant""", params).df()


def _us(ms: float) -> str:
    return f"{ms * 1000:g} µs"


def http_vs_host_text(pct, verdict, resolution_ms, host_resolution_ms) -> str:
    """What the overhead column shows: the percentage, or "below resolution (<x µs)" when the difference is smaller
    than the load generators' time resolution (x = the coarser of the two sides), "0.0 %" for the host baseline,
    "no host baseline" without one."""
    if verdict == "below resolution":
        res = [r for r in (resolution_ms, host_resolution_ms) if r is not None and not pd.isna(r)]
        return f"below resolution (<{_us(max(res))})" if res else "below resolution"
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
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
    return con.execute(f"""
        select status, cni, cni_mode, service, length_bytes, repetition, n_requests, n_errors, error, attempt,
               sweep_id, run_id, started_at
        from fct_http_runs where (status <> 'ok' or n_errors > 0) and intercluster = 'none' and {where}
        order by status, cni, cni_mode, length_bytes, repetition""", params).df()


def response_chart(requests: pd.DataFrame, kpis: pd.DataFrame) -> alt.LayerChart:
    """Box plot of response times per payload and CNI / mode (log scale), a dashed rule at every KPI boundary."""
    variants = list(dict.fromkeys(requests["variant"]))
    boxes = alt.Chart(requests).mark_boxplot(extent=1.5, size=22).encode(
        x=alt.X("length_bytes:O", title="payload (bytes)"),
        xOffset=alt.XOffset("variant:N", sort=variants),
        y=alt.Y("response_ms:Q", title="response time (ms, log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("variant:N", title="CNI / mode", sort=variants),
    )
    layers = [boxes]
    if not kpis.empty:
        k = kpis.groupby("kpi_ms", as_index=False).agg(use_cases=("use_case", lambda s: ", ".join(s)))
        k["label"] = k.apply(lambda r: f"KPI {r.kpi_ms:g} ms ({r.use_cases})", axis=1)
        rules = alt.Chart(k).mark_rule(strokeDash=[6, 4], color="#d62728").encode(
            y="kpi_ms:Q", tooltip=["label:N"])
        text = alt.Chart(k).mark_text(align="left", dx=4, dy=-6, color="#d62728").encode(
            y="kpi_ms:Q", x=alt.value(0), text="label:N")
        layers += [rules, text]
    return alt.layer(*layers).properties(height=380, title="Response time per request (box plot), KPI boundaries dashed")
