"""`edgebench sweep|cells|matrix|dimensions-macro|catalog|upload`: running a sweep here, what it would run, the
catalog, and the spool."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from edgebench.cli.options import INVENTORY_HELP, PARAM_HELP, SSH_KEY_HELP, export_cluster_env, on_sigterm
from edgebench.console import err, out
from edgebench.errors import EdgebenchError
from edgebench.plan import catalog as catalog_mod
from edgebench.plan import dimensions_dbt
from edgebench.plan import spec as spec_mod
from edgebench.plan.params import Rounds
from edgebench.plan.cells import cell_item, cell_json, expand_checked, runs_for
from edgebench.results.records.runstore import now
from edgebench.results.records.store import ResultStore
from edgebench.results.report.sweep_status import plan_record
from edgebench.results.warehouse import analytics_dir
from edgebench import sh
from edgebench.substrates.clusters import inventory as inv
from edgebench.substrates.clusters.install import kind as kind_mod
from edgebench.substrates.clusters.install.artifacts import ENV_SOURCE
from edgebench.plan.matrix import compatibility, distributions
from edgebench.sweep import holding
from edgebench.sweep.runner import run_local

def _load(file: Path, params: list[str], local: bool) -> spec_mod.Sweep:
    return spec_mod.load(file, spec_mod.parse_overrides(params), substrate="local" if local else None)


def _budget_words(budget) -> str:
    """The time budget as the dry run and the sweep's first line say it."""
    if isinstance(budget, Rounds):
        return f"{budget.n} full rounds' time (fixed {budget.n}'s on this machine, measured on its first rounds)"
    return f"the {budget}s time budget"


def _arches(substrate: str, inventory: Optional[Path]) -> Optional[frozenset]:
    """The node architectures that decide which cells are possible: the inventory's for ssh (when one is given or
    found), the workstation's for kind, none (no arch check) otherwise."""
    if substrate == "kind":
        import platform

        return frozenset({"arm64" if platform.machine() in ("aarch64", "arm64") else "amd64"})
    lab = _lab(substrate, inventory)
    return frozenset(lab.arches) if lab else None


def _lab(substrate: str, inventory: Optional[Path]):
    """The ssh substrate's node inventory when one is given or found (else None: nothing is checked against it)."""

    if substrate != "ssh":
        return None
    if inventory is None and not os.environ.get(inv.ENV_INVENTORY) and not inv.INVENTORY_MOUNT.exists():
        return None
    return inv.load(inventory)


def _expand_checked(s: spec_mod.Sweep, inventory: Optional[Path]):
    """The sweep's possible cells and the skipped ones with the reason (checked against the inventory if known)."""
    substrate = s.values["substrate"]
    return expand_checked(s, _arches(substrate, inventory), _lab(substrate, inventory))


def _print_skipped(skipped, console) -> None:
    for c, reason in skipped:
        console.print(f"  skipped {c.label} on {c.distribution}: {reason}")


def sweep(
    file: Path = typer.Argument(..., help="Sweep file: an Argo Workflow, e.g. workflows/sweep.yaml."),
    param: List[str] = typer.Option([], "-p", "--parameter", help=PARAM_HELP),
    local: bool = typer.Option(False, "--local", help="Run on the local network-namespace testbed (substrate=local)."),
    rerun: bool = typer.Option(False, "--rerun", help="Measure again runs already stored for this sweep id (same keys, overwritten)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and list the cells and runs; change nothing."),
    interleave: bool = typer.Option(True, "--interleave/--cell-by-cell", help="Run the cells in interleaved "
                                    "rounds (round r of every cell before round r + 1 of any; the warehouse then "
                                    "pairs each configuration with its baseline by round, so drift between rounds "
                                    "cancels) or each cell's rounds at once (one provisioning per cell, faster on "
                                    "clusters)."),
    duet: bool = typer.Option(True, "--duet/--no-duet", help="Local testbed, interleaved: within a round, stand a "
                              "CNI mode and its host baseline side by side (one testbed prefix each) and run each "
                              "workload variant on all of them in turn, so a run and its baseline's run are seconds "
                              "apart, not minutes (docs/verdicts.md, Duet rounds)."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", help=INVENTORY_HELP),
    ssh_key: Optional[Path] = typer.Option(None, "--ssh-key", help=SSH_KEY_HELP),
    artifact_source: Optional[str] = typer.Option(None, "--artifact-source", help="ssh substrate: take binaries, "
                                                  "images and manifests from this air-gapped mirror (http URL with "
                                                  "an index.yaml; default $EDGEBENCH_ARTIFACT_SOURCE) instead of "
                                                  "package repositories, GitHub and registries."),
):
    """Run a sweep: for every cell build the datapath, run the workloads, store raw output + manifests in MinIO.

    With --local the cells run on the network-namespace testbed. With -p substrate=ssh they run from this machine
    through the ssh provider against the inventory's nodes (what the Argo cell pods run, without a management
    cluster), e.g. the local lab of `make lab-local`.

    Runs already stored with status ok for the same sweep id are skipped, so an interrupted sweep resumes.

    Progress: cells and runs done/total, elapsed time, an ETA from the pace of the runs so far, the current cell and
    phase; one live line on a terminal, a plain line per cell and phase otherwise. `edgebench status` reads it back."""

    s = _load(file, param, local)
    cells, skipped = _expand_checked(s, inventory)
    runs = [r for c in cells for r in runs_for(s, c)]
    timed = sum(r.duration_s or 0 for r in runs)  # HTTP runs are counted in requests, not seconds
    if s.values.get("adaptive"):
        lo, hi = s.values["min-repetitions"], s.values["max-repetitions"]
        out.print(f"sweep [bold]{s.sweep_id}[/]: {len(cells)} cells, between {len(runs) * lo // hi} and {len(runs)} "
                  f"runs (repetitions=auto: {lo} to {hi} rounds; each variant of a CNI cell stops once its "
                  f"comparison with the host is decided, or cannot be"
                  + (f", or the next round would end after {_budget_words(s.values['time-budget'])}"
                     if s.values.get("time-budget") else "")
                  + f"), up to {timed}s of timed measurement (substrate={s.values['substrate']})")
    else:
        out.print(f"sweep [bold]{s.sweep_id}[/]: {len(cells)} cells, {len(runs)} runs, {timed}s of timed measurement "
                  f"(substrate={s.values['substrate']})")
    if dry_run:
        for c in cells:
            out.print(f"  {c.cell_id}  {c.label}  ({c.cni_info.datapath}, {len(runs_for(s, c))} runs)")
        _print_skipped(skipped, out)
        return
    if s.values["substrate"] in ("ssh", "kind"):  # the provider reads these (substrates.clusters.from_cell); kind
        # clusters are made on this machine's Docker engine (scripts/kind/dockerd.sh, docs/substrates.md)
        export_cluster_env(inventory, ssh_key, artifact_source)
        if s.values["substrate"] == "kind" and os.environ.get(ENV_SOURCE):  # offline: the node image built here
            kind_mod.check_node_image(sh.run, kind_mod.node_image(offline=True))  # SpecError, nothing created
    elif s.values["substrate"] != "local":
        raise EdgebenchError(
            f"substrate {s.values['substrate']!r} runs on a management cluster: `argo submit {file}` "
            "(see README, 'Run on a management cluster'); here use --local"
        )

    signal.signal(signal.SIGTERM, on_sigterm)
    try:  # one sweep per testbed prefix or lab at a time: a second one is refused naming the holder
        with holding.sweep_hold(s.values["substrate"], s.sweep_id, inventory, ssh_key):
            report = run_local(s, ResultStore(), rerun=rerun, log=out.print, interleave=interleave, duet_on=duet,
                               live=sys.stdout if sys.stdout.isatty() else None)
    except KeyboardInterrupt:
        err.print(f"interrupted: the testbed was torn down; runs already measured are stored under sweep {s.sweep_id} "
                  "(run the same command again to resume)")
        raise typer.Exit(130)
    c = report.counts
    out.print(f"sweep {s.sweep_id}: {c['ok']} ok, {c['failed']} failed, {c['unsupported']} unsupported, "
              f"{c['skipped']} already stored" + (f", {c['not needed']} not needed (decided early)"
                                                  if c.get("not needed") else ""))
    if c["skipped"] and not c["ok"] and not c["failed"] and not rerun:
        out.print(f"nothing new was measured: sweep {s.sweep_id} (its id follows from the plan) already holds every "
                  "run it needs; --rerun (make sweep ARGS=--rerun) measures them again under the same keys, -p "
                  "sweep-id=NAME starts a new sweep beside it")
    if report.failures:
        err.print("[red]failed runs (recorded with their error in MinIO):[/]")
        for f in report.failures:
            err.print(f"  {f}")
        raise typer.Exit(1)


def cells(
    file: Optional[Path] = typer.Argument(None, help="Sweep file (Argo Workflow). Without it: the defaults and -p "
                                          "values (what the Argo sweep template passes)."),
    param: List[str] = typer.Option([], "-p", "--parameter", help=PARAM_HELP),
    local: bool = typer.Option(False, "--local", help="Expand for substrate=local."),
    output: Optional[Path] = typer.Option(None, "--output", help="Also write the JSON to this file."),
    items: Optional[Path] = typer.Option(None, "--items", help="Write the Argo fan-out items to this file: a JSON "
                                         "list of {cell, label} (the cell id and its short label), one per cell."),
    sweep_id_file: Optional[Path] = typer.Option(None, "--sweep-id-file", help="Write the sweep id to this file."),
    plan_dir: Optional[Path] = typer.Option(None, "--plan-dir", help="Write the sweep's record (parameters and cells, "
                                            "what `edgebench status` reads) to DIR/<sweep id>/sweep.json."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", help=INVENTORY_HELP),
    argo_parameters: Optional[str] = typer.Option(None, "--argo-parameters", help="All sweep parameters at once, "
                                                  "as Argo's {{workflow.parameters.json}} gives them: a JSON list of "
                                                  "{name, value}."),
    default_sweep_id: Optional[str] = typer.Option(None, "--default-sweep-id", help="The sweep id when the "
                                                   "sweep-id parameter is empty (on Argo: the workflow name); not "
                                                   "used for a triggered rerun (trigger parameter), whose id is "
                                                   "derived from the CNI and its new version."),
):
    """Print the sweep's cells as a JSON list. Cells that cannot exist on the distribution (see `edgebench matrix`)
    are left out and reported on stderr with the reason. The Argo DAG fans out over the short --items (cell id and
    label); each cell step finds its cell by id (`--cell-id` of the phase commands)."""

    overrides = spec_mod.argo_overrides(argo_parameters, spec_mod.parse_overrides(param), default_sweep_id)
    if file is None:
        s = spec_mod.from_parameters({**overrides, **({"substrate": "local"} if local else {})}, source="-p")
    else:
        s = spec_mod.load(file, overrides, substrate="local" if local else None)
    ok, skipped = _expand_checked(s, inventory)
    _print_skipped(skipped, err)
    text = json.dumps([cell_json(s, c) for c in ok])
    if plan_dir:
        output_plan = plan_dir / s.sweep_id / "sweep.json"
        output_plan.parent.mkdir(parents=True, exist_ok=True)
        output_plan.write_text(json.dumps(plan_record(s, ok, now()), indent=2, sort_keys=True))
    for path, content in ((output, text), (items, json.dumps([cell_item(c) for c in ok])), (sweep_id_file, s.sweep_id)):
        if path:
            path.write_text(content)
    typer.echo(text)


def matrix(
    arch: List[str] = typer.Option(["amd64", "arm64"], "--arch", help="Node architectures present (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
):
    """Which CNI modes can run on which distribution (impossible cells are skipped at expansion, with the reason)."""

    rows = [{"distribution": d, "cni": r["cni"], "mode": r["mode"],
             "reason": compatibility(d, r["cni"], r["mode"], frozenset(arch))}
            for d in distributions() for r in catalog_mod.rows()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    t = Table(title=f"distribution x CNI mode (nodes: {', '.join(arch)})")
    for col in ("distribution", "cni:mode", "possible"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["distribution"], f"{r['cni']}:{r['mode']}", "yes" if r["reason"] is None else f"no: {r['reason']}")
    out.print(t)


def dimensions_macro(write: bool = typer.Option(False, "--write", help="Write analytics/macros/cell_dimensions.sql "
                                                "instead of printing it.")):
    """The dbt macros of the cell configuration columns (analytics/macros/cell_dimensions.sql), generated from the
    table of cell dimensions (plan/dimensions.py); tests/host/test_dimensions.py checks the committed file."""
    text = dimensions_dbt.dbt_macro()
    if not write:
        sys.stdout.write(text)
        return
    path = analytics_dir() / "macros" / "cell_dimensions.sql"
    path.write_text(text, encoding="utf-8")
    out.print(f"wrote {path}")


def catalog(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")):
    """Print the catalog: every CNI mode (datapath, encapsulation, port, MTU, multicast, encryption) and every
    inter-cluster tool mode (version, layer, what it carries, how the local testbed builds it)."""
    rows = catalog_mod.rows()
    if as_json:
        typer.echo(json.dumps({"cnis": rows, "intercluster": catalog_mod.intercluster_tools()}, indent=2))
        return
    t = Table(title="edgebench CNI catalog (MTU on a 1500-byte underlay)")
    for col in ("cni", "mode", "version", "datapath", "encap", "udp", "mtu", "multicast", "encryption", "local testbed"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["cni"], r["mode"] + (" *" if r["default"] else ""), r["version"] or "-", r["datapath"],
                  r["encapsulation"], str(r["udp_port"] or "-"), str(r["mtu"]), r["multicast"], r["encryption"],
                  r["local_testbed"])
    out.print(t)
    out.print("* default mode. Sources: `edgebench catalog --json` lists each CNI's source tags.")
    t = Table(title="inter-cluster tools (-p intercluster=[...])")
    for col in ("tool", "mode", "version", "layer", "carries", "encryption", "local testbed"):
        t.add_column(col)
    for name, info in catalog_mod.intercluster_tools().items():
        for mode in info["modes"]:
            tool = catalog_mod.resolve_intercluster(f"{name}:{mode}")
            local = {"baseline": "baseline (one cluster)", "kernel": "kernel data path (no control plane)",
                     "emulated": "emulated (edgebench-relay model)"}.get(tool.implementation, tool.implementation)
            t.add_row(name, mode + (" *" if mode == info["default_mode"] else ""), tool.version or "-",
                      str(tool.layer or "-"), "/".join(tool.protocols), tool.encryption, local)
    out.print(t)


def upload():
    """Send results left in the local spool (.edgebench/spool) to the object store."""
    store = ResultStore()
    store.check()
    out.print(f"uploaded {store.flush()} object(s)")


def register(app: typer.Typer) -> None:
    for command in (sweep, cells, matrix):
        app.command()(command)
    app.command("dimensions-macro")(dimensions_macro)
    app.command()(catalog)
    app.command()(upload)
