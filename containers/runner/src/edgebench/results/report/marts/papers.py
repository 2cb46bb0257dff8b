"""The seed papers' tables (analytics/seeds: published_claims, published_results) and the marts a claim or a printed
number is judged on, for results.report.papers and scorecard (over any Fetch: the CLI's file, the portal's
connection)."""

from __future__ import annotations

from edgebench.results.report.marts import Fetch


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
