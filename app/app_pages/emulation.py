import streamlit as st

from edgebench.results.report.verdict import CPU_HEADROOM_FLOOR_PCT

from data.emulation import (EMULATION_EMPTY, LAB_BANNER, emulation_rows, fared_lines, leaves_out, normalized_rows,
                            shortfalls, style, traced_causes, verdict_counts)
import ui

st.title("Emulation vs real")
st.caption("How far the testbed's emulation (the kernel datapath a CNI configures, rebuilt in network namespaces) is "
           "from the real CNI on a real cluster, per CNI mode and metric: testbed / real (ratio of the means) with its "
           "95% interval and n per side. Model holds: the whole interval lies within +-10% of 1; model differs: it lies "
           "outside, or excludes 1 and reaches beyond the band; inconclusive otherwise.")

ui.require_warehouse()
rows = ui.query(emulation_rows)
if rows.empty:
    st.info(EMULATION_EMPTY, icon=":material/info:")
    st.stop()
st.warning(LAB_BANNER, icon=":material/dns:")
counts = verdict_counts(rows)
st.caption(f"{len(rows)} comparisons: {counts['model holds']} model holds, {counts['model differs']} model differs, "
           f"{counts['inconclusive']} inconclusive (margin +-10%).")
workloads = sorted(rows["workload"].unique())
picked = st.multiselect("Workloads", workloads, default=workloads, key="emu_workloads")
shown = rows[rows["workload"].isin(picked)]
SHOWN = ["real_lab", "cni_label", "config", "metric", "n", "testbed_mean", "real_mean", "ratio", "ci", "verdict_text"]
ui.table(style(shown[SHOWN + ["verdict"]]), column_order=SHOWN,
             column_config={"real_lab": "real lab", "cni_label": "CNI mode",
                            "config": st.column_config.TextColumn("configuration", width="large"),
                            "n": "n testbed / real", "testbed_mean": st.column_config.NumberColumn("testbed", format="%.4g"),
                            "real_mean": st.column_config.NumberColumn("real", format="%.4g"),
                            "ratio": st.column_config.NumberColumn("testbed / real", format="%.3f"),
                            "ci": "95% CI", "verdict_text": "verdict"})

st.subheader("Each against its own host")
st.caption("The same CNI modes, each substrate's overhead against the host of that substrate (the vs-host pages' "
           "comparisons and verdicts, by the one rule), side by side: the machine's load, which moves a lab's CNI and "
           "its host alike, cancels. Gap: testbed minus real overhead, in points. Agree: both substrates decided, "
           "and alike. Last column: each side's host and what the mode adds to it, in the metric's unit: where a "
           "lab's load adds time to its host and its modes alike (a latency), the same added time is a smaller "
           "share of a slower host.")
norm = ui.query(normalized_rows)
if norm.empty:
    st.caption("No CNI mode has an overhead against its own host on both substrates yet: each side needs its host "
               "baseline (`host` among the cnis of both sweeps).")
else:
    for line in fared_lines(norm):
        st.markdown("- " + line)
    NORM = ["real_lab", "cni_label", "workload", "metric", "config", "n", "testbed_text", "real_text",
            "overhead_gap_pts", "agree", "kendall_tau", "added_text"]
    ui.table(norm[NORM], column_order=NORM,
             column_config={"real_lab": "real lab", "cni_label": "CNI mode", "n": "n testbed / real",
                            "config": st.column_config.TextColumn("configuration", width="large"),
                            "testbed_text": "testbed vs its host", "real_text": "real vs its host",
                            "overhead_gap_pts": st.column_config.NumberColumn("gap (pts)", format="%+.1f"),
                            "kendall_tau": st.column_config.NumberColumn("CNI order tau", format="%+.2f"),
                            "added_text": "host, mode - host (testbed / real)"})

    causes = traced_causes(norm)
    if causes:
        st.markdown("**Disagreements traced to a cause** (measured; the catalog's testbed_disagreements):")
        for c in causes:
            st.markdown(f"- **{c['cause']}** ({len(c['rows'])} comparison(s): {'; '.join(c['rows'])}). "
                        f"{c['explanation']}")

    short = shortfalls(norm)
    if short:
        st.markdown("**Metrics short of a bar, with what was measured** (verdicts agree; the catalog's "
                    "testbed_shortfalls):")
        for c in short:
            st.markdown(f"- **{c['what']}, {c['bar']}: {c['cause']}.** {c['explanation']}")

st.subheader("What the testbed still leaves out")
st.caption("Per CNI mode on this page: the parts of a real cluster running it that the testbed does not build "
           "(the catalog's testbed_leaves_out). A testbed figure is the kernel datapath's; where it disagrees with the "
           "real lab, these are the candidates. Each run also records the machine's idle CPU per second: runs that "
           f"had less than {CPU_HEADROOM_FLOOR_PCT:g} % of it idle in some second are counted in every comparison "
           "(low CPU headroom).")
for label, parts in leaves_out(rows).items():
    st.markdown(f"**{label}**\n" + "\n".join(f"- {p}" for p in parts))
