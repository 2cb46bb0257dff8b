"""Tables and charts of the portal's tuning efficiency page; its queries are edgebench.results.report.marts.iperf3."""
from __future__ import annotations

import altair as alt
import pandas as pd


TUNING_METRICS = {"throughput_efficiency_pct": "Throughput efficiency (CNI / host x 100)",
                  "latency_efficiency_pct": "Latency efficiency, DDS p50 (host / CNI x 100)"}


def tuning_heatmap_frame(df: pd.DataFrame, metric: str, by_mtu: bool) -> pd.DataFrame:
    """One cell per CNI / mode x profile (x profile + MTU when by_mtu): the efficiency; where several
    configurations fall into a cell (e.g. DDS reliability / transport), their mean and how many."""
    cni = df[~df["is_host_baseline"] & df[metric].notna()].copy()
    if cni.empty:
        return pd.DataFrame(columns=["variant", "column", "value", "n_configs", "n_runs", "mtus"])
    cni["column"] = cni["tuning_profile"]
    if by_mtu:
        cni["column"] = cni["tuning_profile"] + " · MTU " + cni["tuning_mtu"].astype("Int64").astype(str)
    out = cni.groupby(["variant", "column"], as_index=False).agg(
        value=(metric, "mean"), n_configs=(metric, "size"), n_runs=("n_runs", "sum"),
        mtus=("tuning_mtu", lambda s: ", ".join(str(int(v)) for v in sorted(s.dropna().unique()))))
    return out


def tuning_heatmap(cells: pd.DataFrame, title: str) -> alt.LayerChart:
    """Heatmap CNI / mode x tuning profile, efficiency in %, value written in each cell."""
    columns = sorted(cells["column"].unique(), key=lambda c: (not c.startswith("default_settings"), c))
    base = alt.Chart(cells).encode(
        x=alt.X("column:N", sort=columns, title="tuning profile", axis=alt.Axis(labelAngle=0, labelLimit=400)),
        y=alt.Y("variant:N", title="CNI / mode", axis=alt.Axis(labelLimit=300)))
    rect = base.mark_rect().encode(
        color=alt.Color("value:Q", title="% of host", scale=alt.Scale(scheme="redyellowgreen", domain=[50, 100],
                                                                      clamp=True)),
        tooltip=["variant:N", "column:N", alt.Tooltip("value:Q", format=".1f", title="% of host"),
                 "mtus:N", "n_configs:Q", "n_runs:Q"])
    text = base.mark_text(fontSize=13).encode(text=alt.Text("value:Q", format=".1f"))
    return alt.layer(rect, text).properties(height=alt.Step(44), title=title)
