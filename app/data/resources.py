"""Tables and charts of the portal's resources page; its queries are edgebench.results.report.marts.iperf3."""
from __future__ import annotations

import altair as alt
import pandas as pd

from .common import baseline_color


def resource_long(df: pd.DataFrame) -> pd.DataFrame:
    """Idle vs run as rows (phase), for grouped bars: variant, component, phase, cpu_pct, rss_mb."""
    rows = []
    for phase in ("idle", "run"):
        part = df[["variant", "component", "names", "n_runs", f"cpu_{phase}_pct", f"rss_{phase}_mb"]].rename(
            columns={f"cpu_{phase}_pct": "cpu_pct", f"rss_{phase}_mb": "rss_mb"})
        rows.append(part.assign(phase=phase))
    return pd.concat(rows, ignore_index=True)


def resource_chart(long: pd.DataFrame, value: str, title: str, y_title: str, variants: list[str]) -> alt.Chart:
    """Grouped horizontal bars per CNI / mode: idle (light) above run (dark)."""
    return alt.Chart(long).mark_bar().encode(
        y=alt.Y("variant:N", sort=variants, title=None, axis=alt.Axis(labelLimit=200)),
        yOffset=alt.YOffset("phase:N", sort=["idle", "run"]),
        x=alt.X(f"{value}:Q", title=y_title),
        color=alt.Color("phase:N", sort=["idle", "run"], scale=alt.Scale(range=["#aec7e8", "#1f77b4"])),
        tooltip=["variant:N", "phase:N", alt.Tooltip(f"{value}:Q", format=".1f"), "names:N", "n_runs:Q"],
    ).properties(height=alt.Step(16), title=title)


def resource_throughput_chart(df: pd.DataFrame, variants: list[str]) -> alt.Chart:
    one = df.drop_duplicates("variant")
    return alt.Chart(one).mark_bar().encode(
        y=alt.Y("variant:N", sort=variants, title=None, axis=alt.Axis(labelLimit=200)),
        x=alt.X("throughput_mbps:Q", title="mean throughput (Mbit/s)"),
        color=baseline_color("is_host_baseline", "#2ca02c"),
        tooltip=["variant:N", alt.Tooltip("throughput_mbps:Q", format=".1f"), "n_runs:Q"],
    ).properties(height=alt.Step(32), title="Throughput of the same runs")
