"""`make papers` / `edgebench papers run`: every testbed preset that a seed paper's undecided claims need, run
one after another within one wall-time budget, then the scorecard (issue 46).

The plan comes from the reproduction scorecard (results/report/scorecard.py): for each claim the testbed cannot tell yet,
the testbed preset that measures it (results/report/claim_preset.home, the one answer the scorecard's hints give
too); a preset serves every undecided claim that names it.
Presets run in the order of how many undecided claims they serve. Each runs as a sweep with adaptive repetitions
(`repetitions=auto`: a variant stops once its comparison with the host is decided, or cannot be) and its share of
the budget left, in proportion to its planned runs (`time-budget`), under a sweep id of its own
(`papers-<preset>`): run again, stored runs are never measured twice, and a preset whose claims are all decided by
then is not run at all. After each preset the warehouse is rebuilt and the scorecard read again.

A preset measures only the runs its claims compare (`select`, results/report/claim_runs.py): each claim's sides
under its filters, and where the sweep is not aimed (below) their host-network counterparts; a cell none of whose
runs is selected is not set up. A claim goes to the testbed preset whose grid holds both of its sides
(claim_preset.home); one that no preset's grid holds as it stands is left out and named, with what would measure it
(the -p that adds its conditions to a grid, or why nothing here can).

Where every claim a preset serves can be judged on the runs themselves (sweep/aim.py: a per-run metric, subjects
and filters a run holds), the sweep aims at those claims (`aim`): a variant stops once every claim comparison it is a
side of is decided or cannot be, and one that no claim uses stops at min-repetitions; otherwise (a claim on a metric
the marts derive, such as an efficiency) the variants stop on their comparison with the host.
With budget left after every preset ran, a second pass goes back to the claims a few runs short (`second_pass`).

On a lab (`--inventory`: the ssh substrate) the same plan reads the scorecard's `ssh` rows and takes the cluster
presets (claim_preset.home on a cluster), each run through the ssh provider as `edgebench sweep --inventory` runs
it; the two substrates' claims are judged apart, never pooled.
Everything that touches the machine is injected (run_sweep, rebuild, read_rows), so the plan and the loop are
tested offline.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from edgebench.results.report import claim_preset, claim_runs
from edgebench.results.report.claim_compare import substrate_limit
from edgebench.sweep import aim

MIN_SLICE_S = 120.0  # less budget left than this: no preset can finish its minimum rounds, stop


@dataclass
class PresetTask:
    """A preset (a testbed one, or a cluster one on a lab) and the undecided claims (paper, claim id) it measures."""

    preset: str
    claims: list[tuple[str, str]] = field(default_factory=list)

    @property
    def papers(self) -> list[str]:
        return sorted({p for p, _ in self.claims})

    def aim(self, rows: dict[tuple[str, str], dict]) -> list[dict] | None:
        """The claims as aimed comparisons (sweep/aim.py), or None when one of them cannot be judged on runs."""
        items = [aim.from_claim(rows.get(key, {})) for key in self.claims]
        return None if not items or any(i is None for i in items) else items

    def select(self, rows: dict[tuple[str, str], dict], host: bool = False) -> list[dict]:
        """The runs its claims compare, as the sweep's `select` conditions (results/report/claim_runs.py): each
        claim's sides under its filters, with host also their host-network counterparts; [] (the whole grid) when a
        claim's cannot be read."""
        out: list[dict] = []
        for key in self.claims:
            conds = claim_runs.conditions(rows.get(key, {}), host)
            if conds is None:
                return []
            out += [c for c in conds if c not in out]
        return out

    def params(self, rows: dict[tuple[str, str], dict]) -> dict[str, str]:
        """The sweep parameters its claims give: `aim` where every claim can be judged on the runs (sweep/aim.py),
        and `select`, the runs they compare; where the sweep is not aimed its variants stop on their comparison
        with the host, so the host-network counterpart of every selected run is selected too."""
        aimed = self.aim(rows)
        chosen = self.select(rows, host=aimed is None)
        out = {}
        if aimed:
            out["aim"] = json.dumps(aimed, separators=(",", ":"))
        if chosen:
            out["select"] = json.dumps(chosen, separators=(",", ":"))
        return out

    @property
    def sweep_id(self) -> str:
        stem = re.sub(r"[^a-z0-9-]+", "-", Path(self.preset).name.removesuffix(".yaml").lower()).strip("-")
        return f"papers-{stem}"[:63].rstrip("-")


def _rows_on(rows: list[dict], papers: list[str] | None = None, substrate: str = "local") -> list[dict]:
    """Each paper's scorecard row for the substrate (`local`: the testbed, `ssh`: a lab), or its row without a
    substrate when that substrate measured nothing of it."""
    out = []
    for paper in dict.fromkeys(r["paper"] for r in rows):
        if papers and paper not in papers:
            continue
        mine = [r for r in rows if r["paper"] == paper]
        row = next((r for r in mine if r["substrate"] == substrate), None) or \
            next((r for r in mine if r["substrate"] is None), None)
        if row is not None:
            out.append(row)
    return out


def undecided(rows: list[dict], papers: list[str] | None = None, substrate: str = "local") -> list[tuple[str, str]]:
    """(paper, claim id) of every claim the substrate cannot tell yet: the scorecard's row of each paper on it, or
    its row without a substrate when the substrate measured nothing of it."""
    return [(row["paper"], u["claim_id"]) for row in _rows_on(rows, papers, substrate) for u in row["cannot_tell"]]


def to_decide(rows: list[dict], key: tuple[str, str], substrate: str = "local") -> str | None:
    """The scorecard's own hint for an undecided claim on the substrate (what would decide it), as it prints it."""
    return next((u.get("to_decide") for row in _rows_on(rows, [key[0]], substrate) for u in row["cannot_tell"]
                 if u["claim_id"] == key[1]), None)


def short_of_runs(rows: list[dict], keys: list[tuple[str, str]],
                  substrate: str = "local") -> dict[tuple[str, str], tuple[int, int]]:
    """Of these claims, those the substrate cannot tell for want of runs alone (the scorecard's `more_runs`), each
    with (its runs a side, about how many more would decide it)."""
    want = set(keys)
    return {(row["paper"], u["claim_id"]): (u["runs_a_side"], u["more_runs"])
            for row in _rows_on(rows, sorted({p for p, _ in want}), substrate) for u in row["cannot_tell"]
            if (row["paper"], u["claim_id"]) in want and u.get("more_runs") is not None
            and u.get("runs_a_side") is not None}


def plan(rows: list[dict], claims: dict[tuple[str, str], dict], root: Path | None = None,
         papers: list[str] | None = None, substrate: str = "local",
         skip: dict[str, str] | None = None) -> tuple[list[PresetTask], list[tuple[str, str]]]:
    """The presets to run on the substrate (testbed presets on `local`, cluster presets on `ssh`), most undecided
    claims first, and the undecided claims no preset of that kind measures (none's grid holds both sides under the
    claim's filters: the tuned profiles the testbed leaves out, say). `claims`: (paper, claim id) -> the
    published_claims row; `skip`: presets the substrate cannot run, with the reason (claim_preset.home)."""
    tasks: dict[str, PresetTask] = {}
    orphans = []
    for key in undecided(rows, papers, substrate):
        if substrate_limit(claims.get(key, {}), substrate):  # never the substrate's, whatever it runs (a paper
            continue                                          # with nothing measured has them among its undecided)
        where = claim_preset.home(claims.get(key, {}), key[0], root, substrate, skip)
        if not where.holds:
            orphans.append(key)
            continue
        tasks.setdefault(where.preset, PresetTask(where.preset)).claims.append(key)
    return sorted(tasks.values(), key=lambda t: (-len(t.claims), t.preset)), orphans


# rounds every preset's variants run before one may stop (`--min-repetitions`; docs/papers.md)
MIN_REPETITIONS = 2
# ... and where the preset is not aimed at its claims: its variants stop on their comparison with the host, a stand-in
# for claims on derived metrics that is decided long before the claims are. From round 2 it stopped seed 001's
# preset with 3 of its 15 claims decided (2026-11-29 20:35, 6.3 min), from round 3 with 8 or 9 (9-16 min).
UNAIMED_MIN_REPETITIONS = 3


def min_rounds(params: dict[str, str], min_repetitions: int = MIN_REPETITIONS) -> int:
    """The minimum rounds of a preset's sweep with these parameters: `min_repetitions` where it is aimed at its
    claims, at least UNAIMED_MIN_REPETITIONS where it is not."""
    return min_repetitions if "aim" in params else max(min_repetitions, UNAIMED_MIN_REPETITIONS)


def overrun(tasks: list[PresetTask], budget_s: float, minimum_s: Callable[[str], float]) -> str | None:
    """A warning when the presets' minimum rounds alone (min-repetitions always run, whatever the budget) hold more
    timed measurement than the budget: how many of the presets, in the order they run, fit; None when all do."""
    total, fit = 0.0, 0
    for t in tasks:
        total += minimum_s(t.preset)
        fit += total <= budget_s
    if total <= budget_s:
        return None
    return (f"the presets' minimum rounds alone hold {total / 60:.0f} min of timed measurement (run set-up and HTTP "
            f"runs, counted in requests, not included), more than the {budget_s / 60:.0f} min budget: {fit} of "
            f"{len(tasks)} fit; a preset runs its minimum rounds even past its share, one they would take past the "
            "budget left is not started, and the presets left when the "
            "budget is spent do not run (run again with a larger --budget: stored runs are kept)")


# the second pass: a claim at most this many more runs a side short (the scorecard's estimate) is gone back to while
# budget is left, its sides up to at most MAX_ROUNDS rounds
SHORT_RUNS = 10
MAX_ROUNDS = 12

Shortfall = Callable[[PresetTask], dict[tuple[str, str], tuple[int, int]]]


def run(tasks: list[PresetTask], budget_s: float, *, planned_runs: Callable[[str], int],
        run_sweep: Callable[[PresetTask, dict[str, str]], None], rebuild: Callable[[], None],
        still_open: Callable[[PresetTask], list[tuple[str, str]]], log: Callable[[str], None] = print,
        max_repetitions: int = 6, min_repetitions: int = MIN_REPETITIONS, clock: Callable[[], float] = time.monotonic,
        claims: dict[tuple[str, str], dict] | None = None,
        minimum_s: Callable[[str], float] | None = None, shortfall: Shortfall | None = None) -> list[dict]:
    """Run the tasks within budget_s; returns one record per task: its preset, what happened (`run`, `decided`:
    nothing left to decide, `no budget`) and its time budget and wall time in seconds, then one per preset of the
    second pass (`second pass`). minimum_s(preset): the timed measurement of its minimum rounds (min-repetitions
    always run, whatever its share): a preset whose minimum rounds hold more than the budget left is not started,
    one whose minimum rounds hold more than its share is said to run past it. shortfall(task): its claims still
    undecided for want of runs alone, each with (runs a side, about how many more would decide it); with it, budget
    left after every preset ran goes back to them (second_pass)."""
    t0 = clock()
    weights = {t.preset: max(1, planned_runs(t.preset)) for t in tasks}
    done: list[dict] = []
    for i, task in enumerate(tasks):
        elapsed = clock() - t0
        left = budget_s - elapsed
        open_now = still_open(task) if i else task.claims
        if not open_now:
            log(f"papers: [{i + 1}/{len(tasks)}] {task.preset}: its claims are decided; not run")
            done.append({"preset": task.preset, "outcome": "decided", "budget_s": 0.0, "wall_s": 0.0})
            continue
        if left < MIN_SLICE_S:
            log(f"papers: [{i + 1}/{len(tasks)}] {task.preset}: the budget is spent ({elapsed:.0f} s of "
                f"{budget_s:.0f} s); not run. Run again with a larger --budget: stored runs are kept")
            done.append({"preset": task.preset, "outcome": "no budget", "budget_s": 0.0, "wall_s": 0.0})
            continue
        floor = minimum_s(task.preset) if minimum_s else 0.0
        if floor > left:  # started, its minimum rounds would run on past the budget (hours for a lab's preset)
            log(f"papers: [{i + 1}/{len(tasks)}] {task.preset}: its minimum rounds alone hold {floor / 60:.1f} min "
                f"of timed measurement, more than the {left / 60:.1f} min of the budget left; not run. Run again "
                "with a larger --budget: stored runs are kept")
            done.append({"preset": task.preset, "outcome": "no budget", "budget_s": 0.0, "wall_s": 0.0})
            continue
        rest = sum(weights[t.preset] for t in tasks[i:])
        share = max(MIN_SLICE_S, left * weights[task.preset] / rest)
        past = (f"; its minimum rounds alone hold {floor / 60:.1f} min of timed measurement, so it runs past "
                "its share" if floor > share else "")
        eta = f"ETA the whole run {(elapsed + left) / 60:.0f} min at the latest"
        log(f"papers: [{i + 1}/{len(tasks)}] seed {', '.join(task.papers)}: {task.preset} for {len(open_now)} "
            f"undecided claim(s); budget {share / 60:.1f} min of the {left / 60:.1f} min left{past}; {eta} "
            f"(sweep {task.sweep_id})")
        chosen = task.params(claims or {})
        params = {"repetitions": "auto", "min-repetitions": str(min(min_rounds(chosen, min_repetitions),
                                                                     max_repetitions)),
                  "max-repetitions": str(max_repetitions), "time-budget": str(int(share)),
                  "sweep-id": task.sweep_id, **chosen}
        if "aim" in params:
            log(f"papers: [{i + 1}/{len(tasks)}] aimed at its {len(json.loads(params['aim']))} claim comparison(s)")
        else:  # its variants would stop on the host, not on its claims: its minimum rounds now, the rest from the
            params["max-repetitions"] = params["min-repetitions"]  # second pass, for the claims a few runs short
            log(f"papers: [{i + 1}/{len(tasks)}] a claim is judged on a derived metric: its minimum rounds "
                f"({params['min-repetitions']}) now; the second pass goes back to its claims a few runs short")
        if "select" in params:
            log(f"papers: [{i + 1}/{len(tasks)}] only the runs its claims compare: {len(json.loads(params['select']))} "
                "condition(s) (select)")
        wall = _measure(task, params, len(open_now), run_sweep=run_sweep, rebuild=rebuild, still_open=still_open,
                        clock=clock, log=log, tag=f"papers: [{i + 1}/{len(tasks)}] {task.preset}")
        done.append({"preset": task.preset, "outcome": "run", "budget_s": share, "wall_s": wall})
    if shortfall:
        ran = [t for t, rec in zip(tasks, done) if rec["outcome"] == "run"]
        done += second_pass(ran, budget_s - (clock() - t0), shortfall=shortfall, run_sweep=run_sweep,
                            rebuild=rebuild, still_open=still_open, log=log, max_repetitions=max_repetitions,
                            min_repetitions=min_repetitions, clock=clock, claims=claims, minimum_s=minimum_s)
    return done


def _measure(task: PresetTask, params: dict[str, str], n_open: int, *,
             run_sweep: Callable[[PresetTask, dict[str, str]], None], rebuild: Callable[[], None],
             still_open: Callable[[PresetTask], list[tuple[str, str]]], clock: Callable[[], float],
             log: Callable[[str], None], tag: str) -> float:
    """Run a preset's sweep, rebuild the warehouse and say how many of its `n_open` open claims it decided; returns
    its wall time in seconds."""
    start = clock()
    run_sweep(task, params)
    rebuild()
    wall = clock() - start
    log(f"{tag}: {wall / 60:.1f} min; {n_open - len(still_open(task))} of its {n_open} claim(s) decided")
    return wall


def second_pass(tasks: list[PresetTask], budget_s: float, *, shortfall: Shortfall,
                run_sweep: Callable[[PresetTask, dict[str, str]], None], rebuild: Callable[[], None],
                still_open: Callable[[PresetTask], list[tuple[str, str]]], log: Callable[[str], None] = print,
                max_repetitions: int = 6, min_repetitions: int = MIN_REPETITIONS,
                clock: Callable[[], float] = time.monotonic, claims: dict[tuple[str, str], dict] | None = None,
                minimum_s: Callable[[str], float] | None = None) -> list[dict]:
    """The presets whose claims are a few runs short (at most SHORT_RUNS more a side, the scorecard's estimate),
    fewest short first, each run again under its sweep id for those claims alone (select) with min-repetitions at
    their runs a side plus the runs they lack: the runs stored are kept, and the variants an earlier session stopped
    before that go on (sweep/runner.stop_holds). A preset's extra rounds are cut to what the budget left holds at
    the pace of its minimum rounds (minimum_s); one that cannot add a round is not run."""
    t0 = clock()
    wanted = []
    for task in tasks:
        short = {k: v for k, v in shortfall(task).items() if v[1] <= SHORT_RUNS}
        if short:
            wanted.append((max(v[1] for v in short.values()), task, short))
    wanted.sort(key=lambda w: (w[0], w[1].preset))
    done: list[dict] = []
    for i, (more, task, short) in enumerate(wanted):
        tag = f"papers: second pass [{i + 1}/{len(wanted)}] {task.preset}"
        left = budget_s - (clock() - t0)
        have = min(n for n, _ in short.values())
        target = min(MAX_ROUNDS, max(n + k for n, k in short.values()))
        first = task.params(claims or {})
        per_round = (minimum_s(task.preset) / min(min_rounds(first, min_repetitions), max_repetitions)
                     if minimum_s else 0.0)
        fits = int(left // per_round) if per_round else target - have
        extra = min(target - have, fits)
        if left < MIN_SLICE_S or extra < 1:
            log(f"{tag}: {len(short)} claim(s) about {more} run(s) a side short; the budget left "
                f"({max(left, 0) / 60:.1f} min) holds no more round; not run")
            done.append({"preset": task.preset, "outcome": "no budget", "budget_s": 0.0, "wall_s": 0.0})
            continue
        sub = PresetTask(task.preset, sorted(short))
        rounds = have + extra
        params = {"repetitions": "auto", "min-repetitions": str(rounds),
                  "max-repetitions": str(max(max_repetitions, rounds)), "time-budget": str(int(left)),
                  "sweep-id": task.sweep_id, **sub.params(claims or {})}
        cost = (f"about {extra * per_round / 60:.1f} min of timed measurement" if per_round else
                "HTTP runs, counted in requests: their time is not estimated")
        log(f"{tag}: {len(short)} claim(s) about {more} run(s) a side short ({', '.join(c for _, c in sub.claims)}): "
            f"their runs to {rounds} rounds a side ({extra} more, {cost}); "
            f"{left / 60:.1f} min of the budget left (sweep {task.sweep_id})")
        wall = _measure(sub, params, len(sub.claims), run_sweep=run_sweep, rebuild=rebuild, still_open=still_open,
                        clock=clock, log=log, tag=tag)
        done.append({"preset": task.preset, "outcome": "second pass", "budget_s": left, "wall_s": wall})
    return done
