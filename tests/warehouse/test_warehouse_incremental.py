"""Incremental warehouse builds (warehouse.build() starting from the previous warehouse and its raw cache) give
exactly what a fresh full build of the same raw root gives: new runs, a run overwritten by a rerun, a deleted run."""
from __future__ import annotations

import json
import os
import time

import duckdb

import fixture_manifests as fx
from edgebench.results import warehouse
from edgebench.results.warehouse import builder, replay


def _tables(path) -> list[str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return sorted(r[0] for r in con.execute(
            "select table_name from duckdb_tables() where schema_name = 'main'").fetchall())
    finally:
        con.close()


def _differences(a, b) -> dict[str, tuple[int, int]]:
    """Per table of warehouse a: (rows only in a, rows only in b), multiset comparison of every column (floating
    point to 9 significant digits: a sum over the same values in another order may differ in the last bit)."""
    con = duckdb.connect()
    con.execute(f"attach '{a}' as a (read_only)")
    con.execute(f"attach '{b}' as b (read_only)")
    out = {}
    try:
        for t in _tables(a):
            cols = con.execute("select column_name, data_type from duckdb_columns() where database_name = 'a' "
                               "and schema_name = 'main' and table_name = ? order by column_index", [t]).fetchall()
            sel = ", ".join(f'(case when "{c}" = 0 or not isfinite("{c}") then "{c}" else round("{c}", '
                            f'9 - ceil(log10(abs("{c}")))::int) end) as "{c}"' if ty in ("DOUBLE", "FLOAT")
                            else f'"{c}"' for c, ty in cols)
            only_a = con.execute(f"select count(*) from (select {sel} from a.{t} except all "
                                 f"select {sel} from b.{t})").fetchone()[0]
            only_b = con.execute(f"select count(*) from (select {sel} from b.{t} except all "
                                 f"select {sel} from a.{t})").fetchone()[0]
            if only_a or only_b:
                out[t] = (only_a, only_b)
    finally:
        con.close()
    return out


def test_incremental_build_equals_full_build(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no record of earlier builds' unit tests
    manifests = fx.fixture_manifests()
    dds = [m for m in manifests if m["workload"] == "dds"]
    first = [m for m in manifests if m["workload"] != "dds"]
    root = fx.write_tree(tmp_path / "raw", first)
    wh = tmp_path / "inc" / "warehouse.duckdb"

    r1 = warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True)
    assert r1["mode"] == "full" and r1["unit_tests"]

    # new runs (every DDS run), a rerun that overwrote a run's keys (other throughput, later finish), a deleted run
    fx.write_tree(root, dds)
    rerun = next(m for m in first if m["workload"] == "iperf3" and m["status"] == "ok" and m["cni"] == "flannel")
    rerun = {**rerun, "metrics": {**rerun["metrics"], "throughput_mbps": 123.0}, "attempt": 2}
    key = root / fx.key(rerun)
    key.write_text(json.dumps(rerun, indent=2))
    os.utime(key, (time.time() + 5, time.time() + 5))  # a new object: another last-modified time
    gone = next(m for m in first if m["workload"] == "http" and m["status"] == "ok")
    for p in (root / fx.key(gone)).parent.iterdir():
        p.unlink()
    # an HTTP run measured again under another sweep, finishing later: its requests now come from the new directory
    moved = [m for m in first if m["workload"] == "http" and m["status"] == "ok"][1]
    moved = {**moved, "sweep_id": "fixture-again", "finished_at": "2030-01-01T00:00:00Z"}
    fx.write_tree(root, [moved])

    r2 = warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True)
    assert r2["mode"] == "incremental" and not r2["unit_tests"]
    read = {t: n for t, (_, n) in r2["raw"].items()}
    assert read["run_manifests"] == len(dds) + 2          # only the new and the changed objects were read
    assert read["dds_samples"] == sum(1 for m in dds if "dds-samples.json" in m["raw_files"])
    assert read["http_requests"] == 1

    full = tmp_path / "full" / "warehouse.duckdb"
    r3 = warehouse.build(warehouse_path=full, raw_root=str(root), quiet=True)
    assert r3["mode"] == "full" and not r3["unit_tests"]  # they passed for this project on this machine (r1)
    assert _tables(wh) == _tables(full)
    assert _differences(wh, full) == {}

    con = duckdb.connect(str(wh), read_only=True)
    try:
        assert con.execute("select throughput_mbps from fct_iperf3_runs where run_id = ?",
                           [rerun["run_id"]]).fetchone()[0] == 123.0
        assert con.execute("select count(*) from fct_runs where run_id = ?", [gone["run_id"]]).fetchone()[0] == 0
        assert con.execute("select distinct sweep_id from fct_http_requests where run_id = ?",
                           [moved["run_id"]]).fetchall() == [("fixture-again",)]
    finally:
        con.close()


def test_changed_project_or_full_refresh_builds_from_scratch(tmp_path, monkeypatch):
    root = fx.write_tree(tmp_path / "raw", fx.iperf3_manifests())
    wh = tmp_path / "wh" / "warehouse.duckdb"
    assert warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True)["mode"] == "full"
    assert warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True, full_refresh=True)["mode"] == "full"
    monkeypatch.setattr(builder, "project_hash", lambda project=None: "another project")
    assert warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True)["mode"] == "full"


def _checked(path) -> bool:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(f"select checked from {warehouse.RAW_CACHE_SCHEMA}.build_info").fetchone()[0]
    finally:
        con.close()


def test_a_followers_refresh_runs_the_models_only_in_one_kept_dbt(tmp_path, monkeypatch):
    """checked=False with a DbtSlot (what `edgebench warehouse --follow` does while runs land): the same tables as
    a full build, without the data tests or seeds, in one dbt interpreter kept between builds and ended by stop();
    the next refreshes replay the statements dbt ran for the models (results/warehouse/replay.py), with the same result, and
    one whose plan fails runs dbt instead; a full build is checked whatever was asked, and the check of the same
    data runs the tests."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    manifests = fx.fixture_manifests()
    first = [m for m in manifests if m["workload"] != "dds"]
    dds = [m for m in manifests if m["workload"] == "dds"]
    root = fx.write_tree(tmp_path / "raw", first)
    wh = tmp_path / "inc" / "warehouse.duckdb"
    full = tmp_path / "full" / "warehouse.duckdb"
    slot = warehouse.DbtSlot()

    def same_as_full() -> bool:
        warehouse.build(warehouse_path=full, raw_root=str(root), quiet=True, full_refresh=True)
        return _tables(wh) == _tables(full) and _differences(wh, full) == {}

    try:
        r1 = warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True, checked=False, dbt_slot=slot)
        assert r1["mode"] == "full" and r1["checked"] and _checked(wh) and slot.plan is None
        pid = slot.worker.proc.pid
        fx.write_tree(root, dds[: len(dds) // 2])
        r2 = warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True, checked=False, dbt_slot=slot)
        assert r2["mode"] == "incremental" and not r2["checked"] and not _checked(wh) and not r2["replayed"]
        assert slot.worker.proc.pid == pid  # the same interpreter, the project parsed once
        assert slot.plan is not None and slot.plan.n_statements > len(slot.plan.models)  # what dbt ran, recorded

        # replayed: new runs, a rerun that overwrote a run's keys, a deleted run
        fx.write_tree(root, dds[len(dds) // 2:])
        rerun = next(m for m in first if m["workload"] == "iperf3" and m["status"] == "ok" and m["cni"] == "flannel")
        rerun = {**rerun, "metrics": {**rerun["metrics"], "throughput_mbps": 123.0}, "attempt": 2}
        key = root / fx.key(rerun)
        key.write_text(json.dumps(rerun, indent=2))
        os.utime(key, (time.time() + 5, time.time() + 5))
        gone = next(m for m in first if m["workload"] == "http" and m["status"] == "ok")
        for p in (root / fx.key(gone)).parent.iterdir():
            p.unlink()
        r3 = warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True, checked=False, dbt_slot=slot)
        assert r3["mode"] == "incremental" and r3["replayed"] and not _checked(wh)
        assert same_as_full()

        # a plan that fails on this warehouse: rolled back, this refresh runs dbt, which records a new plan
        bad = replay.Plan(slot.plan.key, (("model.edgebench.broken", (("create table x as select * from nowhere",
                                                                        None),)),) + slot.plan.models)
        slot.plan = bad
        fx.write_tree(root, [{**dds[0], "sweep_id": "fixture-again", "finished_at": "2030-01-01T00:00:00Z"}])
        r4 = warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True, checked=False, dbt_slot=slot)
        assert not r4["replayed"] and slot.plan is not None and slot.plan is not bad
        assert _checked(wh) is False and _tables(wh) == _tables(full)  # built by dbt from the rolled-back state

        r5 = warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True, checked=True, dbt_slot=slot)
        assert r5["checked"] and not r5["replayed"] and _checked(wh) and slot.worker.proc.pid == pid
    finally:
        proc = slot.worker.proc if slot.worker else None
        slot.stop()
    assert proc is not None and proc.poll() is not None  # stop() ended it
