"""Tables and charts of the portal's Distributions page: Kubernetes distributions against each other for the same
CNI mode on real clusters, and, on the testbed, pod-to-service per service proxy with the proxy each distribution
runs by default (catalog/service_proxies.yaml); its queries are edgebench.results.report.marts.distributions."""
from __future__ import annotations

import altair as alt
import pandas as pd

from edgebench.plan import catalog
from edgebench.results.report.marts.distributions import distribution_rows

from .common import BASELINE_COLOR, SERIES_COLORS

PROXY_REFERENCE = "iptables"
METRIC_LABELS = {"throughput_mbps": "throughput (Mbit/s)", "latency_us": "latency: TCP mean RTT (us)",
                 "cpu_pct": "CPU (% of one CPU)", "rss_mb": "RAM (MB)"}
_METRIC_ORDER = list(METRIC_LABELS)


def is_one_machine(substrate: str) -> bool:
    """A scope of two substrates measured on one machine in one boot (cmp_distributions)."""
    return "(one machine, boot " in substrate


def distribution_comparison(con, substrate: str, reference: str, **filters) -> pd.DataFrame:
    """Every metric of every distribution against `reference` for the chosen conditions: n, mean, 95% CI, the
    difference with its 95% interval and the verdict; the reference first."""
    df = distribution_rows(con, substrate, reference, **filters)
    df["metric_label"] = df["metric"].map(METRIC_LABELS)
    df["what"] = df["metric_label"] + df.apply(
        lambda r: "" if r["component"] == "iperf3" else f", {r['component']}, {r['phase']}", axis=1)
    df["_order"] = df["metric"].map(_METRIC_ORDER.index)
    return df.sort_values(["_order", "component", "phase"], kind="stable").drop(columns="_order").reset_index(drop=True)


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
