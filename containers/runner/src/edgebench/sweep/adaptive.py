"""Adaptive repetitions (`-p repetitions=auto`): after each interleaved round from min-repetitions on, a CNI cell
whose every comparison with its host baseline is decided (equivalent, better or worse by the one rule,
results/verdict.py, paired by round) stops; the others go on, up to max-repetitions. The host baseline of a set of
conditions goes on while any cell that needs it does. Run keys are the fixed plan's (a stopped cell simply never
measures its later rounds), so a resumed sweep measures nothing twice.

Each decision is recorded: stops() returns, per cell, the round it stopped after and why; the runner writes them to
sweeps/<sweep id>/stops.json beside the sweep's plan.
"""
from __future__ import annotations

import json
from typing import Any

from edgebench import workloads
from edgebench.plan.dimensions import DIMENSIONS
from edgebench.results.verdict import Comparison, compare, decide, margin_pct


def conditions(cell) -> tuple:
    """What a cell shares with its host baseline: every dimension but the network's own."""
    return tuple(getattr(cell, d.field) for d in DIMENSIONS if d.field not in ("cni", "cni_mode", "datapath"))


def baselines(cells) -> dict[int, int | None]:
    """Cell index -> the index of its host-network cell under the same conditions (None: none in the sweep)."""
    hosts = {conditions(c): i for i, c in enumerate(cells) if c.cni_info.is_host}
    return {i: (None if c.cni_info.is_host else hosts.get(conditions(c))) for i, c in enumerate(cells)}


def _variant(doc: dict[str, Any]) -> tuple:
    return (doc.get("workload"), doc.get("protocol"), doc.get("path"), doc.get("placement"), doc.get("length_bytes"),
            json.dumps(doc.get("params") or {}, sort_keys=True))


def _values(docs: list[dict[str, Any]]) -> dict[tuple, dict[int, tuple[str, float, bool]]]:
    """variant -> {round: (family, value, higher is better)} over a cell's ok runs."""
    out: dict[tuple, dict[int, tuple[str, float, bool]]] = {}
    for d in docs:
        if d.get("status") != "ok" or d.get("workload") not in workloads.REGISTRY:
            continue
        judged = workloads.REGISTRY[d["workload"]].judged(d.get("metrics") or {})
        if judged is not None:
            out.setdefault(_variant(d), {})[d.get("repetition")] = judged
    return out


def judge(cell_docs: list[dict], host_docs: list[dict]) -> list[tuple[tuple, Comparison]]:
    """Each of the cell's variants against the host's, by the one rule, paired by round (rounds both measured)."""
    mine, host = _values(cell_docs), _values(host_docs)
    out = []
    for variant, by_round in mine.items():
        base = host.get(variant)
        if not base:
            continue  # no baseline for this variant: nothing to decide on
        rounds = sorted(set(by_round) & set(base))
        if not rounds:
            continue
        family, _, higher = by_round[rounds[0]]
        out.append((variant, compare([by_round[r][1] for r in rounds], [base[r][1] for r in rounds],
                                     higher_is_better=higher, pct=margin_pct(family), rounds_a=rounds,
                                     rounds_b=rounds)))
    return out


# Looking after every round and stopping at the first decided look would call more false differences than one look
# at a fixed n does (simulated: 15 % of identical pairs instead of about 5 %, 3..8 rounds). So an early stop on a
# difference needs the interval widened by this factor to still say better / worse (an alpha-spending guard, as
# group-sequential designs use); equivalence stops as it is. The verdict itself is always the one rule on all the
# runs (the warehouse's), whenever the cell stopped.
EARLY_WIDEN = 2.0


def settled(c: Comparison) -> bool:
    """May a cell stop on this comparison before max-repetitions?"""
    if c.verdict == "equivalent":
        return True
    if c.verdict in ("better", "worse") and c.ci95 is not None and c.mean_b is not None:
        return decide(c.diff, c.ci95 * EARLY_WIDEN, c.n_a, c.n_b, c.mean_b, c.verdict == "better" if c.diff > 0
                      else c.verdict == "worse", c.margin_pct) == c.verdict
    return False


def judge_cell(cell_docs: list[dict], host_docs: list[dict]) -> tuple[bool, dict[str, int]]:
    """May the cell stop: is every comparison with its host settled? Returns (settled, verdict counts)."""
    counts: dict[str, int] = {}
    ok = True
    for _, c in judge(cell_docs, host_docs):
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
        ok = ok and settled(c)
    return bool(counts) and ok, counts


def stops(cells, docs_by_cell: dict[str, list[dict]], active: set[int], rnd: int, min_r: int,
          max_r: int) -> dict[int, str]:
    """The active cells that stop after round `rnd`, with the reason recorded for each."""
    if rnd < min_r:
        return {}
    base = baselines(cells)
    out: dict[int, str] = {}
    for i in sorted(active):
        if cells[i].cni_info.is_host:
            continue
        if base[i] is None:
            out[i] = f"no host baseline in the sweep: stopped at min-repetitions ({min_r})"
            continue
        decided, counts = judge_cell(docs_by_cell.get(cells[i].cell_id, []),
                                     docs_by_cell.get(cells[base[i]].cell_id, []))
        tally = ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "no comparison"
        if decided:
            out[i] = f"all comparisons decided after {rnd} rounds: {tally}"
        elif rnd >= max_r:
            out[i] = f"max-repetitions ({max_r}) reached with comparisons undecided: {tally}"
    still = {i for i in active if i not in out and not cells[i].cni_info.is_host}
    for i in sorted(active):  # a host baseline goes on while a cell that needs it does
        if cells[i].cni_info.is_host and i not in out:
            needed = any(base[j] == i for j in still)
            if not needed:
                out[i] = (f"every cell compared with it stopped after {rnd} rounds" if rnd < max_r else
                          f"max-repetitions ({max_r}) reached")
    return out
