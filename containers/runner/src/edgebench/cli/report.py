"""`edgebench report`: the CNI version regression cards (cmp_cni_version_regressions) for a terminal or a CI log, and
with --paper ID one seed paper's published numbers and claims beside our measurements (edgebench.results.report.papers);
with --support the functional matrix (CNI mode x node kind); the tables of --emulation, --efficiency, --paper and
--support are cli/report_tables.py's."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from edgebench.cli.report_tables import (num, print_efficiency, print_emulation, print_normalized, print_paper,
                                         print_scorecard, print_support)
from edgebench.console import err, out
from edgebench.results import warehouse as wh
from edgebench.results.report import changepoints, marts, papers, scorecard
from edgebench.results.report.labels import diff_pct_text, metric_label, version_card_caveat, version_card_title
from edgebench.results.report.marts import reports as report_marts
from edgebench.results.report.marts import summaries
from edgebench.results.report.marts import support as support_marts
from edgebench.results.report.verdict import RULE_HELP

WAREHOUSE_HELP = "Warehouse to read (default $EDGEBENCH_WAREHOUSE or .edgebench/warehouse.duckdb)."
EMPTY = ("No CNI mode has been measured at two versions yet. `edgebench watch` reruns a CNI's modes when upstream "
         "releases a new version (`edgebench versions check` shows which are behind); each rerun is filed under that "
         "version, and a card appears once a mode has runs at two versions (`make warehouse` to rebuild).")


def register(app: typer.Typer) -> None:
    app.command("report", rich_help_panel="Versions and reruns")(report)


def report(
    cni: Optional[str] = typer.Option(None, "--cni", help="Only this CNI (calico) or CNI mode (calico:vxlan)."),
    paper: Optional[str] = typer.Option(
        None, "--paper", metavar="ID",
        help="Instead of the regression cards: seed paper ID (000-004) reproduced. Each number the paper prints that "
             "edgebench measures the same way, beside ours (95% CI, n, verdict vs host), and each of its claims: "
             "agrees / disagrees / cannot tell, per substrate. `--paper all`: the reproduction scorecard of every "
             "paper (claims per outcome and substrate, printed numbers with a counterpart, what would decide each "
             "claim we cannot tell)."),
    emulation: bool = typer.Option(
        False, "--emulation",
        help="Instead of the regression cards: the testbed's emulation against the real CNIs (cmp_emulation_vs_real): "
             "testbed / real per CNI mode and metric, with n, the 95% CI and the verdict (model holds within +-10%)."),
    history: bool = typer.Option(
        False, "--history",
        help="Instead of the regression cards: change points over each CNI mode's whole version history (3 or more "
             "versions), per configuration and metric, judged by the one verdict rule (results/report/changepoints.py)."),
    efficiency: bool = typer.Option(
        False, "--efficiency",
        help="Instead of the regression cards: CPU per Gbit/s (iperf3) and per 1,000 messages/s (DDS throughput) per "
             "CNI mode beside the host network's, per substrate and component (cmp_resources_efficiency), with n."),
    support: bool = typer.Option(
        False, "--support",
        help="Instead of the regression cards: the functional matrix (fct_cni_support), every CNI mode of the catalog "
             "x node kind (namespace node with the shared kernel, x86 VM with a stock kernel, arm64 VM, a real "
             "machine lab, the testbed): works (n ok runs, the sweeps), fails (the latest error), unsupported (the "
             "recorded reason) or never tried. Runs on emulated CPUs count here, never in a comparison."),
    component: Optional[str] = typer.Option(
        None, "--component", help="With --efficiency: only this component (system, workload, cni)."),
    as_json: bool = typer.Option(False, "--json", help="Print the cards (or the paper report) as JSON instead of tables."),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
):
    """Print one regression card per CNI mode measured at two or more versions: the newest version against the
    previous one on every metric both measured (n, means, difference in % with its 95% CI, verdict), worse rows
    first. With --paper ID, a seed paper's published numbers and claims beside our measurements instead. Exit code 0
    whatever the verdicts or outcomes (2 when there is no warehouse or the paper ID is unknown)."""

    try:
        if paper is not None and paper.strip().lower() != "all":
            paper = papers.paper_id(paper)
            if cni:
                raise papers.PaperError("--cni filters regression cards; it cannot be combined with --paper")
        path = warehouse or wh.default_warehouse_path()
        if not Path(path).is_file():
            raise wh.WarehouseError(f"no warehouse at {path}: nothing has been measured or built yet; run `make sweep` "
                                    "(or `make warehouse` to build it from the results in MinIO)")
        if support:
            matrix = support_marts.support_matrix(marts.path_fetcher(path))
            if as_json:
                typer.echo(json.dumps(support_marts.support_json(matrix), indent=2, default=_json_default))
            else:
                print_support(matrix)
            return
        if efficiency:
            rows = report_marts.resources_efficiency(path, component)
            if as_json:
                typer.echo(json.dumps(rows, indent=2, default=_json_default))
            else:
                print_efficiency(rows)
            return
        if emulation:
            rows = report_marts.emulation_vs_real(path)
            normalized = report_marts.emulation_overhead(marts.path_fetcher(path))
            if as_json:
                typer.echo(json.dumps(rows, indent=2, default=_json_default))
            else:
                print_emulation(rows)
                print_normalized(normalized)
            return
        if history:
            entries = changepoints.history_report(marts.path_fetcher(path), cni)
            if as_json:
                typer.echo(json.dumps([{**e, "change_points": [
                    {"before": p.before, "after": p.after, "early": p.early, "verdict": p.comparison.verdict,
                     "diff_pct": p.comparison.diff_pct, "ci95_pct": p.comparison.ci95_pct,
                     "n_before": p.comparison.n_b, "n_after": p.comparison.n_a} for p in e["change_points"]]}
                    for e in entries], indent=2, default=str))
            else:
                print_history(entries)
            return
        if paper is not None and paper.strip().lower() == "all":
            rows = scorecard.scorecard(marts.path_fetcher(path))
            if as_json:
                typer.echo(json.dumps(rows, indent=2, default=_json_default))
            else:
                print_scorecard(rows)
            return
        if paper is not None:
            rep = papers.paper_report(marts.path_fetcher(path), paper)
            if as_json:
                typer.echo(json.dumps(rep, indent=2, default=_json_default))
            else:
                print_paper(rep)
            return
        cards = summaries.version_regressions(path, cni=cni)
    except (wh.WarehouseError, papers.PaperError) as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps(_jsonable(cards), indent=2, default=str))
        return
    if not cards:
        out.print(f"no regression card for {cni}. " + EMPTY if cni else EMPTY, highlight=False)
        return
    for card in cards:
        print_card(card)
    n_worse = sum(1 for c in cards if c["card_n_worse"])
    total = sum(c["card_n_comparisons"] for c in cards)
    out.print(f"{len(cards)} card(s), {total} comparisons; {n_worse} card(s) with worse rows. verdict: new "
              "against previous by the one rule: " + RULE_HELP,
              highlight=False)


def print_history(entries: list[dict]) -> None:
    if not entries:
        out.print("No configuration has been measured at 3 or more versions of a CNI yet (the regression cards "
                  "compare the newest two).")
        return
    n_points = sum(len(e["change_points"]) for e in entries)
    for e in entries:
        if not e["change_points"]:
            continue
        where = " ".join(str(e[k]) for k in ("workload", "protocol", "path", "placement") if e.get(k))
        out.print(f"{e['cni']}:{e['cni_mode']} ({e['substrate']}) {where} {e['metric']}: versions "
                  f"{', '.join(e['versions'])}", highlight=False)
        for p in e["change_points"]:
            c = p.comparison
            out.print(f"  between {p.before} and {p.after}{' (early: little history before it)' if p.early else ''}: "
                      f"{c.text()}", highlight=False)
    out.print(f"{len(entries)} series with 3 or more versions; {n_points} change point(s). Each: the runs after it "
              "against the runs before it in its segment, by the one rule: " + RULE_HELP, highlight=False)


def print_card(card: dict) -> None:
    extra = f"; {card['n_versions']} versions measured, the newest two compared" if card["n_versions"] > 2 else ""
    t = Table(title=version_card_title(card) + extra, title_justify="left")
    for col, right in (("configuration", False), ("metric", False), ("n old/new", True), ("old mean", True),
                       ("new mean", True), ("new - old % [95% CI]", True), ("verdict", False)):
        t.add_column(col, justify="right" if right else "left", no_wrap=col != "configuration")
    for r in card["rows"]:
        verdict = r["verdict"]
        style = {"worse": "bold red", "better": "green"}.get(verdict)
        t.add_row(r["config"], metric_label(r["metric"], r["is_higher_better"]),
                  f"{r['previous_n_runs']}/{r['new_n_runs']}", num(r["previous_mean"]), num(r["new_mean"]),
                  diff_pct_text(r["diff_pct"], r["diff_ci_low_pct"], r["diff_ci_high_pct"], r["diff"], r["unit"]),
                  f"[{style}]{verdict}[/]" if style else verdict)
    out.print(t)
    if caveat := version_card_caveat(card):
        out.print(f"  note: {caveat}", highlight=False)
    k = card["card_n_comparisons"]
    out.print(f"  {card['cni']}:{card['cni_mode']} ({card['substrate']}): {k} comparisons: "
              f"{card['card_n_worse']} worse, {card['card_n_better']} better, "
              f"{card['card_n_equivalent']} equivalent, {card['card_n_inconclusive']} inconclusive"
              + (f", {card['card_n_too_few_runs']} more with n < 2" if card["card_n_too_few_runs"] else "")
              + f"; identical versions would show about {card['card_expected_false_alarms']:.1f} better/worse by "
                "chance (5% of the comparisons)", highlight=False)


def _jsonable(cards: list[dict]) -> list[dict]:
    """Timestamps as ISO 8601 text; NaN as null."""
    def clean(v):
        if isinstance(v, float) and math.isnan(v):
            return None
        if hasattr(v, "isoformat"):
            return v.isoformat()
        return v

    return [{k: ([{rk: clean(rv) for rk, rv in r.items()} for r in v] if k == "rows" else clean(v))
             for k, v in card.items()} for card in cards]


def _json_default(v):
    if isinstance(v, float) and math.isnan(v):
        return None
    return v.isoformat() if hasattr(v, "isoformat") else str(v)
