"""Queries and charts of the portal's resources page (marts only)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from edgebench.plan.dimensions import OWN_CORES

from edgebench.results.report.marts import Choices

from .common import FILTERS, baseline_color


# the CNI datapaths page's conditions; resources compare the machine's own cores only (cmp_resources_vs_host holds
# the OWN_CORES dimension at its neutral value: no filter on it)
RESOURCE_FILTERS = {"workload": "Workload", **{k: v for k, v in FILTERS.items() if k != OWN_CORES.warehouse_column}}
RESOURCES = Choices("cmp_resources_vs_host", RESOURCE_FILTERS)


def resource_usage(con, substrate: str, **filters) -> pd.DataFrame:
    """cmp_resources_vs_host rows (every component) for one substrate and the chosen conditions."""
    where, params = RESOURCES.where(substrate, filters)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, *
        from cmp_resources_vs_host where {where}
        order by component, is_host_baseline desc, variant""", params).df()


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


def resource_efficiency(con, substrate: str, component: str, **filters) -> pd.DataFrame:
    """cmp_resources_efficiency rows (CPU per Gbit/s or per 1,000 messages/s, beside the host network's) for one
    substrate, component and the chosen conditions; empty when the warehouse predates the mart."""
    where, params = RESOURCES.where(substrate, filters)
    try:
        return con.execute(f"""
            select cni || ' / ' || cni_mode as variant, *
            from cmp_resources_efficiency where {where} and component = ?
            order by is_host_baseline desc, variant, path, placement, length_bytes""", [*params, component]).df()
    except Exception as exc:  # noqa: BLE001 - a warehouse built before the mart existed
        if "cmp_resources_efficiency" in str(exc):
            return pd.DataFrame()
        raise
