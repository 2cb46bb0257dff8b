"""results/warehouse/replay.py without dbt: which recorded statements make a plan, and a failing plan changes nothing.
(A replayed refresh against a full dbt build: tests/warehouse/test_warehouse_incremental.py.)"""
from __future__ import annotations

import json

import duckdb
import pytest

from edgebench.results.warehouse import replay

COMMENT = '/* {"app": "dbt", "node_id": "model.edgebench.%s"} */\n'


def test_a_plan_keeps_the_models_statements_in_the_order_dbt_ran_them():
    records = [
        ["list_warehouse", "select schema_name from system.information_schema.schemata", None],
        ["create_warehouse_main", "create schema if not exists main", None],
        ["model.edgebench.a", "BEGIN", None],
        ["model.edgebench.a", COMMENT % "a" + "create table a__dbt_tmp as (select 1 as x)", None],
        ["model.edgebench.a", COMMENT % "a" + "  SELECT index_name FROM duckdb_indexes()", None],
        ["model.edgebench.a", COMMENT % "a" + "alter table a__dbt_tmp rename to a", None],
        ["model.edgebench.a", "COMMIT", None],
        ["test.edgebench.not_null_a_x", "select count(*) from a where x is null", None],
        ["model.edgebench.b", COMMENT % "b" + "insert into b select ?", [3]],
    ]
    plan = replay.plan_from_record("k", records)
    assert plan.key == "k"
    assert plan.models == (
        ("model.edgebench.a", (("create table a__dbt_tmp as (select 1 as x)", None),
                               ("alter table a__dbt_tmp rename to a", None))),
        ("model.edgebench.b", (("insert into b select ?", (3,)),)))
    assert plan.n_statements == 3
    assert replay.plan_from_record("k", records[:3] + records[7:8]) is None  # no model statement: no plan


def test_read_record_gives_no_plan_for_a_missing_or_broken_file(tmp_path):
    assert replay.read_record(tmp_path / "none.json", "k") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert replay.read_record(tmp_path / "bad.json", "k") is None
    (tmp_path / "ok.json").write_text(json.dumps([["model.edgebench.a", "create table a (x int)", None]]))
    assert replay.read_record(tmp_path / "ok.json", "k").n_statements == 1


def test_a_replay_runs_in_one_transaction(tmp_path):
    db = tmp_path / "warehouse.duckdb"
    duckdb.connect(str(db)).execute("create table src as select 1 as x").close()
    good = replay.Plan("k", (("model.edgebench.a", (("create table a as select x + 1 as y from src", None),)),
                             ("model.edgebench.b", (("create table b as select y * ? as z from a", (10,)),))))
    good.replay(db)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select z from b").fetchall() == [(20,)]
    bad = replay.Plan("k", (("model.edgebench.c", (("create table c as select 1 as w", None),)),
                            ("model.edgebench.d", (("create table d as select * from nowhere", None),))))
    with pytest.raises(replay.ReplayError, match="model.edgebench.d"):
        bad.replay(db)
    with duckdb.connect(str(db), read_only=True) as con:  # c was rolled back with d
        assert sorted(r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()) == \
            ["a", "b", "src"]
