"""The DDS marts: cmp_dds_vs_host and the runs of fct_dds_latency and fct_dds_throughput (the DDS page)."""

from __future__ import annotations

from edgebench.plan.dimensions import warehouse_columns
from edgebench.results.report.marts import DIMENSION_FILTERS, LAB_FILTER, Choices, frame

# Conditions the DDS page holds fixed (besides substrate): column -> label
DDS_FILTERS = {
    **LAB_FILTER,
    "placement": "Placement",
    "security": "Security",
    "batching": "Batching",
    "distribution": "Distribution",
    **DIMENSION_FILTERS,
}
# every DDS run: the cell configuration columns (edgebench/plan/dimensions.py), then the DDS ones
DDS_COLUMNS = (f"{', '.join(warehouse_columns())}, placement, security, batching, length_bytes, reliability, transport, "
               "subscribers, discovery, repetition, status, error, attempt, sweep_id, run_id, started_at")
DDS_RUNS = (f"(select {DDS_COLUMNS}, 'latency' as dds_mode from fct_dds_latency union all "
            f"select {DDS_COLUMNS}, 'throughput' from fct_dds_throughput)")
# the DDS page's selection: substrates with DDS runs (any status), most runs first; values with most ok runs first
DDS = Choices(DDS_RUNS, DDS_FILTERS, order="most_ok")


def dds_overhead(con, substrate: str, **filters):
    """cmp_dds_vs_host rows for one substrate and fixed conditions, with a `variant` label."""
    where, params = DDS.where(substrate, filters)
    return frame(con, f"""
        select cni || ' / ' || cni_mode as variant, *
        from cmp_dds_vs_host where {where}
        order by dds_mode, is_host_baseline desc, cni, cni_mode, length_bytes, subscribers""", params)


def dds_problem_runs(con, substrate: str, **filters):
    """Failed and unsupported DDS runs with their reasons."""
    where, params = DDS.where(substrate, filters)
    return frame(con, f"""
        select status, dds_mode, cni, cni_mode, datapath, length_bytes, reliability, transport, subscribers,
               security, repetition, error, attempt, sweep_id, run_id, started_at
        from {DDS_RUNS} where status <> 'ok' and {where}
        order by status, cni, cni_mode, dds_mode, length_bytes, repetition""", params)
