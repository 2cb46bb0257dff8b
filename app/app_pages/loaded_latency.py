"""Latency under load: the probe's latency with a bulk TCP flow sharing the path, against the same probe idle.
Reads the mart cmp_loaded_latency_vs_idle only (edgebench.results.report.marts.reports)."""
import altair as alt
import streamlit as st
from edgebench.results.report.marts.reports import (loaded_latency_available, loaded_latency_comparison,
                                                    loaded_latency_conditions, loaded_latency_probes,
                                                    loaded_latency_sizes, loaded_latency_substrates)
from edgebench.results.report.verdict import RULE_HELP

import ui

PROBE_LABELS = {"dds": "DDS latency", "http": "HTTP response time"}

st.title("Latency under load")
st.caption("What a control loop on a busy edge link feels: DDS latency (ddsperf ping/pong, RTT/2) or HTTP response "
           "time measured while a bulk iperf3 TCP flow shares the same path, against the same probe idle. "
           "Inflation = loaded - idle (mean over runs of each run's percentile) with its 95% interval; the verdict "
           "says whether the interval excludes 0.")

ui.require_warehouse()
if not ui.query(loaded_latency_available):
    st.info("This warehouse has no latency-under-load mart yet: rebuild it with `make warehouse`.")
    st.stop()
substrates = ui.query(loaded_latency_substrates)
if not substrates:
    st.info("No latency-under-load runs yet. Add the workload to a sweep, e.g. "
            "`make sweep ARGS=\"-p 'workloads=[\\\"loaded-latency\\\"]'\"`.")
    st.stop()

c1, c2, c3, c4 = st.columns(4)
substrate = c1.selectbox("Substrate", substrates, help="Results of different substrates are never compared.")
ui.local_banner(substrate)
probe = c2.selectbox("Probe", ui.query(loaded_latency_probes, substrate=substrate), format_func=PROBE_LABELS.get)
size = c3.selectbox("Payload (bytes)", ui.query(loaded_latency_sizes, substrate=substrate, probe=probe))
condition = c4.selectbox("Netem / tuning / distribution",
                         ui.query(loaded_latency_conditions, substrate=substrate, probe=probe, length_bytes=size))

df = ui.query(loaded_latency_comparison, substrate=substrate, probe=probe, length_bytes=size, condition=condition)

if df.empty:
    st.info("No CNI mode has both idle and loaded runs for this selection.")
    st.stop()

st.subheader("p99 idle and under load")
long = df.melt(id_vars=["cni_mode"], value_vars=["idle_p99_us", "loaded_p99_us"], var_name="load",
               value_name="p99_us").replace({"idle_p99_us": "idle", "loaded_p99_us": "bulk flow"})
if df["cni_mode"].nunique() > 1:
    st.altair_chart(alt.Chart(long).mark_bar().encode(
        x=alt.X("cni_mode:N", title="CNI:mode (host = baseline)", sort=df["cni_mode"].tolist()),
        xOffset="load:N", y=alt.Y("p99_us:Q", title="p99 latency (µs)"), color=alt.Color("load:N", title="load"),
        tooltip=["cni_mode", "load", alt.Tooltip("p99_us:Q", format=".1f")]), width="stretch")

st.subheader("Inflation under load, per CNI mode")
ui.table(df.drop(columns=["is_host_baseline"]), column_config={
    "cni_mode": st.column_config.TextColumn("CNI:mode", help="host:host is the host-network baseline"),
    "idle_n_runs": st.column_config.NumberColumn("n idle"),
    "loaded_n_runs": st.column_config.NumberColumn("n loaded"),
    **{c: st.column_config.NumberColumn(c.replace("_us", " (µs)").replace("_", " "), format="%.1f")
       for c in df.columns if c.endswith("_us")},
    "bulk_sent_mbps": st.column_config.NumberColumn("bulk Mbit/s", format="%.0f"),
})
st.caption("± is the half-width of Welch's 95% interval of loaded - idle; the verdict judges loaded against idle. "
           + RULE_HELP + " The host row is the host-network baseline under the same conditions; "
           "host p99 inflation is repeated on every row for comparison.")
