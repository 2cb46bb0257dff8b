import streamlit as st

from edgebench.results.report.marts.iperf3 import TUNING, cmp_tuning_vs_host
from edgebench.results.report.marts.runs import invalid_runs

from data.tuning import TUNING_METRICS, tuning_heatmap, tuning_heatmap_frame
import ui

st.title("Tuning efficiency")
st.caption("Each CNI / mode as a percentage of the host (physical) baseline measured under the same tuning profile, "
           "MTU and packet size: throughput efficiency = CNI / host x 100, DDS latency efficiency = host p50 / CNI "
           "p50 x 100. 100 % = as good as the host. Successful, valid runs only.")

substrate, filters = ui.choose("tuning", TUNING,
                               "The warehouse holds no successful iperf3 or DDS runs yet. Run `make sweep`.")

c1, c2 = st.columns(2)
mtus = ui.values(TUNING, substrate, "tuning_mtu", **filters)
mtu = c1.selectbox("Pod MTU", ["all"] + mtus, key="tuning_mtu",
                   help="The pod MTU in force; 'all' shows each profile with its MTU. The host baseline is the "
                        "host configuration with the smallest MTU >= the CNI's (1450 -> 1500, 8950 -> 9000).")
metrics = ["throughput_efficiency_pct"] + (["latency_efficiency_pct"] if filters.get("workload") == "dds" else [])
metric = c2.selectbox("Efficiency", metrics, format_func=TUNING_METRICS.get, key="tuning_metric")

df = ui.query(cmp_tuning_vs_host, substrate=substrate, **filters, **({} if mtu == "all" else {"tuning_mtu": mtu}))
cells = tuning_heatmap_frame(df, metric, by_mtu=mtu == "all")
if cells.empty:
    st.info("No CNI with a host baseline under the same profile, MTU and packet size for this selection.")
else:
    st.altair_chart(tuning_heatmap(cells, TUNING_METRICS[metric] + ", %"), width="stretch")
    if (cells["n_configs"] > 1).any():
        st.caption("Some cells hold several configurations (e.g. DDS reliability / transport): their mean is shown; "
                   "see the detail table.")

with st.expander("Detail: every configuration with its host baseline", expanded=True):
    cols = ["variant", "tuning_profile", "tuning_mtu", "host_tuning_mtu", "n_runs", "throughput_mbps",
            "host_throughput_mbps", "throughput_efficiency_pct", "latency_p50_us", "host_latency_p50_us",
            "latency_efficiency_pct", "dds_mode", "reliability", "transport", "subscribers", "security"]
    ui.table(df[[c for c in cols if c in df.columns]], column_config={
        c: st.column_config.NumberColumn(c, format="%.1f") for c in cols if c.endswith(("_pct", "_mbps", "_us"))})

st.subheader("Invalid runs (kept out of every comparison)")
invalid = ui.query(invalid_runs, substrate=substrate, distribution=filters.get("distribution"),
                   netem_scenario=filters.get("netem_scenario"))
if invalid.empty:
    st.success("None for this selection.")
else:
    ui.table(invalid)
