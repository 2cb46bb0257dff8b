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
import re
from pathlib import Path

from edgebench.plan import spec
from edgebench.results.report import papers, verdict
from edgebench.results.report.claim_compare import metric_family, threshold
from edgebench.results.report.marts.papers import published_claims


def preset_for(claim: dict, paper: str, root: Path | None = None, substrate: str | None = "local") -> str | None:
    """The preset that measures a claim on a substrate (the testbed's .testbed.yaml for local, or when the substrate
    is not known yet; a cluster preset otherwise): the one whose name's last word (multicast, security, kubeadm, ...)
    is a value of the claim's subjects, else a word of its statement, else the paper's first of that kind, else one
    of the other kind."""
    found = papers.presets(paper, root)
    kind, other = ("testbed", "cluster") if substrate in ("local", None) else ("cluster", "testbed")
    options = found[kind] or found[other]
    if not options:
        return None
    values = [v for k in ("left_subject", "right_subject") if threshold(str(claim.get(k) or "")) is None
              for vs in papers.parse_subject(str(claim.get(k) or "")).values() for v in vs]
    def named(text: str) -> list[str]:
        words = set(re.findall(r"[a-z0-9]+", text.lower()))
        return [p for p in options if Path(p).name.split(".")[0].rsplit("-", 1)[-1] in words]
    # the subjects' values name the condition more surely than the statement's words ("every unicast CNI")
    return (named(" ".join(values)) or named(str(claim.get("claim") or "")) or options)[0]


def _command(preset: str | None) -> str:
    if preset is None:
        return "no preset measures it yet"
    return f"`edgebench sweep {preset} --local`" if preset.endswith(".testbed.yaml") else f"`argo submit {preset}`"


def runs_to_decide(row: dict) -> int | None:
    """About how many more runs per side would decide an inconclusive claim comparison (its sides' means and
    half-widths, as the one rule's runs_to_decide estimates it); None when it cannot be estimated or exceeds
    verdict.MAX_RUNS_TO_DECIDE."""
    left, right = row.get("left") or {}, row.get("right") or {}
    if left.get("mean") is None or right.get("mean") is None or left.get("ci95") is None:
        return None
    ci = math.sqrt(left["ci95"] ** 2 + (right.get("ci95") or 0.0) ** 2)
    per_row = [s["n_runs"] / s["n_rows"] for s in (left, right) if s.get("n_rows")]
    n = max(2, int(min(per_row))) if per_row else 2
    return verdict.runs_to_decide("inconclusive", left["mean"] - right["mean"], ci, n, right["mean"],
                                  verdict.margin_pct(metric_family(row.get("metric") or "")))


def to_decide(row: dict, claim: dict, paper: str, root: Path | None = None) -> str:
    """What would decide a claim our data cannot tell: which preset, how many runs."""
    run = _command(preset_for(claim, paper, root, row.get("substrate")))
    reason = row.get("reason")
    if row.get("substrate") is None or reason == "nothing measured":
        return f"measure it: {run}"
    if reason == "side missing":
        preset = preset_for(claim, paper, root, row.get("substrate"))
        return (f"measure both sides ({_sides(claim)}) under the same conditions: {run}{_widen(claim, preset, root)}"
                f"{_elsewhere(claim, paper, root, preset)}")
    if reason == "few runs":
        return f"2 or more runs per side: {run} (-p repetitions=3 or more)"
    if reason == "not evaluated":
        return f"the claim's mart cannot be read as the claim asks: {row.get('detail')}"
    k = runs_to_decide(row)
    if k is None:
        return f"more runs than can be estimated (over {verdict.MAX_RUNS_TO_DECIDE} per side) at this spread: {run}"
    return f"about {k} more run(s) per side: {run} with -p repetitions=auto -p max-repetitions={k + 3}"


def _sides(claim: dict) -> str:
    """'cni=calico|kube-router against cni=flannel|cilium, where protocol=tcp' (the claim's sides and filters)."""
    where = ", ".join(f"{k}={'|'.join(map(str, v)) if isinstance(v, list) else v}"
                      for k, v in json.loads(claim.get("filters") or "{}").items())
    return f"{claim.get('left_subject')} against {claim.get('right_subject')}" + (f", where {where}" if where else "")


# cell dimensions a claim may name that a preset's grid may lack: mart column -> the sweep parameter that lists them
_GRID_PARAMS = {"tuning_profile": "tuning", "netem_scenario": "netem"}


def _widen(claim: dict, preset: str | None, root: Path | None) -> str:
    """` with -p 'tuning=[...]'` where the claim names values of a cell dimension the preset's grid does not hold:
    the preset's own values and the claim's, so that the preset's cells stay and the claim's are added."""
    if preset is None:
        return ""
    try:
        raw = spec.load((root or papers.repo_root()) / preset).raw
    except Exception:  # a preset that does not load says so when it is run; the hint just names it
        return ""
    extra = []
    for column, param in _GRID_PARAMS.items():
        have = json.loads(raw.get(param) or "[]") if str(raw.get(param) or "").startswith("[") else []
        want = sorted(papers.named_values(claim, column) - set(have))
        if want:
            extra.append(f" -p '{param}={json.dumps(have + want, separators=(',', ':'))}'")
    return (" with" + "".join(extra)) if extra else ""


def _elsewhere(claim: dict, paper: str, root: Path | None, named: str | None = None) -> str:
    """Where the testbed preset's grid may lack the claim's conditions: the paper's full grid on a cluster (unless
    that is the preset already `named`)."""
    cluster = preset_for(claim, paper, root, "ssh")
    if cluster is None or cluster.endswith(".testbed.yaml") or cluster == named:
        return ""
    return f" (or the paper's full grid: `argo submit {cluster}`)"


def _number_key(n: dict) -> tuple:
    return tuple(n.get(k) for k in ("table_ref", "figure_ref", "label", "metric", "unit", "cni", "cni_mode",
                                    "payload_bytes", "distribution", "tuning_profile", "qualifier", "value"))


def paper_scorecard(fetch: papers.Fetch, paper: str, root: Path | None = None) -> list[dict]:
    """One row per substrate the paper has results on (one row with substrate None when it has none)."""
    paper = papers.paper_id(paper)
    rep = papers.paper_report(fetch, paper)
    claims = {c["claim_id"]: c for c in published_claims(fetch, paper)}
    printed = {_number_key(n) for n in rep["numbers"]} | {_number_key(n) for n in rep["published_only"]}
    comparable = {_number_key(n) for n in rep["numbers"]}
    # a counterpart, or a reason stated for the number itself (published_results.no_counterpart_reason)
    explained = comparable | {_number_key(n) for n in rep["published_only"] if n.get("reason_stated")}
    out = []
    for sub in rep["substrates"] or [None]:
        tally = dict.fromkeys(papers.OUTCOMES, 0)
        undecided = []
        for cid, claim in claims.items():
            rows = [r for r in rep["claims"] if r["claim_id"] == cid]
            row = next((r for r in rows if r["substrate"] == sub), None)
            if row is None:
                limit = papers.substrate_limit(claim, sub)
                row = next((r for r in rows if r["outcome"] == "not testable"), None) or (
                    {"claim_id": cid, "outcome": "not testable", "reason": "not testable", "substrate": sub,
                     "detail": limit} if limit else
                    {"claim_id": cid, "outcome": "cannot tell", "reason": "nothing measured", "substrate": None,
                     "metric": claim.get("metric"), "detail": f"nothing measured in {claim.get('mart')} on this "
                                                              "substrate"})
            tally[row["outcome"]] += 1
            if row["outcome"] == "cannot tell":
                undecided.append({"claim_id": cid, "claim": claim.get("claim"), "why": row.get("detail"),
                                  "to_decide": to_decide(row, claim, paper, root)})
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


def scorecard(fetch: papers.Fetch, root: Path | None = None) -> list[dict]:
    """Every seed paper's scorecard rows, in paper order."""
    return [row for paper in papers.PAPERS for row in paper_scorecard(fetch, paper, root)]


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
