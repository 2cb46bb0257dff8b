import streamlit as st
from edgebench.results.report.verdict import RULE_HELP

from edgebench.results.report.marts.runs import run_counts, shared_kernel_labs, sweeps

from data.common import LAB_BANNER, LOCAL_BANNER
from data.emulation import fared_lines, normalized_rows
from data.overview import answer, answer_chart, answer_table
import ui

st.title("edgebench")
st.caption("Which networking stack should I use at the edge, by how much, and how sure are we?")

path, _ = ui.require_warehouse()
counts = ui.query(run_counts)
sweep_table = ui.query(sweeps)

ui.sweeps_in_progress()  # while `make portal`'s follower sees a sweep running
st.header("The answer")
entries = ui.query(answer)
if not entries:
    st.info("No CNI mode has been compared with the host network yet: run `make sweep`.", icon=":material/info:")
# one tab per substrate and lab (two labs are never pooled): "local", "ssh: lab-local"
places = sorted({(e["substrate"], e.get("lab")) for e in entries}, key=lambda p: (p[0], str(p[1])))
names = [sub if sub in ("local", "kind") or not lab else f"{sub}: {lab}" for sub, lab in places]
shared = set(ui.query(shared_kernel_labs))
for tab, (sub, lab) in zip(st.tabs(names) if len(names) > 1 else [st.container()] * len(names), places):
    with tab:
        if sub == "local":
            st.caption("substrate local: the kernel datapaths the CNIs configure, emulated in network namespaces; "
                       "not the CNIs themselves (see the emulation page for how far it is from real CNIs).")
            checked = fared_lines(ui.query(normalized_rows))
            st.markdown("**Checked against real CNIs** (each substrate against its own host): " + (
                "".join(f"\n- {line}" for line in checked) if checked else
                "not yet - no CNI mode of these answers has been measured on a real lab with its host (`make lab-local`)."))
        elif lab in shared:
            st.caption(LAB_BANNER)
        for e in [x for x in entries if x["substrate"] == sub and x.get("lab") == lab]:
            st.subheader(e["label"])
            st.markdown(e["sentence"])
            st.altair_chart(answer_chart(e), width="stretch")
            if ui.on_demand("the ranked rows", key=f"answer_rows_{sub}_{lab}_{e['label']}"):
                ui.table(answer_table(e))
st.caption("Each row: the CNI mode against the host network under the same conditions (the configuration named "
           "in the sentence: the neutral conditions with the most modes judged). " + RULE_HELP)

c1, c2, c3, c4 = st.columns(4)
c1.metric("Sweeps", len(sweep_table))
c2.metric("Runs", int(counts["runs"].sum()))
c3.metric("Substrates", counts["substrate"].nunique())
c4.metric("Not ok (failed / unsupported)", int(counts.loc[counts["status"] != "ok", "runs"].sum()))

if "local" in set(counts["substrate"]):
    st.warning(LOCAL_BANNER, icon=":material/lan:")

st.subheader("Runs by substrate and status")
ui.table(counts.pivot_table(index=["substrate", "workload"], columns="status", values="runs",
                                fill_value=0, aggfunc="sum").reset_index())

st.subheader("Sweeps")
ui.table(sweep_table)
st.caption(f"Warehouse: `{path}`")
