"""`edgebench versions show|check` and `edgebench watch`: new CNI versions, and reruns of only the changed CNIs."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from edgebench.plan import versions
from edgebench.sweep.release_sources import http_fetch
from edgebench.console import err, out
from edgebench.errors import EdgebenchError, SpecError
from edgebench.plan import spec as spec_mod
from edgebench.results.records.store import ResultStore
from edgebench.results.report.marts import summaries
from edgebench.sweep import watch as watch_mod
from edgebench.sweep.runner import run_local
from edgebench.sweep.watch import State, state_path

versions_app = typer.Typer(help="CNI versions: catalog pins, versions measured, upstream's newest releases.",
                           no_args_is_help=True)

CNIS_HELP = ("CNI entries to consider, a JSON list as the sweep's `cnis` parameter takes it (default: the default "
             "sweep's). The host baseline has no version and is left out.")
SOURCES_HELP = (f"Release sources file overriding the catalog per CNI (a mirror, an air-gapped lab): YAML "
                f"cni -> {{type: helm|github-releases|tags, url, chart}}. Default ${versions.ENV_SOURCES}.")
WAREHOUSE_HELP = "Warehouse to read measured versions from (default $EDGEBENCH_WAREHOUSE or .edgebench/warehouse.duckdb)."


def register(app: typer.Typer) -> None:
    app.add_typer(versions_app, name="versions", rich_help_panel="Versions and reruns")
    app.command("watch", rich_help_panel="Versions and reruns")(watch)


def _entries(cnis: Optional[str]):
    return spec_mod.PARAMS["cnis"].parse("--cnis", cnis or spec_mod.DEFAULTS["cnis"])


def _measured(warehouse: Optional[Path]):
    measured = summaries.measured_versions(warehouse)
    if measured is None:
        err.print("no warehouse yet: measured versions are not known (`make warehouse` builds it)")
    return measured


def _known(known: Optional[Path]) -> dict[str, str]:
    return {**State.load(state_path()).known(), **versions.read_known(known)}


def _table(sts: list[versions.CniStatus], upstream: bool) -> Table:
    t = Table(title="CNI versions" + (" (upstream read now)" if upstream else ""))
    for col in ("cni", "modes", "pinned", "measured", "recorded", *(["newest release", "newer"] if upstream else []),
                "release source"):
        t.add_column(col)
    for st in sts:
        measured = ", ".join([*st.measured, *(f"{v} (requested, testbed)" for v in st.requested)]) or "-"
        row = [st.cni, ", ".join(st.modes), st.pinned or "-", measured, st.known or "-"]
        if upstream:
            row += [st.latest or "-", "[bold]yes[/]" if st.newer else "no"]
        t.add_row(*row, st.source.describe())
    return t


@versions_app.command("show")
def show(
    cnis: Optional[str] = typer.Option(None, "--cnis", help=CNIS_HELP),
    sources: Optional[Path] = typer.Option(None, "--sources", help=SOURCES_HELP),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
    known: Optional[Path] = typer.Option(None, "--known", help="Versions already recorded: a directory with one "
                                         "file per CNI (the probe's ConfigMap mount) or a YAML file {cni: version}."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
):
    """What edgebench has, without reading upstream: per CNI its pin, the versions measured (warehouse), the version
    already triggered here (`edgebench watch`) and where its releases are read."""
    sts = versions.statuses(_entries(cnis), versions.sources(sources), measured=_measured(warehouse),
                            known=_known(known))
    if as_json:
        typer.echo(json.dumps([s.to_json() for s in sts], indent=2))
        return
    out.print(_table(sts, upstream=False))


@versions_app.command("check")
def check(
    cnis: Optional[str] = typer.Option(None, "--cnis", help=CNIS_HELP),
    sources: Optional[Path] = typer.Option(None, "--sources", help=SOURCES_HELP),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
    known: Optional[Path] = typer.Option(None, "--known", help="Versions already recorded (and so already "
                                         "triggered): a directory with one file per CNI (the probe mounts its "
                                         "ConfigMaps there) or a YAML file {cni: version}."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    output: Optional[Path] = typer.Option(None, "--output", help="Also write the JSON to this file."),
    record: Optional[Path] = typer.Option(None, "--record", help="Write, for every CNI with a newer version, the "
                                          f"ConfigMap {versions.CONFIGMAP_PREFIX}<cni> that records it (version, "
                                          "the rerun's cnis and trigger) as a JSON list: what the Argo probe "
                                          "applies and the resource EventSource sees. [] when nothing is newer."),
):
    """Read each CNI's release source and compare upstream's newest release with the catalog pin, the versions
    measured (warehouse) and those already recorded. Prints which CNI modes have a newer version. A source that is
    down or answers garbage: one message naming it, nothing written."""
    entries = _entries(cnis)
    sts = versions.check(entries, versions.sources(sources), http_fetch, measured=_measured(warehouse), known=_known(known))
    at = versions.now()
    doc = [s.to_json() for s in sts]
    records = [versions.configmap_record(s, s.trigger(at)) for s in sts if s.newer]
    if output:
        output.write_text(json.dumps(doc, indent=2))
    if record:
        record.write_text(json.dumps(records))
    if as_json:
        typer.echo(json.dumps(doc, indent=2))
        return
    out.print(_table(sts, upstream=True))
    newer = [s for s in sts if s.newer]
    if not newer:
        out.print("no CNI has a newer version")
    for s in newer:
        out.print(f"newer: {s.cni} {s.baseline or 'none'} -> {s.latest}: {', '.join(s.modes)}")


_DURATION = re.compile(r"^(\d{1,7})([smhd]?)$")


def _interval(text: str) -> int:
    m = _DURATION.match(text.strip())
    if not m or int(m.group(1)) == 0:
        raise SpecError(f"--interval must be a positive duration such as 300, 30m, 6h or 1d; got {text!r}")
    return int(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


def watch(
    file: Path = typer.Argument(..., help="The sweep to rerun (an Argo Workflow, e.g. workflows/sweep.yaml): its "
                                "cells of a CNI whose version changed are measured again."),
    param: List[str] = typer.Option([], "-p", "--parameter", help="Override a sweep parameter, NAME=VALUE (as "
                                    "`edgebench sweep -p`); repeatable."),
    interval: Optional[str] = typer.Option(None, "--interval", help="Check again every DURATION (300, 30m, 6h, 1d) "
                                           "until stopped; without it: one check."),
    sources: Optional[Path] = typer.Option(None, "--sources", help=SOURCES_HELP),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check and list the reruns; run and write nothing."),
    paired: bool = typer.Option(False, "--paired", help="Run each mode at the previous and the new version in the "
                                "same rerun, interleaved by round (cni-versions=[previous, new]), so that drift of "
                                "the machine cancels in the regression card; twice the runs."),
):
    """Rerun a sweep's cells of every CNI with a newer version, on the local testbed (one check, or --interval).

    Reads the release sources of the CNIs the sweep runs; for every CNI whose newest release is newer than what
    edgebench has (catalog pin, warehouse, versions already triggered here), runs the sweep again for ONLY that
    CNI's modes, with the trigger ({cni, new, previous, source, at}) in every manifest and the new version as
    environment.cni_version_requested (no CNI software runs on the testbed: it is what was asked, not what is
    installed). The rerun's sweep id is <substrate>-<cni>-<version>-<hash>: a repeated or interrupted round resumes
    it, nothing is measured twice."""

    every = _interval(interval) if interval else None
    base = spec_mod.load(file, spec_mod.parse_overrides(param), substrate="local")
    srcs = versions.sources(sources)
    run = None
    if not dry_run:
        def rerun(sweep):
            report = run_local(sweep, ResultStore(), log=out.print)
            c = report.counts
            out.print(f"rerun {sweep.sweep_id}: {c['ok']} ok, {c['failed']} failed, {c['unsupported']} unsupported, "
                      f"{c['skipped']} already stored")
            return report

        run = rerun

        signal.signal(signal.SIGTERM, _on_sigterm)
    failed = False
    while True:
        try:
            rnd = watch_mod.watch_once(base, run, srcs=srcs, warehouse_path=warehouse, log=out.print,
                                       paired=paired)
        except KeyboardInterrupt:
            err.print("interrupted: the testbed was torn down; the next `edgebench watch` resumes the rerun")
            raise typer.Exit(130)
        except EdgebenchError as exc:
            if every is None:
                raise
            err.print(f"[red]error:[/] {exc} (nothing was started; next check in {interval})", highlight=False)
        else:
            if not rnd.reruns:
                out.print("nothing to rerun" + (" (dry run)" if dry_run else ""))
            elif dry_run:
                for r in rnd.reruns:
                    out.print(f"would rerun {r.sweep.sweep_id}: {', '.join(r.modes)} at {r.trigger['new']}")
            failed = failed or any(getattr(rep, "failures", None) for rep in rnd.reports.values())
        if every is None:
            break
        time.sleep(every)
    if failed:
        raise typer.Exit(1)


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt
