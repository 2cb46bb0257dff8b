"""The portal's CNI versions page: the regression cards of cmp_cni_version_regressions (read by
edgebench.results.report.marts.reports), one per CNI mode measured at two or more versions on a substrate, newest
version against the previous one, with their titles, configurations and styles."""
from __future__ import annotations

import math

import pandas as pd

from edgebench.results.report.labels import (diff_pct_text, metric_label, version_card_caveat, version_card_title,
                                             version_source_text)
from edgebench.results.report.marts.reports import regression_cards_frame, regression_rows_frame
from edgebench.results.report.marts.summaries import VERDICT_ORDER, config_label

REGRESSIONS_EMPTY = (
    "No CNI mode has been measured at two versions yet, so there is no regression card. Versions get measured by "
    "reruns: `edgebench watch workflows/sweep.yaml` (or the Argo Events sensor on a management cluster) checks each "
    "CNI's release source and, when upstream has a newer version, reruns only that CNI's modes. Every run of the rerun "
    "is filed under the new version (on real clusters, the version the cluster reports installed). Once a mode has "
    "runs at two versions, `make warehouse` builds its card: every metric both versions measured, with the difference, its "
    "95% CI and a verdict.")
# up to this many cards are shown one below the other; more get a select box
CARDS_SHOWN_ALL = 3
REGRESSION_VERDICT_STYLE = {
    "worse": "background-color: #f8d0d0; color: #8b0000; font-weight: bold",
    "better": "background-color: #d4efd4",
    "n < 2": "color: #7f7f7f",
}


def regression_cards(con) -> pd.DataFrame:
    """One row per card, cards with worse rows first: the CNI mode, the two versions, how they are known, the
    trigger of the newest one's rerun, the comparison counts; `label` is the card's title and `caveat` what it
    cannot show (None when nothing)."""
    df = regression_cards_frame(con)
    records = df.to_dict("records")
    df["label"] = [version_card_title(r) for r in records]
    df["versions"] = [version_source_text(r) for r in records]
    df["caveat"] = [version_card_caveat(r) for r in records]
    return df


def regression_rows(con, substrate: str, cni: str, cni_mode: str) -> pd.DataFrame:
    """The card's comparisons (one per configuration x metric), worse first, then better, inconclusive, equivalent, n < 2;
    adds `config` (one line naming the configuration) and `metric_label` (with its good direction)."""
    df = regression_rows_frame(con, substrate, cni, cni_mode)
    if df.empty:
        return df.assign(config=pd.Series(dtype=str), metric_label=pd.Series(dtype=str))
    df["config"] = [config_label(r) for r in df.to_dict("records")]
    df["metric_label"] = [metric_label(m, h) for m, h in zip(df["metric"], df["is_higher_better"])]
    df["_order"] = df["verdict"].map(VERDICT_ORDER).fillna(9)
    return df.sort_values(["_order", "config", "metric"]).drop(columns="_order").reset_index(drop=True)


def _none(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def regression_table(rows: pd.DataFrame) -> pd.DataFrame:
    """What the page shows per comparison: configuration, metric, n per side, the two means, new - old in % with its
    95% CI (as text; the difference in its unit when the previous mean is 0) and the verdict."""
    out = rows[["config", "metric_label", "previous_n_runs", "new_n_runs", "previous_mean", "new_mean", "unit"]].copy()
    out["diff_pct_ci"] = [
        diff_pct_text(_none(p), _none(lo), _none(hi), _none(d), u)
        for p, lo, hi, d, u in zip(rows["diff_pct"], rows["diff_ci_low_pct"], rows["diff_ci_high_pct"], rows["diff"],
                                   rows["unit"])]
    out["verdict"] = rows["verdict"]
    return out.reset_index(drop=True)


def regression_style(table: pd.DataFrame):
    """The table with worse rows highlighted (red), better ones green, n < 2 greyed."""
    def row_style(row):
        style = REGRESSION_VERDICT_STYLE.get(row["verdict"], "")
        return [style] * len(row)

    return table.style.apply(row_style, axis=1)


def regression_summary(card) -> str:
    """'52 comparisons: 2 worse, 3 better, 40 equivalent, 7 inconclusive; identical versions would show about ...'."""
    text = (f"{card['card_n_comparisons']} comparisons: {card['card_n_worse']} worse, {card['card_n_better']} better, "
            f"{card['card_n_equivalent']} equivalent, {card['card_n_inconclusive']} inconclusive")
    if card["card_n_too_few_runs"]:
        text += f", {card['card_n_too_few_runs']} more with n < 2 (no interval)"
    return text + (f". Identical versions would show about {card['card_expected_false_alarms']:.1f} better/worse "
                   "verdicts by chance (each comparison is wrong at most 5% of the time).")
