"""`edgebench report`: the CNI version regression cards (cmp_cni_version_regressions) for a terminal or a CI log."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from edgebench.console import err, out

WAREHOUSE_HELP = "Warehouse to read (default $EDGEBENCH_WAREHOUSE or .edgebench/warehouse.duckdb)."
EMPTY = ("No CNI mode has been measured at two versions yet. `edgebench watch` reruns a CNI's modes when upstream "
         "releases a new version (`edgebench versions check` shows which are behind); each rerun is filed under that "
         "version, and a card appears once a mode has runs at two versions (`make warehouse` to rebuild).")


def register(app: typer.Typer) -> None:
    app.command("report", rich_help_panel="Versions and reruns")(report)


def report(
    cni: Optional[str] = typer.Option(None, "--cni", help="Only this CNI (calico) or CNI mode (calico:vxlan)."),
    as_json: bool = typer.Option(False, "--json", help="Print the cards as JSON instead of tables."),
    warehouse: Optional[Path] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
):
    """Print one regression card per CNI mode measured at two or more versions: the newest version against the
    previous one on every metric both measured (n, means, difference in % with its 95% CI, verdict), worse rows
    first. Exit code 0 whatever the verdicts (2 when there is no warehouse)."""
    from edgebench.results import warehouse as wh

    try:
        path = warehouse or wh.default_warehouse_path()
        if not Path(path).is_file():
            raise wh.WarehouseError(f"no warehouse at {path}: nothing has been measured or built yet; run `make sweep` "
                                    "(or `make warehouse` to build it from the results in MinIO)")
        cards = wh.version_regressions(path, cni=cni)
    except wh.WarehouseError as exc:
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
    out.print(f"{len(cards)} card(s), {total} comparisons; {n_worse} card(s) with worse rows. verdict: better / worse "
              "when the 95% Welch interval of new - previous excludes 0 (each comparison wrong at most 5% of the time "
              "on identical versions), else indistinguishable; n < 2: a side with fewer than 2 runs.",
              highlight=False)


def print_card(card: dict) -> None:
    from edgebench.results.labels import diff_pct_text, metric_label, version_card_caveat, version_card_title

    extra = f"; {card['n_versions']} versions measured, the newest two compared" if card["n_versions"] > 2 else ""
    t = Table(title=version_card_title(card) + extra, title_justify="left")
    for col, right in (("configuration", False), ("metric", False), ("n old/new", True), ("old mean", True),
                       ("new mean", True), ("new - old % [95% CI]", True), ("verdict", False)):
        t.add_column(col, justify="right" if right else "left", no_wrap=col != "configuration")
    for r in card["rows"]:
        verdict = r["verdict"]
        style = {"worse": "bold red", "better": "green"}.get(verdict)
        t.add_row(r["config"], metric_label(r["metric"], r["is_higher_better"]),
                  f"{r['previous_n_runs']}/{r['new_n_runs']}", _num(r["previous_mean"]), _num(r["new_mean"]),
                  diff_pct_text(r["diff_pct"], r["diff_ci_low_pct"], r["diff_ci_high_pct"], r["diff"], r["unit"]),
                  f"[{style}]{verdict}[/]" if style else verdict)
    out.print(t)
    if caveat := version_card_caveat(card):
        out.print(f"  note: {caveat}", highlight=False)
    k = card["card_n_comparisons"]
    out.print(f"  {card['cni']}:{card['cni_mode']} ({card['substrate']}): {k} comparisons: "
              f"{card['card_n_worse']} worse, {card['card_n_better']} better, {card['card_n_indistinguishable']} indistinguishable"
              + (f", {card['card_n_too_few_runs']} more with n < 2" if card["card_n_too_few_runs"] else "")
              + f"; identical versions would show about {card['card_expected_false_alarms']:.1f} better/worse by "
                "chance (5% of the comparisons)", highlight=False)


def _num(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.4g}" if abs(v) < 1000 else f"{v:.0f}"


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
