"""`edgebench papers run` (`make papers`): the testbed presets the seed papers' undecided claims need, within one
wall-time budget, then the scorecard (sweep/papers_run.py)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer

from edgebench.cli.options import on_sigterm
from edgebench.cli.report_tables import print_scorecard
from edgebench.console import err, out
from edgebench.errors import SpecError
from edgebench.plan import spec as spec_mod
from edgebench.plan.cells import expand_checked, runs_for
from edgebench.plan.params import time_budget
from edgebench.results import warehouse
from edgebench.results.report import marts, papers, scorecard
from edgebench.results.report.marts import papers as paper_marts
from edgebench.results.records.store import ResultStore, repo_root
from edgebench.sweep import holding, papers_run
from edgebench.substrates.local import service_proxy
from edgebench.sweep.runner import run_local

papers_app = typer.Typer(help="The seed papers' claims: run what decides them, then the scorecard.",
                         no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(papers_app, name="papers", rich_help_panel="Results")


def _read(path: Path) -> tuple[list[dict], dict[tuple[str, str], dict]]:
    """The scorecard rows and the claims: from the warehouse, or where none is built yet (a machine that has measured
    nothing) from the papers' seeds alone, every testable claim undecided."""
    fetch = marts.path_fetcher(path) if path.exists() else paper_marts.seeds_fetcher(warehouse.analytics_dir())
    rows = scorecard.scorecard(fetch)
    claims = {(c["paper"], c["claim_id"]): c for c in paper_marts.all_claims(fetch)}
    return rows, claims


def _planned_runs(root: Path, preset: str, params: dict[str, str] | None = None) -> int:
    """The preset's runs as it plans them, of those its claims compare where `params` selects them."""
    s = spec_mod.load(root / preset, {k: v for k, v in (params or {}).items() if k == "select"}, substrate="local")
    cells, _ = expand_checked(s)
    return sum(len(runs_for(s, c)) for c in cells)


def _minimum(root: Path, preset: str, max_repetitions: int, params: dict[str, str] | None = None,
             min_repetitions: int = papers_run.MIN_REPETITIONS) -> tuple[int, float, int]:
    """The runs, the seconds of timed measurement and the runs without a duration (HTTP: counted in requests) of the
    preset's minimum rounds as `papers run` plans it (repetitions=auto: min-repetitions always run, 3 or more where
    the preset is not aimed, papers_run.min_rounds; `params`: the claims' aim and select). The timed measurement
    leaves out the runs every testbed records unsupported at once (service proxy none where the CNI does not replace
    kube-proxy); runs recorded unsupported where a kernel lacks a feature (ESP, Geneve, IPVS) count as measured:
    another machine's kernel may have it."""
    rounds = min(papers_run.min_rounds(params or {}, min_repetitions), max_repetitions)
    s = spec_mod.load(root / preset, {"repetitions": "auto", "min-repetitions": str(rounds),
                                      "max-repetitions": str(max_repetitions),
                                      **{k: v for k, v in (params or {}).items() if k == "select"}},
                      substrate="local")
    cells, _ = expand_checked(s)
    runs = [(c, r) for c in cells for r in runs_for(s, c)]
    share = s.values["min-repetitions"] / s.values["max-repetitions"]
    # a run every testbed records unsupported before it measures anything takes no measurement time
    timed = sum(r.duration_s or 0 for c, r in runs if not service_proxy.never_measured(c.service_proxy, c.cni_info,
                                                                                       r.path))
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
):
    """Run every testbed preset that the seed papers' undecided claims need, most claims first, within --budget;
    after each preset rebuild the warehouse and skip presets whose claims are decided by then; end with the
    scorecard (`edgebench report --paper all`). With budget left after every preset ran, a second pass goes back to
    the claims only a few runs a side short (about 10 or fewer) and runs their sides up to the rounds they lack.
    Each preset is a sweep of its own (`papers-<preset>`), so a second run measures nothing already stored and runs
    nothing already decided. Without a warehouse it builds one from
    the runs stored; on a machine that has measured nothing it plans from the papers' seeds, every claim undecided."""
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
            warehouse.build(path, quiet=True)
            out.print(f"papers: no warehouse at {path}: built it from the runs stored", highlight=False)
        except warehouse.NoResultsError:
            out.print(f"papers: nothing measured here yet (no warehouse, no run stored): every testable claim is "
                      "undecided; the plan reads the claims from the papers' seeds", highlight=False)
    rows, claims = _read(path)
    tasks, orphans = papers_run.plan(rows, claims, root, ids or None)
    chosen = {t.preset: t.params(claims) for t in tasks}  # aim and select, as each preset's sweep gets them
    minimum = {t.preset: _minimum(root, t.preset, max_repetitions, chosen[t.preset], min_repetitions) for t in tasks}
    planned = {t.preset: _planned_runs(root, t.preset, chosen[t.preset]) for t in tasks}
    for t in tasks:
        runs, timed, untimed = minimum[t.preset]
        counted = f", {untimed} of them HTTP runs counted in requests, not in it" if untimed else ""
        grid = _planned_runs(root, t.preset)
        part = (f"its claims compare {planned[t.preset]} of the {grid} runs the preset plans"
                if "select" in chosen[t.preset] else f"{grid} runs as the preset plans them")
        out.print(f"  {t.preset}: {len(t.claims)} undecided claim(s) of seed {', '.join(t.papers)} "
                  f"({part}; its minimum rounds: {runs} runs, {timed / 60:.0f} min of timed measurement{counted}; "
                  f"sweep {t.sweep_id})", highlight=False)
    total = sum(m[1] for m in minimum.values())
    out.print(f"  in all: the minimum rounds hold {total / 60:.0f} min of timed measurement (an estimate from the "
              f"planned durations, before set-up and HTTP runs), the budget {seconds / 60:.0f} min", highlight=False)
    warning = papers_run.overrun(tasks, seconds, lambda p: minimum[p][1])
    if warning:
        err.print(f"papers: {warning}", highlight=False)
    if orphans:
        out.print(f"  {len(orphans)} undecided claim(s) no testbed preset's grid holds as it stands (both sides under "
                  f"the claim's filters), not run: {', '.join(c for _, c in orphans)}", highlight=False)
        for key in orphans:  # what would measure it: the scorecard's own words (claim_preset.home under both)
            out.print(f"    {key[1]}: {papers_run.to_decide(rows, key)}", highlight=False)
    if dry_run or not tasks:
        if not tasks:
            out.print("papers: nothing to run: every claim the testbed presets measure is decided")
        return

    def run_sweep(task: papers_run.PresetTask, params: dict[str, str]) -> None:
        s = spec_mod.load(root / task.preset, params, substrate="local")
        with holding.sweep_hold("local", s.sweep_id, None, None):
            report = run_local(s, ResultStore(), log=out.print, live=sys.stdout if sys.stdout.isatty() else None)
        c = report.counts
        out.print(f"sweep {s.sweep_id}: {c['ok']} ok, {c['failed']} failed, {c['unsupported']} unsupported, "
                  f"{c['skipped']} already stored", highlight=False)

    def still_open(task: papers_run.PresetTask) -> list[tuple[str, str]]:
        now = set(papers_run.undecided(_read(path)[0], ids or None))
        return [k for k in task.claims if k in now]

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        papers_run.run(tasks, seconds, planned_runs=planned.get, run_sweep=run_sweep,
                       rebuild=lambda: warehouse.build(path, quiet=True), still_open=still_open,
                       log=lambda line: out.print(line, highlight=False), max_repetitions=max_repetitions,
                       min_repetitions=min_repetitions,
                       claims=claims, minimum_s=lambda p: minimum[p][1],
                       shortfall=lambda task: papers_run.short_of_runs(_read(path)[0], task.claims))
    except KeyboardInterrupt:
        err.print("interrupted: runs already measured are stored; run the same command again to resume")
        raise typer.Exit(130)
    print_scorecard(_read(path)[0])
