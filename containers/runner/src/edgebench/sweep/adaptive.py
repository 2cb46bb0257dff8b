"""Adaptive repetitions (`-p repetitions=auto`), per variant: after each interleaved round from min-repetitions on,
each of a CNI cell's variants (workload, protocol, path, placement, size, parameters) whose comparison with the host
baseline's same variant is decided (equivalent, better or worse by the one rule, results/report/verdict.py, paired by
round) stops; so does one that cannot be decided within max-repetitions even if its spread stays as measured
(futile). The others go on, up to max-repetitions. The host baseline measures a variant while any cell still needs
it. A cell is done when all its variants are. Run keys are the fixed plan's (a stopped variant simply never measures
its later rounds), so a resumed sweep measures nothing twice.

Each decision is recorded: stops() returns, per cell, the variants that stop after this round and why; the runner
writes them to sweeps/<sweep id>/stops.json beside the sweep's plan.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from edgebench import workloads
from edgebench.plan.dimensions import DIMENSIONS
from edgebench.results.report.verdict import Comparison, compare, decide, margin_abs, margin_pct, pooled, t95
from edgebench.sweep import aim as aiming
from edgebench.workloads.dds import LEFTOVERS_STOPPED


class Reason(str):
    """Why a variant stops, in words (the log, stops.json), and whether the stop rests on the session's
    max-repetitions (`bounded`: reached, or futile at it), so a later session with a higher maximum knows, without
    reading the words, that it no longer holds (runner.stop_holds)."""
    bounded: bool

    def __new__(cls, text: str, bounded: bool = False) -> "Reason":
        out = super().__new__(cls, text)
        out.bounded = bounded
        return out


def conditions(cell, ignore: tuple[str, ...] = ()) -> tuple:
    """What a cell shares with its host baseline: every dimension but the network's own (and those in `ignore`)."""
    return tuple(getattr(cell, d.field) for d in DIMENSIONS
                 if d.field not in ("cni", "cni_mode", "datapath", *ignore))


def baselines(cells) -> dict[int, int | None]:
    """Cell index -> the index of its host-network cell under the same conditions (None: none in the sweep)."""
    hosts = {conditions(c): i for i, c in enumerate(cells) if c.cni_info.is_host}
    return {i: (None if c.cni_info.is_host else hosts.get(conditions(c))) for i, c in enumerate(cells)}


# run parameters a configuration's run may differ in from its host baseline's and still be its pair: how DDS finds
# its peers (the host network uses multicast discovery, a datapath without multicast static peers; cmp_dds_vs_host
# compares them and shows both as discovery / host_discovery); and what a run records of how it was made
# (leftovers_stopped: workloads/dds.py), never planned
NOT_MATCHED = ("discovery", LEFTOVERS_STOPPED)


def _variant(doc: dict[str, Any]) -> tuple:
    params = {k: v for k, v in (doc.get("params") or {}).items() if k not in NOT_MATCHED}
    return (doc.get("workload"), doc.get("protocol"), doc.get("path"), doc.get("placement"), doc.get("length_bytes"),
            json.dumps(params, sort_keys=True))


def variant(run) -> tuple:
    """A planned run's variant: what its stored document's variant will be (the key the decisions are made on)."""
    return _variant({"workload": run.workload, "protocol": run.protocol, "path": run.path,
                     "placement": run.placement, "length_bytes": run.length_bytes, "params": run.params})


def label(v: tuple) -> str:
    """A variant in words, for the log and stops.json: 'iperf3 tcp pod-to-pod cross-node 131072 B', with a short
    digest of its parameters where it has any (the run documents hold them in full)."""
    params = "" if v[5] in ("{}", "null") else f" params:{hashlib.sha256(v[5].encode()).hexdigest()[:6]}"
    return f"{v[0]} {v[1]} {v[2]} {v[3]} {v[4]} B{params}"


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


def judge(cell_docs: list[dict], host_docs: list[dict]) -> dict[tuple, Comparison]:
    """Each of the cell's variants against the host's, by the one rule, paired by round (rounds both measured)."""
    mine, host = _values(cell_docs), _values(host_docs)
    out = {}
    for v, by_round in mine.items():
        base = host.get(v)
        if not base:
            continue  # no baseline for this variant: nothing to decide on
        rounds = sorted(set(by_round) & set(base))
        if not rounds:
            continue
        family, _, higher = by_round[rounds[0]]
        out[v] = compare([by_round[r][1] for r in rounds], [base[r][1] for r in rounds], higher_is_better=higher,
                         pct=margin_pct(family), rounds_a=rounds, rounds_b=rounds)
    return out


def judge_all(cells, docs_by_cell: dict[str, list[dict]],
              base: dict[int, int | None]) -> dict[int, dict[tuple, Comparison]]:
    """Every CNI cell's variants against the host's (judge), with the spreads of the cells paired with the same host
    runs of a variant pooled, as the warehouse's vs-host marts pool them (verdict.pooled): cell index -> variant ->
    comparison. Cells whose variants already stopped still lend their spread to the pool."""
    out: dict[int, dict[tuple, Comparison]] = {}
    for i, b in base.items():
        if b is not None:
            out[i] = judge(docs_by_cell.get(cells[i].cell_id, []), docs_by_cell.get(cells[b].cell_id, []))
    groups: dict[tuple, list[int]] = {}
    for i, comps in out.items():
        for v in comps:
            groups.setdefault((base[i], v), []).append(i)
    for (_, v), members in groups.items():
        for i, c in zip(members, pooled([out[i][v] for i in members])):
            out[i][v] = c
    return out


# Looking after every round and stopping at the first decided look would call more false differences than one look
# at a fixed n does (simulated: 15 % of identical pairs instead of about 5 %, 3..8 rounds). So an early stop on a
# difference needs the interval widened to still say better / worse: by EARLY_WIDEN * sqrt(n_max / n) after n of
# n_max rounds, the shape of O'Brien-Fleming's group-sequential boundary (strict early, close to the plain rule
# late). Equivalence stops as it is. Simulated over 2000 paired trials each (5 % spread, 10 % drift, 3..8 rounds;
# bench/bench_verdicts.py): identical sides called different in 5.5-5.9 % (no early stop at all: 4.7-5.6 %, the
# final look's own 5 %), a 20 % shift found in 100 % after 5.2 rounds on average (a constant factor 3: 5.7 rounds;
# 2: 4.4 rounds but 7 % false). The verdict itself is always the one rule on all the runs (the warehouse's),
# whenever the variant stopped.
EARLY_WIDEN = 2.0


def widen(n: int, n_max: int) -> float:
    """The factor an early look's interval is widened by after n of n_max rounds."""
    return EARLY_WIDEN * math.sqrt(max(n_max, n) / max(n, 1))


# An early stop needs a spread worth trusting: a paired spread from 2 rounds alone has 1 degree of freedom and is
# often near 0 by chance (simulated: 1 % of identical pairs stopped as different after 2 rounds even with the widened
# interval). Pooled with the sweep's other modes (verdict.pooled) a comparison has more from round 2 on.
STOP_MIN_DF = 2


def settled(c: Comparison, n_max: int) -> bool:
    """May a variant stop on this comparison before n_max (max-repetitions) rounds?"""
    if c.df is None or c.df < STOP_MIN_DF:
        return False
    if c.verdict == "equivalent":
        return True
    if c.verdict in ("better", "worse") and c.ci95 is not None and c.mean_b is not None:
        w = widen(min(c.n_a, c.n_b), n_max)
        return decide(c.diff, c.ci95 * w, c.n_a, c.n_b, c.mean_b, c.verdict == "better" if c.diff > 0
                      else c.verdict == "worse", c.margin_pct) == c.verdict
    return False


# Futility: an undecided comparison whose interval, projected to max-repetitions pairs with the spread measured so far
# (the t value of that n, the width shrinking as 1 / sqrt(n)), would still decide nothing stops early. The projection
# is made with this much room (a spread estimated from 3 runs is often far off), so that only hopeless ones stop.
FUTILE_ROOM = 0.5
FUTILE_MIN_N = 3  # a spread from 2 runs (1 degree of freedom) says too little to give up on


def futile(c: Comparison, n_max: int) -> bool:
    """Would the comparison stay undecided at n_max pairs even with an interval FUTILE_ROOM times the projection?"""
    if c.verdict != "inconclusive" or c.ci95 is None or c.diff is None or c.mean_b is None:
        return False
    n = min(c.n_a, c.n_b)
    if n < FUTILE_MIN_N or n >= n_max:
        return False
    df = c.df if c.df is not None else n - 1  # a pooled interval's t has more degrees of freedom than n - 1
    projected = c.ci95 / t95(df) * math.sqrt(n) * t95(df + n_max - n) / math.sqrt(n_max) * FUTILE_ROOM
    margin = margin_abs(c.mean_b, c.margin_pct)
    return not (abs(c.diff) > projected or abs(c.diff) + projected <= margin)


def group_done(c: Comparison | None, rnd: int, max_r: int) -> Reason | None:
    """Why an aimed comparison (sweep/aim.py) needs no more rounds, or None while it does."""
    if c is None:
        return Reason("one side is not measured in this sweep")
    if settled(c, max_r):
        return Reason(f"{c.verdict} ({c.method}, n={min(c.n_a, c.n_b)})")
    if futile(c, max_r):
        return Reason(f"futile: {c.verdict}, and max-repetitions ({max_r}) would not decide it", bounded=True)
    if rnd >= max_r:
        return Reason(f"max-repetitions ({max_r}) reached: {c.verdict}", bounded=True)
    return None


def _aimed(cells, docs_by_cell: dict[str, list[dict]], active: dict[int, set[tuple]], rnd: int, min_r: int,
           max_r: int, aim: list[dict]) -> dict[int, dict[tuple, str]]:
    """The cells' variants that stop when the sweep aims at comparisons (sweep/aim.py): each when every aimed
    comparison it is a side of is done; one that none uses at min-repetitions."""
    docs = [d for ds in docs_by_cell.values() for d in ds]
    state: dict[tuple, list[Reason | None]] = {}
    for g in aiming.groups(aim, docs, _variant):
        why = group_done(g["comparison"], rnd, max_r)
        for member in g["members"]:
            state.setdefault(member, []).append(Reason(f"aim {g['aim'] + 1}: {why}", why.bounded) if why else None)
    out: dict[int, dict[tuple, Reason]] = {}
    for i in sorted(active):
        mine = {}
        for v in sorted(active[i]):
            whys = state.get((cells[i].cell_id, v))
            if whys is None:
                mine[v] = f"no aimed comparison uses it: stopped at min-repetitions ({min_r})"
            elif all(whys):
                mine[v] = Reason(f"every aimed comparison it is a side of is done after {rnd} rounds: "
                                 f"{'; '.join(whys)}", bounded=any(w.bounded for w in whys))
            elif rnd >= max_r:
                mine[v] = Reason(f"max-repetitions ({max_r}) reached", bounded=True)
        if mine:
            out[i] = mine
    return out


def stops(cells, docs_by_cell: dict[str, list[dict]], active: dict[int, set[tuple]], rnd: int, min_r: int,
          max_r: int, aim: list[dict] | None = None) -> dict[int, dict[tuple, str]]:
    """The variants of the active cells (cell index -> variants still measured) that stop after round `rnd`, with
    the reason recorded for each. With `aim` (sweep/aim.py) a cell's variant stops on the aimed comparisons it is a
    side of instead of on its comparison with the host."""
    if rnd < min_r:
        return {}
    base = baselines(cells)
    out: dict[int, dict[tuple, str]] = {}
    aimed = _aimed(cells, docs_by_cell, active, rnd, min_r, max_r, aim) if aim else None
    judged = None if aimed is not None else judge_all(cells, docs_by_cell, base)
    for i in sorted(active):
        if cells[i].cni_info.is_host or not active[i]:
            continue
        if aimed is not None:
            if aimed.get(i):
                out[i] = aimed[i]
            continue
        if base[i] is None:
            out[i] = {v: f"no host baseline in the sweep: stopped at min-repetitions ({min_r})" for v in active[i]}
            continue
        comps = judged.get(i, {})
        mine: dict[tuple, str] = {}
        for v in sorted(active[i]):
            c = comps.get(v)
            if c is None:
                mine[v] = f"nothing to judge after {rnd} rounds (no judged metric, or no ok run on both sides)"
            elif settled(c, max_r):
                mine[v] = f"decided after {rnd} rounds: {c.verdict} ({c.method}, n={min(c.n_a, c.n_b)})"
            elif rnd >= max_r:
                mine[v] = Reason(f"max-repetitions ({max_r}) reached: {c.verdict}", bounded=True)
            elif futile(c, max_r):
                mine[v] = Reason(f"futile after {rnd} rounds: {c.verdict}, and max-repetitions ({max_r}) would not "
                                 f"decide it at the spread measured", bounded=True)
        if mine:
            out[i] = mine
    needed: dict[int, set[tuple]] = {}
    for j in active:
        if not cells[j].cni_info.is_host and base[j] is not None:
            needed.setdefault(base[j], set()).update(active[j] - set(out.get(j, {})))
    for i in sorted(active):  # a host baseline measures a variant while a cell still needs it
        if cells[i].cni_info.is_host:
            own = (aimed or {}).get(i, {}) if aimed is not None else None  # and while its aimed comparisons do
            done = {v: (Reason(f"every cell compared with it stopped this variant after {rnd} rounds") if rnd < max_r
                        else Reason(f"max-repetitions ({max_r}) reached", bounded=True))
                    for v in active[i] if v not in needed.get(i, set())
                    and (own is None or v in own)}
            if done:
                out[i] = done
    return out
