import altair as alt
import streamlit as st
from edgebench.results.report.verdict import RULE_HELP

from data.papers import (PAPER_IDS, claims_frame, numbers_frame, other_numbers_frame, paper_report, paper_title,
                         published_only_frame, run_hint, scorecard_frame, scorecard_totals,
                         undecided_frame)
import ui

st.title("Papers")
st.caption("The five papers edgebench was designed from, reproduced: each number a paper prints that edgebench "
           "measures in the same unit and normalization (overhead % vs the host network, multicast against unicast, one "
           "tool against another, efficiency % of the host, a distribution against kubeadm), beside ours with its 95% "
           "CI, and each of the paper's findings tested on our data: agrees, disagrees or cannot tell. Results of "
           "different substrates are never pooled.")

ui.require_warehouse()
st.subheader("Reproduction scorecard")
card = ui.query(scorecard_frame)
st.table(card.drop(columns=["to decide", "decided_n", "testable_n"]).set_index(["paper", "substrate"]))
st.caption(" · ".join(f"all papers on {t['substrate']}: {t['decided']} of {t['testable']} testable claims decided"
                      + ("" if t["decided_share"] is None else f" ({t['decided_share']:.0%})")
                      for t in scorecard_totals(card)))
st.caption("Claims per outcome on each substrate (never pooled), judged by the one verdict rule; decided = agrees or "
           "disagrees of the testable ones; numbers = printed by the paper / measured by edgebench in the same unit "
           "and normalization / measured on this substrate; a counterpart or a stated reason = measured the same way, "
           "or with a reason stated for that very number (the paper's other published numbers, below). " + RULE_HELP)
if ui.on_demand("What would decide each claim we cannot tell", key="paper_undecided"):
    ui.table(undecided_frame(card),
                 column_config={"to decide": st.column_config.TextColumn(width="large")})

paper = st.selectbox("Paper", PAPER_IDS, format_func=paper_title, key="paper_id")
rep = ui.query(paper_report, paper=paper)
st.markdown(f"*{rep['about']}*")

if not rep["substrates"]:
    st.info(f"Nothing measured for this paper yet. {run_hint(paper)}", icon=":material/info:")
    substrate = None
else:
    substrate = st.selectbox("Substrate", rep["substrates"], key="paper_substrate",
                             help="Our results come from one substrate at a time; the paper's from its own hardware.")
    ui.local_banner(substrate)
    st.warning(rep["substrate_notes"][substrate], icon=":material/science:")

numbers = numbers_frame(rep)
if not numbers.empty:
    shown = numbers[numbers["substrate"].isin([substrate, "not measured"])] if substrate else numbers
    for source, title in (("Table I", "Table I: DDS throughput overhead vs host (%)"),
                          ("Table II", "Table II: DDS 90th-percentile latency overhead vs host (%)")):
        part = shown[shown["source"] == source].drop(columns=["published", "ours are", "unit"])
        if part.empty:
            continue
        st.subheader(title)
        measured = part[part["ours %"].notna()]
        if measured["payload (B)"].nunique() > 1:
            long = measured.melt(id_vars=["subject", "payload (B)"], value_vars=["published %", "ours %"],
                                 var_name="source", value_name="overhead %")
            lines = alt.Chart(long).mark_line(point=True).encode(
                x=alt.X("payload (B):O"), y=alt.Y("overhead %:Q"), color=alt.Color("subject:N"),
                strokeDash=alt.StrokeDash("source:N", title="value"),
                tooltip=["subject:N", "source:N", "payload (B):O", alt.Tooltip("overhead %:Q", format=".1f")])
            bars = alt.Chart(measured[measured["± 95% CI"].notna()].assign(
                lo=lambda d: d["ours %"] - d["± 95% CI"],
                hi=lambda d: d["ours %"] + d["± 95% CI"])).mark_errorbar().encode(
                x="payload (B):O", y=alt.Y("lo:Q", title="overhead %"), y2="hi:Q", color="subject:N")
            st.altair_chart((lines + bars).properties(height=300, title="published (dashed) vs ours with 95% CI"),
                            width="stretch")
        ui.table(part.drop(columns=["metric"]), column_config={
            "published %": st.column_config.NumberColumn(format="%.1f"),
            "ours %": st.column_config.NumberColumn(format="%.1f"),
            "± 95% CI": st.column_config.NumberColumn(format="%.1f")})
    st.caption("Overhead % vs host: throughput (host - CNI) / host, latency (CNI - host) / host; positive = worse "
               "than host. 95% CI: the vs-host mart's interval of the CNI - host difference over the host mean "
               "(pooled, paired or Welch's). vs host: the CNI against the host by that interval. " + RULE_HELP)
    others = shown[~shown["source"].isin(["Table I", "Table II"])]
    if not others.empty:
        st.subheader("The paper's other numbers beside ours")
        ui.table(other_numbers_frame(others), column_config={
            "ours": st.column_config.NumberColumn(format="%.2f"),
            "± 95% CI": st.column_config.NumberColumn(format="%.2f")})
        st.caption("ours are: what our figure is, in the paper's normalization (a pair: left against the baseline "
                   "named, same conditions otherwise). 95% CI: Welch's interval of the difference over the baseline "
                   "mean. verdict: the one rule on that comparison. " + RULE_HELP)

st.subheader("Claims")
claims = claims_frame(rep, substrate)
tally = claims["outcome"].value_counts()
st.markdown(" · ".join(f"**{outcome}** {int(tally.get(outcome, 0))}"  # one line, no metric widgets to load
                       for outcome in ("agrees", "disagrees", "cannot tell", "not testable")))
ui.table(claims, column_config={
    "statement": st.column_config.TextColumn(width="large"), "evidence": st.column_config.TextColumn(width="large")})
st.caption("Each comparison is judged by the one verdict rule on left - right (Welch's 95% interval against the "
           "margin): agrees when left is better or worse beyond the margin as claimed, disagrees when the other way "
           "or equivalent, cannot tell when inconclusive or a side has fewer than 2 runs; `~` claims agree when the "
           "whole interval of the difference lies within the claim's tolerance. `each`: every "
           "comparison in every group (a claim disagrees when any does); `overall`: the means over the groups. "
           "Not testable: edgebench cannot measure a side (bare metal vs container, hardware it does not emulate).")

if rep["published_only"]:
    if ui.on_demand(f"The paper's other {len(rep['published_only'])} published numbers (no counterpart measured "
                    "the same way)", key="paper_published_only"):
        ui.table(published_only_frame(rep))
