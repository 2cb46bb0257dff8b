"""Queries and charts of the portal's DDS page (marts only)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from .common import _filter_values, _substrates, _where_in


# Conditions the DDS page holds fixed (besides substrate): column -> label
DDS_FILTERS = {
    "placement": "Placement",
    "security": "Security",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
    "tuning_profile": "Tuning profile",
}
_DDS_RUNS = """(select substrate, distribution, netem_scenario, tuning_profile, placement, security, cni, cni_mode,
                       datapath, length_bytes, reliability, transport, subscribers, discovery, repetition, status,
                       error, attempt, sweep_id, run_id, started_at, 'latency' as dds_mode from fct_dds_latency
                union all
                select substrate, distribution, netem_scenario, tuning_profile, placement, security, cni, cni_mode,
                       datapath, length_bytes, reliability, transport, subscribers, discovery, repetition, status,
                       error, attempt, sweep_id, run_id, started_at, 'throughput' from fct_dds_throughput)"""


def dds_substrates(con) -> list[str]:
    """Substrates with DDS runs (any status), most runs first."""
    return _substrates(con, _DDS_RUNS)


def dds_filter_values(con, substrate: str, column: str, **chosen) -> list:
    """Values of one DDS filter column on a substrate given the filters chosen before it (all statuses)."""
    return _filter_values(con, _DDS_RUNS, DDS_FILTERS, substrate, column, chosen)


def dds_overhead(con, substrate: str, **filters) -> pd.DataFrame:
    """cmp_dds_vs_host rows for one substrate and fixed conditions, with a `variant` label."""
    where, params = _where_in(substrate, filters, DDS_FILTERS)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, *
        from cmp_dds_vs_host where {where}
        order by dds_mode, is_host_baseline desc, cni, cni_mode, length_bytes, subscribers""", params).df()


def dds_overhead_table(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Table I/II style: one row per CNI / mode (host excluded), one column per payload, overhead in percent.
    metric: latency_p90_overhead_pct or throughput_overhead_pct."""
    cni = df[~df["is_host_baseline"] & df[metric].notna()]
    if cni.empty:
        return pd.DataFrame(columns=["variant"])
    table = cni.pivot_table(index="variant", columns="length_bytes", values=metric, aggfunc="first")
    table.columns = [f"{int(c)} B" for c in table.columns]
    return table.reset_index()


def dds_problem_runs(con, substrate: str, **filters) -> pd.DataFrame:
    """Failed and unsupported DDS runs with their reasons."""
    where, params = _where_in(substrate, filters, DDS_FILTERS)
    return con.execute(f"""
        select status, dds_mode, cni, cni_mode, datapath, length_bytes, reliability, transport, subscribers,
               security, repetition, error, attempt, sweep_id, run_id, started_at
        from {_DDS_RUNS} where status <> 'ok' and {where}
        order by status, cni, cni_mode, dds_mode, length_bytes, repetition""", params).df()


def dds_line_chart(df: pd.DataFrame, x: str, y: str, dash: str, title: str, y_title: str,
                   x_title: str) -> alt.Chart:
    """Mean per configuration: one line per CNI / mode, dashed by `dash` (reliability or transport)."""
    return alt.Chart(df).mark_line(point=True).encode(
        x=alt.X(f"{x}:O", title=x_title),
        y=alt.Y(f"{y}:Q", title=y_title),
        color=alt.Color("variant:N", title="CNI / mode"),
        strokeDash=alt.StrokeDash(f"{dash}:N", title=dash),
        tooltip=["variant:N", f"{dash}:N", f"{x}:O", alt.Tooltip(f"{y}:Q", format=".1f"), "n_runs:Q",
                 "discovery:N"],
    ).properties(height=320, title=title)
