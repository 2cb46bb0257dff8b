"""`edgebench status [SWEEP]`: what a sweep planned, what is stored (ok, failed, unsupported) and what is left, per
cell, from the results store (the object store and the local spool); also for a sweep that was killed."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.table import Table

from edgebench.console import err, out
from edgebench.results.records.store import ResultStore
from edgebench.results.report import sweep_status as st


def register(app: typer.Typer) -> None:
    app.command()(status)


def status(
    sweep: Optional[str] = typer.Argument(None, help="The sweep id (as `edgebench sweep` prints it). Without it: "
                                          "the sweeps in the store."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
):
    """What sweep SWEEP planned, what is stored and what is left, per cell; without SWEEP, the sweeps in the store.

    SWEEP is the sweep id `edgebench sweep` prints (on Argo the workflow name, or the sweep-id parameter).
    Reads the results store: the object store (MinIO, $EDGEBENCH_S3_ENDPOINT) and the local spool (runs measured but
    not uploaded yet count as stored). The plan is the sweep's record, sweeps/<id>/sweep.json, written when the sweep
    starts (on Argo by expand-matrix): a planned run without a manifest is left, so a killed sweep shows what the same
    `edgebench sweep` command would still measure (it also measures again the failed and unsupported ones). A sweep
    without that record (an older one) shows what is stored only. An unknown sweep id exits with status 2."""

    store = ResultStore()
    remote = st.reachable(store)
    if not remote:
        err.print(f"[yellow]the object store at {store.cfg.endpoint} does not answer: the local spool "
                  f"({store.spool}) only[/]")
    if sweep is None:
        ids = st.sweep_ids(store, remote)
        if as_json:
            typer.echo(json.dumps(ids))
        else:
            out.print("\n".join(ids) if ids else "no sweep in the store")
            out.print("`edgebench status SWEEP` shows one sweep.", style="dim")
        return
    s = st.sweep_status(store, sweep, remote)
    if not s.found:
        known = st.sweep_ids(store, remote)
        err.print(f"no sweep {sweep!r} in the results store (bucket {store.cfg.bucket} at {store.cfg.endpoint}, "
                  f"spool {store.spool}); " + (f"known: {', '.join(known)}" if known else "it holds no sweep"),
                  highlight=False)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps(s.to_json(), indent=2))
        return
    _print(s)


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)


def _print(s: st.SweepStatus) -> None:
    plan = s.plan or {}
    t = Table(title=f"sweep {s.sweep_id}" + (f" (started {plan['written_at']})" if plan.get("written_at") else ""))
    for col in ("cell", "label", "planned", "ok", "failed", "unsupported", "left"):
        t.add_column(col, justify="left" if col in ("cell", "label") else "right")
    for c in s.cells:
        row = c.to_json()
        t.add_row(c.cell_id, c.label, *(_n(row[k]) for k in ("planned", *st.STATUSES, "left")))
    tot = s.totals()
    t.add_row("total", f"{tot['cells']} cells", *(_n(tot[k]) for k in ("planned", *st.STATUSES, "left")))
    out.print(t)
    if not plan.get("cells"):
        out.print(f"no plan recorded for this sweep (no sweeps/{s.sweep_id}/sweep.json with its cells, which older "
                  "versions did not write): what is left is unknown")
    elif tot["left"]:
        done = sum(1 for c in s.cells if c.left == 0)
        out.print(f"{tot['left']} runs left in {len(s.cells) - done} of {len(s.cells)} cells: run the same "
                  "`edgebench sweep` command again to resume")
    else:
        out.print("nothing left: every planned run is stored")
    if tot["spooled"]:
        out.print(f"{tot['spooled']} stored runs are only in the local spool: `edgebench upload` sends them")
