"""Adaptive repetitions aimed at comparisons (`-p aim=[...]` with repetitions=auto; `edgebench papers run` sets it
from the claims it measures): a variant stops when every aimed comparison it is a side of is settled, instead of
when its comparison with the host is.

An aimed comparison is a published claim's: two subjects (`left`, `right`: {dimension or run parameter: value}, e.g.
{"cni": "flannel", "cni_mode": "host-gw"} against {"cni": "flannel", "cni_mode": "vxlan"}), optional `filters`
(the runs it is about: {"dds_mode": "throughput", "length_bytes": [64, 1024]}), the `metric` it is judged on
(throughput_mbps, latency_p90_us, ...) and, for a claim of equality, its `tolerance_pct`. Its runs pair where
everything but the subjects' keys is the same (workload, path, placement, size, parameters, the cell's other
dimensions); each such group is one comparison, judged by the one rule (results/report/verdict.py) on left against
right, paired by round. A group is done when that comparison may stop by adaptive.settled (decided, with the early
look's wider interval), is futile (adaptive.futile) or has reached max-repetitions; a run's (cell, variant) stops when
every group it belongs to is done. A (cell, variant) that no aimed comparison uses stops at min-repetitions: nothing
asked for it. The host baseline goes on measuring a variant while a cell compared with it does (adaptive.stops).
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from edgebench.results.report.claim_compare import metric_family
from edgebench.results.report.verdict import Comparison, compare, margin_pct
from edgebench.workloads.dds import LEFTOVERS_STOPPED

# names the claims use for what a run document holds under another name
ALIASES = {"dds_mode": "mode"}
# never part of what pairs two runs: derived from the CNI mode, or allowed to differ from the pair's (adaptive)
UNPAIRED = {"datapath", "discovery", "is_host_baseline", LEFTOVERS_STOPPED}
# a run's identity, besides its parameters: the variant and the cell's dimensions
IDENTITY = ("workload", "protocol", "path", "placement", "length_bytes", "cni", "cni_mode", "tuning_profile",
            "netem_scenario", "distribution", "intercluster_tool", "cpu_class", "service_proxy", "substrate")


def subject(text: str) -> dict[str, str]:
    """A claim's subject as published ('cni=flannel;cni_mode=host-gw') as an aim side."""
    return dict(part.split("=", 1) for part in text.split(";") if "=" in part)


def _value(doc: dict[str, Any], key: str) -> Any:
    if key == "is_host_baseline":
        return doc.get("cni") == "host"
    key = ALIASES.get(key, key)
    if key in doc:
        return doc[key]
    return (doc.get("params") or {}).get(key)


def _same(have: Any, want: Any) -> bool:
    if isinstance(want, list):
        return any(_same(have, w) for w in want)
    norm = lambda v: str(v).lower()  # noqa: E731 - '1' and 1, 'True' and true are one value here
    return have is not None and norm(have) == norm(want)


def matches(doc: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return all(_same(_value(doc, k), v) for k, v in wanted.items())


def _rest(doc: dict[str, Any], keys: set[str]) -> str:
    """What pairs a left run with a right one: everything but the subjects' keys."""
    drop = keys | {ALIASES.get(k, k) for k in keys} | UNPAIRED
    ident = {k: doc.get(k) for k in IDENTITY if k not in drop}
    params = {k: v for k, v in (doc.get("params") or {}).items() if k not in drop}
    return json.dumps([ident, params], sort_keys=True, default=str)


def _metric(doc: dict[str, Any], metric: str) -> float | None:
    v = (doc.get("metrics") or {}).get(metric)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def groups(aim: list[dict[str, Any]], docs: Iterable[dict[str, Any]], variant_of) -> list[dict[str, Any]]:
    """Each aimed comparison's groups over the ok runs: {aim index, members: {(cell_id, variant)}, comparison}."""
    ok = [d for d in docs if d.get("status") == "ok"]
    out = []
    for idx, a in enumerate(aim):
        keys = set(a["left"]) | set(a["right"])
        filters = a.get("filters") or {}
        sides: dict[str, dict[str, list[dict]]] = {}
        for side in ("left", "right"):
            for d in ok:
                if matches(d, a[side]) and matches(d, filters) and _metric(d, a["metric"]) is not None:
                    sides.setdefault(_rest(d, keys), {}).setdefault(side, []).append(d)
        for key, by_side in sorted(sides.items()):
            members = {(d.get("cell_id"), variant_of(d)) for side in by_side.values() for d in side}
            left, right = by_side.get("left", []), by_side.get("right", [])
            comp = None
            if left and right:
                pct = a["tolerance_pct"] if a.get("tolerance_pct") is not None else margin_pct(metric_family(a["metric"]))
                comp = compare([_metric(d, a["metric"]) for d in left], [_metric(d, a["metric"]) for d in right],
                               higher_is_better=True, pct=float(pct),
                               rounds_a=[d.get("repetition") for d in left],
                               rounds_b=[d.get("repetition") for d in right])
            out.append({"aim": idx, "members": members, "comparison": comp})
    return out


# what a claim may name and a run document holds (directly, in its parameters, or derived: is_host_baseline)
RUN_METRICS = ("throughput_mbps", "latency_p50_us", "latency_p90_us", "response_p50_ms")
PARAM_KEYS = ("mode", "dds_mode", "subscribers", "transport", "security", "reliability", "service", "rate",
              "batching", "is_host_baseline")


def from_claim(claim: dict[str, Any]) -> dict[str, Any] | None:
    """A published claim (analytics/seeds/published_claims.csv) as an aimed comparison, or None where it cannot be
    judged on the runs themselves: a metric the marts derive (efficiency, overhead %, resources), or a subject or
    filter a run document does not hold."""
    if claim.get("metric") not in RUN_METRICS:
        return None
    left, right = subject(claim.get("left_subject") or ""), subject(claim.get("right_subject") or "")
    raw = claim.get("filters")
    filters = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
    known = set(IDENTITY) | set(PARAM_KEYS)
    if not left or not right or not isinstance(filters, dict) or not set(left) | set(right) | set(filters) <= known:
        return None
    item: dict[str, Any] = {"left": left, "right": right, "metric": claim["metric"], "filters": filters}
    if claim.get("comparator") == "~" and claim.get("tolerance_pct") not in (None, ""):
        item["tolerance_pct"] = float(claim["tolerance_pct"])
    return item
