import streamlit as st

from data.common import LOCAL_BANNER
from data.overview import run_counts, sweeps
import ui

st.title("edgebench")
st.caption("Which networking stack should I use at the edge? What the warehouse holds right now.")

path, _ = ui.require_warehouse()
counts = ui.query(run_counts)
sweep_table = ui.query(sweeps)

c1, c2, c3, c4 = st.columns(4)
c1.metric("Sweeps", len(sweep_table))
c2.metric("Runs", int(counts["runs"].sum()))
c3.metric("Substrates", counts["substrate"].nunique())
c4.metric("Not ok (failed / unsupported)", int(counts.loc[counts["status"] != "ok", "runs"].sum()))

if "local" in set(counts["substrate"]):
    st.warning(LOCAL_BANNER, icon=":material/lan:")

st.subheader("Runs by substrate and status")
st.dataframe(counts.pivot_table(index=["substrate", "workload"], columns="status", values="runs",
                                fill_value=0, aggfunc="sum").reset_index(), hide_index=True)

st.subheader("Sweeps")
st.dataframe(sweep_table, hide_index=True)
st.caption(f"Warehouse: `{path}`")
