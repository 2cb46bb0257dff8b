"""The distribution marts: Kubernetes distributions against each other for the same CNI mode on real clusters
(cmp_distributions) and, on the testbed, pod-to-service per service proxy (cmp_service_proxies): the Distributions
page."""

from __future__ import annotations

from edgebench.results.report.marts import LAB_FILTER, Choices, frame

# conditions the cluster comparison holds fixed (besides substrate); the distribution varies
DISTRIBUTION_FILTERS = {
    **LAB_FILTER,
    "cni": "CNI",
    "cni_mode": "CNI mode",
    "protocol": "Protocol",
    "path": "Path",
    "placement": "Placement",
    "length_bytes": "Length (bytes)",
    "netem_scenario": "Netem scenario",
    "tuning_profile": "Tuning profile",
}
# conditions the service-proxy comparison holds fixed; the proxy mode varies
PROXY_FILTERS = {
    **LAB_FILTER,
    "cni": "CNI",
    "cni_mode": "CNI mode",
    "protocol": "Protocol",
    "placement": "Placement",
    "length_bytes": "Length (bytes)",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
    "tuning_profile": "Tuning profile",
}
# the two selections: real-cluster substrates with distributions to compare (the testbed has none), most rows first
# (a one-machine scope, 'kind + ssh (one machine, boot ...)', where kind and the local kubeadm lab ran in one boot);
# substrates with service-proxy comparisons
DISTRIBUTIONS = Choices("cmp_distributions", DISTRIBUTION_FILTERS)
PROXIES = Choices("cmp_service_proxies", PROXY_FILTERS)


def distribution_references(con, substrate: str, **filters) -> list[str]:
    """The reference distributions of the chosen conditions, kubeadm first."""
    where, params = DISTRIBUTIONS.where(substrate, filters)
    rows = con.execute(f"select distinct reference_distribution from cmp_distributions where {where} "
                       "order by reference_distribution <> 'kubeadm', reference_distribution", params).fetchall()
    return [r[0] for r in rows]


def distribution_rows(con, substrate: str, reference: str, **filters):
    """Every metric of every distribution against `reference` for the chosen conditions: n, mean, 95% CI, the
    difference with its 95% interval and the verdict; the reference first."""
    where, params = DISTRIBUTIONS.where(substrate, filters)
    return frame(con, f"""
        select metric, component, phase, distribution, run_substrates, service_proxy_mode, n_runs, mean, ci95,
               reference_n_runs,
               reference_mean, diff, diff_ci95, diff_pct, verdict, is_higher_better
        from cmp_distributions where {where} and reference_distribution = ?
        order by distribution <> ?, distribution""", [*params, reference, reference])


def proxy_comparison(con, substrate: str, **filters):
    """cmp_service_proxies rows for the chosen conditions: iptables (the reference) first, with CI bounds."""
    where, params = PROXIES.where(substrate, filters)
    df = frame(con, f"""
        select service_proxy_mode, datapath, n_runs, throughput_mbps, throughput_ci95_mbps, reference_n_runs,
               reference_throughput_mbps, diff_mbps, diff_ci95_mbps, diff_pct, verdict, is_reference,
               duration_s, iperf3_bitrate
        from cmp_service_proxies where {where}
        order by not is_reference, service_proxy_mode""", params)
    df["ci_low_mbps"] = df["throughput_mbps"] - df["throughput_ci95_mbps"].fillna(0)
    df["ci_high_mbps"] = df["throughput_mbps"] + df["throughput_ci95_mbps"].fillna(0)
    return df


def proxy_unsupported(con, substrate: str, **filters):
    """Pod-to-service runs of a service-proxy cell that were not measured (unsupported / failed), with the reason."""
    where, params = PROXIES.where(substrate, filters)
    return frame(con, f"""
        select service_proxy_mode, status, cni, cni_mode, protocol, placement, repetition, error, run_id
        from fct_iperf3_runs
        where path = 'pod-to-service' and status <> 'ok' and service_proxy <> 'default' and {where}
        order by service_proxy_mode, repetition""", params)
