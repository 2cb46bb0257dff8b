"""Latency under load: the probe's latency with a bulk TCP flow sharing the path, against the same probe idle.
Reads the mart cmp_loaded_latency_vs_idle only."""
import altair as alt
import streamlit as st

import ui

MART = "cmp_loaded_latency_vs_idle"

st.title("Latency under load")
st.caption("What a control loop on a busy edge link feels: DDS latency (ddsperf ping/pong, RTT/2) or HTTP response "
           "time measured while a bulk iperf3 TCP flow shares the same path, against the same probe idle. "
           "Inflation = loaded - idle (mean over runs of each run's percentile) with its 95% interval; the verdict "
           "says whether the interval excludes 0.")

ui.require_warehouse()
if ui.sql("select count(*) as n from information_schema.tables where table_name = ?", MART)["n"].iloc[0] == 0:
    st.info("This warehouse has no latency-under-load mart yet: rebuild it with `make warehouse`.")
    st.stop()
substrates = ui.sql(f"select distinct substrate from {MART} order by substrate")["substrate"].tolist()
if not substrates:
    st.info("No latency-under-load runs yet. Add the workload to a sweep, e.g. "
            "`make sweep ARGS=\"-p 'workloads=[\\\"loaded-latency\\\"]'\"`.")
    st.stop()

c1, c2, c3, c4 = st.columns(4)
substrate = c1.selectbox("Substrate", substrates, help="Results of different substrates are never compared.")
ui.local_banner(substrate)
probes = ui.sql(f"select distinct probe from {MART} where substrate = ? order by probe", substrate)["probe"].tolist()
probe = c2.selectbox("Probe", probes, format_func={"dds": "DDS latency", "http": "HTTP response time"}.get)
sizes = ui.sql(f"select distinct length_bytes from {MART} where substrate = ? and probe = ? order by 1",
               substrate, probe)["length_bytes"].tolist()
size = c3.selectbox("Payload (bytes)", sizes)
conditions = ui.sql(f"select distinct netem_scenario || ' / ' || tuning_profile || ' / ' || distribution as c "
                    f"from {MART} where substrate = ? and probe = ? and length_bytes = ? order by 1",
                    substrate, probe, size)["c"].tolist()
condition = c4.selectbox("Netem / tuning / distribution", conditions)

df = ui.sql(f"""
    select cni || ':' || cni_mode as cni_mode, is_host_baseline, idle_n_runs, loaded_n_runs,
           idle_p50_us, loaded_p50_us, p50_inflation_us, p50_inflation_ci95_us, p50_verdict,
           idle_p99_us, loaded_p99_us, p99_inflation_us, p99_inflation_ci95_us, p99_verdict,
           host_p99_inflation_us, bulk_sent_mbps, datapath
    from {MART}
    where substrate = ? and probe = ? and length_bytes = ?
      and netem_scenario || ' / ' || tuning_profile || ' / ' || distribution = ?
    order by not is_host_baseline, cni_mode""", substrate, probe, size, condition)

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
st.dataframe(df.drop(columns=["is_host_baseline"]), hide_index=True, column_config={
    "cni_mode": st.column_config.TextColumn("CNI:mode", help="host:host is the host-network baseline"),
    "idle_n_runs": st.column_config.NumberColumn("n idle"),
    "loaded_n_runs": st.column_config.NumberColumn("n loaded"),
    **{c: st.column_config.NumberColumn(c.replace("_us", " (µs)").replace("_", " "), format="%.1f")
       for c in df.columns if c.endswith("_us")},
    "bulk_sent_mbps": st.column_config.NumberColumn("bulk Mbit/s", format="%.0f"),
})
st.caption("± is the half-width of the 95% interval of loaded - idle (Welch, df = min(n) - 1). 'too few runs': "
           "fewer than 2 runs on a side. The host row is the host-network baseline under the same conditions; "
           "host p99 inflation is repeated on every row for comparison.")
