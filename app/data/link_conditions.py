"""Queries and charts of the portal's link conditions (netem) page (marts only)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from edgebench.results.report.marts import Choices

from .common import LAB_FILTER


NETEM_FILTERS = {**LAB_FILTER, "distribution": "Distribution", "tuning_profile": "Tuning profile"}
# the page's selection: substrates with runs of any workload, most runs first
NETEM = Choices("fct_runs", NETEM_FILTERS)

# metric -> (label, unit, SQL source producing: variant, cni, netem_scenario, detail, value); one-cluster runs only
# (runs across an inter-cluster tool are compared on their own page)
_NETEM_METRICS = {
    "iperf3_throughput": ("iperf3 throughput", "Mbit/s", """
        select cni, cni_mode, netem_scenario, protocol || ' ' || length_bytes || ' B, ' || path || ', ' || placement
               as detail, throughput_mbps as value, substrate, lab, distribution, tuning_profile
        from fct_iperf3_runs where status = 'ok' and is_valid and intercluster = 'none'"""),
    "iperf3_rtt": ("iperf3 TCP mean RTT", "ms", """
        select cni, cni_mode, netem_scenario, protocol || ' ' || length_bytes || ' B, ' || path || ', ' || placement,
               mean_rtt_us / 1000, substrate, lab, distribution, tuning_profile
        from fct_iperf3_runs where status = 'ok' and is_valid and intercluster = 'none' and mean_rtt_us is not null"""),
    "dds_p50": ("DDS latency p50", "µs", """
        select cni, cni_mode, netem_scenario, length_bytes || ' B, ' || reliability || ', ' || transport || ', '
               || security, latency_p50_us, substrate, lab, distribution, tuning_profile
        from fct_dds_latency where status = 'ok' and is_valid and intercluster = 'none'"""),
    "dds_p90": ("DDS latency p90", "µs", """
        select cni, cni_mode, netem_scenario, length_bytes || ' B, ' || reliability || ', ' || transport || ', '
               || security, latency_p90_us, substrate, lab, distribution, tuning_profile
        from fct_dds_latency where status = 'ok' and is_valid and intercluster = 'none'"""),
    "http_p50": ("HTTP response p50", "ms", """
        select cni, cni_mode, netem_scenario, service || ' ' || length_bytes || ' B, ' || path || ', ' || placement,
               response_p50_ms, substrate, lab, distribution, tuning_profile
        from fct_http_runs where status = 'ok' and is_valid and intercluster = 'none'"""),
    "http_p90": ("HTTP response p90", "ms", """
        select cni, cni_mode, netem_scenario, service || ' ' || length_bytes || ' B, ' || path || ', ' || placement,
               response_p90_ms, substrate, lab, distribution, tuning_profile
        from fct_http_runs where status = 'ok' and is_valid and intercluster = 'none'"""),
}
NETEM_METRICS = {k: f"{label} ({unit})" for k, (label, unit, _) in _NETEM_METRICS.items()}


def netem_scenarios(con, substrate: str, **filters) -> pd.DataFrame:
    """The scenarios on a substrate with their parameters as read back (distinct combinations; more than one
    row per scenario means its parameters changed between runs) and run counts per workload."""
    where, params = NETEM.where(substrate, filters)
    return con.execute(f"""
        select netem_scenario, netem_mechanism, netem_delay_ms, netem_jitter_ms, netem_loss_pct, netem_rate_mbit,
               netem_scope,
               case when netem_delay_ms is null then 'not recorded (older runs)' else 'read back' end as parameters,
               count(*) as runs,
               count(*) filter (where workload = 'iperf3') as iperf3_runs,
               count(*) filter (where workload = 'dds')    as dds_runs,
               count(*) filter (where workload = 'http')   as http_runs
        from fct_runs where {where}
        group by 1, 2, 3, 4, 5, 6, 7, 8
        order by netem_scenario <> 'none', coalesce(netem_delay_ms, 0), coalesce(netem_loss_pct, 0),
                 netem_scenario""", params).df()


def netem_metric(con, substrate: str, metric: str, **filters) -> pd.DataFrame:
    """One metric per CNI / mode, configuration (detail) and netem scenario: mean over ok + valid runs."""
    if metric not in _NETEM_METRICS:
        raise ValueError(f"unknown metric: {metric}")
    where, params = NETEM.where(substrate, filters)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, netem_scenario, detail, avg(value) as value,
               min(value) as min_value, max(value) as max_value, count(*) as n_runs
        from ({_NETEM_METRICS[metric][2]}) as runs (cni, cni_mode, netem_scenario, detail, value, substrate, lab,
                                                    distribution, tuning_profile)
        where {where} and value is not null
        group by cni, cni_mode, netem_scenario, detail
        order by detail, cni = 'host' desc, variant, netem_scenario""", params).df()


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
