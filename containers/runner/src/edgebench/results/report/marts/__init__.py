"""The one read API over the warehouse's marts (built by analytics/): every query the CLI and the portal run against
the DuckDB warehouse goes through here. A path-based reader (query, path_fetcher) opens the file read-only per call
and turns DuckDB's errors into WarehouseError; a connection-based one (rows, fetcher, frame) runs on a connection
the caller holds (the portal's cached read-only one). The reading modules (ranking, papers, scorecard, changepoints)
take a Fetch, fetch(sql, params) -> rows as dicts, from either.

The portal's selections (Choices): a page picks one substrate, then the conditions it holds fixed, each offering only
the values that exist given the ones chosen before it. The queries themselves, by the marts they read: runs.py
(fct_runs: sweeps, labs, link conditions), iperf3.py (the iperf3 and sockperf marts, resources, tuning), dds.py,
http.py (HTTP in one cluster and across inter-cluster tools), distributions.py (distributions and service proxies),
reports.py (emulation vs real, CPU efficiency, version regressions and history, latency under load), answer.py (the
headlines the answer ranks), papers.py (the seed papers' tables), summaries.py (`edgebench summary`'s tables, the
regression cards, the versions measured), support.py (the functional matrix: CNI mode x node kind)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from edgebench.plan.dimensions import DIMENSIONS
from edgebench.results.warehouse import WarehouseError, default_warehouse_path

try:  # optional: the runner image carries no analytics extra
    import duckdb
except ImportError:  # pragma: no cover - exercised in the runner image
    duckdb = None

Fetch = Callable[[str, list], list[dict]]
WarehousePath = str | os.PathLike | None


# ---- running SQL -----------------------------------------------------------------------------------------------------
def rows(con, sql: str, params: list | tuple = ()) -> list[dict]:
    """The rows of one query on an open connection, as dicts."""
    cur = con.execute(sql, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row)) for row in cur.fetchall()]


def fetcher(con) -> Fetch:
    """fetch(sql, params) over an open connection."""
    return lambda sql, params: rows(con, sql, params)


def frame(con, sql: str, params: list | tuple = ()):
    """The rows of one query on an open connection as a pandas DataFrame."""
    return con.execute(sql, list(params)).df()


def empty_frame():
    """An empty DataFrame (what a query of a mart the warehouse predates returns to the portal)."""
    import pandas as pd  # noqa: PLC0415 - the portal's dependency, not the runner image's

    return pd.DataFrame()


def has_table(con, name: str) -> bool:
    """Whether the warehouse has the table (one built before a mart existed has not)."""
    return con.execute("select count(*) from information_schema.tables where table_name = ?",
                       [name]).fetchone()[0] > 0


def query(sql: str, params: list, warehouse_path: WarehousePath = None) -> list[dict]:
    """The rows of one query on the warehouse file (default: default_warehouse_path()), opened read-only for it.
    Raises WarehouseError when there is no warehouse, it cannot be opened, or it lacks a table the query reads."""
    path = Path(warehouse_path) if warehouse_path else default_warehouse_path()
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path}; run `make sweep`")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot open warehouse {path}: {exc}") from exc
    try:
        return rows(con, sql, params)
    except duckdb.CatalogException as exc:
        raise WarehouseError(f"the warehouse at {path} has no {missing_table(str(exc))} (built by an older edgebench);"
                             " rebuild it with `make warehouse`") from exc
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot read {path}: {exc}") from exc
    finally:
        con.close()


def path_fetcher(warehouse_path: WarehousePath = None) -> Fetch:
    """fetch(sql, params) over the warehouse file: each call opens it read-only (query)."""
    return lambda sql, params: query(sql, params, warehouse_path)


def missing_table(message: str) -> str:
    """'table X' from DuckDB's catalog error, for a message."""
    m = re.search(r"Table with name (\w+) does not exist", message)
    return f"table {m.group(1)}" if m else "table it needs"


# ---- the portal's selections -----------------------------------------------------------------------------------------
def where_in(substrate: str, filters: dict, allowed: dict) -> tuple[str, list]:
    """`substrate = ? and col = ? ...` with its parameters, for the filters given (None = any); a filter not in
    `allowed` is an error (the column names go into the SQL text)."""
    unknown = set(filters) - set(allowed)
    if unknown:
        raise ValueError(f"unknown filter(s): {sorted(unknown)}")
    clauses, params = ["substrate = ?"], [substrate]
    for col, value in filters.items():
        if value is not None:
            clauses.append(f"{col} = ?")
            params.append(value)
    return " and ".join(clauses), params


BASELINE_VALUES = {"workload": "iperf3", **{d.warehouse_column: d.base for d in DIMENSIONS if d.filter_label}}
# The lab a run was measured on (staging: the testbed, kind, or a real cluster's inventory target), the first filter
# of every page after the substrate: two labs of one substrate (a Pi lab, the local lab) are never pooled
LAB_FILTER = {"lab": "Lab"}
# The cell dimensions the pages filter on (edgebench/plan/dimensions.py, `filter_label`): column -> label
DIMENSION_FILTERS = {d.warehouse_column: d.filter_label for d in DIMENSIONS if d.filter_label}
# Conditions a comparison holds fixed (besides substrate), in display order: column -> label
FILTERS = {
    **LAB_FILTER,
    "protocol": "Protocol",
    "path": "Path",
    "placement": "Placement",
    "length_bytes": "Length (bytes)",
    "distribution": "Distribution",
    **DIMENSION_FILTERS,
}


def baseline_first(column: str) -> str:
    """An `order by` prefix putting a column's untouched value (the baseline) first, if it has one."""
    value = BASELINE_VALUES.get(column)
    return f"{column} <> '{value}', " if value else ""


def substrates(con, relation: str) -> list[str]:
    """Substrates present in a relation (a table, or a subquery in parentheses; any status), most rows first."""
    found = con.execute(f"select substrate from {relation} group by substrate "
                        "order by count(*) desc, substrate").fetchall()
    return [r[0] for r in found]


def filter_values(con, relation: str, allowed: dict, substrate: str, column: str, chosen: dict | None = None,
                  order: str = "baseline") -> list:
    """Values of one filter column of a relation on a substrate, given the filters chosen before it (all statuses,
    so setups that only failed can still be selected). order "baseline": the untouched condition first, then by
    value; "most_ok": the value with most successful runs first, so a page opens on data, not on a corner case."""
    if column not in allowed:
        raise ValueError(f"unknown filter: {column}")
    where, params = where_in(substrate, chosen or {}, allowed)
    if order == "most_ok":
        sql = (f"select {column} from {relation} where {where} and {column} is not null "
               f"group by {column} order by count(*) filter (where status = 'ok') desc, {column}")
    else:
        sql = (f"select distinct {column} from {relation} where {where} and {column} is not null "
               f"order by {baseline_first(column)}{column}")
    return [r[0] for r in con.execute(sql, params).fetchall()]


@dataclass(frozen=True)
class Choices:
    """Where a page's selection comes from: the relation, the filters it offers in order (column -> label), further
    columns its queries may be narrowed by but the page does not offer, and the order of the values (filter_values)."""

    relation: str
    filters: dict[str, str]
    extra: tuple[str, ...] = ()
    order: str = "baseline"
    allowed: dict[str, str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed", {**self.filters, **{c: "" for c in self.extra}})

    def substrates(self, con) -> list[str]:
        return substrates(con, self.relation)

    def values(self, con, substrate: str, column: str, **chosen: Any) -> list:
        return filter_values(con, self.relation, self.allowed, substrate, column, chosen, self.order)

    def where(self, substrate: str, filters: dict) -> tuple[str, list]:
        return where_in(substrate, filters, self.allowed)
