"""The seed papers' tables (analytics/seeds: published_claims, published_results) and the marts a claim or a printed
number is judged on, for results.report.papers and scorecard (over any Fetch: the CLI's file, the portal's
connection)."""

from __future__ import annotations

from pathlib import Path

import yaml

from edgebench.results.report.marts import Fetch, rows


def published_claims(fetch: Fetch, paper: str) -> list[dict]:
    """The paper's claims, by claim id."""
    return fetch("select * from published_claims where paper = ? order by claim_id", [paper])


def all_claims(fetch: Fetch) -> list[dict]:
    """Every seed paper's claims (`edgebench papers run` plans the presets their undecided ones need)."""
    return fetch("select * from published_claims", [])


def published_results(fetch: Fetch, paper: str) -> list[dict]:
    """The numbers the paper prints, by table, figure, label and payload."""
    return fetch("select * from published_results where paper = ? "
                 "order by table_ref nulls last, figure_ref nulls last, label, payload_bytes", [paper])


def mart_rows(fetch: Fetch, name: str) -> list[dict]:
    """Every row of one mart; name from papers.GRAINS / counterparts.SPECS / the seeds, never user input."""
    return fetch(f"select * from {name}", [])


def seeds_fetcher(project: Path) -> Fetch:
    """fetch(sql, params) over the papers' seed tables alone, as dbt loads them (analytics/seeds/*.csv with the column
    types of _seeds.yml), every other table empty: the scorecard of a machine that has measured nothing yet, where
    every testable claim is `cannot tell` (`edgebench papers run` plans from it before the first warehouse exists).
    A query of a table other than the seeds returns no rows."""
    import duckdb  # noqa: PLC0415 - the analytics extra, as for every warehouse read

    seeds = project / "seeds"
    spec = yaml.safe_load((seeds / "_seeds.yml").read_text()) or {}
    con = duckdb.connect(":memory:")
    for seed in spec.get("seeds") or []:
        csv = seeds / f"{seed['name']}.csv"
        if not csv.exists():
            continue
        types = ((seed.get("config") or {}).get("column_types")) or {}
        con.execute(f"create table {seed['name']} as select * from read_csv(?, header = true, "
                    f"types = {{{', '.join(f'{k!r}: {v!r}' for k, v in types.items())}}})", [str(csv)])

    def fetch(sql: str, params: list) -> list[dict]:
        try:
            return rows(con, sql, params)
        except duckdb.CatalogException:  # a mart: nothing measured
            return []

    return fetch
