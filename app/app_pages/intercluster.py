import streamlit as st
from edgebench.results.report.marts.http import INTERCLUSTER
from edgebench.results.report.verdict import RULE_HELP

from data.intercluster import (IMPLEMENTATION_TEXT, NONE_LABEL, intercluster_chart,
                               intercluster_comparison, intercluster_diff_table, intercluster_kpi_table,
                               intercluster_limits, intercluster_models, intercluster_problem_runs, intercluster_series,
                               intercluster_style_verdicts, intercluster_values_table)
import ui

st.title("Inter-cluster tools")
st.caption("HTTP requests from a client in cluster 2 to a service exported from cluster 1, the two clusters joined "
           "by an inter-cluster tool (Submariner, Skupper, ClusterLink), against the same runs with both ends in "
           "one cluster (none, the baseline, in grey). Per netem scenario and payload: the mean over runs of each "
           "run's median response time with its 95% CI, n runs, and the two response-time limits.")

substrate, filters = ui.choose("ic", INTERCLUSTER,
                               "The warehouse holds no HTTP runs across an inter-cluster tool yet. Add `intercluster` "
                               "entries (e.g. [\"none\", \"submariner:vxlan\", \"skupper\"]) to an HTTP sweep and run "
                               "`make sweep`.")

df = ui.query(intercluster_comparison, substrate=substrate, **filters)
if df.empty:
    st.info("No successful, valid runs across an inter-cluster tool for this selection (see failed and unsupported "
            "runs below).")
else:
    c1, c2, c3 = st.columns([2, 3, 1])
    payloads = sorted(df["length_bytes"].unique().tolist())
    payload = c1.selectbox("Payload (bytes)", payloads, key="ic_payload")
    labels = intercluster_series(df)
    tools = [label for label in labels if label != NONE_LABEL]
    shown = c2.multiselect("Inter-cluster tools", tools, default=tools, key="ic_tools",
                           help="The none baseline (both ends in one cluster) is always shown.")
    log = c3.toggle("Log scale", value=True, key="ic_log",
                    help="The limits (100 ms, 1000 ms) are orders of magnitude above one-cluster response times.")
    sel = df[(df["length_bytes"] == payload) & df["label"].isin([NONE_LABEL, *shown])]

    st.subheader(f"Response time, {payload} B payload")
    if sel.empty:
        st.info("Nothing measured for this payload and these tools.")
    elif sel["netem_scenario"].nunique() < 2:
        st.caption(f"One netem scenario ({sel['netem_scenario'].iloc[0]}) in this selection: a table instead of a "
                   "chart.")
        ui.table(intercluster_values_table(sel), column_config={
            "netem_scenario": "netem scenario", "label": "inter-cluster", "n_runs": "n runs", "n_requests": "requests",
            "response_p50_ms": st.column_config.NumberColumn("mean of run medians ms", format="%.3f"),
            "response_p50_ci95_ms": st.column_config.NumberColumn("± 95% CI ms", format="%.3f"),
            "request_median_ms": st.column_config.NumberColumn("median ms (all requests)", format="%.3f"),
            "request_p95_ms": st.column_config.NumberColumn("p95 ms (all requests)", format="%.3f"),
        })
    else:
        st.altair_chart(intercluster_chart(sel, log=log), width="stretch")
        if log and (sel["ci_low_ms"] <= 0).any():
            st.caption("Some 95% intervals reach 0 ms or below and are cut at the bottom of the log axis.")
    lim = intercluster_limits(df)
    st.caption("Dashed: " + "; ".join(lim["label"]) + " (the seed's response-time KPIs). Error bars: 95% CI of the "
               "mean of per-run medians (Student t; none with fewer than 2 runs); n = runs.")

    for label, model in intercluster_models(sel).items():
        st.warning(f"**{label}** is a model of the tool's data plane on the testbed, not the tool itself. What was "
                   f"modelled: {model}", icon=":material/science:")
    implementations = sorted(set(sel["intercluster_implementation"]) - {"baseline", "emulated"})
    for impl in implementations:
        st.caption(f"({impl}): {IMPLEMENTATION_TEXT.get(impl, impl)}.")

    st.subheader("Difference to none (one cluster)")
    if not sel["is_baseline"].any():
        st.caption("No none runs under these conditions: no difference can be computed.")
    verdict_help = ("baseline: the none row; lower = better (highlighted: inconclusive, no answer from these runs); "
                    "no baseline: no none runs under the same conditions. " + RULE_HELP)
    ui.table(intercluster_style_verdicts(intercluster_diff_table(sel)), column_config={
        "netem_scenario": "netem scenario", "label": "inter-cluster", "intercluster_implementation": "implementation",
        "n_runs": "n runs",
        "response_p50_ms": st.column_config.NumberColumn("mean of run medians ms", format="%.3f"),
        "response_p50_ci95_ms": st.column_config.NumberColumn("± 95% CI ms", format="%.3f"),
        "none_n_runs": "none n runs",
        "none_response_p50_ms": st.column_config.NumberColumn("none ms", format="%.3f"),
        "none_response_p50_ci95_ms": st.column_config.NumberColumn("none ± 95% CI ms", format="%.3f"),
        "vs_none_ms": st.column_config.TextColumn("tool - none (± 95% CI)"),
        "vs_none_pct": st.column_config.TextColumn("tool - none % (± 95% CI)"),
        "verdict": st.column_config.TextColumn("verdict", help=verdict_help),
    })
    st.caption("tool - none: difference of the means of per-run medians, positive = slower across the tool, with the "
               "95% CI of the difference (Welch). The verdict is the project's one rule, on that interval: " + RULE_HELP)

    st.subheader("Requests and runs beyond the limits")
    ui.table(intercluster_kpi_table(sel), column_config={
        "netem_scenario": "netem scenario", "label": "inter-cluster", "n_runs": "n runs", "n_requests": "requests",
        **{col: st.column_config.ProgressColumn(text, format="%.1f %%", min_value=0, max_value=100) for col, text in (
            ("pct_requests_over_vehicle_assist", f"requests > {lim['limit_ms'][0]:g} ms"),
            ("pct_runs_median_over_vehicle_assist", f"run medians > {lim['limit_ms'][0]:g} ms"),
            ("pct_requests_over_remote_maintenance", f"requests > {lim['limit_ms'][1]:g} ms"),
            ("pct_runs_median_over_remote_maintenance", f"run medians > {lim['limit_ms'][1]:g} ms"))},
    })
    st.caption("An error response counts as beyond every limit; beyond = strictly greater.")

st.subheader("Failed and unsupported runs across a tool")
problems = ui.query(intercluster_problem_runs, substrate=substrate, **filters)
if problems.empty:
    st.success("None for this selection.")
else:
    ui.table(problems, column_config={"label": "inter-cluster"})
