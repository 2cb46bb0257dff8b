"""Duet rounds on the local testbed: within a round, every CNI mode and its host baseline stand built side by side,
each on its own testbed prefix (`<prefix>-d<k>`), and each workload variant runs on all of them one after another
before the next variant starts. A configuration's run and the host's run of the same variant are then seconds apart
instead of minutes (a round of the default sweep is several minutes long), so the machine's drift between them
cancels in the paired comparison (Bulej et al., ICPE 2020: duet benchmarking; Abedi and Brecht, ICPE 2017:
randomized interleaved trials).

The order within a variant puts the host in the middle and is reversed every other round, so each mode runs as
often before the host as after it, and no mode is always furthest from it (docs/verdicts.md, "Duet rounds").

A duet group is the cells of one round that share every cell dimension but the network's own (cni, cni mode, the
requested version): exactly what the warehouse pairs with the same host run, and the versions of one mode that a
regression card pairs. Only single-cluster cells of the local
substrate form groups (a real cluster is one build at a time; inter-cluster cells build two clusters).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Sequence

from edgebench import sh, substrates, workloads
from edgebench.plan import intercluster
from edgebench.plan.cells import runs_for
from edgebench.results.records.store import state_dir
from edgebench.substrates.local.testbed import Testbed, default_prefix
from edgebench.sweep import adaptive, phases, sampling

def group_key(cell: Any) -> tuple | None:
    """The cell's duet group (cells with equal keys stand side by side): what it shares with its host baseline
    (adaptive.conditions), a requested version aside; None when it takes no part."""
    if cell.substrate != "local" or cell.intercluster != "none":
        return None
    return adaptive.conditions(cell, ignore=("requested_version",))


def groups(cells: Sequence[Any]) -> dict[int, int]:
    """cell index -> group number, for the cells in a duet group: two or more cells with the same key (the host
    baseline among them, or a CNI mode at two requested versions: what a regression card pairs). Other cells are
    left out."""
    by_key: dict[tuple, list[int]] = {}
    for i, c in enumerate(cells):
        key = group_key(c)
        if key is not None:
            by_key.setdefault(key, []).append(i)
    out: dict[int, int] = {}
    for g, members in enumerate(m for m in by_key.values() if len(m) > 1):
        for i in members:
            out[i] = g
    return out


def prefix(base: str, k: int) -> str:
    """The testbed prefix of the k-th cell of a duet: under the sweep's own prefix, so that `edgebench testbed down`
    of the base prefix removes it too, and never a prefix that another duet member's names start with."""
    return f"{base}-d{k}"


def order(cells: Sequence[Any], members: Sequence[int], round_no: int) -> list[int]:
    """The members in the order each variant runs on them in round `round_no`: the configurations split around the
    host (host in the middle), reversed in even rounds."""
    hosts = [i for i in members if cells[i].cni == "host"]
    others = [i for i in members if cells[i].cni != "host"]
    half = (len(others) + 1) // 2
    seq = others[:half] + hosts + others[half:]
    return seq if round_no % 2 else seq[::-1]


def variants(runs_by_member: dict[int, list[Any]]) -> list[tuple]:
    """The variants of a duet in the order they run: the order of the first member that has each one (every member
    plans its runs in the same workload and variant order)."""
    seen: dict[tuple, None] = {}
    for runs in runs_by_member.values():
        for r in runs:
            seen.setdefault(adaptive.variant(r), None)
    return list(seen)


def run_one(ctx: Any, run: Any) -> None:
    """Measure one planned run of a set-up cell (its manifest stored as run-workloads stores every run)."""
    only = ctx.only
    ctx.only = {run.run_id}
    try:
        phases.run_workload(ctx, run.workload)
    finally:
        ctx.only = only


SETUP = phases.PHASES[:phases.PHASES.index("run-workloads")]


def together(ctxs: dict[int, phases.CellContext], members: Sequence[tuple[int, Any]], log: Any) -> None:
    """Measure one variant's runs on the members that can run it in one window, if its workload can (HTTP:
    workloads/http.py measure_together); the results wait in each member's ctx.premeasured for run_one to store.
    Otherwise (or for the members left out: a cell that is unsupported, a run an inter-cluster tool cannot carry)
    run_one measures each in turn."""
    able = [(i, r) for i, r in members if ctxs[i].state.get("supported") and not intercluster.run_reason(r)]
    if len(able) < 2 or len({i for i, _ in able}) < len(able):
        return
    workload = workloads.REGISTRY[able[0][1].workload]
    if not workload.measures_together:
        return
    started = phases.now()
    sampled = None
    try:
        sampled = sampling.joint([ctxs[i] for i, _ in able])  # the machine during the window (headroom gate)
        got = workload.measure_together([(ctxs[i], r) for i, r in able])
    except Exception as exc:  # noqa: BLE001 - measured one after another instead, with the reason in the log
        got = f"{type(exc).__name__}: {exc}"
    finally:
        window = sampled.stop() if sampled is not None else []
    if isinstance(got, str):
        log(f"duet: {able[0][1].workload} measured one member after another: {got}")
        return
    for i, r in able:
        if r.run_id in got:
            raw, metrics, error, params = got[r.run_id]
            if window:
                raw = {**raw, "resources.json": json.dumps(window).encode()}
            ctxs[i].premeasured[r.run_id] = (started, (raw, metrics, error, params))


def run_round(sweep: Any, cells: Sequence[Any], entries: Sequence[tuple[int, set[str]]], round_no: int,
              testbed: Testbed | None, previous: dict, results: Path, sink: Any, log: Any,
              on_phase: Any = None) -> None:
    """One round of one duet group: `entries` (cell index, run ids to measure) stand built side by side, each on
    its own prefix; each variant runs on every member (order()) before the next variant. A member whose set-up
    fails records its runs as failed with the reason, the others go on; teardown of every member always runs."""
    base = testbed.prefix if testbed is not None else default_prefix()
    runner = testbed._runner if testbed is not None else sh.run
    ctxs: dict[int, phases.CellContext] = {}
    try:
        for k, (i, todo) in enumerate(entries):
            cell = cells[i]
            workdir = state_dir() / "work" / sweep.sweep_id / cell.cell_id
            shutil.rmtree(workdir, ignore_errors=True)
            provider = substrates.get(cell.substrate, Testbed(prefix(base, k), runner=runner), cell=cell,
                                      workdir=workdir, cni_version=sweep.cni_version_requested(cell))
            ctx = ctxs[i] = phases.CellContext(
                sweep, cell, workdir=workdir, results=results, provider=provider, log=log, sink=sink, only=set(todo),
                attempts={rid: previous.get(rid, {}).get("attempt", 0) + 1 for rid in todo})
            try:
                if on_phase:
                    on_phase(f"set-up of {cell.label}")
                for phase in SETUP:
                    phases.FUNCTIONS[phase](ctx)
            except Exception as exc:  # this member cannot run: its runs are failed with the reason, the rest go on
                log(f"{cell.label}: FAILED {exc}")
                phases.collect_results(ctx, reason=f"{cell.label}: {exc}")
                _teardown([ctxs.pop(i)])
            if ctx.state.get("supported") is False:
                log(f"{cell.label}: {len(todo)} runs recorded as {ctx.state['reason']}")
        runs = {i: [r for r in runs_for(sweep, cells[i]) if r.run_id in ctx.only] for i, ctx in ctxs.items()}
        seq = order(cells, list(ctxs), round_no)
        if on_phase:
            on_phase("run-workloads, each variant on every member in turn")
        for var in variants(runs):
            members = [(i, r) for i in seq for r in runs[i] if adaptive.variant(r) == var]
            together(ctxs, members, log)
            for i, r in members:
                run_one(ctxs[i], r)
        for ctx in ctxs.values():
            phases.collect_results(ctx)
    finally:
        if on_phase and ctxs:
            on_phase("teardown-cluster")
        _teardown(list(ctxs.values()))


def _teardown(ctxs: Sequence[phases.CellContext]) -> None:
    """Tear down every member and remove its work dir; one member's failure does not spare the others (the first
    failure is raised after all were tried)."""
    failed: BaseException | None = None
    for ctx in ctxs:
        try:
            phases.teardown_cluster(ctx)
        except BaseException as exc:  # noqa: BLE001 - the next members still go; raised below
            failed = failed or exc
        finally:
            shutil.rmtree(ctx.workdir, ignore_errors=True)
    if failed is not None:
        raise failed
