"""The phases of a cell as commands (`edgebench provision-cluster|install-cni|...|collect-results --cell-id ...`,
what the Argo templates run) and `edgebench run-cell` (all of them in one process)."""

from __future__ import annotations

import functools
import signal
from pathlib import Path
from typing import List, Optional

import typer

from edgebench import substrates
from edgebench.cli.options import (ARGO_HELP, CELL_HELP, CELL_ID_HELP, DEFAULT_ID_HELP, INVENTORY_HELP,
                                   KNOWN_HOSTS_HELP, SSH_KEY_HELP, on_sigterm)
from edgebench.console import out
from edgebench.errors import SpecError
from edgebench.plan import spec as spec_mod
from edgebench.plan.cells import by_id, cell_json, from_json
from edgebench.results.records.store import ResultStore, state_dir
from edgebench.sweep import holding, live_store, phases as ph
from edgebench.sweep.phases import PHASES

PANEL = "Phases of a cell (what the Argo templates run)"


def cell_of(cell: Optional[str], cell_id: Optional[str], argo_parameters: Optional[str],
            default_sweep_id: Optional[str]):
    """(Sweep, Cell) of a phase command: the cell's JSON (--cell), or its id in the sweep of --argo-parameters."""
    if cell_id and argo_parameters is not None:
        s = spec_mod.from_parameters(spec_mod.argo_overrides(argo_parameters, None, default_sweep_id), "--argo-parameters")
        return from_json(cell_json(s, by_id(s, cell_id)))  # the same (Sweep, Cell) as the cell's JSON gives
    if cell and not cell_id:
        return from_json(Path(cell[1:]).read_text() if cell.startswith("@") else cell)
    raise SpecError("give the cell: --cell JSON (or @FILE), or --cell-id with --argo-parameters")


def provider_for(sweep, cell, workdir: Path, inventory=None, ssh_key=None, known_hosts=None):
    """The cell's provider; a triggered rerun's requested version (the cell JSON's `trigger` parameter) with it."""

    return substrates.get(cell.substrate, cell=cell, workdir=workdir, inventory=inventory and str(inventory),
                          ssh_key=ssh_key and str(ssh_key), known_hosts=known_hosts and str(known_hosts),
                          cni_version=sweep.cni_version_requested(cell))


def _phase_command(app: typer.Typer, phase: str) -> None:
    doc = (ph.FUNCTIONS[phase].__doc__ or "").strip().split("\n\n")[0]

    def command(
        cell: Optional[str] = typer.Option(None, "--cell", help=CELL_HELP),
        cell_id: Optional[str] = typer.Option(None, "--cell-id", help=CELL_ID_HELP),
        argo_parameters: Optional[str] = typer.Option(None, "--argo-parameters", help=ARGO_HELP),
        default_sweep_id: Optional[str] = typer.Option(None, "--default-sweep-id", help=DEFAULT_ID_HELP),
        workdir: Optional[Path] = typer.Option(None, "--workdir", help="Cell state directory shared by the phases "
                                               "(default .edgebench/work/<sweep>/<cell>; on Argo an artifact)."),
        results: Optional[Path] = typer.Option(None, "--results", help="Where runs are written as "
                                               "runs/<sweep>/<cell>/<run>/ (default: the local spool)."),
        upload: bool = typer.Option(False, "--upload", help="collect-results: upload the results to the object "
                                    "store from the environment (on Argo the output artifact does it)."),
        sources: List[Path] = typer.Option([], "--from", help="collect-results: result trees of the run-* steps to "
                                           "merge into --results first (repeatable; missing ones are ignored)."),
        ended: Optional[str] = typer.Option(None, "--run-workloads-status", help="collect-results: how the "
                                            "run-workloads step ended (Argo's {{tasks.run-workloads.status}}); "
                                            "a run it left without a manifest is recorded failed with why."),
        exit_code: Optional[str] = typer.Option(None, "--run-workloads-exit-code", help="collect-results: the "
                                                "run-workloads step's exit code (130: its pod was stopped)."),
        inventory: Optional[Path] = typer.Option(None, "--inventory", help=INVENTORY_HELP),
        ssh_key: Optional[Path] = typer.Option(None, "--ssh-key", help=SSH_KEY_HELP),
        known_hosts: Optional[Path] = typer.Option(None, "--known-hosts", help=KNOWN_HOSTS_HELP),
    ):
        s, c = cell_of(cell, cell_id, argo_parameters, default_sweep_id)
        store = ResultStore() if upload else None
        wd = workdir or state_dir() / "work" / s.sweep_id / c.cell_id
        ctx = ph.CellContext(s, c, workdir=wd, results=results or (store.spool if store else state_dir() / "spool"),
                             provider=provider_for(s, c, wd, inventory, ssh_key, known_hosts), log=out.print)
        signal.signal(signal.SIGTERM, on_sigterm)
        live = _live(ctx, phase)
        function = ph.FUNCTIONS[phase]
        if phase == "collect-results":
            if live:  # the runs the run-workloads pod sent as they finished (it may have died before its artifact)
                scratch = wd.parent / f"{wd.name}.live"
                got = live.fetch(f"runs/{s.sweep_id}/{c.cell_id}/", scratch)
                out.print(f"{len(got)} runs of cell {c.cell_id} were already in {live.cfg.endpoint} as they finished")
                sources = [*sources, scratch]
            ph.merge_results(ctx, sources)
            function = functools.partial(ph.collect_results, reason=live_store.ended_reason(ended, exit_code))
        with holding.phase_hold(c.substrate if phase != "collect-results" else "", inventory, ssh_key, known_hosts):
            result = function(ctx)
        if phase == "collect-results":
            out.print(f"{len(result)} runs of cell {c.cell_id} under {ctx.results / 'runs' / s.sweep_id / c.cell_id}")
            if store:
                store.check()
                out.print(f"uploaded {store.flush()} object(s)")
        else:
            out.print(f"{phase}: done for cell {c.cell_id} ({c.label})")

    command.__doc__ = f"Phase {phase} of one cell. {doc}"
    app.command(phase, rich_help_panel=PANEL)(command)


def _live(ctx: ph.CellContext, phase: str) -> Optional[live_store.LiveStore]:
    """On Argo (the artifact repository mounted, its credentials in the environment): the store that the run-*
    phases send each finished run to, and that collect-results takes them back from. None elsewhere."""
    if not (phase.startswith("run-") or phase == "collect-results"):
        return None
    cfg = live_store.repository()
    if cfg is None:
        return None
    live = live_store.LiveStore(cfg, spool=ctx.workdir.parent / f"{ctx.workdir.name}.spool", log=out.print)
    if phase.startswith("run-"):
        ctx.sink = live.sink(ctx.results)
    return live


def run_cell(
    cell: Optional[str] = typer.Option(None, "--cell", help=CELL_HELP),
    cell_id: Optional[str] = typer.Option(None, "--cell-id", help=CELL_ID_HELP),
    argo_parameters: Optional[str] = typer.Option(None, "--argo-parameters", help=ARGO_HELP),
    default_sweep_id: Optional[str] = typer.Option(None, "--default-sweep-id", help=DEFAULT_ID_HELP),
    workdir: Optional[Path] = typer.Option(None, "--workdir", help="Cell state directory."),
    results: Optional[Path] = typer.Option(None, "--results", help="Where runs are written (default: the spool)."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", help=INVENTORY_HELP),
    ssh_key: Optional[Path] = typer.Option(None, "--ssh-key", help=SSH_KEY_HELP),
):
    """All phases of one cell in order, teardown always (one process: what the local substrate needs)."""
    s, c = cell_of(cell, cell_id, argo_parameters, default_sweep_id)
    signal.signal(signal.SIGTERM, on_sigterm)
    wd = workdir or state_dir() / "work" / s.sweep_id / c.cell_id
    ph.run_cell(ph.CellContext(s, c, workdir=wd, results=results or state_dir() / "spool",
                               provider=provider_for(s, c, wd, inventory, ssh_key), log=out.print))
    out.print(f"cell {c.cell_id} ({c.label}) done")


def register(app: typer.Typer) -> None:
    for phase in PHASES:
        _phase_command(app, phase)
    app.command("run-cell", rich_help_panel=PANEL)(run_cell)
