"""Tables and charts of the portal's CNI datapaths page; its queries are edgebench.results.report.marts.iperf3."""
from __future__ import annotations

import altair as alt
import pandas as pd

from .common import baseline_color


def overhead_table(df: pd.DataFrame) -> pd.DataFrame:
    """The columns shown in the overhead table."""
    cols = ["variant", "datapath", "n_runs", "throughput_mbps", "throughput_ci95_mbps", "host_throughput_mbps",
            "host_n_runs", "overhead_pct", "verdict"]
    return df[cols].reset_index(drop=True)


def throughput_chart(df: pd.DataFrame) -> alt.LayerChart:
    """Mean throughput per CNI/mode with 95% CI error bars; the host baseline bar and a dashed rule mark it."""
    order = df["variant"].tolist()
    base = alt.Chart(df).encode(x=alt.X("variant:N", sort=order, title="CNI / mode",
                                        axis=alt.Axis(labelAngle=-30)))
    bars = base.mark_bar().encode(
        y=alt.Y("throughput_mbps:Q", title="mean throughput (Mbit/s)"),
        color=baseline_color("is_host_baseline", "#1f77b4"),
        tooltip=[alt.Tooltip("variant:N"), alt.Tooltip("datapath:N"), alt.Tooltip("n_runs:Q"),
                 alt.Tooltip("throughput_mbps:Q", format=".1f"), alt.Tooltip("throughput_ci95_mbps:Q", format=".1f"),
                 alt.Tooltip("overhead_pct:Q", format=".1f")],
    )
    errors = base.mark_errorbar(ticks={"size": 24}, thickness=1.5, color="black").encode(
        y=alt.Y("ci_low_mbps:Q", title="mean throughput (Mbit/s)"), y2="ci_high_mbps:Q")
    layers = [bars, errors]
    host = df.loc[df["is_host_baseline"], "throughput_mbps"]
    if not host.empty:
        rule = pd.DataFrame({"host_throughput_mbps": [float(host.iloc[0])], "label": ["host baseline"]})
        layers.append(alt.Chart(rule).mark_rule(strokeDash=[6, 4], color="#d62728")
                      .encode(y="host_throughput_mbps:Q", tooltip=["label:N", "host_throughput_mbps:Q"]))
    return alt.layer(*layers).properties(height=380, title="iperf3 throughput (mean, 95% CI), host baseline dashed")
