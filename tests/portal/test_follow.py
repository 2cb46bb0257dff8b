"""`edgebench warehouse --follow` (results/warehouse/follow.py) and what the portal shows of it: the raw root's fingerprint, a
sweep's progress and ETA, one follow loop over a local raw root, and the overview's progress bar from the live file."""
from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import duckdb
from streamlit.testing.v1 import AppTest

import fixture_manifests as fx
from data.common import eta_text, live_status
from edgebench.results.report.sweep_status import CellStatus, SweepStatus
from edgebench.results.warehouse import follow

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.timezone.utc)


def test_the_fingerprint_changes_with_the_runs_only(tmp_path):
    root = fx.write_tree(tmp_path / "raw", fx.iperf3_manifests()[:4])
    first = follow.fingerprint(str(root))
    assert follow.fingerprint(str(root)) == first  # nothing changed: no rebuild
    extra = fx.iperf3_manifests()[4]
    d = root / fx.key(extra).rsplit("/", 1)[0]
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps(extra))
    assert follow.fingerprint(str(root)) != first


def test_progress_counts_runs_and_learns_the_pace():
    cells = [CellStatus("c-1", "host:host", planned={"a", "b"}, stored={"a": "ok", "b": "ok"}),
             CellStatus("c-2", "flannel:vxlan", planned={"c", "d", "e", "f"}, stored={"c": "ok", "d": "failed"})]
    plan = {"written_at": (NOW - dt.timedelta(minutes=4)).isoformat()}
    p = follow.progress(SweepStatus("s1", plan, cells, True), NOW)
    assert (p["runs_done"], p["runs_planned"], p["failed"], p["cells_done"], p["cells"]) == (4, 6, 1, 1, 2)
    assert p["elapsed_s"] == 240 and p["eta_s"] == 120  # 4 runs in 4 minutes: 2 left, 2 minutes
    done = [CellStatus("c-1", "host:host", planned={"a"}, stored={"a": "ok"})]
    assert follow.progress(SweepStatus("s2", plan, done, True), NOW) is None  # finished: not in progress
    assert eta_text(120) == "ETA 2m00s" and eta_text(3700) == "ETA 1h01m" and eta_text(None) == "ETA unknown"


def test_one_follow_loop_builds_once_and_writes_the_live_file(tmp_path, monkeypatch):
    root = fx.write_tree(tmp_path / "raw", fx.iperf3_manifests())
    target = tmp_path / "wh" / "warehouse.duckdb"
    target.parent.mkdir()
    looks, lines, written = [], [], []
    write = follow.write_live
    monkeypatch.setattr(follow, "write_live", lambda path, doc: (written.append(doc), write(path, doc)))

    def stop():  # two looks: the first builds, the second sees nothing new
        looks.append(1)
        return len(looks) > 2

    assert follow.follow(target, str(root), interval=0.5, log=lines.append, stop=stop) == 1
    with duckdb.connect(str(target), read_only=True) as con:
        n = con.execute("select count(*) from stg_edgebench__runs").fetchone()[0]
    assert n == len(fx.iperf3_manifests())
    assert sum("warehouse rebuilt (full" in line for line in lines) == 1
    assert len(written) == 2 and written[-1]["built_at"] and written[-1]["error"] is None
    assert written[-1]["sweeps"] == []  # a local root: no object store to read sweeps in progress from
    assert not follow.live_path(target).exists()  # removed when following stops: no stale progress shown


def test_a_stored_run_is_listed_before_the_rebuild_and_marked_once_built(tmp_path, monkeypatch):
    manifests = fx.iperf3_manifests()
    root = fx.write_tree(tmp_path / "raw", manifests[:4])
    target = tmp_path / "wh" / "warehouse.duckdb"
    target.parent.mkdir()
    looks, written = [], []
    write = follow.write_live
    monkeypatch.setattr(follow, "write_live", lambda path, doc: (written.append(json.loads(json.dumps(
        doc, default=str))), write(path, doc)))
    extra = manifests[4]

    def stop():  # look 1 builds what was there (not "just in"); before look 2 a run is stored
        looks.append(1)
        if len(looks) == 2:
            d = root / fx.key(extra).rsplit("/", 1)[0]
            d.mkdir(parents=True)
            (d / "manifest.json").write_text(json.dumps(extra))
        return len(looks) > 2

    assert follow.follow(target, str(root), interval=0.2, log=lambda _: None, stop=stop) == 2
    assert written[0]["just_in"] == []  # the runs of the first look are not new
    before, after = written[1], written[2]  # look 2: listed before its rebuild, then marked as built
    (row,) = before["just_in"]
    assert (row["run_id"], row["cell"], row["workload"], row["status"]) == (
        extra["run_id"], f"{extra['cni']}:{extra['cni_mode']}", "iperf3", extra["status"])
    assert row["headline"] and row["in_warehouse"] is False and before["built_at"] == written[0]["built_at"]
    assert after["just_in"][0]["in_warehouse"] is True and after["built_at"] != before["built_at"]


def test_the_overview_shows_a_running_sweep(fixture_warehouse, tmp_path, monkeypatch):
    wh = tmp_path / "warehouse.duckdb"
    shutil.copyfile(fixture_warehouse, wh)
    now = dt.datetime.now(dt.timezone.utc)
    sweep = {"sweep_id": "local-running", "runs_done": 30, "runs_planned": 120, "failed": 1, "unsupported": 0,
             "cells_done": 1, "cells": 4, "elapsed_s": 300.0, "eta_s": 900.0}
    follow.write_live(follow.live_path(wh), {"updated_at": now, "built_at": now, "interval_s": 2, "error": None,
                                             "raw_root": "s3://edgebench", "sweeps": [sweep],
                                             "just_in": [{"sweep_id": "local-running", "run_id": "r-1",
                                                          "cell": "flannel:vxlan", "substrate": "local",
                                                          "workload": "iperf3", "variant": "tcp pod-to-pod",
                                                          "repetition": 2, "status": "ok",
                                                          "headline": "8546 Mbit/s", "finished_at": None,
                                                          "seen_at": now, "in_warehouse": False}]})
    assert live_status(wh)["sweeps"] == [sweep]
    assert live_status(wh, now=now.timestamp() + 60) is None  # a follower that stopped is not shown
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(wh))
    at = AppTest.from_file(APP, default_timeout=30)
    at.run()
    assert not at.exception
    (bar,) = [e for e in at.get("progress")]
    assert "local-running" in bar.proto.text and "30/120 runs" in bar.proto.text and "ETA 15m00s" in bar.proto.text
    feed = next(d.value for d in at.dataframe if "headline" in d.value.columns)
    assert feed.iloc[0]["headline"] == "8546 Mbit/s" and feed.iloc[0]["in warehouse"] == "not yet"
    assert any("Data as of" in c.value and "following the store" in c.value for c in at.sidebar.caption)


def test_a_refresh_without_data_tests_is_checked_once_nothing_lands(tmp_path, monkeypatch):
    """Runs landing: models only (no data tests); a look after CHECK_AFTER_S without anything new builds the same
    data with its tests; then nothing more."""
    monkeypatch.setattr(follow, "CHECK_AFTER_S", 0.3)
    manifests = fx.iperf3_manifests()
    root = fx.write_tree(tmp_path / "raw", manifests[:4])
    target = tmp_path / "wh" / "warehouse.duckdb"
    target.parent.mkdir()
    looks, lines = [], []

    def stop():
        looks.append(1)
        if len(looks) == 2:
            fx.write_tree(root, manifests[4:6])
        return len(looks) > 5

    assert follow.follow(target, str(root), interval=0.2, log=lines.append, stop=stop) == 3
    built = [line for line in lines if "warehouse rebuilt" in line]
    assert "(full, data tests run" in built[0] and "models only" in built[1] and "(incremental, data tests run" \
        in built[2]
    with duckdb.connect(str(target), read_only=True) as con:
        assert con.execute("select checked from edgebench_raw_cache.build_info").fetchone()[0]
        assert con.execute("select count(*) from stg_edgebench__runs").fetchone()[0] == 6


def test_a_store_outage_mid_build_is_ridden_out_and_the_next_look_builds(tmp_path, monkeypatch):
    root = fx.write_tree(tmp_path / "raw", fx.iperf3_manifests())
    target = tmp_path / "wh" / "warehouse.duckdb"
    target.parent.mkdir()
    real, calls, lines, written = follow.builder.build, [], [], []
    write = follow.write_live
    monkeypatch.setattr(follow, "write_live", lambda path, doc: (written.append(doc), write(path, doc)))

    def build(**kw):  # the store goes away during the first build: not an EdgebenchError (botocore, duckdb, OSError)
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("Could not connect to the endpoint URL: http://127.0.0.1:9000/edgebench")
        return real(**kw)

    monkeypatch.setattr(follow.builder, "build", build)
    looks = []
    assert follow.follow(target, str(root), interval=0.2, log=lines.append,
                         stop=lambda: looks.append(1) or len(looks) > 3) == 1
    assert len(calls) == 2  # tried again at the next look, though nothing changed in the store
    assert any("ConnectionError: Could not connect" in (d.get("error") or "") for d in written)
    assert written[-1]["error"] is None and written[-1]["built_at"]
    assert any(line.startswith("follower: ConnectionError") for line in lines)


def test_a_follower_that_dies_leaves_word_and_the_sidebar_says_it_is_not_following(tmp_path):
    from data.common import follower_gone

    target = tmp_path / "warehouse.duckdb"
    root = fx.write_tree(tmp_path / "raw", fx.iperf3_manifests()[:1])

    def stop():
        raise MemoryError("out of memory")

    try:
        follow.follow(target, str(root), interval=0.2, log=lambda _: None, stop=stop)
    except MemoryError:
        pass
    doc = json.loads(follow.live_path(target).read_text())
    assert doc["stopped"] == "MemoryError: out of memory"
    said = follower_gone(target)
    assert said.startswith("Not following the store since ") and "(MemoryError: out of memory)" in said
    assert live_status(target) is None  # no progress is shown from a dead follower
    later = dt.datetime.fromisoformat(doc["updated_at"]).timestamp() + 3600
    doc.pop("stopped")
    follow.write_live(follow.live_path(target), doc)
    assert follower_gone(target) is None or "stopped answering" in follower_gone(target)
    assert "its follower stopped answering" in follower_gone(target, now=later)  # silent and stale: gone
    follow.live_path(target).unlink()
    assert follower_gone(target) is None  # none was started: nothing to say
