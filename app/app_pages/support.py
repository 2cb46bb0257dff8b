import pandas as pd
import streamlit as st
from edgebench.results.report.marts.support import NEVER, support_matrix_of, support_table

import ui

st.title("Support")
st.caption("Which CNI mode works on which kind of node: every mode of the catalog (also those never run) against the "
           "namespace nodes of the local lab (this machine's kernel, shared), VM nodes with Debian's stock kernel "
           "(x86, and arm64 as a Raspberry Pi stand-in; emulated CPUs), a lab of real machines and the testbed. "
           "works = an ok run exists (n ok of all runs, the sweeps); fails = runs exist, none ok (the latest error); "
           "unsupported = the recorded reason; never tried. The same table as `edgebench report --support`.")

ui.require_warehouse()
matrix = ui.query(support_matrix_of)
st.info("Runs on emulated CPUs (the VM nodes, qemu TCG, 10-50x slower) show what works, never how fast: they are "
        "counted here and kept out of every performance comparison of the other pages.", icon=":material/memory:")
counts = matrix["counts"]
cols = st.columns(4)
for col, (label, key) in zip(cols, (("works", "works"), ("fails", "fails"), ("unsupported", "unsupported"),
                                    ("never tried", NEVER))):
    col.metric(label, counts[key])

rows = support_table(matrix)
tried_only = st.toggle("Only CNI modes tried somewhere", value=False, key="support_tried_only")
labels = [c["label"] for c in matrix["columns"]]
if tried_only:
    rows = [r for r in rows if any(r[label] != NEVER for label in labels)]
if not rows:
    st.info("No CNI mode has a run yet: run a sweep (`make sweep`, or `make lab-local` on the local lab).")
else:
    frame = pd.DataFrame(rows)

    def colour(value: str) -> str:
        word = str(value).split(" ")[0].rstrip(":")
        return {"works": "color: #2e7d32", "fails": "color: #c62828", "unsupported": "color: #ef6c00"}.get(word, "")

    st.dataframe(frame.style.map(colour, subset=labels), hide_index=True, width="stretch")
    st.caption("A cell whose runs mixed node kinds (a VM node joined to the lab's namespace nodes) is filed under its "
               "VM kind and names its nodes' kinds: a mode that needs a kernel feature on every node cannot work "
               "there when the namespace node lacks it.")
