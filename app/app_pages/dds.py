import streamlit as st
from edgebench.results.report.marts.dds import DDS, dds_overhead, dds_problem_runs
from edgebench.results.report.verdict import RULE_HELP

from data.dds import dds_line_chart, dds_overhead_table, dds_transport_table
import ui

st.title("DDS pub/sub")
st.caption("Cyclone DDS ddsperf between pods: latency (ping/pong, RTT/2, 90th percentile) and throughput (pub/sub) "
           "of each CNI / mode against the host-network baseline with identical DDS parameters. Latency overhead "
           "% = (CNI - host) / host x 100, throughput overhead % = (host - CNI) / host x 100: positive = worse "
           "than host.")

OVERHEAD_CAPTION = ("Each cell: overhead % ± the half-width of its 95% interval (of the CNI - host "
                    "difference over the host mean: paired by round and pooled across the modes paired with the same "
                    "host runs where the sweep interleaved them, else Welch's), the verdict against the host and the "
                    "run counts CNI/host. " + RULE_HELP)

substrate, filters = ui.choose("dds", DDS,
                               "The warehouse holds no DDS runs yet. Add the dds workload to a sweep and run `make sweep`.")

df = ui.query(dds_overhead, substrate=substrate, **filters)
lat = df[df["dds_mode"] == "latency"]
tput = df[df["dds_mode"] == "throughput"]

st.subheader("Latency by payload")
if lat.empty:
    st.info("No successful latency runs for this selection.")
else:
    st.altair_chart(dds_line_chart(
        lat[(lat["transport"] == "unicast") & (lat["subscribers"] == 1)], "length_bytes", "latency_p90_us",
        "reliability", "90th percentile latency (mean over runs): reliable vs best-effort", "p90 latency (µs)",
        "payload (bytes)"), width="stretch")

    st.subheader("Latency overhead vs host (Table II style, %)")
    reliabilities = sorted(lat["reliability"].unique(), key=lambda r: (r != "reliable", r))  # reliable first
    reliability = st.selectbox("Reliability", reliabilities, key="dds_reliability")
    table = dds_overhead_table(lat[lat["reliability"] == reliability], "latency_p90_overhead_pct")
    if len(table.columns) <= 1:
        st.info("No host-network baseline with identical parameters on this substrate: overhead is not computed.")
    else:
        ui.table(table)
        st.caption(OVERHEAD_CAPTION)
    st.caption("Host baseline matched on substrate, payload, reliability, transport, subscribers, security, rate "
               "and placement; not on discovery (the host may use multicast discovery where a CNI needs static "
               "peers, see the detail table).")

st.subheader("Throughput")
if tput.empty:
    st.info("No successful throughput runs for this selection.")
else:
    c1, c2 = st.columns(2)
    one = tput[tput["subscribers"] == 1]
    if not one.empty:
        c1.altair_chart(dds_line_chart(one, "length_bytes", "throughput_mbps", "transport",
                                       "Throughput by payload (1 subscriber)", "Mbit/s (sum over subscribers)",
                                       "payload (bytes)"), width="stretch")
    if tput["subscribers"].nunique() > 1:
        c2.altair_chart(dds_line_chart(tput, "subscribers", "throughput_mbps", "transport",
                                       "Unicast vs multicast: scaling with subscribers",
                                       "Mbit/s (sum over subscribers)", "subscribers"), width="stretch")
    else:  # one subscriber count: a chart would be a single point per line
        c2.markdown(f"**Unicast vs multicast at {int(tput['subscribers'].iloc[0])} subscriber(s)**")
        ui.table(dds_transport_table(tput), where=c2)
        c2.caption("Only one subscriber count measured for this selection, so there is no scaling to draw. Seed "
                   "000 measures 1 publisher with 4, 8 and 12 subscribers: workflows/presets/seed-000-dds-multicast"
                   ".testbed.yaml.")
    table = dds_overhead_table(tput[tput["subscribers"] == 1], "throughput_overhead_pct")
    if len(table.columns) > 1:
        st.markdown("**Throughput overhead vs host (Table I style, %, 1 subscriber)**")
        ui.table(table)
        st.caption(OVERHEAD_CAPTION)

if ui.on_demand("Detail: every configuration with its host baseline", key="dds_detail"):
    ui.table(df.drop(columns=["substrate"]))

st.subheader("Failed and unsupported runs")
problems = ui.query(dds_problem_runs, substrate=substrate, **filters)
if problems.empty:
    st.success("None for this selection.")
else:
    ui.table(problems)
