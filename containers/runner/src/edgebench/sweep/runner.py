"""The local step runner: runs a sweep's cells through the phases (phases.PHASES), the order the Argo DAG uses.

Every run ends in a manifest (ok, failed or unsupported) that is spooled at once and uploaded in the background
while the next run measures (store.BackgroundUploader), so a failure or an interrupt mid-sweep loses nothing
already measured (what was not sent yet stays in the spool, sent by the next sweep or `edgebench upload`); the sweep
waits for its uploads before it returns; teardown always runs.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

from edgebench import sh, workloads
from edgebench.sweep import adaptive, duet, phases
from edgebench.sweep.progress import Progress
from edgebench import substrates
from edgebench.plan.cells import Run, expand_checked, runs_for
from edgebench.plan.params import Rounds
from edgebench.results.records.runstore import now
from edgebench.plan.spec import Sweep
from edgebench.results.records.store import BackgroundUploader, ResultStore, state_dir, statuses
from edgebench.results.report.sweep_status import plan_record
from edgebench.substrates.local.testbed import Testbed, require_root

PHASES = phases.PHASES


@dataclass
class SweepReport:
    sweep_id: str
    counts: dict[str, int] = field(default_factory=lambda: {"ok": 0, "failed": 0, "unsupported": 0, "skipped": 0})
    failures: list[str] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)


Log = Callable[[str], None]


def headline(doc: dict[str, Any]) -> str:
    """The one figure a progress line shows for an ok run (the workload says which)."""
    return workloads.REGISTRY[doc["workload"]].headline(doc["metrics"] or {})


def run_local(sweep: Sweep, store: ResultStore, *, rerun: bool = False, log: Log = print,
              testbed: Testbed | None = None, interleave: bool = True, live: TextIO | None = None,
              duet_on: bool = True) -> SweepReport:
    """Run the sweep's cells, in interleaved rounds unless interleave is False (visits()); within a round the cells
    of a duet group side by side, each variant on all of them in turn, unless duet_on is False (sweep/duet.py). Progress
    (sweep/progress.py) is a live line on `live` (a terminal), else plain lines through `log` when the current cell or
    phase changes."""
    require_root()
    sh.require("ip", "bridge", "nft", "ss")
    for name in dict.fromkeys(tool for tool, _ in sweep.values["workloads"]):
        sh.require(*workloads.REGISTRY[name].tools)
    store.check()
    leftover = store.flush()
    if leftover:
        log(f"uploaded {leftover} object(s) left in the spool by an earlier run")
    cells, skipped = expand_checked(sweep)
    for cell, reason in skipped:
        log(f"skipped {cell.label}: {reason}")
    report = SweepReport(sweep.sweep_id)
    stored = {} if rerun else store.run_manifests(sweep.sweep_id)
    previous = statuses(stored)
    store.put_json(f"sweeps/{sweep.sweep_id}/sweep.json", plan_record(sweep, cells, now()))  # `edgebench status`
    total = sum(len(runs_for(sweep, c)) for c in cells)
    progress = Progress(len(cells), total, log=log, stream=live, tty=live is not None)
    log = progress.log  # the sweep's lines go above the live line
    reasons: set[tuple[str, str]] = set()

    uploader = BackgroundUploader(store, log)

    def sink(run: Run, doc: dict[str, Any]) -> None:
        uploader.submit(run.prefix)  # spooled complete: sent while the next run measures
        progress.run()
        report.counts[doc["status"]] += 1
        report.results.append(doc)
        head = f"{progress.head()} {run.label}"
        if doc["status"] == "ok":
            log(f"{head}: {headline(doc)}")
        elif doc["status"] == "failed":
            report.failures.append(f"{run.label}: {doc['error']}")
            log(f"{head}: FAILED {doc['error']}")
        elif (run.cell.cell_id, doc["error"]) not in reasons:  # unsupported: each reason once per cell
            reasons.add((run.cell.cell_id, doc["error"]))
            log(f"{head}: {doc['error']} (recorded; same for other runs of this cell with this reason)")

    try:
        _run_cells(sweep, cells, store, testbed, previous, report, progress, sink, log, interleave,
                   prior=[d for d in stored.values() if d.get("status") == "ok"], duet_on=duet_on)
    except BaseException:  # interrupted or broken: still send what was measured, but report the original error
        with contextlib.suppress(Exception):
            uploader.close()
        raise
    finally:
        progress.close()
    uploader.close()  # every run measured is uploaded before the sweep returns (else StoreError, kept in the spool)
    return report


def visits(sweep: Sweep, cells, todos: list[set[str]], interleave: bool,
           duets: dict[int, int] | None = None) -> list[tuple[int, set[str]]]:
    """The order the cells are measured in: (cell index, run ids) per visit. Interleaved (the default), round r of
    every cell runs before round r + 1 of any: each round is a block of time in which every configuration and its
    baseline ran once, so the warehouse pairs them by round and the machine's drift between rounds cancels
    (docs/verdicts.md). Otherwise each cell runs all its rounds at once (one provisioning per cell). `duets`
    (sweep/duet.py groups) puts the cells of a duet group next to each other within each round."""
    if not interleave:
        return [(i, todo) for i, todo in enumerate(todos) if todo]
    rounds = sweep.values["repetitions"]
    by_rep = [{r.repetition: set() for r in runs_for(sweep, c)} for c in cells]
    for i, cell in enumerate(cells):
        for r in runs_for(sweep, cell):
            if r.run_id in todos[i]:
                by_rep[i][r.repetition].add(r.run_id)
    order = list(range(len(cells)))
    if duets:  # a duet group's cells stand side by side: consecutive within a round, where its first cell was
        first = {g: min(i for i, h in duets.items() if h == g) for g in set(duets.values())}
        order.sort(key=lambda i: (first[duets[i]], i) if i in duets else (i, i))
    return [(i, by_rep[i][rep]) for rep in range(1, rounds + 1) for i in order if by_rep[i].get(rep)]


def _adapt(sweep: Sweep, cells, store: ResultStore, report: SweepReport, progress: Progress, log: Log,
           plan: list, v: int, rnd: int, active: dict[int, set], variant_of: dict[str, tuple], stopped: dict,
           prior: list[dict], rep_of: dict[str, int]) -> None:
    """repetitions=auto, after round `rnd` (the visit plan[v] ended it): stop the variants whose comparisons are
    decided, or cannot be within max-repetitions (sweep/adaptive.py), drop their runs from the later visits, and
    record why in sweeps/<id>/stops.json. A resumed sweep judges the runs stored before it too (`prior`)."""
    docs: dict[str, list[dict]] = {}
    for doc in [*prior, *report.results]:
        docs.setdefault(doc.get("cell_id"), []).append(doc)
    decisions = adaptive.stops(cells, docs, active, rnd, sweep.values["min-repetitions"],
                               sweep.values["max-repetitions"], aim=sweep.values.get("aim"))
    nxt = sum(1 for j, t in plan[v + 1:] for rid in t  # the next round's runs of the variants still open
              if rep_of[rid] == rnd + 1 and variant_of[rid] not in decisions.get(j, {}))
    progress.round_ended(rnd)
    over = _over_budget(sweep, nxt, rnd, progress, len(rep_of) // max(1, sweep.values["repetitions"]))
    if over:  # the next round would end after the budget: every variant still open stops here
        for j, vs in active.items():
            for var in vs - set(decisions.get(j, {})):
                decisions.setdefault(j, {})[var] = over
        log(f"round {rnd}: {over}")
    if not decisions:
        return
    for j, by_variant in decisions.items():
        active[j] -= set(by_variant)
        rec = stopped.setdefault(cells[j].cell_id, {"label": cells[j].label, "variants": {}})
        for var, reason in sorted(by_variant.items()):
            rec["variants"][adaptive.label(var)] = {
                "after_round": rnd, "reason": str(reason), "max_repetitions": sweep.values["max-repetitions"],
                "kind": ("time-budget" if reason is over else
                         "max-repetitions" if getattr(reason, "bounded", False) else "judged")}
            if reason != over:  # the budget's stop is said once, above
                log(f"{cells[j].label}: {adaptive.label(var)} stops after round {rnd}: {reason}")
        if not active[j]:
            rec["after_round"] = rnd
            rec["reason"] = f"every variant stopped ({len(rec['variants'])}) by round {rnd}"
    later, dropped, gone = [], 0, set()
    for j, todo in plan[v + 1:]:
        keep = {rid for rid in todo if variant_of[rid] in active[j]}
        dropped += len(todo) - len(keep)
        if keep:
            later.append((j, keep))
        else:
            gone.add(j)
    plan[v + 1:] = later
    progress.skip(dropped)
    report.counts["not needed"] = report.counts.get("not needed", 0) + dropped
    for j in gone:
        if all(k != j for k, _ in later):
            progress.cell_done()
    store.put_json(f"sweeps/{sweep.sweep_id}/stops.json", {"sweep_id": sweep.sweep_id, "stops": stopped})


def _over_budget(sweep: Sweep, next_round: int, rnd: int, progress: Progress, full_round: int) -> str | None:
    """repetitions=auto with a time-budget, after round `rnd` from the minimum on: why the next round (of
    `next_round` runs) does not start (it would end after the budget), or None. The next round's time is its runs at
    the pace of the last round (its runs and its cells' set-up, over its runs) or of the whole session, whichever is
    slower: later rounds measure fewer variants, so each round's set-up weighs more on each run. A budget in rounds
    (`3r`) is the time that many full rounds (`full_round` runs: every variant) take at the pace of this session's
    full rounds, the session's first round counted once as it was (it carries the one-time costs fixed N pays
    once too), less the rounds an earlier session of the sweep measured."""
    budget = sweep.values.get("time-budget")
    if not budget or not next_round or rnd < sweep.values["min-repetitions"] or not progress.measured:
        return None
    elapsed, marks = progress.elapsed(), progress.round_marks
    pace = elapsed / progress.measured
    spans = [(t1 - t0, m1 - m0) for (_, t0, m0), (_, t1, m1) in zip([(0, 0.0, 0), *marks], marks)]
    if spans and spans[-1][1] > 0:
        pace = max(pace, spans[-1][0] / spans[-1][1])
    ends = elapsed + next_round * pace
    cost = f"round {rnd + 1} ({next_round} runs, about {next_round * pace:.0f} s at {pace:.1f} s a run) would end at " \
           f"{ends:.0f} s"
    if not isinstance(budget, Rounds):
        return None if ends <= budget else f"time budget: {cost}, after the {budget} s budget"
    rounds = max(0, budget.n - (marks[0][0] - 1 if marks else 0))  # less what an earlier session measured
    full = [t for t, m in spans if m == full_round]
    if len(full) >= 2 and spans[0][1] == full_round:
        seconds, per_round = full[0] + (rounds - 1) * statistics.fmean(full[1:]), statistics.fmean(full[1:])
    else:
        per_round = statistics.fmean(full) if full else full_round * elapsed / progress.measured
        seconds = rounds * per_round
    if ends <= seconds:
        return None
    return (f"time budget: {cost}, after {rounds} full rounds' time ({seconds:.0f} s; a full round takes "
            f"{per_round:.0f} s here)")


def _resume_stops(sweep: Sweep, cells, store: ResultStore, active: dict[int, set], log: Log) -> dict:
    """repetitions=auto, resumed: the variants an earlier session of this sweep stopped stay stopped (their later
    runs are not measured now either); returns the earlier stops.json's record to go on from."""
    earlier = (store.get_json(f"sweeps/{sweep.sweep_id}/stops.json") or {}).get("stops") or {}
    index = {c.cell_id: i for i, c in enumerate(cells)}
    for cell_id, rec in earlier.items():
        i = index.get(cell_id)
        if i is None:
            continue
        stops = rec.get("variants") or {}
        lifted = {name for name, stop in stops.items() if not stop_holds(stop, sweep.values)}
        for name in lifted:
            del stops[name]
        if lifted:  # the cell is no longer stopped as a whole
            rec.pop("after_round", None)
            rec.pop("reason", None)
        done = {v for v in active[i] if adaptive.label(v) in stops}
        if done:
            active[i] -= done
            log(f"{cells[i].label}: {len(done)} variant(s) stopped by an earlier session of this sweep stay stopped")
        if lifted:
            log(f"{cells[i].label}: {len(lifted)} variant(s) an earlier session stopped go on: its reason does not hold "
                "under this session's min-repetitions, max-repetitions or budget")
    return earlier


def stop_holds(stop: dict, values: dict) -> bool:
    """Does a variant's stop recorded by an earlier session of the sweep (stops.json) hold under this session's
    parameters? Not when it came before this session's min-repetitions, from a time budget (each session has its
    own), or from a max-repetitions lower than this session's (reached, or futile at that maximum); a variant
    decided stays decided. A stop recorded without its kind (an older stops.json) does not hold: measuring again
    costs runs, trusting a stop that no longer holds would cost the answer."""
    if stop.get("after_round", 0) < values["min-repetitions"]:
        return False
    kind = stop.get("kind")
    if kind == "max-repetitions":
        return stop.get("max_repetitions", 0) >= values["max-repetitions"]
    return kind == "judged"


def _run_cells(sweep: Sweep, cells, store: ResultStore, testbed: Testbed | None, previous: dict, report: SweepReport,
               progress: Progress, sink, log: Log, interleave: bool = True, prior: list[dict] | None = None,
               duet_on: bool = True) -> None:
    """The cells in visits() order. Consecutive visits of the same build (Provider.build_key: local testbed, same
    datapath, service proxy, CPU class and MTUs; they differ in tuning or link condition) share one cluster: the
    earlier visit resets it for the next instead of tearing it down, and verifies the reset (phases.reset_cluster);
    anything that does not read back as built, a failure or an interrupt, and it is torn down as before."""
    todos = [{r.run_id for r in runs_for(sweep, c) if previous.get(r.run_id, {}).get("status") != "ok"} for c in cells]
    # runs stored before (a resumed sweep) are done from the start: the ETA counts only what is left to measure
    progress.skip(sum(len(runs_for(sweep, c)) - len(todo) for c, todo in zip(cells, todos)))
    for i, cell in enumerate(cells):
        runs = runs_for(sweep, cell)
        report.counts["skipped"] += len(runs) - len(todos[i])
        if not todos[i]:
            progress.cell(cell.label)
            progress.cell_done()
            log(f"{progress.head()} {cell.label}: all {len(runs)} runs already stored, skipped")
    duets = duet.groups(cells) if interleave and duet_on else {}
    plan = visits(sweep, cells, todos, interleave, duets)
    adaptive_on = bool(sweep.values.get("adaptive")) and interleave
    rep_of = {r.run_id: r.repetition for c in cells for r in runs_for(sweep, c)}
    variant_of = {r.run_id: adaptive.variant(r) for c in cells for r in runs_for(sweep, c)}
    active = {i: {adaptive.variant(r) for r in runs_for(sweep, c)} for i, c in enumerate(cells)}
    stopped: dict = _resume_stops(sweep, cells, store, active, log) if adaptive_on and prior else {}
    if stopped:  # what an earlier session stopped is not measured now
        keep = [(i, {rid for rid in todo if variant_of[rid] in active[i]}) for i, todo in plan]
        not_needed = sum(len(t) for _, t in plan) - sum(len(t) for _, t in keep)
        for i in {i for i, _ in plan} - {i for i, t in keep if t}:
            progress.cell_done()  # nothing of it is left to measure
        plan[:] = [(i, t) for i, t in keep if t]
        progress.skip(not_needed)
        report.counts["not needed"] = report.counts.get("not needed", 0) + not_needed
    kept = None  # (provider, phases.handover) of the cluster the previous visit reset for the next one
    n_rounds = sweep.values["repetitions"]
    try:
        v = 0
        while v < len(plan):
            i, todo = plan[v]
            cell, rnd_no = cells[i], rep_of[next(iter(todo))]
            w = v  # a duet: the consecutive visits of one group in this round stand side by side (sweep/duet.py)
            while (i in duets and w + 1 < len(plan) and duets.get(plan[w + 1][0]) == duets[i]
                   and rep_of[next(iter(plan[w + 1][1]))] == rnd_no):
                w += 1
            last_of_round = w + 1 == len(plan) or rep_of[next(iter(plan[w + 1][1]))] != rnd_no
            if w > v:
                if kept is not None:
                    kept, prev = None, kept
                    prev[0].teardown()
                members = [cells[j].label for j, _ in plan[v:w + 1]]
                progress.cell(f"duet of {len(members)}, round {rnd_no} of {n_rounds}")
                log(f"round {rnd_no} of {n_rounds}: {', '.join(members)} side by side, each variant on all of them "
                    f"in turn ({sum(len(t) for _, t in plan[v:w + 1])} runs)")
                duet.run_round(sweep, cells, plan[v:w + 1], rnd_no, testbed, previous, store.spool, sink, log,
                               progress.phase)
                for j, _ in plan[v:w + 1]:
                    if all(k != j for k, _ in plan[w + 1:]):
                        progress.cell_done()
                if adaptive_on and last_of_round:
                    _adapt(sweep, cells, store, report, progress, log, plan, w, rnd_no, active, variant_of, stopped,
                           prior or [], rep_of)
                v = w + 1
                continue
            rnd = f", round {rnd_no} of {n_rounds}" if interleave else ""
            progress.cell(cell.label + (rnd.replace(",", "") if rnd else ""))
            log(f"{cell.label}: {cell.cni_info.datapath} datapath, {len(todo)} runs{rnd} ({cell.cell_id})")
            workdir = state_dir() / "work" / sweep.sweep_id / cell.cell_id
            shutil.rmtree(workdir, ignore_errors=True)  # every visit starts from a clean state
            provider = substrates.get(cell.substrate, getattr(kept[0], "testbed", testbed) if kept else testbed,
                                      cell=cell, workdir=workdir, cni_version=sweep.cni_version_requested(cell))
            # with repetitions=auto the next round's visits are known only after this round's decisions
            nxt = v + 1 if v + 1 < len(plan) and not (adaptive_on and last_of_round) else None
            key, nxt_key = substrates.build_key(cell), substrates.build_key(cells[plan[nxt][0]]) if nxt else None
            ctx = phases.CellContext(
                sweep, cell, workdir=workdir, results=store.spool, provider=provider, log=log, sink=sink, only=todo,
                attempts={rid: previous.get(rid, {}).get("attempt", 0) + 1 for rid in todo},
                reuse=kept[1] if kept else None, keep=key is not None and nxt is not None and nxt_key == key,
                on_phase=progress.phase,
            )
            kept = None  # the visit owns the cluster now: run_cell tears it down unless it resets it for the next
            try:
                if phases.run_cell(ctx):
                    kept = (provider, phases.handover(ctx))
            except Exception as exc:  # a phase failed outright: the runs it left without a manifest are failed
                log(f"{cell.label}: FAILED {exc}")
                phases.collect_results(ctx, reason=f"{cell.label}: {exc}")
            if ctx.state.get("supported") is False:
                log(f"{cell.label}: {len(todo)} runs recorded as {ctx.state['reason']}")
            shutil.rmtree(workdir, ignore_errors=True)
            if all(j != i for j, _ in plan[v + 1:]):
                progress.cell_done()
            if adaptive_on and last_of_round:
                _adapt(sweep, cells, store, report, progress, log, plan, v, rnd_no, active, variant_of, stopped,
                       prior or [], rep_of)
            v += 1
    finally:
        if kept is not None:  # interrupted between two cells: the kept cluster goes too
            kept[0].teardown()
