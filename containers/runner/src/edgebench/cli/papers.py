"""`edgebench papers run` (`make papers`, `make papers-lab`): the presets the seed papers' undecided claims need,
within one wall-time budget, then the scorecard (sweep/papers_run.py): the testbed presets, or with --inventory the
cluster presets on a lab through the ssh substrate."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer

from edgebench.cli.options import INVENTORY_HELP, SSH_KEY_HELP, export_cluster_env, on_sigterm
from edgebench.cli.report_tables import print_scorecard
from edgebench.console import err, out
from edgebench.errors import SpecError
from edgebench.plan import spec as spec_mod
from edgebench.plan.cells import expand_checked, runs_for
from edgebench.plan.params import time_budget
from edgebench.results import warehouse
from edgebench.results.report import claim_preset, marts, papers, scorecard
from edgebench.results.report.marts import papers as paper_marts
from edgebench.results.records.store import ResultStore, repo_root
from edgebench.sweep import holding, papers_run
from edgebench.substrates.clusters import inventory as inv
from edgebench.substrates.clusters.install import artifacts
from edgebench.substrates.local import service_proxy
from edgebench.sweep.runner import run_local

papers_app = typer.Typer(help="The seed papers' claims: run what decides them, then the scorecard.",
                         no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(papers_app, name="papers", rich_help_panel="Results")


def _read(path: Path, substrate: str) -> tuple[list[dict], dict[tuple[str, str], dict]]:
    """The scorecard rows and the claims: from the warehouse, or where none is built yet (a machine that has measured
    nothing) from the papers' seeds alone, every testable claim undecided; each paper with a row on `substrate`,
    measured there or not (a lab after the testbed, or the testbed after a lab)."""
    fetch = marts.path_fetcher(path) if path.exists() else paper_marts.seeds_fetcher(warehouse.analytics_dir())
    rows = scorecard.scorecard(fetch, also=(substrate,))
    claims = {(c["paper"], c["claim_id"]): c for c in paper_marts.all_claims(fetch)}
    return rows, claims


# the sweep parameters `papers run` sets itself for each preset (its own options say how): never from -p
OWN_PARAMS = ("repetitions", "min-repetitions", "max-repetitions", "time-budget", "sweep-id", "aim", "select",
              "substrate", "run-lengths", "paper-run-lengths")


def _extra(param: list[str]) -> dict[str, str]:
    """The -p NAME=VALUE given for every preset's sweep (e.g. dds-duration=10); one clear error for a parameter
    `papers run` sets itself."""
    extra = spec_mod.parse_overrides(param)
    own = sorted(set(extra) & set(OWN_PARAMS))
    if own:
        raise SpecError(f"-p {', '.join(own)}: papers run sets {'it' if len(own) == 1 else 'them'} for each preset "
                        "(--min-repetitions, --max-repetitions, --budget; the claims give aim and select; "
                        "--inventory the substrate; the paper's run lengths would replace repetitions=auto)")
    for name, value in extra.items():  # an unknown name or a bad value: said before anything is read or built
        if name not in spec_mod.PARAMS:
            raise SpecError(f"-p {name}: not a sweep parameter (`edgebench sweep --help` and docs/parameters.md "
                            "list them)")
        spec_mod.PARAMS[name].parse(name, value)
    return extra


def _never_measured(cell, run, lab: bool, mirror: str | None) -> bool:
    """A run recorded unsupported before anything is measured: on the testbed a service proxy none where the CNI
    keeps kube-proxy; on a lab served from a mirror a CNI the mirror cannot carry (calico, weave, kube-ovn, ...)."""
    if lab:
        return bool(mirror) and artifacts.unavailable(cell.cni) is not None
    return service_proxy.never_measured(cell.service_proxy, cell.cni_info, run.path)


def _substrate(lab: bool) -> str:
    """spec.load's substrate: the testbed's `local`, or `ssh` on a lab, whatever a cluster preset says."""
    return "ssh" if lab else "local"


def _unrunnable(root: Path, source: str | None) -> dict[str, str]:
    """On a lab served from an air-gapped mirror (`source`): the cluster presets whose distribution the mirror has
    no install path for (k3s, k0s, MicroK8s here), each with the reason; {} without a mirror (the nodes install from
    the internet)."""
    if not source:
        return {}
    out = {}
    for f in sorted((root / papers.PRESETS).glob("seed-*.yaml")):
        if f.name.endswith(".testbed.yaml"):
            continue
        distribution = spec_mod.load(f).values.get("distribution")
        try:
            artifacts.needed(distribution, "host")
        except SpecError as exc:
            out[str(papers.PRESETS / f.name)] = f"unsupported: {exc}"
    return out


def _planned_runs(root: Path, preset: str, params: dict[str, str] | None = None, extra: dict[str, str] | None = None,
                  lab: bool = False) -> int:
    """The preset's runs as it plans them, of those its claims compare where `params` selects them."""
    s = spec_mod.load(root / preset, {**(extra or {}), **{k: v for k, v in (params or {}).items() if k == "select"}},
                      substrate=_substrate(lab))
    cells, _ = expand_checked(s)
    return sum(len(runs_for(s, c)) for c in cells)


def _minimum(root: Path, preset: str, max_repetitions: int, params: dict[str, str] | None = None,
             min_repetitions: int = papers_run.MIN_REPETITIONS, extra: dict[str, str] | None = None,
             lab: bool = False, mirror: str | None = None) -> tuple[int, float, int]:
    """The runs, the seconds of timed measurement and the runs without a duration (HTTP: counted in requests) of the
    preset's minimum rounds as `papers run` plans it (repetitions=auto: min-repetitions always run, 3 or more where
    the preset is not aimed, papers_run.min_rounds; `params`: the claims' aim and select). The timed measurement
    leaves out the runs every testbed records unsupported at once (service proxy none where the CNI does not replace
    kube-proxy); runs recorded unsupported where a kernel lacks a feature (ESP, Geneve, IPVS) count as measured:
    another machine's kernel may have it. On a lab (cluster presets) the clusters' set-up comes on top, and the
    runs of a CNI its mirror cannot carry are left out (recorded unsupported at once)."""
    rounds = min(papers_run.min_rounds(params or {}, min_repetitions), max_repetitions)
    s = spec_mod.load(root / preset, {**(extra or {}), "repetitions": "auto", "min-repetitions": str(rounds),
                                      "max-repetitions": str(max_repetitions),
                                      **{k: v for k, v in (params or {}).items() if k == "select"}},
                      substrate=_substrate(lab))
    cells, _ = expand_checked(s)
    runs = [(c, r) for c in cells for r in runs_for(s, c)]
    share = s.values["min-repetitions"] / s.values["max-repetitions"]
    # a run every testbed records unsupported before it measures anything takes no measurement time
    timed = sum(r.duration_s or 0 for c, r in runs if not _never_measured(c, r, lab, mirror))
    return round(len(runs) * share), timed * share, round(sum(not r.duration_s for _, r in runs) * share)


@papers_app.command("run")
def run_cmd(
    budget: str = typer.Option("2h", "--budget", help="Wall time for all the presets: seconds, 90m or 2h. Each "
                               "preset gets its share of what is left, in proportion to its planned runs."),
    paper: List[str] = typer.Option([], "--paper", metavar="ID", help="Only these seed papers (000 ... 004); "
                                    "repeatable. Default: all."),
    min_repetitions: int = typer.Option(papers_run.MIN_REPETITIONS, "--min-repetitions", min=2, max=30,
                                        help="Rounds every variant runs before it may stop; a claim comparison "
                                        "stops after round 2 only on a spread of 2 or more degrees of freedom "
                                        "(docs/verdicts.md)."),
    max_repetitions: int = typer.Option(6, "--max-repetitions", min=3, max=30, help="At most this many rounds per "
                                        "variant (repetitions=auto stops a variant earlier once it is decided)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say which presets would run, for which claims; run "
                                 "nothing."),
    warehouse_path: Optional[Path] = typer.Option(None, "--warehouse", help="Warehouse to read and rebuild "
                                                  "(default $EDGEBENCH_WAREHOUSE or .edgebench/warehouse.duckdb)."),
    param: List[str] = typer.Option([], "-p", "--parameter", metavar="NAME=VALUE", help="A sweep parameter for "
                                    "every preset run, e.g. -p dds-duration=10 (shorter runs than the paper's: the "
                                    "runs record it); repeatable. Not the ones papers run sets itself: "
                                    + ", ".join(OWN_PARAMS) + "."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", help="Run on this lab instead of the testbed: "
                                             "the papers' cluster presets through the ssh substrate, judged on "
                                             "its `ssh` claims (never pooled with the testbed's). "
                                             + INVENTORY_HELP),
    ssh_key: Optional[Path] = typer.Option(None, "--ssh-key", help=SSH_KEY_HELP),
    artifact_source: Optional[str] = typer.Option(None, "--artifact-source", help="With --inventory: the lab's "
                                                  "air-gapped mirror (default $EDGEBENCH_ARTIFACT_SOURCE)."),
    interleave: bool = typer.Option(True, "--interleave/--cell-by-cell", help="With --inventory: each cell's "
                                    "rounds interleaved (a cluster per cell and round; adaptive stops after each "
                                    "round) or at once (a cluster per cell, faster; the variants stop only at "
                                    "the end)."),
):
    """Run every testbed preset that the seed papers' undecided claims need, most claims first, within --budget;
    after each preset rebuild the warehouse and skip presets whose claims are decided by then; end with the
    scorecard (`edgebench report --paper all`). With budget left after every preset ran, a second pass goes back to
    the claims only a few runs a side short (about 10 or fewer) and runs their sides up to the rounds they lack.
    Each preset is a sweep of its own (`papers-<preset>`), so a second run measures nothing already stored and runs
    nothing already decided. Without a warehouse it builds one from
    the runs stored; on a machine that has measured nothing it plans from the papers' seeds, every claim undecided.

    With --inventory the same on a lab (`make papers-lab`): the claims the lab (substrate ssh) cannot tell yet, the
    papers' cluster presets that measure them, each run through the ssh provider (kubeadm over SSH, the CNI from
    the lab's mirror); a CNI the mirror cannot carry is recorded unsupported with the reason, a preset of a
    distribution it cannot install is named and not planned."""
    extra = _extra(param)
    lab = inventory is not None
    if not lab and (ssh_key or artifact_source or not interleave):
        raise SpecError("--ssh-key, --artifact-source and --cell-by-cell are for a lab: give --inventory too")
    # a missing or malformed inventory is one clear error before anything runs; the provider's mirror: the option,
    # else $EDGEBENCH_ARTIFACT_SOURCE, else the inventory's artifact_source (substrates.clusters.factory)
    lab_inventory = inv.load(inventory) if lab else None
    mirror = (artifact_source or os.environ.get(artifacts.ENV_SOURCE) or lab_inventory.artifact_source
              if lab_inventory else None)
    substrate = _substrate(lab)
    seconds = time_budget("--budget", budget)
    if seconds is None:
        raise SpecError("--budget must be a time such as 7200, 90m or 2h")
    if min_repetitions > max_repetitions:
        raise SpecError(f"--min-repetitions ({min_repetitions}) is above --max-repetitions ({max_repetitions})")
    try:
        ids = [papers.paper_id(p) for p in paper]
    except papers.PaperError as exc:
        raise SpecError(str(exc)) from None
    root = repo_root()
    path = Path(warehouse_path) if warehouse_path else warehouse.default_warehouse_path()
    if not path.exists():  # built from what the store holds; a store with nothing in it leaves the seeds
        try:
            if warehouse.default_raw_root().startswith("s3://"):  # unreachable: one clear message (make minio)
                ResultStore().check()
            warehouse.build(path, quiet=True)
            out.print(f"papers: no warehouse at {path}: built it from the runs stored", highlight=False)
        except warehouse.NoResultsError:
            out.print(f"papers: nothing measured here yet (no warehouse, no run stored): every testable claim is "
                      "undecided; the plan reads the claims from the papers' seeds", highlight=False)
    rows, claims = _read(path, substrate)
    skip = _unrunnable(root, mirror)
    for preset, why in skip.items():
        out.print(f"  {preset}: not planned on this lab: {why}", highlight=False)
    tasks, orphans = papers_run.plan(rows, claims, root, ids or None, substrate, skip)
    chosen = {t.preset: t.params(claims) for t in tasks}  # aim and select, as each preset's sweep gets them
    minimum = {t.preset: _minimum(root, t.preset, max_repetitions, chosen[t.preset], min_repetitions, extra, lab,
                                  mirror) for t in tasks}
    planned = {t.preset: _planned_runs(root, t.preset, chosen[t.preset], extra, lab) for t in tasks}
    where = f"the lab {inventory} (substrate ssh, the cluster presets)" if lab else "the testbed (substrate local)"
    out.print(f"papers: on {where}: {len(tasks)} preset(s) for {sum(len(t.claims) for t in tasks)} undecided "
              "claim(s)", highlight=False)
    for t in tasks:
        runs, timed, untimed = minimum[t.preset]
        counted = f", {untimed} of them HTTP runs counted in requests, not in it" if untimed else ""
        grid = _planned_runs(root, t.preset, extra=extra, lab=lab)
        part = (f"its claims compare {planned[t.preset]} of the {grid} runs the preset plans"
                if "select" in chosen[t.preset] else f"{grid} runs as the preset plans them")
        out.print(f"  {t.preset}: {len(t.claims)} undecided claim(s) of seed {', '.join(t.papers)} "
                  f"({part}; its minimum rounds: {runs} runs, {timed / 60:.0f} min of timed measurement{counted}; "
                  f"sweep {t.sweep_id})", highlight=False)
    total = sum(m[1] for m in minimum.values())
    setup = "set-up (the clusters' among it)" if lab else "set-up"
    out.print(f"  in all: the minimum rounds hold {total / 60:.0f} min of timed measurement (an estimate from the "
              f"planned durations, before {setup} and HTTP runs), the budget {seconds / 60:.0f} min", highlight=False)
    warning = papers_run.overrun(tasks, seconds, lambda p: minimum[p][1])
    if warning:
        err.print(f"papers: {warning}", highlight=False)
    if orphans:
        out.print(f"  {len(orphans)} undecided claim(s) no {'cluster' if lab else 'testbed'} preset's grid holds as it "
                  f"stands (both sides under the claim's filters), not run: {', '.join(c for _, c in orphans)}",
                  highlight=False)
        for key in orphans:  # what would measure it: the scorecard's own words (claim_preset.home under both); on a
            # lab the cluster presets' answer, whatever row the scorecard has for the paper yet
            hint = (claim_preset.home(claims.get(key, {}), key[0], root, "ssh", skip).command() if lab
                    else papers_run.to_decide(rows, key))
            out.print(f"    {key[1]}: {hint}", highlight=False)
    if dry_run or not tasks:
        if not tasks:
            out.print(f"papers: nothing to run: every claim the {'cluster' if lab else 'testbed'} presets measure is "
                      "decided")
        return
    if lab:  # as `edgebench sweep --inventory` sets them
        export_cluster_env(inventory, ssh_key, artifact_source)

    def run_sweep(task: papers_run.PresetTask, params: dict[str, str]) -> None:
        s = spec_mod.load(root / task.preset, {**extra, **params}, substrate=_substrate(lab))
        with holding.sweep_hold(s.values["substrate"], s.sweep_id, inventory, ssh_key):
            report = run_local(s, ResultStore(), log=out.print, interleave=interleave,
                               live=sys.stdout if sys.stdout.isatty() else None)
        c = report.counts
        out.print(f"sweep {s.sweep_id}: {c['ok']} ok, {c['failed']} failed, {c['unsupported']} unsupported, "
                  f"{c['skipped']} already stored", highlight=False)

    def still_open(task: papers_run.PresetTask) -> list[tuple[str, str]]:
        now = set(papers_run.undecided(_read(path, substrate)[0], ids or None, substrate))
        return [k for k in task.claims if k in now]

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        papers_run.run(tasks, seconds, planned_runs=planned.get, run_sweep=run_sweep,
                       rebuild=lambda: warehouse.build(path, quiet=True), still_open=still_open,
                       log=lambda line: out.print(line, highlight=False), max_repetitions=max_repetitions,
                       min_repetitions=min_repetitions,
                       claims=claims, minimum_s=lambda p: minimum[p][1],
                       shortfall=lambda task: papers_run.short_of_runs(_read(path, substrate)[0], task.claims,
                                                                       substrate))
    except KeyboardInterrupt:
        err.print("interrupted: runs already measured are stored; run the same command again to resume")
        raise typer.Exit(130)
    print_scorecard(_read(path, substrate)[0])
