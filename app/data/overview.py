"""The portal's overview page: the answer (the CNI modes ranked against the host per headline metric,
results.report.ranking, the same rows as `edgebench summary answer`) as a table and a chart; run counts and sweeps
are edgebench.results.report.marts.runs."""
from __future__ import annotations

import altair as alt
import pandas as pd

from edgebench.results.report import ranking
from edgebench.results.report.marts import fetcher

VERDICT_COLORS = {"better": "#2e7d32", "equivalent": "#7cb342", "worse": "#c62828", "inconclusive": "#9e9e9e",
                  "n < 2": "#cfcfcf"}


def answer(con) -> list[dict]:
    """results.report.ranking.answer over the portal's connection: per substrate and headline, ranked rows + sentence."""
    return ranking.answer(fetcher(con))


def answer_table(entry: dict) -> pd.DataFrame:
    """The ranked rows of one headline: rank, CNI mode, mean, the difference to the host in % with its 95% CI, the
    verdict phrase (verdict, size, interval, n, margin)."""
    df = pd.DataFrame(entry["rows"])
    out = pd.DataFrame({
        "rank": range(1, len(df) + 1), "CNI mode": df["mode"], f"mean {entry['unit']}": df["value"],
        "vs host %": df["diff_pct"], "± 95% CI %": df["ci_pct"], "verdict": df["verdict"],
        "n (CNI/host)": [f"{a}/{b}" for a, b in zip(df["n_runs"], df["host_n_runs"])],
        "answer": df["text"]})
    return out


def answer_chart(entry: dict) -> alt.Chart:
    """The difference to the host in % with its 95% interval per CNI mode, coloured by verdict, the margin shaded."""
    df = pd.DataFrame(entry["rows"])
    df["lo"] = df["diff_pct"] - df["ci_pct"].fillna(0)
    df["hi"] = df["diff_pct"] + df["ci_pct"].fillna(0)
    margin = float(df["verdict_margin_pct"].iloc[0] or 0)
    order = df["mode"].tolist()
    base = alt.Chart(df).encode(y=alt.Y("mode:N", sort=order, title=None))
    band = alt.Chart(pd.DataFrame({"lo": [-margin], "hi": [margin]})).mark_rect(opacity=0.15, color="#7cb342").encode(
        x="lo:Q", x2="hi:Q")
    bars = base.mark_bar().encode(
        x=alt.X("diff_pct:Q", title="CNI vs host, % of the host (95% CI; shaded: the margin)"),
        color=alt.Color("verdict:N", scale=alt.Scale(domain=list(VERDICT_COLORS), range=list(VERDICT_COLORS.values())),
                        title="verdict"),
        tooltip=["mode:N", "verdict:N", alt.Tooltip("diff_pct:Q", format="+.1f"),
                 alt.Tooltip("ci_pct:Q", format=".1f"), "n_runs:Q", "host_n_runs:Q"])
    whiskers = base.mark_rule(color="black").encode(x="lo:Q", x2="hi:Q")
    return (band + bars + whiskers).properties(height=28 * len(df) + 20)
