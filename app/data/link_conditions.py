"""Charts of the portal's link conditions (netem) page; its queries are edgebench.results.report.marts.runs."""
from __future__ import annotations

import altair as alt
import pandas as pd


def netem_chart(df: pd.DataFrame, scenarios: list[str], y_title: str, log: bool = False) -> alt.Chart:
    """One line per CNI / mode across the netem scenarios (in the order given: untouched first, then by delay),
    a point per scenario; log scale optional (rate-limited scenarios are orders of magnitude apart)."""
    variants = list(dict.fromkeys(df["variant"]))
    return alt.Chart(df).mark_line(point=alt.OverlayMarkDef(size=80)).encode(
        x=alt.X("netem_scenario:N", sort=[s for s in scenarios if s in set(df["netem_scenario"])],
                title="netem scenario", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("value:Q", title=y_title + (" (log scale)" if log else ""),
                scale=alt.Scale(type="log") if log else alt.Scale(zero=True)),
        color=alt.Color("variant:N", title="CNI / mode", sort=variants),
        tooltip=["variant:N", "netem_scenario:N", alt.Tooltip("value:Q", format=".2f"),
                 alt.Tooltip("min_value:Q", format=".2f"), alt.Tooltip("max_value:Q", format=".2f"), "n_runs:Q"],
    ).properties(height=360)
