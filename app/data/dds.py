"""Tables and charts of the portal's DDS page; its queries are edgebench.results.report.marts.dds."""
from __future__ import annotations

import altair as alt
import pandas as pd

from .common import baseline_scale

HOST_VARIANT = "host / host"  # the variant label of the host-network baseline rows


def dds_overhead_table(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Table I/II style: one row per CNI / mode (host excluded), one column per payload. Each cell is the overhead in
    percent with the half-width of its 95% interval, the verdict against the host and the run counts (CNI/host),
    e.g. "25.0 ± 4.5 worse (n 3/3)". metric: latency_p90_overhead_pct or throughput_overhead_pct."""
    cni = df[~df["is_host_baseline"] & df[metric].notna()]
    if cni.empty:
        return pd.DataFrame(columns=["variant"])
    ci = metric.replace("_overhead_pct", "_overhead_ci95_pct")
    cells = cni.assign(cell=[overhead_cell(r[metric], r[ci], r["verdict"], r["n_runs"], r["host_n_runs"])
                             for _, r in cni.iterrows()])
    table = cells.pivot_table(index="variant", columns="length_bytes", values="cell", aggfunc="first")
    table.columns = [f"{int(c)} B" for c in table.columns]
    return table.reset_index()


def overhead_cell(value, ci95, verdict, n, host_n) -> str:
    """'25.0 ± 4.5 worse (n 3/3)'; without an interval (a side with one run) '25.0, n < 2 (n 1/3)'."""
    interval = f" ± {ci95:.1f}" if pd.notna(ci95) else ""
    return f"{value:.1f}{interval} {verdict if isinstance(verdict, str) else 'no verdict'} (n {int(n)}/{int(host_n)})"


def dds_transport_table(df: pd.DataFrame) -> pd.DataFrame:
    """Throughput rows of one subscriber count as a table: per CNI / mode and payload, unicast and multicast
    throughput (mean ± 95% half-width, n runs), the host baseline first."""
    rows = df.assign(cell=[f"{r['throughput_mbps']:.1f}"
                           + (f" ± {r['throughput_ci95_mbps']:.1f}" if pd.notna(r["throughput_ci95_mbps"]) else "")
                           + f" (n {int(r['n_runs'])})" for _, r in df.iterrows()])
    table = rows.pivot_table(index=["variant", "length_bytes"], columns="transport", values="cell",
                             aggfunc="first").reset_index()
    table.columns.name = None
    table = table.rename(columns={"length_bytes": "payload (B)", "unicast": "unicast Mbit/s",
                                  "multicast": "multicast Mbit/s"})
    return table.sort_values(["variant", "payload (B)"], key=lambda c: c.map(
        lambda v: (v != HOST_VARIANT, v) if isinstance(v, str) else (False, v))).reset_index(drop=True)


def dds_line_chart(df: pd.DataFrame, x: str, y: str, dash: str, title: str, y_title: str,
                   x_title: str) -> alt.Chart:
    """Mean per configuration: one line per CNI / mode (the host baseline in the baseline grey, first), dashed by
    `dash` (reliability or transport)."""
    labels = sorted(df["variant"].unique(), key=lambda v: (v != HOST_VARIANT, v))
    return alt.Chart(df).mark_line(point=True).encode(
        x=alt.X(f"{x}:O", title=x_title),
        y=alt.Y(f"{y}:Q", title=y_title),
        color=alt.Color("variant:N", title="CNI / mode", scale=baseline_scale(labels, HOST_VARIANT), sort=labels),
        strokeDash=alt.StrokeDash(f"{dash}:N", title=dash),
        tooltip=["variant:N", f"{dash}:N", f"{x}:O", alt.Tooltip(f"{y}:Q", format=".1f"), "n_runs:Q",
                 "discovery:N"],
    ).properties(height=320, title=title)
