"""Our measurements beside what the seed papers publish (the dbt seeds published_results and published_claims).

Two things per paper, per substrate (results of different substrates are never pooled):
  numbers  every number a paper prints that edgebench measures in the same unit and normalization (seed 000's
           Tables I and II: overhead % vs the host network per CNI mode and payload), beside our value with its
           95% interval, run counts and verdict against the host; the paper's other numbers are listed as
           published only, with the reason.
  claims   every finding of published_claims tested on its mart (see analytics/seeds/_seeds.yml for the form):
           agrees, disagrees or cannot tell, with the comparisons behind the outcome.

A comparison is judged by the project's one rule (results.report.verdict; see compare()): the 95% interval of left -
right (Welch's, from each row's runs and half-width) against a margin: `left > right` agrees when left is better
(higher) beyond the margin, disagrees when lower or equivalent, and cannot tell when inconclusive or a side has no
interval (fewer than 2 runs). `~` (within tolerance_pct, the margin) agrees when equivalent, disagrees when better
or worse. Scope `each`: one comparison per left row x right row of every group; the claim disagrees when any
comparison does, agrees when all do. Scope `overall`: the means of each side over the groups where both sides were
measured (interval: the root sum of squares of the rows' half-widths / the number of rows).

Pure functions over `fetch(sql, params) -> list[dict]`: the CLI reads the warehouse file, the portal its cached
connection.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Callable, Iterable

from edgebench.plan.dimensions import DIMENSIONS, warehouse_columns
from edgebench.results.report import counterparts
from edgebench.results.report.claim_compare import (compare, metric_family, named_values, parse_subject,  # noqa: F401
                                             substrate_limit, threshold as _threshold)
from edgebench.results.records.store import repo_root
from edgebench.results.report.claim_compare import norm as _norm
from edgebench.results.report.marts.papers import mart_rows, published_claims, published_results

Fetch = Callable[[str, list], list[dict]]

# seed id -> (authors, title, what it measured); the titles as printed
PAPERS: dict[str, tuple[str, str, str]] = {
    "000": ("Kang et al.", "A Comprehensive Performance Evaluation of Different Kubernetes CNI Plugins for Edge-based "
            "and Containerized Publish/Subscribe Applications",
            "DDS pub/sub (RTI PerfTest) over Flannel VXLAN / host-gw, Kube-Router and WeaveNet against Host-mode on a "
            "Raspberry Pi + x86 cluster on a 100 Mbit/s LAN"),
    "001": ("Michalke et al.", "Evaluating the Impact of Inter-cluster Communications in Edge Computing",
            "HTTP functions between two k3s clusters joined by Submariner, Skupper or ClusterLink under netem"),
    "002": ("Kang et al.", "Evaluating Performance of OMG DDS in Kubernetes Container Deployment",
            "DDS on bare metal, in containers and over Calico, Flannel, WeaveNet and Cilium"),
    "003": ("Dakic et al.", "Performance and Latency Efficiency Evaluation of Kubernetes Container Network Interfaces "
            "for Built-In and Custom Tuned Profiles",
            "Antrea, Flannel, Cilium and Calico as % of the physical network under tuned profiles, MTU 1500/9000"),
    "004": ("Koukis et al.", "Performance Evaluation of Kubernetes Networking Approaches across Constraint Edge "
            "Environments",
            "K8s, K3s, K0s and MicroK8s x Flannel, Calico, Cilium, Kube-router and Kube-OVN: throughput, CPU, RAM"),
}

SUBSTRATE_NOTES = {
    "local": "local testbed: the kernel datapaths the CNIs configure, in network namespaces on one machine. An "
             "emulation of the datapaths, not the paper's hardware: no physical NIC, no CNI agents, and the CPU is "
             "this machine's unless a row names a CPU class (Pi 4, Pi 5, small x86: a CPU-limited emulation, one "
             "core limited to that board's published single-thread speed); agreement on a claim means the datapath "
             "alone reproduces it.",
    "kind": "kind: the real CNIs in containers on one machine, not the paper's hardware.",
    "ssh": "a real edge cluster: the paper's kind of hardware if the lab matches it.",
    "imported": "results imported from elsewhere.",
}

# the grain of each mart a claim can be tested on: the columns that identify one of its rows
GRAINS: dict[str, tuple[str, ...]] = {
    # the cell configuration columns (plan/dimensions.py), then the workload's own
    "cmp_dds_vs_host": (*warehouse_columns(), "dds_mode", "batching", "length_bytes", "reliability", "transport",
                        "subscribers", "security", "rate", "ping_timeout_ms", "placement", "is_host_baseline"),
    "cmp_iperf3_vs_host": (*warehouse_columns(), "protocol", "path", "placement", "length_bytes", "duration_s",
                           "iperf3_bitrate", "is_host_baseline"),
    "cmp_tuning_vs_host": ("substrate", "distribution", "netem_scenario", "tuning_profile", "tuning_mtu", "workload",
                           "protocol", "path", "placement", "length_bytes", "duration_s", "dds_mode", "reliability",
                           "transport", "subscribers", "security", "rate", "ping_timeout_ms", "cni", "cni_mode",
                           "datapath", "is_host_baseline"),
    "cmp_resources_vs_host": ("substrate", "distribution", "netem_scenario", "tuning_profile", "cni", "cni_mode",
                              "datapath", "is_host_baseline", "workload", "protocol", "path", "placement",
                              "length_bytes", "component"),
    "cmp_intercluster_vs_none": ("substrate", "distribution", "cni", "cni_mode", "tuning_profile", "netem_scenario",
                                 "intercluster", "intercluster_tool", "intercluster_mode",
                                 "intercluster_implementation", "is_emulated", "intercluster_model", "service",
                                 "length_bytes", "path", "placement", "is_baseline"),
}
# naming one column of a set on either side of a claim frees the whole set from the grouping (the CNI decides its
# datapath and pod MTU; the tool decides its mode and implementation)
FREED_TOGETHER = (
    frozenset({"cni", "cni_mode", "is_host_baseline", "datapath", "tuning_mtu", counterparts.CNI_ENTRY}),
    frozenset({"intercluster", "intercluster_tool", "intercluster_mode", "intercluster_implementation",
               "is_emulated", "intercluster_model", "is_baseline"}),
)
# ... and one way: naming the protocol frees the message length, which is the protocol's own in iperf3 (a TCP write
# of 128 KiB, a UDP datagram of 1300 B), so "UDP against TCP" compares each at its own length (seed 004's Figs. 1-2);
# a claim on the length does not free the protocol
FREED_WITH = {"protocol": frozenset({"length_bytes"})}


def freed_by(named: set[str]) -> set[str]:
    """The columns a claim naming `named` leaves out of its grouping: those it names, each FREED_TOGETHER set one of
    them is in, and FREED_WITH's."""
    freed = set(named)
    for group in FREED_TOGETHER:
        if named & group:
            freed |= group
    for column, also in FREED_WITH.items():
        if column in named:
            freed |= also
    return freed

# the conditions a measured number is labelled with, and the value each takes when it is not worth naming
CONDITIONS = {"distribution": "none", **{d.warehouse_column: d.base for d in DIMENSIONS if d.in_grain},
              "placement": "cross-node", "rate": "inf", "batching": "on", "ping_timeout_ms": "1000"}
OUTCOMES = ("agrees", "disagrees", "cannot tell", "not testable")
# what an outcome rests on (evaluate_claim's `reason`): judged by the one rule, a side with fewer than 2 runs, an
# inconclusive interval, a side (or both under the same conditions) never measured, nothing in the mart at all, a
# mart or column the evaluator cannot read, a side edgebench cannot measure
REASONS = ("decided", "few runs", "inconclusive", "side missing", "nothing measured", "not evaluated", "not testable")


class PaperError(ValueError):
    """An unknown paper id."""


PRESETS = Path("workflows") / "presets"


def presets(paper: str, root: Path | None = None) -> dict[str, list[str]]:
    """The paper's presets that exist in workflows/presets/, as repository paths, each named in full (no pattern):
    {"testbed": the .testbed.yaml variants (`edgebench sweep <path> --local`), "cluster": the full presets (`argo
    submit <path>`)}. A paper's files are seed-<id>.testbed.yaml or seed-<id>-<name>[.testbed].yaml."""
    d = (root or repo_root()) / PRESETS
    names = sorted(f.name for f in d.glob(f"seed-{paper}*.yaml")
                   if re.fullmatch(rf"seed-{paper}([-.].+)?\.yaml", f.name))
    return {"testbed": [str(PRESETS / n) for n in names if n.endswith(".testbed.yaml")],
            "cluster": [str(PRESETS / n) for n in names if not n.endswith(".testbed.yaml")]}


def run_hint(paper: str, root: Path | None = None) -> str:
    """How to measure a paper that has no results yet: each of its presets that exists, by its full path."""
    p = presets(paper, root)
    if not p["testbed"] and not p["cluster"]:
        return f"No preset in {PRESETS}/ measures seed {paper} yet."
    parts = []
    if p["testbed"]:
        parts.append("on this machine " + ", ".join(f"`edgebench sweep {x} --local`" for x in p["testbed"]))
    if p["cluster"]:
        parts.append("on a cluster " + ", ".join(f"`argo submit {x}`" for x in p["cluster"]))
    n = len(p["testbed"]) + len(p["cluster"])
    return f"Run its preset{'s' if n > 1 else ''}: {'; or '.join(parts)}; then `make warehouse`."


def paper_id(text: str) -> str:
    """'0', '000', 'seed-000' -> '000'; PaperError naming the known ids otherwise."""
    t = str(text).strip().lower().removeprefix("seed-").removeprefix("seed")
    if t.isdigit() and f"{int(t):03d}" in PAPERS:
        return f"{int(t):03d}"
    raise PaperError(f"unknown paper {text!r}: one of {', '.join(PAPERS)} (the seed papers, see "
                     "analytics/seeds/published_results.csv)")


def ci_column(metric: str) -> str:
    """The half-width column of a metric: throughput_mbps -> throughput_ci95_mbps (the marts' convention)."""
    stem, _, unit = metric.rpartition("_")
    return f"{stem}_ci95_{unit}"


def _matches(row: dict, subject: dict[str, set[str]]) -> bool:
    return all(_norm(row.get(col)) in values for col, values in subject.items())


def _side(rows: list[dict], metric: str, ci_col: str) -> dict:
    """Mean of the rows' means and its half-width (root sum of squares / k; None if a row has none)."""
    values = [r[metric] for r in rows if r.get(metric) is not None]
    cis = [r.get(ci_col) for r in rows if r.get(metric) is not None]
    k = len(values)
    ci = (math.sqrt(sum(c * c for c in cis)) / k) if k and all(c is not None for c in cis) else None
    return {"mean": sum(values) / k if k else None, "ci95": ci, "n_rows": k,
            "n_runs": sum(int(r.get("n_runs") or 0) for r in rows if r.get(metric) is not None)}


def _group_key(row: dict, columns: Iterable[str]) -> tuple:
    return tuple(_norm(row.get(c)) for c in columns)


def evaluate_claim(claim: dict, rows: list[dict]) -> dict:
    """Test one published_claims row on the mart rows of ONE substrate (already restricted to that substrate).
    Returns {outcome, reason, detail, n_comparisons, n_agree, n_disagree, n_cannot_tell, left, right}: reason is
    one of REASONS, what the outcome rests on (the scorecard's hints read it, never the detail's wording)."""
    base = {"n_comparisons": 0, "n_agree": 0, "n_disagree": 0, "n_cannot_tell": 0, "left": None, "right": None}
    if not claim.get("testable"):
        return {**base, "outcome": "not testable", "reason": "not testable",
                "detail": claim.get("note") or "edgebench cannot measure a side of this claim"}
    mart, metric = claim["mart"], claim["metric"]
    if mart not in GRAINS:
        return {**base, "outcome": "cannot tell", "reason": "not evaluated",
                "detail": f"claims on {mart} are not evaluated"}
    left_subject = parse_subject(claim["left_subject"])
    threshold = _threshold(claim["right_subject"])
    right_subject = {} if threshold is not None else parse_subject(claim["right_subject"])
    filters = json.loads(claim["filters"] or "{}")
    columns = set(rows[0]) if rows else set()
    named = set(left_subject) | set(right_subject)
    if rows:
        missing = sorted((named | set(filters) | {metric}) - columns)
        if missing:
            return {**base, "outcome": "cannot tell", "reason": "not evaluated",
                    "detail": f"{mart} has no column {', '.join(missing)}"}
    ci_col = ci_column(metric)
    if rows and ci_col not in columns:
        return {**base, "outcome": "cannot tell", "reason": "not evaluated",
                "detail": f"{mart} has no interval for {metric} ({ci_col})"}

    def keep(r):
        for col, want in filters.items():
            wanted = {_norm(w) for w in (want if isinstance(want, list) else [want])}
            if _norm(r.get(col)) not in wanted:
                return False
        return r.get(metric) is not None

    rows = [r for r in rows if keep(r)]
    freed = freed_by(set(named)) | {"substrate"}
    key_cols = [c for c in GRAINS[mart] if c not in freed]
    groups: dict[tuple, tuple[list, list]] = {}
    for r in rows:
        is_left = _matches(r, left_subject)
        is_right = not is_left and threshold is None and _matches(r, right_subject)
        if is_left or is_right:
            groups.setdefault(_group_key(r, key_cols), ([], []))[0 if is_left else 1].append(r)
    n_left = sum(len(g[0]) for g in groups.values())
    n_right = sum(len(g[1]) for g in groups.values())
    both = [g for g in groups.values() if g[0] and (g[1] or threshold is not None)]
    if not both:
        what = (f"no measured row matches {claim['left_subject']}" if not n_left else
                f"no measured row matches {claim['right_subject']}" if not n_right else
                "the two sides were never measured under the same conditions")
        return {**base, "outcome": "cannot tell", "reason": "side missing",
                "detail": f"{what} ({n_left} left, {n_right} right rows after the claim's filters)"}
    tol = claim.get("tolerance_pct")
    if claim["scope"] == "overall":
        left = _side([r for g in both for r in g[0]], metric, ci_col)
        right = ({"mean": threshold, "ci95": 0.0, "n_rows": 0, "n_runs": 0} if threshold is not None
                 else _side([r for g in both for r in g[1]], metric, ci_col))
        outcome = compare(left["mean"], left["ci95"], right["mean"], right["ci95"], claim["comparator"], tol,
                          family=metric_family(metric))
        counts = {"agrees": "n_agree", "disagrees": "n_disagree", "cannot tell": "n_cannot_tell"}
        few = left["ci95"] is None or right["ci95"] is None
        result = {**base, "n_comparisons": 1, counts[outcome]: 1, "left": left, "right": right, "outcome": outcome,
                  "reason": "decided" if outcome != "cannot tell" else "few runs" if few else "inconclusive"}
        result["detail"] = (f"means over {len(both)} group(s): {_fmt(left)} vs {_fmt(right)}"
                            + ("" if outcome != "cannot tell" else
                               ("; a side has fewer than 2 runs" if few else "; the interval of the difference holds 0 and reaches beyond the margin")))
        return result
    tally = {"agrees": 0, "disagrees": 0, "cannot tell": 0}
    few = False  # an undecided comparison with a side of fewer than 2 runs
    for lefts, rights in both:
        for lr in lefts:
            for rr in (rights if threshold is None else [None]):
                rv, rc, rn = (threshold, 0.0, None) if rr is None else (rr[metric], rr.get(ci_col), rr.get("n_runs"))
                one = compare(lr[metric], lr.get(ci_col), rv, rc, claim["comparator"], tol,
                              n_left=lr.get("n_runs") if rn else None, n_right=rn, family=metric_family(metric))
                tally[one] += 1
                few = few or (one == "cannot tell" and (lr.get(ci_col) is None or rc is None))
    total = sum(tally.values())
    outcome = "disagrees" if tally["disagrees"] else "agrees" if tally["agrees"] == total else "cannot tell"
    left = _side([r for g in both for r in g[0]], metric, ci_col)
    right = ({"mean": threshold, "ci95": 0.0, "n_rows": 0, "n_runs": 0} if threshold is not None
             else _side([r for g in both for r in g[1]], metric, ci_col))
    reason = "decided" if outcome != "cannot tell" else "few runs" if few else "inconclusive"
    return {**base, "outcome": outcome, "reason": reason, "n_comparisons": total, "n_agree": tally["agrees"],
            "n_disagree": tally["disagrees"], "n_cannot_tell": tally["cannot tell"], "left": left, "right": right,
            "detail": (f"{tally['agrees']} of {total} comparison(s) in {len(both)} group(s) agree, "
                       f"{tally['disagrees']} disagree, {tally['cannot tell']} cannot tell (inconclusive by the one "
                       "rule, or fewer than 2 runs)")}


def _fmt(side: dict) -> str:
    if side["mean"] is None:
        return "-"
    ci = f" ± {side['ci95']:.3g}" if side["ci95"] else ""
    return f"{side['mean']:.4g}{ci}" + (f" (n={side['n_runs']})" if side["n_runs"] else "")


def substrates(rows: list[dict]) -> list[str]:
    return sorted({r["substrate"] for r in rows if r.get("substrate")})


def claims_report(fetch: Fetch, paper: str) -> list[dict]:
    """Every claim of the paper x every substrate its mart holds (one 'no measurements' row when none)."""
    claims = published_claims(fetch, paper)
    marts = {c["mart"]: mart_rows(fetch, c["mart"]) for c in claims if c.get("testable") and c["mart"] in GRAINS}
    out = []
    for c in claims:
        rows = marts.get(c["mart"], [])
        subs = substrates(rows) if c.get("testable") else []
        for sub in subs or [None]:
            limit = substrate_limit(c, sub)
            res = (evaluate_claim(c, [r for r in rows if r.get("substrate") == sub]) if limit is None else
                   {"n_comparisons": 0, "n_agree": 0, "n_disagree": 0, "n_cannot_tell": 0, "left": None,
                    "right": None, "outcome": "not testable", "reason": "not testable", "detail": limit})
            if sub is None and c.get("testable") and c["mart"] in GRAINS:
                res = {**res, "outcome": "cannot tell", "reason": "nothing measured",
                       "detail": f"nothing measured in {c['mart']} yet"}
            out.append({"claim_id": c["claim_id"], "claim": c["claim"], "figure_ref": c.get("figure_ref"),
                        "table_ref": c.get("table_ref"), "mart": c["mart"], "metric": c["metric"],
                        "scope": c["scope"], "substrate": sub, **res})
    return out


def numbers_report(fetch: Fetch, paper: str) -> tuple[list[dict], list[dict]]:
    """(matched, published_only): each published number edgebench measures the same way (results/report/counterparts.py)
    beside our figure per substrate and condition, and the paper's other numbers with the reason they have none."""
    published = counterparts.fold_ranges(published_results(fetch, paper))
    matched, only = [], []
    rows_by_mart: dict[str, list[dict]] = {}
    for p in published:
        spec = counterparts.spec_for(p)
        if spec is None:
            only.append({**_published(p), "reason": _why_unmatched(p), "reason_stated": bool(_stated_reason(p))})
            continue
        rows = rows_by_mart.setdefault(spec.mart, mart_rows(fetch, spec.mart))
        freed = frozenset()
        if spec.vary:
            freed = frozenset(freed_by({spec.vary}))
        hits = counterparts.measured(spec, p, rows, GRAINS.get(spec.mart, ()), freed)
        base = {**_published(p), "ours_are": spec.ours}
        if not hits:
            why = "not measured yet" + (f": {spec.why_not}" if spec.why_not else "")
            matched.append({**base, "substrate": None, "ours": None, "ours_ci95": None, "n_runs": 0,
                            "host_n_runs": 0, "verdict": None, "against": None, "conditions": why})
        for h in sorted(hits, key=lambda h: (h["substrate"] or "", _conditions(h["row"], spec, p),
                                             h["against"] or "")):
            matched.append({**base, **{k: v for k, v in h.items() if k != "row"},
                            "conditions": _conditions(h["row"], spec, p)})
    return matched, only


# columns a published number may leave open: each measured value of them is its own row, named in its conditions
OPEN_COLUMNS = ("cni", "cni_mode", "length_bytes", "reliability", "subscribers", "service", "netem_scenario",
                "tuning_profile", "distribution")


def _conditions(r: dict, spec: counterparts.Spec | None = None, p: dict | None = None) -> str:
    """The row's conditions that are not the defaults ("tuning_profile=rti-dds netem_scenario=edg5"), the ones the
    published number leaves open (its payload, a CNI's mode, ...), or "defaults"."""
    named = [f"{k}={_norm(r[k])}" for k, default in CONDITIONS.items()
             if r.get(k) is not None and _norm(r[k]) != default]
    if spec is not None and p is not None:
        fixed_by_paper = {"cni": p.get("cni") and "cni" in spec.join,
                          "cni_mode": p.get("cni_mode") and "cni_mode" in spec.join,
                          "length_bytes": p.get("payload_bytes") not in (None, "") and "payload_bytes" in spec.join,
                          "distribution": p.get("distribution") and "distribution" in spec.join,
                          "tuning_profile": p.get("tuning_profile") and "tuning_profile" in spec.join}
        for k in OPEN_COLUMNS:
            if k in r and r[k] is not None and k not in spec.fixed and not fixed_by_paper.get(k) \
                    and _norm(r[k]) != CONDITIONS.get(k) and k != spec.vary and not any(x.startswith(f"{k}=") for x in named):
                named.append(f"{k}={_norm(r[k])}")
    return " ".join(named) or "defaults"


def _published(p: dict) -> dict:
    out = {k: p.get(k) for k in ("paper", "table_ref", "figure_ref", "label", "metric", "unit", "cni", "cni_mode",
                                 "payload_bytes", "distribution", "tuning_profile", "intercluster", "value",
                                 "value_high", "qualifier", "baseline", "normalization", "condition", "quote")}
    return {**out, "published": counterparts.published_text(p), "source": p.get("table_ref") or p.get("figure_ref")
            or "text"}


def _stated_reason(p: dict) -> str:
    """The seed's own reason this number has no counterpart (published_results.no_counterpart_reason), or ''."""
    text = p.get("no_counterpart_reason")
    return text.strip() if isinstance(text, str) else ""


def _why_unmatched(p: dict) -> str:
    """Why a printed number has no counterpart: the reason the seed states for it, else a generic one by its kind
    (generic_reason)."""
    return _stated_reason(p) or generic_reason(p)


def generic_reason(p: dict) -> str:
    """The fallback reason of a number without a counterpart and without a stated one: by its normalization,
    baseline and subjects, the same for every number of its kind."""
    norm = (p.get("normalization") or "").lower()
    if norm == "absolute":
        return "an absolute value on the paper's hardware and network; only relative values carry over"
    if "(absolute)" in norm:
        return (f"an absolute difference ({p.get('unit')}) on the paper's hardware; only relative values carry "
                "over")
    if (p.get("baseline") or "").startswith("link rate"):
        return "relative to the link rate: the testbed's links have no rate of their own"
    if not p.get("cni") and p.get("payload_bytes") is None and not p.get("label"):
        return "a statement over several subjects or sizes; tested through the paper's claims where edgebench can"
    return "relative to a baseline edgebench has no mart for (" + (p.get("baseline") or "?") + ")"


def paper_report(fetch: Fetch, paper: str) -> dict:
    """Everything the Papers page and `edgebench report --paper` show for one paper."""
    paper = paper_id(paper)
    numbers, only = numbers_report(fetch, paper)
    claims = claims_report(fetch, paper)
    subs = sorted({x["substrate"] for x in numbers + claims if x.get("substrate")})
    tally = {o: sum(1 for c in claims if c["outcome"] == o) for o in OUTCOMES}
    authors, title, about = PAPERS[paper]
    return {"paper": paper, "authors": authors, "title": title, "about": about, "substrates": subs,
            "substrate_notes": {s: SUBSTRATE_NOTES.get(s, s) for s in subs}, "numbers": numbers,
            "published_only": only, "claims": claims, "claim_outcomes": tally}
