"""`edgebench parse` and `edgebench import`: tool outputs made anywhere, read the way the warehouse reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import typer

from edgebench.plan import spec
from edgebench.results.records import importer, parsing
from edgebench.results.records.store import ResultStore
from edgebench.workloads import REGISTRY

ROLE_HELP = ("ddsperf/perftest: the process's role when the output does not say it (ddsperf ping|pong|pub|sub, "
             "perftest pub|sub; a ddsperf pong prints no measurement lines, so it always needs --role pong).")
TOOL_HELP = "The tool that wrote the files: " + "; ".join(f"{t} = {f.what}" for t, f in parsing.TOOLS.items()) + "."


def register(app: typer.Typer) -> None:
    app.command("parse", rich_help_panel="Results")(parse)
    app.command("import", rich_help_panel="Results")(import_)
    app.command("params")(params)


def params(argo: bool = typer.Option(False, "--argo", help="Print the Argo `parameters:` list (name, value, "
                                     "description), as workflows/ and templates/ carry it.")):
    """The sweep parameters: name, default and meaning, declared once (spec.py for the core, workloads/<name>.py
    for each workload). `-p NAME=VALUE` overrides them; lists are JSON."""

    if argo:
        import yaml

        rows = [{"name": p.name, "value": p.default, "description": _sentence(p.help)} for p in spec.PARAMS.values()]
        typer.echo(yaml.safe_dump(rows, sort_keys=False, width=1000, allow_unicode=True), nl=False)
        return

    for p in spec.PARAMS.values():
        default = p.default or '""'
        typer.echo(f"{p.name:<28} {default}\n{'':<28} {p.help}")
    typer.echo("\nworkloads and their variants (the `workloads` parameter takes name or name:variant):")
    for w in REGISTRY.values():
        typer.echo(f"  {w.name:<26} {', '.join(w.variants)}")


def _options(tool: str, role: str | None) -> dict:
    """The parser options a tool takes (only ddsperf and perftest have a role)."""
    if role is None:
        return {}
    if tool not in ("ddsperf", "perftest"):
        raise parsing.ParseFailure(f"--role applies to ddsperf and perftest outputs, not {tool}")
    return {"role": role}


def _sentence(text: str) -> str:
    """A help text as an Argo parameter description: capitalized, with a final period."""
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def parse(
    files: List[Path] = typer.Argument(..., help="Tool output files, one run each."),
    tool: str = typer.Option(..., "--tool", help=TOOL_HELP),
    samples: bool = typer.Option(True, "--samples/--no-samples", help="Include the per-sample rows."),
    role: str = typer.Option(None, "--role", help=ROLE_HELP),
):
    """Print each file's normalized record as JSON: the run's `metrics` and per-sample rows, in the warehouse's
    field names and units. A file the tool's parser cannot read gives one line naming it and exit code 2 (and
    nothing on stdout)."""
    records, problems = parsing.parse_files(tool, files, **_options(tool, role))
    if problems:
        raise parsing.ParseFailure("\n".join(problems))
    if not samples:
        for r in records:
            r["n_samples"] = len(r.pop("samples"))
    typer.echo(json.dumps(records, indent=2))


def import_(
    files: List[Path] = typer.Argument(..., help="Tool output files, one run each."),
    tool: str = typer.Option(..., "--tool", help=TOOL_HELP),
    label: List[str] = typer.Option([], "--label", "-l", help="KEY=VALUE describing the runs (repeatable). "
                                    "Environment: cni, cni_mode, datapath, distribution, substrate (imported|ssh|kind; "
                                    "default imported), netem_scenario, tuning_profile. Run: path, placement (required "
                                    "for iperf3 and HTTP), length_bytes, repetition; DDS: placement, reliability, "
                                    "transport, discovery, length_bytes (required), security, subscribers; HTTP: "
                                    "service, length_bytes (required). sweep-id names the results namespace; any other "
                                    "key is kept as a free label."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Parse and show the keys; store nothing."),
    role: str = typer.Option(None, "--role", help=ROLE_HELP),
):
    """Store outputs of runs made outside edgebench (an RTI Perftest campaign, iperf3 logs from a lab) as runs
    the warehouse reads, under their own keys and marked imported (manifest field `imported`). All files are
    parsed first: if one fails, nothing is stored. Importing the same file with the same labels again
    overwrites its run, never duplicates it. Then `edgebench warehouse` rebuilds the tables."""

    runs = importer.prepare(tool, files, importer.parse_labels(label), **_options(tool, role))
    if dry_run:
        for prefix, manifest, raw in runs:
            typer.echo(f"{manifest['imported']['file']} -> {prefix} ({', '.join(sorted([*raw, 'manifest.json']))})")
        return
    store = ResultStore()
    store.check()
    for prefix, manifest, raw in runs:
        store.put_run(prefix, manifest, raw)
        typer.echo(f"imported {manifest['imported']['file']} -> {prefix}")
    typer.echo(f"{len(runs)} run(s) imported; `edgebench warehouse` rebuilds the tables")
