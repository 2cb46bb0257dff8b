import streamlit as st
from edgebench.results.report.marts.http import (HTTP, http_kpi_shares, http_kpis, http_overhead, http_problem_runs,
                                                 http_response_boxes, http_response_outliers)
from edgebench.results.report.verdict import RULE_HELP

from data.http import http_overhead_table, response_chart
import ui

st.title("HTTP services")
st.caption("Sequential HTTP requests over one kept-alive connection to three services (payload-echo, payload-recv, "
           "static-reply). Response times per request against the KPI boundaries each run carries "
           "(params.kpis_ms); an error response counts as beyond every KPI. Both ends in one cluster; runs across "
           "two clusters joined by an inter-cluster tool are on the Inter-cluster tools page.")

substrate, filters = ui.choose("http", HTTP,
                               "The warehouse holds no HTTP runs yet. Add the http workload to a sweep and run `make sweep`.")

boxes = ui.query(http_response_boxes, substrate=substrate, **filters)
kpis = ui.query(http_kpis, substrate=substrate, **filters)

st.subheader("Response time by payload")
if boxes.empty:
    st.info("No successful requests for this selection (see failed runs below).")
else:
    outliers = ui.query(http_response_outliers, substrate=substrate, **filters)
    st.altair_chart(response_chart(boxes, outliers, kpis), width="stretch")
    st.caption(f"{int(boxes['n'].sum()):,} requests in {len(boxes)} boxes; the quartiles are computed in the "
               "warehouse, the browser gets one row per box and the requests beyond its whiskers.")

st.subheader("Share of requests beyond each KPI")
shares = ui.query(http_kpi_shares, substrate=substrate, **filters)
if shares.empty:
    st.info("No KPI boundaries for this selection.")
else:
    ui.table(shares, column_config={
        "kpi_ms": st.column_config.NumberColumn("KPI ms", format="%g"),
        "pct_beyond_kpi": st.column_config.ProgressColumn("% beyond KPI", format="%.1f", min_value=0,
                                                          max_value=100),
        "n_runs_p90_beyond": st.column_config.NumberColumn("runs with p90 beyond"),
    })

st.subheader("Response time vs host")
overhead = ui.query(http_overhead, substrate=substrate, **filters)
if not overhead.empty:
    if not overhead["is_host_baseline"].any():
        st.caption("No host-network baseline for these conditions on this substrate: overhead is not computed.")
    verdict_help = ("baseline: the host row; lower = better; the margin is never below the load generator's time "
                    "resolution. " + RULE_HELP)
    ui.table(http_overhead_table(overhead), column_config={
        "length_bytes": st.column_config.NumberColumn("payload (bytes)", format="%d"),
        "n_runs": st.column_config.NumberColumn("runs"),
        "response_p50_ms": st.column_config.NumberColumn("mean p50 ms", format="%.3f"),
        "response_p50_ci95_ms": st.column_config.NumberColumn("p50 ± 95% CI", format="%.3f"),
        "response_p90_ms": st.column_config.NumberColumn("mean p90 ms", format="%.3f"),
        "response_p90_ci95_ms": st.column_config.NumberColumn("p90 ± 95% CI", format="%.3f"),
        "host_n_runs": st.column_config.NumberColumn("host runs"),
        "host_response_p50_ms": st.column_config.NumberColumn("host p50 ms", format="%.3f"),
        "host_response_p90_ms": st.column_config.NumberColumn("host p90 ms", format="%.3f"),
        "resolution_us": st.column_config.NumberColumn(
            "resolution µs", format="%g", help="time resolution of the load generator (fortio 1 µs, hey 100 µs)"),
        "p50_vs_host": st.column_config.TextColumn("p50 vs host"),
        "p50_verdict": st.column_config.TextColumn("p50 verdict", help=verdict_help),
        "p90_vs_host": st.column_config.TextColumn("p90 vs host"),
        "p90_verdict": st.column_config.TextColumn("p90 verdict", help=verdict_help),
    })
    st.caption("p50 / p90 per run over its 2xx requests (linear interpolation), averaged over runs, with the 95% "
               "CI (Student t; empty with fewer than 2 runs); vs host = (CNI - host) / host x 100, positive = slower "
               "than host.")

st.subheader("Failed runs and runs with error responses")
problems = ui.query(http_problem_runs, substrate=substrate, **filters)
if problems.empty:
    st.success("None for this selection.")
else:
    ui.table(problems)
