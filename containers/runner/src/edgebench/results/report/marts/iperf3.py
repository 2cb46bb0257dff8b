"""The iperf3 and sockperf marts and what is measured beside them: cmp_iperf3_vs_host and fct_iperf3_runs (the CNI
datapaths page), cmp_sockperf_vs_host (request / response), cmp_resources_vs_host and cmp_resources_efficiency
(the Resources page), cmp_tuning_vs_host (the Tuning efficiency page)."""

from __future__ import annotations

from edgebench.plan.dimensions import OWN_CORES
from edgebench.results.report.marts import FILTERS, LAB_FILTER, Choices, empty_frame, frame

# the CNI datapaths page's selection: substrates with iperf3 runs, the one with most runs first (the page's default),
# then the conditions, the untouched one first (every combination offered exists; setups that only failed count too)
IPERF3 = Choices("fct_iperf3_runs", FILTERS)
# the Resources page's conditions: the CNI datapaths page's; resources compare the machine's own cores only
# (cmp_resources_vs_host holds the OWN_CORES dimension at its neutral value: no filter on it)
RESOURCE_FILTERS = {"workload": "Workload", **{k: v for k, v in FILTERS.items() if k != OWN_CORES.warehouse_column}}
RESOURCES = Choices("cmp_resources_vs_host", RESOURCE_FILTERS)
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
# the Tuning efficiency page's selection; its queries may be narrowed by the MTU too (chosen after the filters)
TUNING = Choices("cmp_tuning_vs_host", TUNING_FILTERS, extra=("tuning_mtu",))


# ---- CNI datapaths ---------------------------------------------------------------------------------------------------
def overhead(con, substrate: str, **filters):
    """cmp_iperf3_vs_host rows for one substrate and fixed conditions, host first, with a `variant` label and
    CI bounds for error bars."""
    where, params = IPERF3.where(substrate, filters)
    df = frame(con, f"""
        select cni || ' / ' || cni_mode as variant, *
        from cmp_iperf3_vs_host where {where}
        order by is_host_baseline desc, throughput_mbps desc""", params)
    df["ci_low_mbps"] = df["throughput_mbps"] - df["throughput_ci95_mbps"].fillna(0)
    df["ci_high_mbps"] = df["throughput_mbps"] + df["throughput_ci95_mbps"].fillna(0)
    return df


def problem_runs(con, substrate: str, **filters):
    """Failed and unsupported iperf3 runs with their reasons, same substrate and conditions."""
    where, params = IPERF3.where(substrate, filters)
    return frame(con, f"""
        select status, cni, cni_mode, datapath, protocol, path, placement, length_bytes, repetition, error,
               attempt, sweep_id, run_id, started_at
        from fct_iperf3_runs where status <> 'ok' and {where}
        order by status, cni, cni_mode, repetition""", params)


_WORKLOAD_COLUMNS = ("protocol", "path", "placement", "length_bytes")


def request_response(con, substrate: str, **filters):
    """cmp_sockperf_vs_host rows (request/response latency, half round trips) for one substrate and the page's cell
    conditions (its iperf3 protocol, path, placement and length do not apply), host first per configuration."""
    where, params = IPERF3.where(substrate, {k: v for k, v in filters.items() if k not in _WORKLOAD_COLUMNS})
    return frame(con, f"""
        select cni || ' / ' || cni_mode as variant, protocol, path, placement, length_bytes, n_runs,
               latency_p50_us, latency_p50_ci95_us, latency_p99_us, host_latency_p50_us, host_n_runs,
               latency_p50_overhead_pct, latency_p50_overhead_ci95_pct, verdict
        from cmp_sockperf_vs_host where {where}
        order by protocol, path, placement, length_bytes, is_host_baseline desc, latency_p50_us""", params)


# ---- resources -------------------------------------------------------------------------------------------------------
def resource_usage(con, substrate: str, **filters):
    """cmp_resources_vs_host rows (every component) for one substrate and the chosen conditions."""
    where, params = RESOURCES.where(substrate, filters)
    return frame(con, f"""
        select cni || ' / ' || cni_mode as variant, *
        from cmp_resources_vs_host where {where}
        order by component, is_host_baseline desc, variant""", params)


def resource_efficiency(con, substrate: str, component: str, **filters):
    """cmp_resources_efficiency rows (CPU per Gbit/s or per 1,000 messages/s, beside the host network's) for one
    substrate, component and the chosen conditions; empty when the warehouse predates the mart."""
    where, params = RESOURCES.where(substrate, filters)
    try:
        return frame(con, f"""
            select cni || ' / ' || cni_mode as variant, *
            from cmp_resources_efficiency where {where} and component = ?
            order by is_host_baseline desc, variant, path, placement, length_bytes""", [*params, component])
    except Exception as exc:  # noqa: BLE001 - a warehouse built before the mart existed
        if "cmp_resources_efficiency" in str(exc):
            return empty_frame()
        raise


# ---- tuning ----------------------------------------------------------------------------------------------------------
def cmp_tuning_vs_host(con, substrate: str, **filters):
    """cmp_tuning_vs_host rows for one substrate and the chosen conditions (tuning_mtu may be given too)."""
    where, params = TUNING.where(substrate, filters)
    return frame(con, f"""
        select cni || ' / ' || cni_mode as variant, *
        from cmp_tuning_vs_host where {where}
        order by is_host_baseline desc, variant, tuning_profile <> 'default_settings', tuning_profile,
                 tuning_mtu""", params)
