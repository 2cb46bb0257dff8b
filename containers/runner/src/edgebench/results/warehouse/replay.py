"""A follower's fast refresh: the SQL dbt ran for the models of one incremental build, run again.

While runs land, `edgebench warehouse --follow` refreshes the models only (results/warehouse/follow.py). Through dbt that takes
about 7 s for the project's 44 models here, most of it dbt's own work per model (materialization, catalog lookups,
one connection per thread on 2 cores) rather than DuckDB's; the same statements run one after another in one DuckDB
connection take under 2 s. So the follower's dbt worker (dbt_runner.DbtWorker) records every statement dbt sends to
DuckDB during an incremental build, and the next refreshes of the same analytics project run the models' statements
again (Plan.replay) instead of dbt:

- Every model's SQL is dbt's, compiled for an incremental build: the staging models and the per-sample models read
  only what edgebench_raw_cache.changed lists, which the raw-cache sync rewrites before each refresh
  (analytics/macros/raw_incremental.sql); every other model is rebuilt from its parents. No model's SQL is fixed at
  compile time from the data (no run_query), so the recorded SQL is valid for any later refresh of the same project.
- Only the models' statements run: not the catalog lookups (selects), not dbt's tests or seeds.
- Models run in the order dbt started them; dbt starts a model only after its parents are done, so that order is
  one of the dependency orders.
- It runs in one transaction: a statement that fails rolls the refresh back, the plan is dropped, and that refresh
  runs through dbt (warehouse.build).

What a replay builds is checked like any refresh: the follower runs dbt with the data tests once runs stop landing,
and tests/warehouse/test_warehouse_incremental.py checks that a replayed refresh gives exactly the tables of a full dbt
build (tests/unit/test_replay.py: which statements make a plan, and the rollback).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

try:  # optional, as in results/warehouse/builder.py
    import duckdb
except ImportError:  # pragma: no cover - exercised in the runner image
    duckdb = None

from edgebench.results.warehouse.raw_cache import WarehouseError

_COMMENT = re.compile(r"^\s*/\*.*?\*/\s*", re.S)  # dbt's query comment ({"app": "dbt", "node_id": ...})
_NO_EFFECT = ("select", "begin", "commit", "rollback")  # catalog lookups and dbt's own transactions


class ReplayError(WarehouseError):
    """A recorded statement failed on this warehouse: the refresh is rolled back and runs through dbt."""


@dataclass(frozen=True)
class Plan:
    """The statements of one incremental dbt build of one analytics project (key: its project hash), per model in the
    order dbt ran them."""
    key: str
    models: tuple[tuple[str, tuple[tuple[str, tuple | None], ...]], ...]

    @property
    def n_statements(self) -> int:
        return sum(len(stmts) for _, stmts in self.models)

    def replay(self, db: Path) -> None:
        """Run the plan on the DuckDB file db (a copy of the previous warehouse, its raw cache synced)."""
        con = duckdb.connect(str(db))
        try:
            con.execute("begin")
            for node, stmts in self.models:
                for sql, bindings in stmts:
                    try:
                        con.execute(sql) if bindings is None else con.execute(sql, list(bindings))
                    except duckdb.Error as exc:
                        con.execute("rollback")
                        raise ReplayError(f"replaying {node} failed: {str(exc).splitlines()[0]}") from exc
            con.execute("commit")
        finally:
            con.close()


def plan_from_record(key: str, records: list) -> Plan | None:
    """The plan of a build's recorded statements ([connection name, sql, bindings] in execution order), or None when
    it holds no model statement."""
    models: dict[str, list] = {}
    for name, sql, bindings in records:
        if not (name or "").startswith("model."):
            continue  # dbt's own connections (catalog, schemas) and tests
        body = _COMMENT.sub("", sql, count=1).strip()
        if not body or body.split(None, 1)[0].lower() in _NO_EFFECT:
            continue
        models.setdefault(name, []).append((body, None if bindings is None else tuple(bindings)))
    if not models:
        return None
    return Plan(key, tuple((node, tuple(stmts)) for node, stmts in models.items()))


def read_record(path: Path, key: str) -> Plan | None:
    """The plan a dbt worker recorded at path (None when it wrote none: the build failed or bound a value JSON cannot
    carry)."""
    try:
        records = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return plan_from_record(key, records)
