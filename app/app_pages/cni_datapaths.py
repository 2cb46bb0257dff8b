import streamlit as st
from edgebench.results.report.marts.iperf3 import IPERF3, overhead, problem_runs, request_response
from edgebench.results.report.verdict import RULE_HELP

from data.cni_datapaths import overhead_table, throughput_chart
import ui

st.title("CNI datapaths")
st.caption("iperf3 throughput of each CNI / mode against the host-network baseline measured under the same "
           "conditions. overhead % = (host - CNI) / host x 100: positive means slower than host.")

substrate, filters = ui.choose("", IPERF3,
                               "The warehouse holds no iperf3 runs yet. Run `make sweep`.")

df = ui.query(overhead, substrate=substrate, **filters)
if df.empty:
    st.info("No successful runs for this selection (see failed and unsupported runs below).")
else:
    st.altair_chart(throughput_chart(df), width="stretch")
    if not df["is_host_baseline"].any():
        st.caption("No host-network baseline for these conditions on this substrate: overhead is not computed.")
    st.subheader("Overhead vs host")
    ui.table(overhead_table(df), column_config={
        "throughput_mbps": st.column_config.NumberColumn("mean Mbit/s", format="%.1f"),
        "throughput_ci95_mbps": st.column_config.NumberColumn("± 95% CI", format="%.1f"),
        "host_throughput_mbps": st.column_config.NumberColumn("host Mbit/s", format="%.1f"),
        "overhead_pct": st.column_config.NumberColumn("overhead %", format="%.1f"),
        "verdict": st.column_config.TextColumn("verdict vs host", help=RULE_HELP),
    })

rr = ui.query(request_response, substrate=substrate, **filters)
if not rr.empty:
    st.subheader("Request/response latency vs host (sockperf)")
    ui.table(rr, column_config={
        "latency_p50_us": st.column_config.NumberColumn("p50 µs", format="%.1f"),
        "latency_p50_ci95_us": st.column_config.NumberColumn("± 95% CI", format="%.1f"),
        "latency_p99_us": st.column_config.NumberColumn("p99 µs", format="%.1f"),
        "host_latency_p50_us": st.column_config.NumberColumn("host p50 µs", format="%.1f"),
        "latency_p50_overhead_pct": st.column_config.NumberColumn("overhead %", format="%.1f"),
        "latency_p50_overhead_ci95_pct": st.column_config.NumberColumn("± 95% CI %", format="%.1f"),
        "verdict": st.column_config.TextColumn("verdict vs host", help=RULE_HELP),
    })
    st.caption("sockperf ping-pong: one message in flight, latency = half the round trip (as ddsperf's), the mean "
               "over runs of each run's p50. overhead % = (CNI - host) / host x 100: positive means slower than "
               "host. The iperf3 filters above (protocol, path, length) do not apply here.")

st.subheader("Failed and unsupported runs")
problems = ui.query(problem_runs, substrate=substrate, **filters)
if problems.empty:
    st.success("None for this selection.")
else:
    ui.table(problems)
