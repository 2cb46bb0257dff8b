import streamlit as st

from edgebench.results.report.marts.runs import NETEM, NETEM_METRICS, invalid_runs, netem_metric, netem_scenarios

from data.link_conditions import netem_chart
import ui

st.title("Link conditions")
st.caption("Any metric against the emulated link condition (netem scenario) in force during the run, per CNI / "
           "mode: iperf3 throughput and RTT, DDS latency p50 / p90, HTTP response p50 / p90. Means over successful, "
           "valid runs in one cluster (runs across an inter-cluster tool: Inter-cluster tools page); the scenario "
           "parameters are the ones read back from the system.")

substrate, filters = ui.choose("netem", NETEM,
                               "The warehouse holds no runs yet. Run `make sweep`.")

scenarios = ui.query(netem_scenarios, substrate=substrate, **filters)
st.subheader("Scenarios")
ui.table(scenarios, column_config={
    "netem_scenario": "scenario", "netem_mechanism": "mechanism",
    "netem_delay_ms": st.column_config.NumberColumn("delay ms", format="%g"),
    "netem_jitter_ms": st.column_config.NumberColumn("jitter ms", format="%g"),
    "netem_loss_pct": st.column_config.NumberColumn("loss %", format="%g"),
    "netem_rate_mbit": st.column_config.NumberColumn("rate Mbit/s", format="%g",
                                                     help="empty = unlimited (or not recorded: older runs)"),
    "netem_scope": "scope", "iperf3_runs": "iperf3 runs", "dds_runs": "DDS runs", "http_runs": "HTTP runs",
})
order = list(dict.fromkeys(scenarios["netem_scenario"]))

metric = st.selectbox("Metric", list(NETEM_METRICS), format_func=NETEM_METRICS.get, key="netem_metric")
df = ui.query(netem_metric, substrate=substrate, metric=metric, **filters)
if df.empty:
    st.info("No successful, valid runs with this metric for this selection.")
else:
    # configurations measured under most scenarios first: the page opens on a comparison
    details = (df.groupby("detail", sort=False)["netem_scenario"].nunique()
               .sort_values(ascending=False, kind="stable").index.tolist())
    detail = st.selectbox("Configuration", details, key="netem_detail",
                          help="Workload parameters held fixed: protocol / payload / service, path, placement.")
    sel = df[df["detail"] == detail]
    log = st.toggle("Log scale", value=metric.startswith("iperf3_throughput"), key="netem_log",
                    help="Rate-limited or high-delay scenarios can be orders of magnitude away from the others.")
    st.altair_chart(netem_chart(sel, order, NETEM_METRICS[metric], log=log), width="stretch")
    if sel["netem_scenario"].nunique() < 2:
        st.caption("Only one scenario measured for this configuration: nothing to compare yet.")
    table = sel.pivot_table(index="variant", columns="netem_scenario", values="value", aggfunc="first")
    table = table[[s for s in order if s in table.columns]]
    table = table.loc[sorted(table.index, key=lambda v: (v != "host / host", v))].reset_index()  # host first
    ui.table(table, column_config={
        c: st.column_config.NumberColumn(c, format="%.2f") for c in table.columns if c != "variant"})

st.subheader("Invalid runs (kept out of every comparison)")
invalid = ui.query(invalid_runs, substrate=substrate, **filters)
if invalid.empty:
    st.success("None for this selection.")
else:
    ui.table(invalid)
