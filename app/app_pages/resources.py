import streamlit as st
from edgebench.results.report.marts.iperf3 import RESOURCES, resource_efficiency, resource_usage
from edgebench.results.report.marts.runs import invalid_runs
from edgebench.results.report.verdict import RULE_HELP

from data.resources import resource_chart, resource_long, resource_throughput_chart
import ui

st.title("Resources")
st.caption("CPU and RAM per CNI / mode while idle (before the workload starts) and during the run, next to the "
           "throughput of the same runs (after Fig. 1-2 of the knb-based CNI study). A component's figure is the sum "
           "over its processes per run, averaged over successful, valid runs. CPU in percent of one CPU.")

substrate, filters = ui.choose("res", RESOURCES,
                               "The warehouse holds no resource samples yet (resources.json is written by newer "
                               "runs). Run `make sweep`.")

df = ui.query(resource_usage, substrate=substrate, **filters)
if df.empty:
    st.info("No successful, valid runs with resource samples for this selection.")
else:
    components = [c for c in ("system", "workload", "cni") if c in set(df["component"])]
    component = st.radio("Component", components, horizontal=True, key="res_component",
                         help="system: the whole machine (on the local testbed the kernel datapath's softirq work "
                              "shows up here); workload: the tool processes; cni: CNI daemons (clusters only).")
    sel = df[df["component"] == component]
    variants = list(dict.fromkeys(sel["variant"]))
    long = resource_long(sel)
    c1, c2, c3 = st.columns(3)
    c1.altair_chart(resource_chart(long, "cpu_pct", f"CPU ({component})", "CPU (% of one CPU)", variants),
                    width="stretch")
    c2.altair_chart(resource_chart(long, "rss_mb", f"RAM ({component})", "memory (MB)", variants),
                    width="stretch")
    if sel["throughput_mbps"].notna().any():
        c3.altair_chart(resource_throughput_chart(sel, variants), width="stretch")
    else:
        c3.info("No throughput for this workload (HTTP and DDS latency runs measure time, not throughput).")
    ui.table(sel[["variant", "names", "n_runs", "cpu_idle_pct", "cpu_run_pct", "cpu_delta_pct", "rss_idle_mb",
                      "rss_run_mb", "rss_delta_mb", "throughput_mbps"]], column_config={
        c: st.column_config.NumberColumn(c, format="%.1f") for c in sel.columns if c.endswith(("_pct", "_mb", "_mbps"))})

    st.subheader("CPU per unit of rate, beside the host network's")
    eff = ui.query(resource_efficiency, substrate=substrate, component=component, **filters)
    if eff.empty:
        st.info("No rate for this selection: CPU per Gbit/s needs iperf3 runs, per 1,000 messages/s DDS throughput "
                "runs (DDS latency and HTTP runs measure time).")
    else:
        st.caption(f"{component} CPU (% of one CPU) divided by the run's rate - per {eff['rate_unit'].iloc[0]} - per "
                   "run, then averaged over the n runs, with its 95% interval; host: the host-network baseline under "
                   "the same conditions, CNI / host > 1: the CNI spends more CPU for the same rate. On the local lab "
                   "the nodes share this machine's cores: the system component counts everything else running too.")
        ui.table(eff[["variant", "path", "placement", "length_bytes", "rate_unit", "n_runs", "rate",
                          "cpu_per_unit_pct", "cpu_per_unit_ci95_pct", "cpu_delta_per_unit_pct", "host_n_runs",
                          "host_cpu_per_unit_pct", "cpu_per_unit_vs_host", "verdict"]],
                     column_config={"n_runs": "n", "host_n_runs": "host n",
                                    "rate": st.column_config.NumberColumn("rate", format="%.3g"),
                                    "cpu_per_unit_pct": st.column_config.NumberColumn("CPU / unit", format="%.3g"),
                                    "cpu_per_unit_ci95_pct": st.column_config.NumberColumn("+- 95%", format="%.2g"),
                                    "cpu_delta_per_unit_pct": st.column_config.NumberColumn("run - idle / unit",
                                                                                            format="%.3g"),
                                    "host_cpu_per_unit_pct": st.column_config.NumberColumn("host CPU / unit",
                                                                                           format="%.3g"),
                                    "cpu_per_unit_vs_host": st.column_config.NumberColumn("CNI / host",
                                                                                          format="%.2f"),
                                    "verdict": st.column_config.TextColumn(
                                        "verdict", help="CPU per unit against the host, less is better. "
                                        + RULE_HELP)})

st.subheader("Invalid runs (kept out of every comparison)")
invalid = ui.query(invalid_runs, substrate=substrate, distribution=filters.get("distribution"),
                   netem_scenario=filters.get("netem_scenario"), tuning_profile=filters.get("tuning_profile"))
if invalid.empty:
    st.success("None for this selection.")
else:
    ui.table(invalid)
