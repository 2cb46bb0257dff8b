"""Queries and charts of the portal's tuning efficiency page (marts only)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from edgebench.results.report.marts import Choices

from .common import LAB_FILTER


TUNING_FILTERS = {
    **LAB_FILTER,
    "workload": "Workload",
    "protocol": "Protocol",
    "length_bytes": "Packet size (bytes)",
    "path": "Path",
    "placement": "Placement",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
}
# the page's selection; its queries may be narrowed by the MTU too (chosen after the filters)
TUNING = Choices("cmp_tuning_vs_host", TUNING_FILTERS, extra=("tuning_mtu",))
TUNING_METRICS = {"throughput_efficiency_pct": "Throughput efficiency (CNI / host x 100)",
                  "latency_efficiency_pct": "Latency efficiency, DDS p50 (host / CNI x 100)"}


def cmp_tuning_vs_host(con, substrate: str, **filters) -> pd.DataFrame:
    """cmp_tuning_vs_host rows for one substrate and the chosen conditions (tuning_mtu may be given too)."""
    where, params = TUNING.where(substrate, filters)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, *
        from cmp_tuning_vs_host where {where}
        order by is_host_baseline desc, variant, tuning_profile <> 'default_settings', tuning_profile,
                 tuning_mtu""", params).df()


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
