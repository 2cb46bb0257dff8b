import streamlit as st
from edgebench.results.report.verdict import RULE_HELP

from data.regressions import (CARDS_SHOWN_ALL, REGRESSIONS_EMPTY, regression_cards, regression_rows, regression_style,
                              regression_summary, regression_table)
import ui

st.title("CNI versions")
st.caption("One regression card per CNI mode measured at two or more versions: the newest version against the previous "
           "one on every configuration and metric both measured (throughput, latency percentiles, DDS, HTTP, CPU and "
           "memory), with n runs per side, the difference in % with its 95% CI, and a verdict.")

ui.require_warehouse()
cards = ui.query(regression_cards)
if cards.empty:
    st.info(REGRESSIONS_EMPTY, icon=":material/info:")
    st.stop()

ui.table(cards[["label", "card_n_comparisons", "card_n_worse", "card_n_better", "card_n_equivalent",
                    "card_n_inconclusive", "card_n_too_few_runs"]], column_config={
    "label": st.column_config.TextColumn("card", width="large"), "card_n_comparisons": "comparisons",
    "card_n_worse": "worse", "card_n_better": "better", "card_n_equivalent": "equivalent",
    "card_n_inconclusive": "inconclusive", "card_n_too_few_runs": "n < 2"})

if len(cards) > CARDS_SHOWN_ALL:
    label = st.selectbox("Card", cards["label"].tolist(), key="reg_card",
                         help="Cards with worse rows first. Substrates are never mixed: the same CNI mode on the "
                              "testbed and on a cluster are two cards.")
    shown = cards[cards["label"] == label]
else:
    shown = cards

verdict_help = ("new against old, in the metric's good / bad direction (the margin by the metric's unit). "
                + RULE_HELP)
for card in shown.to_dict("records"):
    st.subheader(card["label"])
    if card["substrate"] == "local":
        ui.local_banner("local")
    if card["caveat"]:
        st.warning(card["caveat"], icon=":material/science:")
    extra = (f" {card['n_versions']} versions were measured; the newest two are compared." if card["n_versions"] > 2
             else "")
    trigger = (f" The newest version's rerun was triggered from {card['new_trigger_source']}."
               if card["new_trigger_source"] else "")
    st.caption(regression_summary(card) + extra + trigger)
    rows = ui.query(regression_rows, substrate=card["substrate"], cni=card["cni"], cni_mode=card["cni_mode"])
    ui.table(regression_style(regression_table(rows)), column_config={
        "config": st.column_config.TextColumn("configuration", width="large"),
        "metric_label": "metric",
        "previous_n_runs": st.column_config.NumberColumn(f"n {card['previous_version']}"),
        "new_n_runs": st.column_config.NumberColumn(f"n {card['new_version']}"),
        "previous_mean": st.column_config.NumberColumn(f"mean {card['previous_version']}", format="%.4g"),
        "new_mean": st.column_config.NumberColumn(f"mean {card['new_version']}", format="%.4g"),
        "unit": "unit",
        "diff_pct_ci": st.column_config.TextColumn("new - old % [95% CI]"),
        "verdict": st.column_config.TextColumn("verdict", help=verdict_help),
    }, key=f"reg_table_{card['substrate']}_{card['cni']}_{card['cni_mode']}")

st.caption("new - old: difference of the means over runs, relative to the old mean, with the 95% interval of the "
           "difference (Welch, floored degrees of freedom). Each row is one test at 5%; a card makes many, so a few "
           "isolated worse or better rows are expected even between identical versions (the count above); a shift "
           "across related metrics is the finding to act on.")
