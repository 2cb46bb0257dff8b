"""`edgebench status [SWEEP]` against a fixture store (a throwaway MinIO and a local spool): per cell what was
planned, stored (ok, failed, unsupported) and left, for a sweep killed half way; a sweep without a plan; an unknown
sweep id (exit 2); the store unreachable (the spool only)."""

import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgebench.cli import app
from edgebench.plan import spec
from edgebench.plan.cells import expand, runs_for
from edgebench.results.report.sweep_status import plan_record

REPO = Path(__file__).resolve().parents[2]
BUCKET = "status"


def _sweep():
    params = {"cnis": '["host","flannel:vxlan"]', "workloads": '["iperf3:tcp"]', "repetitions": "3",
              "iperf3-paths": '["pod-to-pod:cross-node"]', "sweep-id": "killed-1"}
    s = spec.load(REPO / "workflows" / "sweep.yaml", params, substrate="local")
    return s, expand(s)


@pytest.fixture(scope="module")
def store(minio_server, tmp_path_factory):
    """killed-1: two cells of three runs; host all stored (ok, ok, failed); flannel:vxlan one unsupported in MinIO,
    one ok only in the spool (not uploaded), one left. argo-1: runs, no plan record."""
    from minio import Minio

    client = Minio(minio_server["endpoint"].split("://")[1], minio_server["access_key"], minio_server["secret_key"],
                   secure=False)
    if not client.bucket_exists(BUCKET):
        client.make_bucket(BUCKET)
    state = tmp_path_factory.mktemp("status-state")

    def put(key, doc):
        data = json.dumps(doc).encode()
        client.put_object(BUCKET, key, io.BytesIO(data), len(data))

    s, cells = _sweep()
    put("sweeps/killed-1/sweep.json", plan_record(s, cells, "2026-11-25T22:00:00.000000Z"))
    host, flannel = ([r.prefix for r in runs_for(s, c)] for c in cells)
    for prefix, status in zip(host, ("ok", "ok", "failed")):
        put(prefix + "manifest.json", {"status": status, "cni": "host", "cni_mode": "host"})
    put(flannel[0] + "manifest.json", {"status": "unsupported", "cni": "flannel", "cni_mode": "vxlan"})
    spooled = state / "spool" / flannel[1] / "manifest.json"
    spooled.parent.mkdir(parents=True)
    spooled.write_text(json.dumps({"status": "ok"}))
    put("runs/argo-1/c-0123456789/r-000000000001/manifest.json", {"status": "ok", "cni": "cilium", "cni_mode": "vxlan"})
    env = {**minio_server["env"], "EDGEBENCH_BUCKET": BUCKET, "EDGEBENCH_STATE": str(state)}
    return {"env": env, "cells": [c.cell_id for c in cells]}


def status(store, *args, env=None):
    return CliRunner().invoke(app, ["status", *args], env={**store["env"], **(env or {})})


def test_a_killed_sweep_shows_what_is_stored_and_left_per_cell(store):
    res = status(store, "killed-1", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["plan_known"] and doc["object_store_read"]
    host, flannel = store["cells"]
    assert doc["cells"] == [
        {"cell_id": host, "label": "host:host", "planned": 3, "ok": 2, "failed": 1, "unsupported": 0, "left": 0,
         "spooled": 0},
        {"cell_id": flannel, "label": "flannel:vxlan", "planned": 3, "ok": 1, "failed": 0, "unsupported": 1,
         "left": 1, "spooled": 1},
    ]
    assert doc["totals"] == {"cells": 2, "planned": 6, "ok": 3, "failed": 1, "unsupported": 1, "left": 1,
                             "spooled": 1}


def test_the_table_says_what_is_left_and_what_to_do(store):
    res = status(store, "killed-1")
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert "sweep killed-1 (started 2026-11-25T22:00:00.000000Z)" in text
    assert "flannel:vxlan" in text and "host:host" in text
    assert "1 runs left in 1 of 2 cells: run the same `edgebench sweep` command again to resume" in text
    assert "1 stored runs are only in the local spool: `edgebench upload` sends them" in text


def test_a_sweep_without_a_plan_shows_what_is_stored(store):
    res = status(store, "argo-1", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert not doc["plan_known"]
    assert doc["cells"] == [{"cell_id": "c-0123456789", "label": "cilium:vxlan", "planned": None, "ok": 1,
                             "failed": 0, "unsupported": 0, "left": None, "spooled": 0}]
    assert "what is left is unknown" in status(store, "argo-1").stdout


def test_unknown_sweep_exits_2_and_names_the_known_ones(store):
    res = status(store, "no-such-sweep")
    assert res.exit_code == 2
    assert "no sweep 'no-such-sweep' in the results store" in res.stderr
    assert "known: argo-1, killed-1" in res.stderr


def test_without_a_sweep_it_lists_the_sweeps(store):
    res = status(store, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout) == ["argo-1", "killed-1"]


def test_store_unreachable_reads_the_spool_only(store):
    res = status(store, "killed-1", "--json", env={"EDGEBENCH_S3_ENDPOINT": "http://127.0.0.1:9"})
    assert res.exit_code == 0, res.output
    assert "does not answer" in res.stderr
    doc = json.loads(res.stdout)
    assert not doc["object_store_read"] and not doc["plan_known"]  # the plan record was uploaded, not spooled
    assert doc["totals"]["ok"] == 1 and doc["totals"]["spooled"] == 1


def test_help_explains():
    res = CliRunner().invoke(app, ["status", "--help"])
    assert res.exit_code == 0
    assert "SWEEP" in res.stdout and "left" in res.stdout and "status 2" in res.stdout
