"""Counterparts: for each number a seed paper prints, the figure edgebench measures in the same unit and
normalization, with its 95% interval, run counts and the verdict of the comparison it describes.

A counterpart is one of two kinds, named per (paper, table or figure, metric, unit) in SPECS:
  column  a mart column that already is the paper's normalization (seed 000's overhead % vs host per CNI mode and
          payload), or one a fixed formula turns into it (seed 003's reduction % = 100 - efficiency % of the host;
          seed 004's reduction % = -(distribution - kubeadm) / kubeadm);
  pair    two rows of one mart that differ in one column only (`vary`), everything else in the mart's grain equal:
          multicast against unicast (seed 002 Fig. 4), ClusterLink against Skupper (seed 001 Fig. 3), one CNI mode
          against another (seed 000's text on Fig. 5: `vary` = CNI_ENTRY, the rows' cni:cni_mode). Our figure is
          the reduction %, increase % or ratio of left against right, its interval Welch's interval of left - right
          over the right mean, its verdict the one rule (results/report/verdict.py) on left - right.
The published row's own columns narrow the match: cni and cni_mode (a row without a mode stands for every mode of
its CNI; a row without a CNI for the spec's `cnis`), payload_bytes (-> length_bytes), distribution and
tuning_profile. A condition the paper leaves open (payload, tuning, netem) is not filtered: each measured value is
its own row, labelled with it. A number edgebench cannot form this way has no spec and keeps its reason.

Pure functions over mart rows (dicts); results/report/papers.py fetches the rows and shapes the report.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from edgebench.results.report import verdict
from edgebench.results.report.claim_compare import metric_family, norm, sd_of_ci95

# a pair's sides as CNI modes: 'kube-router:bgp' against 'flannel:host-gw' (the left side is the published row's
# cni and cni_mode, the right side its baseline)
CNI_ENTRY = "cni_entry"

# 'column' value formulas: mart row -> (value, half-width) in the paper's normalization
Formula = Callable[[dict], tuple]


def as_is(value: str, ci: str) -> Formula:
    return lambda r: (r.get(value), r.get(ci))


def hundred_minus(value: str, ci: str) -> Formula:
    """reduction % of a baseline from an efficiency % of it: 100 - efficiency."""
    return lambda r: (None if r.get(value) is None else 100.0 - r[value], r.get(ci))


def diff_pct(sign: float) -> Formula:
    """cmp_distributions' diff_pct (distribution - reference, % of the reference), times sign."""
    def f(r):
        if r.get("diff_pct") is None or r.get("distribution") == r.get("reference_distribution"):
            return None, None
        ref = r.get("reference_mean")
        ci = None if r.get("diff_ci95") is None or not ref else r["diff_ci95"] / abs(ref) * 100
        return sign * r["diff_pct"], ci
    return f


@dataclass(frozen=True)
class Spec:
    mart: str
    ours: str                        # what our figure is, in words (shown beside it)
    fixed: dict = field(default_factory=dict)  # mart filters (a list = any of)
    formula: Formula | None = None   # column kind: row -> (value, half-width)
    n: tuple = ("n_runs", "host_n_runs")       # column kind: the run counts of the row and of its baseline
    verdict_col: str | None = "verdict"        # column kind: the mart's verdict; None: the one rule on `judged`
    judged: str | None = None        # column kind without verdict_col: the efficiency % column (100 = the host)
    flips_for_reduction: bool = False  # column kind: the formula is a difference; a paper printing a reduction negates
    higher_is_better: bool = True    # which direction of the paper's quantity the mart calls better (no verdict col)
    vary: str | None = None          # pair kind: the column the two sides differ in
    left: tuple = ()                 # pair kind: the left side's values ((): the published row's `vary` column)
    right: tuple = ()                # pair kind: the right side's values ((): parsed from the published baseline)
    mean: str | None = None          # pair kind: the mean column of each side, and its half-width
    ci: str | None = None
    form: str = "reduction"          # pair kind: reduction (1 - l/r) %, increase (l/r - 1) %, ratio l/r, or
                                     # by-normalization: reduction where the paper's normalization says so, else increase
    cnis: tuple = ()                 # the CNIs a published row without one stands for
    join: tuple = ("cni", "cni_mode", "payload_bytes", "tuning_profile")  # the published columns that narrow it
    substrates: tuple = ()           # only these substrates ((): all)
    why_not: str = ""                # what a substrate outside `substrates` lacks

    @property
    def kind(self) -> str:
        return "pair" if self.vary else "column"


_DDS = {"dds_mode": "throughput", "transport": "unicast", "security": "none"}
_DDS_RELIABLE = {**_DDS, "reliability": "reliable", "subscribers": 1}
_FOUR = ("antrea", "flannel", "cilium", "calico")
_REAL_ONLY = ("ssh", "kind", "imported")
# seed 003's tuned profiles in the order its UDP bandwidth section shows them before nic_optimizations (Figs. 18-24)
_BEFORE_NIC = ("default_settings", "accelerator-performance", "hpc-compute", "kernel_optimizations",
               "latency-performance", "network-latency", "network-throughput")
_WITH_DISTRIBUTION = ("cni", "cni_mode", "payload_bytes", "distribution")
_NO_DISTRIBUTION = ("needs real clusters of this distribution and of kubeadm, same CNI mode; the testbed runs no "
                    "Kubernetes distribution")

# (paper, table_ref or else figure_ref, published metric, published unit) -> spec
SPECS: dict[tuple[str, str, str, str], Spec] = {
    ("000", "Table I", "throughput_mbps", "%"): Spec(
        "cmp_dds_vs_host", "throughput overhead % vs host", _DDS_RELIABLE,
        as_is("throughput_overhead_pct", "throughput_overhead_ci95_pct")),
    ("000", "Table II", "latency_p90_us", "%"): Spec(
        "cmp_dds_vs_host", "p90 latency overhead % vs host", {**_DDS_RELIABLE, "dds_mode": "latency"},
        as_is("latency_p90_overhead_pct", "latency_p90_overhead_ci95_pct")),
    # seed 000 Fig. 4 and seed 002 Fig. 2: a host-network container against bare metal: host-container:runc (a runc
    # container in the node's namespace) against host (plain processes), on the testbed
    ("000", "Fig. 4", "throughput_mbps", "%"): Spec(
        "cmp_dds_vs_host", "throughput overhead % of the container vs the plain process", _DDS_RELIABLE,
        as_is("throughput_overhead_pct", "throughput_overhead_ci95_pct")),
    ("000", "Fig. 4", "latency_p90_us", "%"): Spec(
        "cmp_dds_vs_host", "p90 latency overhead % of the container vs the plain process",
        {**_DDS_RELIABLE, "dds_mode": "latency"}, as_is("latency_p90_overhead_pct", "latency_p90_overhead_ci95_pct")),
    ("002", "Fig. 2", "throughput_mbps", "%"): Spec(
        "cmp_dds_vs_host", "throughput overhead % of the container vs the plain process", _DDS,
        as_is("throughput_overhead_pct", "throughput_overhead_ci95_pct")),
    # seed 002 Fig. 3: DDS throughput overhead % vs host per CNI (payload not printed: every payload measured)
    ("002", "Fig. 3", "throughput_mbps", "%"): Spec(
        "cmp_dds_vs_host", "throughput overhead % vs host", _DDS,
        as_is("throughput_overhead_pct", "throughput_overhead_ci95_pct"), cnis=("calico", "flannel", "weave", "cilium")),
    # seed 002 Fig. 4: multicast against unicast for the same CNI mode and payload
    ("002", "Fig. 4", "throughput_mbps", "%"): Spec(
        "cmp_dds_vs_host", "throughput reduction % of multicast vs unicast", {"dds_mode": "throughput",
                                                                               "security": "none"},
        vary="transport", left=("multicast",), right=("unicast",), mean="throughput_mbps", ci="throughput_ci95_mbps",
        form="reduction"),
    ("002", "Fig. 4", "latency_p50_us", "%"): Spec(
        "cmp_dds_vs_host", "p50 latency increase % of multicast vs unicast", {"dds_mode": "latency",
                                                                               "security": "none"},
        vary="transport", left=("multicast",), right=("unicast",), mean="latency_p50_us", ci="latency_p50_ci95_us",
        form="increase"),
    # seed 000's text on Fig. 5: one CNI mode's p90 latency against another's (Kube-Router about 3 % better than
    # Flannel host-gw below 1 KB; WeaveNet 4.3-12.9 % slower than Flannel VXLAN over the five payloads)
    ("000", "Fig. 5", "latency_p90_us", "%"): Spec(
        "cmp_dds_vs_host", "p90 latency reduction or increase % vs the other CNI mode",
        {**_DDS_RELIABLE, "dds_mode": "latency"}, vary=CNI_ENTRY, mean="latency_p90_us", ci="latency_p90_ci95_us",
        form="by-normalization", join=("payload_bytes",)),
    # seed 001: one inter-cluster tool against another, same function, payload and link conditions
    ("001", "Fig. 3", "response_time_ms", "%"): Spec(
        "cmp_intercluster_vs_none", "p50 response time reduction % vs the other tool",
        {"service": "payload-echo", "netem_scenario": "edg20"},
        vary="intercluster", mean="response_p50_ms", ci="response_p50_ci95_ms", form="reduction"),
    ("001", "Fig. 4", "response_time_ms", "%"): Spec(
        "cmp_intercluster_vs_none", "p50 response time increase % vs the other tool", {"service": "payload-echo"},
        vary="intercluster", mean="response_p50_ms", ci="response_p50_ci95_ms", form="increase"),
    ("001", "Fig. 6", "response_p50_ms", "ratio"): Spec(
        "cmp_intercluster_vs_none", "p50 response time ratio to the other tool", {"service": "payload-recv"},
        vary="intercluster", mean="response_p50_ms", ci="response_p50_ci95_ms", form="ratio"),
    # seed 003: iperf3 as % of the host (the physical network) per tuning profile, CNI and packet size
    ("003", "Fig. 22", "throughput_efficiency_pct", "%"): Spec(
        "cmp_tuning_vs_host", "UDP throughput efficiency % of host", {"workload": "iperf3", "protocol": "udp",
                                                                       "is_host_baseline": False},
        as_is("throughput_efficiency_pct", "throughput_efficiency_ci95_pct"), verdict_col=None,
        judged="throughput_efficiency_pct", cnis=_FOUR),
    ("003", "", "throughput_mbps", "%"): Spec(
        "cmp_tuning_vs_host", "UDP throughput reduction % vs host (100 - efficiency)",
        {"workload": "iperf3", "protocol": "udp", "is_host_baseline": False},
        hundred_minus("throughput_efficiency_pct", "throughput_efficiency_ci95_pct"), verdict_col=None,
        judged="throughput_efficiency_pct", higher_is_better=False, cnis=_FOUR),
    # seed 003: one tuned profile's request/response latency against another's, same CNI, protocol and size
    ("003", "Fig. 12", "latency", "%"): Spec(
        "cmp_tuning_vs_host", "TCP p50 latency increase % vs the other profile",
        {"workload": "sockperf", "protocol": "tcp", "is_host_baseline": False}, vary="tuning_profile",
        mean="latency_p50_us", ci="latency_p50_ci95_us", form="increase", cnis=_FOUR),
    ("003", "Fig. 27", "latency", "%"): Spec(
        "cmp_tuning_vs_host", "UDP p50 latency reduction % vs the other profile",
        {"workload": "sockperf", "protocol": "udp", "is_host_baseline": False}, vary="tuning_profile",
        mean="latency_p50_us", ci="latency_p50_ci95_us", form="reduction", cnis=_FOUR),
    ("003", "Fig. 28", "latency", "%"): Spec(
        "cmp_tuning_vs_host", "UDP p50 latency increase % vs the other profile",
        {"workload": "sockperf", "protocol": "udp", "is_host_baseline": False}, vary="tuning_profile",
        mean="latency_p50_us", ci="latency_p50_ci95_us", form="increase", cnis=_FOUR),
    # seed 003 Fig. 15: network-latency's TCP latency efficiency against latency-performance's ("roughly 20 % worse";
    # the paper leaves open whether percent or points: ours is percent of the other profile's efficiency)
    ("003", "Fig. 15", "latency_efficiency_pct", "%"): Spec(
        "cmp_tuning_vs_host", "TCP latency efficiency reduction % vs the other profile",
        {"workload": "sockperf", "protocol": "tcp", "is_host_baseline": False}, vary="tuning_profile",
        mean="latency_efficiency_pct", ci="latency_efficiency_ci95_pct", form="reduction", cnis=_FOUR),
    # seed 003 Fig. 25: Antrea's UDP bandwidth efficiency under nic_optimizations against each profile before it in
    # the paper's order ("jumps by almost 20 % when compared to previous tuned profiles")
    ("003", "Fig. 25", "throughput_efficiency_pct", "%"): Spec(
        "cmp_tuning_vs_host", "UDP throughput efficiency increase % vs each earlier profile",
        {"workload": "iperf3", "protocol": "udp", "is_host_baseline": False}, vary="tuning_profile",
        right=_BEFORE_NIC, mean="throughput_efficiency_pct", ci="throughput_efficiency_ci95_pct", form="increase"),
    # seed 004: a distribution against kubeadm for the same CNI mode (real clusters only)
    ("004", "Fig. 2", "memory_used_mb", "%"): Spec(
        "cmp_distributions", "CNI memory (RSS during the run) % vs kubeadm",
        {"metric": "rss_mb", "component": "cni", "phase": "run", "reference_distribution": "kubeadm"},
        diff_pct(1.0), n=("n_runs", "reference_n_runs"), substrates=_REAL_ONLY, why_not=_NO_DISTRIBUTION,
        join=_WITH_DISTRIBUTION, flips_for_reduction=True),
    ("004", "Fig. 1", "cpu_pct", "%"): Spec(
        "cmp_distributions", "node CPU % during the run, % vs kubeadm",
        {"metric": "cpu_pct", "component": "system", "phase": "run", "reference_distribution": "kubeadm"},
        diff_pct(1.0), n=("n_runs", "reference_n_runs"), substrates=_REAL_ONLY, why_not=_NO_DISTRIBUTION,
        join=_WITH_DISTRIBUTION, flips_for_reduction=True),
}


def spec_for(p: dict) -> Spec | None:
    """The counterpart of one published_results row, or None (always for an absolute value on the paper's
    hardware)."""
    if (p.get("normalization") or "").lower() == "absolute":
        return None
    ref = p.get("table_ref") or p.get("figure_ref") or ""
    return SPECS.get((p.get("paper"), ref, p.get("metric"), p.get("unit")))


def signed(spec: Spec, p: dict) -> float:
    """+1, or -1 where the paper's normalization says reduction and the spec's formula gives a difference."""
    return -1.0 if spec.flips_for_reduction and "reduction" in (p.get("normalization") or "").lower() else 1.0


def _wanted(want) -> set[str]:
    return {norm(w) for w in (want if isinstance(want, (list, tuple, set)) else [want])}


def _row_filter(spec: Spec, p: dict) -> Callable[[dict], bool]:
    """The mart rows a published row stands for (the spec's fixed filters and the row's own columns)."""
    conds = {k: _wanted(v) for k, v in spec.fixed.items()}
    if p.get("cni") and "cni" in spec.join:
        conds["cni"] = {p["cni"]}
        if p.get("cni_mode") and "cni_mode" in spec.join:
            conds["cni_mode"] = {p["cni_mode"]}
    elif spec.cnis:
        conds["cni"] = set(spec.cnis)
    if p.get("payload_bytes") not in (None, "") and "payload_bytes" in spec.join:
        conds["length_bytes"] = {norm(p["payload_bytes"])}
    for col in ("distribution", "tuning_profile"):
        if p.get(col) and col in spec.join:
            conds[col] = {p[col]}
    conds.pop(spec.vary, None)  # a pair's sides differ in it
    return lambda r: all(norm(r.get(c)) in w for c, w in conds.items())


def _baseline_values(text: str | None) -> list[str]:
    """A pair's right side from the published baseline: 'intercluster clusterlink and submariner:libreswan' ->
    ['clusterlink', 'submariner:libreswan'], 'tuning default_settings' -> ['default_settings']."""
    t = (text or "").strip()
    first, _, rest = t.partition(" ")
    if first in ("intercluster", "tuning", "transport"):
        t = rest.strip()
    return [x.strip() for x in t.replace(",", " and ").split(" and ") if x.strip()]


def _side_matches(row: dict, column: str, value: str) -> bool:
    if column == "intercluster":  # a tool by name stands for its every mode
        return value in (row.get("intercluster"), row.get("intercluster_tool"))
    if column == CNI_ENTRY:
        return _entry(row) == norm(value)
    return norm(row.get(column)) == norm(value)


def _entry(row: dict) -> str:
    return f"{norm(row.get('cni'))}:{norm(row.get('cni_mode'))}"


def measured(spec: Spec, p: dict, rows: list[dict], grain: tuple[str, ...], freed: frozenset[str]) -> list[dict]:
    """Our figures for one published row: one dict per matching mart row (column) or pair of rows (pair), each with
    substrate, ours, ours_ci95, n_runs, host_n_runs (the baseline side's runs), verdict, against (what the baseline
    side is) and row (the mart row the conditions are read from)."""
    keep = _row_filter(spec, p)
    if spec.kind == "column":
        out = []
        sign = signed(spec, p)
        for r in rows:
            if spec.substrates and r.get("substrate") not in spec.substrates:
                continue
            if not keep(r):
                continue
            value, ci = spec.formula(r)
            if value is None:
                continue
            value = sign * value
            n, n_base = (r.get(spec.n[0]), r.get(spec.n[1]))
            v = r.get(spec.verdict_col) if spec.verdict_col else _efficiency_verdict(spec, r, ci, n, n_base)
            out.append({"substrate": r.get("substrate"), "ours": value, "ours_ci95": ci, "n_runs": n,
                        "host_n_runs": n_base, "verdict": v, "against": None, "row": r})
        return out
    lefts = list(spec.left) or [_entry(p) if spec.vary == CNI_ENTRY else p.get(spec.vary) or ""]
    form = spec.form
    if form == "by-normalization":
        form = "reduction" if "reduction" in (p.get("normalization") or "").lower() else "increase"
    rights = list(spec.right) or _baseline_values(p.get("baseline"))
    sides = [r for r in rows if keep(r) and (not spec.substrates or r.get("substrate") in spec.substrates)]
    key_cols = [c for c in grain if c not in freed]
    out = []
    for right in rights:
        groups: dict[tuple, tuple[list, list]] = {}
        for r in sides:
            side = 0 if any(_side_matches(r, spec.vary, x) for x in lefts) else \
                1 if _side_matches(r, spec.vary, right) else None
            if side is not None and r.get(spec.mean) is not None:
                groups.setdefault(tuple(norm(r.get(c)) for c in key_cols), ([], []))[side].append(r)
        for lrows, rrows in groups.values():
            for lr in lrows:
                for rr in rrows:
                    against = _entry(rr) if spec.vary == CNI_ENTRY else f"{spec.vary}={rr.get(spec.vary)}"
                    out.append({**_pair(spec, lr, rr, form), "against": against, "row": lr})
    return out


def _efficiency_verdict(spec: Spec, r: dict, ci, n, n_base) -> str:
    """The one rule on an efficiency % of the host (spec.judged; 100 = the host): the CNI against the host."""
    if spec.judged is None:
        raise ValueError(f"a {spec.mart} counterpart without a verdict column names no `judged` efficiency column")
    eff = r.get(spec.judged)
    if eff is None:
        return "n < 2"
    return verdict.decide(eff - 100.0, ci, n or 0, n_base or 0, 100.0, True, verdict.margin_pct("throughput"))


def _pair(spec: Spec, lr: dict, rr: dict, form: str) -> dict:
    """Left against right: our figure in `form` (reduction, increase or ratio), its half-width and the one rule's
    verdict."""
    lm, rm = lr[spec.mean], rr[spec.mean]
    nl, nr = int(lr.get("n_runs") or 0), int(rr.get("n_runs") or 0)
    lci, rci = lr.get(spec.ci), rr.get(spec.ci)
    ci = None
    if nl >= 2 and nr >= 2 and lci is not None and rci is not None:
        ci = verdict.welch_ci95(nl, sd_of_ci95(lci, nl), nr, sd_of_ci95(rci, nr))
    family = metric_family(spec.mean)
    v = verdict.decide(lm - rm, ci, nl, nr, rm, family == "throughput", verdict.margin_pct(family))
    if not rm:
        value = ci_out = None
    elif form == "ratio":
        value, ci_out = lm / rm, (None if ci is None else ci / abs(rm))
    else:
        rel = (lm - rm) / abs(rm) * 100
        value = -rel if form == "reduction" else rel
        ci_out = None if ci is None else ci / abs(rm) * 100
    return {"substrate": lr.get("substrate"), "ours": value, "ours_ci95": ci_out, "n_runs": nl, "host_n_runs": nr,
            "verdict": v}


def published_text(p: dict) -> str:
    """A published value as printed: '45.6 %', '2-7 %' (a range), '~20 %', '< 50 %', 'about 4 ratio'."""
    unit = p.get("unit") or ""
    v = p.get("value")
    if p.get("value_high") is not None:
        return f"{v:g}-{p['value_high']:g} {unit}".strip()
    q = (p.get("qualifier") or "=").strip()
    prefix = {"=": "", "about": "~", "almost": "~", "less than": "< ", "more than": "> ", "at most": "<= "}.get(q, q + " ")
    return f"{prefix}{v:g} {unit}".strip() if isinstance(v, (int, float)) and not math.isnan(v) else str(v)


def fold_ranges(published: list[dict]) -> list[dict]:
    """A 'range low' row and its 'range high' twin (every other column equal) become one row with value_high."""
    def twin_key(p):
        return tuple((k, norm(v)) for k, v in sorted(p.items()) if k not in ("value", "qualifier"))
    highs = {twin_key(p): p for p in published if p.get("qualifier") == "range high"}
    out, used = [], set()
    for p in published:
        if p.get("qualifier") == "range low" and twin_key(p) in highs:
            used.add(twin_key(p))
            out.append({**p, "value_high": highs[twin_key(p)]["value"], "qualifier": "range"})
        elif p.get("qualifier") == "range high" and twin_key(p) in used:
            continue
        else:
            out.append(p)
    return [p for p in out if not (p.get("qualifier") == "range high" and twin_key(p) in used)]  # met before its low
