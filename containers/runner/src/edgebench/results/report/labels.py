"""How results are named wherever they are shown (terminal summaries and the portal), so a label means the same
everywhere."""
from __future__ import annotations

# intercluster_implementation -> what follows the entry in a label; an emulated tool is a model of its data plane
# and is never shown under the tool's bare name
_IMPLEMENTATION_SUFFIX = {"baseline": "", "kernel": " (kernel)", "emulated": " (emulated)", "installed": ""}
NONE_LABEL = "none (one cluster)"


def intercluster_label(entry: str, implementation: str | None) -> str:
    """'none (one cluster)' for the baseline; else the entry (tool:mode) with ' (emulated)' for a model of the
    tool's data plane, ' (kernel)' for its data path built as kernel state without the tool's control plane, and
    nothing for the installed tool. An unknown implementation is named, never dropped."""
    if entry == "none":
        return NONE_LABEL
    suffix = _IMPLEMENTATION_SUFFIX.get(implementation or "", f" ({implementation})" if implementation else "")
    return f"{entry}{suffix}"


# ---- CNI version regression cards (cmp_cni_version_regressions) ------------------------------------------------
METRIC_LABELS = {
    "throughput_mbps": "throughput Mbit/s",
    "jitter_ms": "jitter ms",
    "lost_percent": "loss %",
    "latency_p50_us": "latency p50 us",
    "latency_p99_us": "latency p99 us",
    "response_p50_ms": "response p50 ms",
    "response_p95_ms": "response p95 ms",
    "cpu_workload_pct": "CPU % workload",
    "rss_workload_mb": "RSS MB workload",
    "cpu_cni_pct": "CPU % CNI",
    "rss_cni_mb": "RSS MB CNI",
    "cpu_system_pct": "CPU % system",
    "rss_system_mb": "RSS MB system",
}


def metric_label(metric: str, higher_is_better: bool | None = None) -> str:
    """'throughput Mbit/s (higher better)', 'latency p99 us (lower better)'; an unknown metric by its name."""
    label = METRIC_LABELS.get(metric, metric)
    if higher_is_better is None:
        return label
    return f"{label} ({'higher' if higher_is_better else 'lower'} better)"


def version_card_title(card: dict) -> str:
    """'calico:vxlan v3.30.0 -> v3.30.2 (substrate local, versions requested, not installed)': the card's CNI mode,
    the two versions compared and how they are known."""
    return (f"{card['cni']}:{card['cni_mode']} {card['previous_version']} -> {card['new_version']} "
            f"(substrate {card['substrate']}, {version_source_text(card)})")


def version_source_text(card: dict) -> str:
    source = card.get("version_source")
    if source == "requested":
        return "versions requested, not installed"
    if source == "installed":
        return "versions installed"
    return (f"versions: {card['previous_version']} {card.get('previous_version_source')}, "
            f"{card['new_version']} {card.get('new_version_source')}")


def version_card_caveat(card: dict) -> str | None:
    """What the card cannot show, or None: testbed cards measure the same datapath for both versions; a version
    that was only requested on a cluster may not be the one installed."""
    if card.get("substrate") == "local":
        return ("No CNI software of either version ran: the testbed rebuilds the same kernel datapath for this CNI "
                "mode whatever version triggered the rerun, so differences here are run-to-run noise or changes of "
                "the machine or of edgebench, not of the CNI's code.")
    if card.get("version_source") != "installed":
        return ("At least one version was requested, not reported installed by the cluster: the providers install "
                "the catalog's pinned version, so those runs may not have run the version they are filed under.")
    return None


def diff_pct_text(diff_pct, low_pct, high_pct, diff=None, unit: str = "") -> str:
    """'+5.0 % [-7.8, +17.9]'; without a previous mean of 0 the difference in its unit; '(n < 2)' without an
    interval."""
    def num(v):
        return f"{v:+.2f}" if abs(v) < 1 else f"{v:+.1f}"

    if diff_pct is None:
        if diff is None:
            return "-"
        return f"{diff:+.4g} {unit}".strip() + " (no %: previous mean 0)"
    if low_pct is None or high_pct is None:
        return f"{num(diff_pct)} % (n < 2)"
    return f"{num(diff_pct)} % [{num(low_pct)}, {num(high_pct)}]"
