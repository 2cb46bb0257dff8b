"""Queries of the portal's Distributions page (marts only): Kubernetes distributions against each other for the same
CNI mode on real clusters (cmp_distributions), and, on the testbed, pod-to-service per service proxy
(cmp_service_proxies) with the proxy each distribution runs by default (catalog/service_proxies.yaml)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from edgebench.plan import catalog

from edgebench.results.report.marts import Choices

from .common import BASELINE_COLOR, LAB_FILTER, SERIES_COLORS

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
PROXY_REFERENCE = "iptables"
METRIC_LABELS = {"throughput_mbps": "throughput (Mbit/s)", "latency_us": "latency: TCP mean RTT (us)",
                 "cpu_pct": "CPU (% of one CPU)", "rss_mb": "RAM (MB)"}
_METRIC_ORDER = list(METRIC_LABELS)


def distribution_references(con, substrate: str, **filters) -> list[str]:
    where, params = DISTRIBUTIONS.where(substrate, filters)
    rows = con.execute(f"select distinct reference_distribution from cmp_distributions where {where} "
                       "order by reference_distribution <> 'kubeadm', reference_distribution", params).fetchall()
    return [r[0] for r in rows]


def is_one_machine(substrate: str) -> bool:
    """A scope of two substrates measured on one machine in one boot (cmp_distributions)."""
    return "(one machine, boot " in substrate


def distribution_comparison(con, substrate: str, reference: str, **filters) -> pd.DataFrame:
    """Every metric of every distribution against `reference` for the chosen conditions: n, mean, 95% CI, the
    difference with its 95% interval and the verdict; the reference first."""
    where, params = DISTRIBUTIONS.where(substrate, filters)
    df = con.execute(f"""
        select metric, component, phase, distribution, run_substrates, service_proxy_mode, n_runs, mean, ci95,
               reference_n_runs,
               reference_mean, diff, diff_ci95, diff_pct, verdict, is_higher_better
        from cmp_distributions where {where} and reference_distribution = ?
        order by distribution <> ?, distribution""", [*params, reference, reference]).df()
    df["metric_label"] = df["metric"].map(METRIC_LABELS)
    df["what"] = df["metric_label"] + df.apply(
        lambda r: "" if r["component"] == "iperf3" else f", {r['component']}, {r['phase']}", axis=1)
    df["_order"] = df["metric"].map(_METRIC_ORDER.index)
    return df.sort_values(["_order", "component", "phase"], kind="stable").drop(columns="_order").reset_index(drop=True)


def proxy_comparison(con, substrate: str, **filters) -> pd.DataFrame:
    """cmp_service_proxies rows for the chosen conditions: iptables (the reference) first, with CI bounds."""
    where, params = PROXIES.where(substrate, filters)
    df = con.execute(f"""
        select service_proxy_mode, datapath, n_runs, throughput_mbps, throughput_ci95_mbps, reference_n_runs,
               reference_throughput_mbps, diff_mbps, diff_ci95_mbps, diff_pct, verdict, is_reference,
               duration_s, iperf3_bitrate
        from cmp_service_proxies where {where}
        order by not is_reference, service_proxy_mode""", params).df()
    df["ci_low_mbps"] = df["throughput_mbps"] - df["throughput_ci95_mbps"].fillna(0)
    df["ci_high_mbps"] = df["throughput_mbps"] + df["throughput_ci95_mbps"].fillna(0)
    return df


def proxy_unsupported(con, substrate: str, **filters) -> pd.DataFrame:
    """Pod-to-service runs of a service-proxy cell that were not measured (unsupported / failed), with the reason."""
    where, params = PROXIES.where(substrate, filters)
    return con.execute(f"""
        select service_proxy_mode, status, cni, cni_mode, protocol, placement, repetition, error, run_id
        from fct_iperf3_runs
        where path = 'pod-to-service' and status <> 'ok' and service_proxy <> 'default' and {where}
        order by service_proxy_mode, repetition""", params).df()


def default_proxies() -> pd.DataFrame:
    """The service proxy each distribution runs by default (catalog/service_proxies.yaml), with how to change it."""
    table = catalog.service_proxies()
    return pd.DataFrame([{"distribution": d, "default proxy": e["default"],
                          "proxy title": table["modes"][e["default"]]["title"], "how it is set": e["how"],
                          "checked": e["verified"], "sources": ", ".join(e["sources"])}
                         for d, e in table["distributions"].items()])


def proxy_stands_for(mode: str) -> str:
    """Which distributions (by default) a proxy mode stands for, in words."""
    dists = [d for d, e in catalog.service_proxies()["distributions"].items() if e["default"] == mode]
    if mode == "dnat":
        return "none (edgebench's plain testbed rule)"
    if mode == "none":
        return "any distribution with a CNI mode that replaces kube-proxy (Cilium KPR, Calico eBPF)"
    return ", ".join(dists) + " (default)" if dists else "any distribution configured for it"


def proxy_chart(df: pd.DataFrame) -> alt.Chart:
    """Mean throughput per proxy mode with its 95% CI, the iptables reference in the baseline's grey."""
    modes = list(df["service_proxy_mode"])
    others = iter(SERIES_COLORS * 2)
    scale = alt.Scale(domain=modes, range=[BASELINE_COLOR if m == PROXY_REFERENCE else next(others) for m in modes])
    base = alt.Chart(df).encode(y=alt.Y("service_proxy_mode:N", sort=modes, title=None))
    bars = base.mark_bar().encode(
        x=alt.X("throughput_mbps:Q", title="mean pod-to-service throughput (Mbit/s)"),
        color=alt.Color("service_proxy_mode:N", scale=scale, legend=None),
        tooltip=["service_proxy_mode:N", alt.Tooltip("throughput_mbps:Q", format=".1f"),
                 alt.Tooltip("throughput_ci95_mbps:Q", format=".1f"), "n_runs:Q", "verdict:N"])
    errs = base.mark_errorbar().encode(x="ci_low_mbps:Q", x2="ci_high_mbps:Q")
    return (bars + errs).properties(height=alt.Step(32))


def distribution_chart(df: pd.DataFrame, reference: str) -> alt.Chart:
    """One metric: mean per distribution with its 95% CI, the reference in the baseline's grey."""
    df = df.assign(ci_low=df["mean"] - df["ci95"].fillna(0), ci_high=df["mean"] + df["ci95"].fillna(0))
    dists = list(df["distribution"])
    others = iter(SERIES_COLORS * 2)
    scale = alt.Scale(domain=dists, range=[BASELINE_COLOR if d == reference else next(others) for d in dists])
    base = alt.Chart(df).encode(y=alt.Y("distribution:N", sort=dists, title=None))
    bars = base.mark_bar().encode(x=alt.X("mean:Q", title=df["what"].iloc[0]),
                                  color=alt.Color("distribution:N", scale=scale, legend=None),
                                  tooltip=["distribution:N", alt.Tooltip("mean:Q", format=".1f"),
                                           alt.Tooltip("ci95:Q", format=".1f"), "n_runs:Q", "verdict:N"])
    return (bars + base.mark_errorbar().encode(x="ci_low:Q", x2="ci_high:Q")).properties(height=alt.Step(32))
