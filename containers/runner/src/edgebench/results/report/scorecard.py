"""The reproduction scorecard: per seed paper and substrate, how many of its claims our data agrees with, disagrees
with, cannot tell, or cannot test, and how many of its printed numbers have a counterpart we measure
(numbers_comparable) or else a reason stated for that number (numbers_explained counts both); each "cannot tell"
names what would decide it (the preset to run, or about how many more runs per side).

It summarises results/report/papers.py's report (the claims judged by the one verdict rule, results/report/verdict.py) and adds
nothing of its own to the judgement. Shown on top of the portal's Papers page and by `edgebench report --paper all`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from edgebench.results.report import claim_preset, papers, verdict
from edgebench.results.report.claim_compare import metric_family, norm
from edgebench.results.report.marts.papers import published_claims


def runs_to_decide(row: dict) -> int | None:
    """About how many more runs per side would decide an inconclusive claim comparison (its sides' means and
    half-widths, as the one rule's runs_to_decide estimates it); None when it cannot be estimated or exceeds
    verdict.MAX_RUNS_TO_DECIDE."""
    left, right = row.get("left") or {}, row.get("right") or {}
    if left.get("mean") is None or right.get("mean") is None or left.get("ci95") is None:
        return None
    ci = math.sqrt(left["ci95"] ** 2 + (right.get("ci95") or 0.0) ** 2)
    n = max(2, runs_a_side(row) or 2)
    return verdict.runs_to_decide("inconclusive", left["mean"] - right["mean"], ci, n, right["mean"],
                                  verdict.margin_pct(metric_family(row.get("metric") or "")))


def runs_a_side(row: dict) -> int | None:
    """The runs a side of a claim comparison has per configuration (the fewer of the two), None when unknown."""
    per_row = [s["n_runs"] / s["n_rows"] for s in (row.get("left") or {}, row.get("right") or {}) if s.get("n_rows")]
    return int(min(per_row)) if per_row else None


# reasons a claim is undecided that more runs of the same runs do not mend
NOT_MORE_RUNS = ("nothing measured", "side missing", "few runs", "not evaluated")


def more_runs(row: dict) -> int | None:
    """Where what an undecided claim lacks is runs (its comparison is inconclusive): about how many more a side
    would decide it (runs_to_decide); None otherwise, or when it cannot be estimated."""
    if row.get("substrate") is None or row.get("reason") in NOT_MORE_RUNS:
        return None
    return runs_to_decide(row)


def to_decide(row: dict, claim: dict, paper: str, root: Path | None = None) -> str:
    """What would decide a claim our data cannot tell: which preset (results/report/claim_preset.py: the one
    answer `edgebench papers run` takes too), with the -p that adds the claim's conditions where its grid lacks
    them, or why none measures it here; how many runs."""
    where = claim_preset.home(claim, paper, root, row.get("substrate"))
    run = where.command()
    reason = row.get("reason")
    if not where.presets:
        return f"{run}{_elsewhere(claim, paper, root, where)}"
    if row.get("substrate") is None or reason == "nothing measured":
        return f"measure it: {run}{_elsewhere(claim, paper, root, where)}"
    if reason == "side missing":
        return (f"measure both sides ({_sides(claim)}) under the same conditions: {run}"
                f"{_elsewhere(claim, paper, root, where, always=True)}")
    if reason == "few runs":
        return f"2 or more runs per side: {run} (-p repetitions=3 or more)"
    if reason == "not evaluated":
        return f"the claim's mart cannot be read as the claim asks: {row.get('detail')}"
    k = more_runs(row)
    if k is None:
        return f"more runs than can be estimated (over {verdict.MAX_RUNS_TO_DECIDE} per side) at this spread: {run}"
    return f"about {k} more run(s) per side: {run} with -p repetitions=auto -p max-repetitions={k + 3}"


def _sides(claim: dict) -> str:
    """'cni=calico|kube-router against cni=flannel|cilium, where protocol=tcp' (the claim's sides and filters)."""
    where = ", ".join(f"{k}={'|'.join(map(norm, v)) if isinstance(v, list) else norm(v)}"
                      for k, v in json.loads(claim.get("filters") or "{}").items())
    return f"{claim.get('left_subject')} against {claim.get('right_subject')}" + (f", where {where}" if where else "")


def _elsewhere(claim: dict, paper: str, root: Path | None, where: claim_preset.Home, always: bool = False) -> str:
    """On the testbed, where its preset's grid as it stands does not hold the claim (or `always`: a side the
    testbed ran and recorded nothing of, say a kernel without the feature), the cluster preset(s) that measure it."""
    if where.kind != claim_preset.TESTBED or where.holds and not always:
        return ""
    cluster = claim_preset.home(claim, paper, root, "ssh")
    if not cluster.presets:
        return ""
    return f" (or the paper's full grid: {cluster.command()})"


def _number_key(n: dict) -> tuple:
    return tuple(n.get(k) for k in ("table_ref", "figure_ref", "label", "metric", "unit", "cni", "cni_mode",
                                    "payload_bytes", "distribution", "tuning_profile", "qualifier", "value"))


def paper_scorecard(fetch: papers.Fetch, paper: str, root: Path | None = None,
                    also: tuple[str, ...] = ()) -> list[dict]:
    """One row per substrate the paper has results on (one row with substrate None when it has none), and one per
    substrate of `also` it has none on (every claim there nothing measured or not testable: `papers run` on a lab
    the testbed has measured before)."""
    paper = papers.paper_id(paper)
    rep = papers.paper_report(fetch, paper)
    claims = {c["claim_id"]: c for c in published_claims(fetch, paper)}
    printed = {_number_key(n) for n in rep["numbers"]} | {_number_key(n) for n in rep["published_only"]}
    comparable = {_number_key(n) for n in rep["numbers"]}
    # a counterpart, or a reason stated for the number itself (published_results.no_counterpart_reason)
    explained = comparable | {_number_key(n) for n in rep["published_only"] if n.get("reason_stated")}
    out = []
    subs = [*rep["substrates"], *(s for s in also if s not in rep["substrates"])]
    for sub in subs or [None]:
        tally = dict.fromkeys(papers.OUTCOMES, 0)
        undecided = []
        for cid, claim in claims.items():
            rows = [r for r in rep["claims"] if r["claim_id"] == cid]
            row = next((r for r in rows if r["substrate"] == sub), None)
            if row is None:
                limit = papers.substrate_limit(claim, sub)
                row = next((r for r in rows if r["outcome"] == "not testable" and r["substrate"] in (None, sub)),
                           None) or (
                    {"claim_id": cid, "outcome": "not testable", "reason": "not testable", "substrate": sub,
                     "detail": limit} if limit else
                    {"claim_id": cid, "outcome": "cannot tell", "reason": "nothing measured", "substrate": None,
                     "metric": claim.get("metric"), "detail": f"nothing measured in {claim.get('mart')} on this "
                                                              "substrate"})
            tally[row["outcome"]] += 1
            if row["outcome"] == "cannot tell":
                undecided.append({"claim_id": cid, "claim": claim.get("claim"), "why": row.get("detail"),
                                  "to_decide": to_decide(row, claim, paper, root), "runs_a_side": runs_a_side(row),
                                  "more_runs": more_runs(row)})
        testable = len(claims) - tally["not testable"]  # on this substrate (papers.substrate_limit)
        decided = tally["agrees"] + tally["disagrees"]
        measured = {_number_key(n) for n in rep["numbers"] if n.get("substrate") == sub and n.get("ours") is not None}
        out.append({"paper": paper, "substrate": sub, "claims": len(claims), **tally, "testable": testable,
                    "decided": decided, "decided_share": decided / testable if testable else None,
                    "numbers_printed": len(printed), "numbers_comparable": len(comparable),
                    "numbers_explained": len(explained),
                    "numbers_explained_share": len(explained) / len(printed) if printed else None,
                    "numbers_measured": len(measured), "cannot_tell": undecided})
    return out


def scorecard(fetch: papers.Fetch, root: Path | None = None, also: tuple[str, ...] = ()) -> list[dict]:
    """Every seed paper's scorecard rows, in paper order (`also`: paper_scorecard's)."""
    return [row for paper in papers.PAPERS for row in paper_scorecard(fetch, paper, root, also)]


def totals(rows: list[dict]) -> list[dict]:
    """Per substrate over every paper (the rows of scorecard()): claims decided of the testable ones there, and the
    share; substrates in the order they first appear."""
    out: dict[str, dict] = {}
    for r in rows:
        if r["substrate"] is None:
            continue
        t = out.setdefault(r["substrate"], {"substrate": r["substrate"], "decided": 0, "testable": 0})
        t["decided"] += r["decided"]
        t["testable"] += r["testable"]
    return [{**t, "decided_share": t["decided"] / t["testable"] if t["testable"] else None} for t in out.values()]
