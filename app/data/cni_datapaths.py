"""Queries and charts of the portal's CNI datapaths page (marts only)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from edgebench.results.report.marts import Choices

from .common import FILTERS, baseline_color

# the page's selection: substrates with iperf3 runs, the one with most runs first (the page's default), then the
# conditions, the untouched one first (every combination offered exists; setups that only failed count too)
IPERF3 = Choices("fct_iperf3_runs", FILTERS)


def overhead(con, substrate: str, **filters) -> pd.DataFrame:
    """cmp_iperf3_vs_host rows for one substrate and fixed conditions, host first, with a `variant` label and
    CI bounds for error bars."""
    where, params = IPERF3.where(substrate, filters)
    df = con.execute(f"""
        select cni || ' / ' || cni_mode as variant, *
        from cmp_iperf3_vs_host where {where}
        order by is_host_baseline desc, throughput_mbps desc""", params).df()
    df["ci_low_mbps"] = df["throughput_mbps"] - df["throughput_ci95_mbps"].fillna(0)
    df["ci_high_mbps"] = df["throughput_mbps"] + df["throughput_ci95_mbps"].fillna(0)
    return df


def overhead_table(df: pd.DataFrame) -> pd.DataFrame:
    """The columns shown in the overhead table."""
    cols = ["variant", "datapath", "n_runs", "throughput_mbps", "throughput_ci95_mbps", "host_throughput_mbps",
            "host_n_runs", "overhead_pct", "verdict"]
    return df[cols].reset_index(drop=True)


def problem_runs(con, substrate: str, **filters) -> pd.DataFrame:
    """Failed and unsupported iperf3 runs with their reasons, same substrate and conditions."""
    where, params = IPERF3.where(substrate, filters)
    return con.execute(f"""
        select status, cni, cni_mode, datapath, protocol, path, placement, length_bytes, repetition, error,
               attempt, sweep_id, run_id, started_at
        from fct_iperf3_runs where status <> 'ok' and {where}
        order by status, cni, cni_mode, repetition""", params).df()


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


_WORKLOAD_COLUMNS = ("protocol", "path", "placement", "length_bytes")


def request_response(con, substrate: str, **filters) -> pd.DataFrame:
    """cmp_sockperf_vs_host rows (request/response latency, half round trips) for one substrate and the page's cell
    conditions (its iperf3 protocol, path, placement and length do not apply), host first per configuration."""
    where, params = IPERF3.where(substrate, {k: v for k, v in filters.items() if k not in _WORKLOAD_COLUMNS})
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, protocol, path, placement, length_bytes, n_runs,
               latency_p50_us, latency_p50_ci95_us, latency_p99_us, host_latency_p50_us, host_n_runs,
               latency_p50_overhead_pct, latency_p50_overhead_ci95_pct, verdict
        from cmp_sockperf_vs_host where {where}
        order by protocol, path, placement, length_bytes, is_host_baseline desc, latency_p50_us""", params).df()
