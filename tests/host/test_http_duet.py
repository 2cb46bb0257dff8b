"""Interleaved HTTP duets on the real testbed: a duet round's HTTP runs (the host and a CNI mode side by side) are
measured in one window by edgebench-httpduet, in bursts of DUET_BURST requests per member; with
EDGEBENCH_DUET_INTERLEAVE=0 each run is fortio's alone, one after another."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from minio import Minio

from edgebench.drivers import http as driver
from edgebench.sh import which

ROOT = Path(__file__).resolve().parents[2]
TINY = ["-p", 'cnis=["host","flannel:vxlan"]', "-p", "repetitions=1", "-p", 'workloads=["http:payload-echo"]',
        "-p", 'http-payloads=["60"]', "-p", "http-requests=100"]

pytestmark = pytest.mark.skipif(which(driver.DUET_CLIENT) is None, reason=f"{driver.DUET_CLIENT} is not built: "
                                "make tools (go build ./containers/httpduet)")


def _sweep(minio_server, tmp_path, sweep_id, interleave):
    env = {**os.environ, **minio_server["env"], "EDGEBENCH_BUCKET": "duet", "EDGEBENCH_STATE": str(tmp_path / "state"),
           "EDGEBENCH_TESTBED_PREFIX": "ebhd", "EDGEBENCH_DUET_INTERLEAVE": interleave}
    p = subprocess.run([sys.executable, "-m", "edgebench.cli", "sweep", str(ROOT / "workflows" / "sweep.yaml"),
                        "--local", *TINY, "-p", f"sweep-id={sweep_id}"], capture_output=True, text=True, env=env,
                       timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    client = Minio(minio_server["endpoint"].split("://")[1], minio_server["access_key"], minio_server["secret_key"],
                   secure=False)
    runs = {}
    for o in client.list_objects("duet", prefix=f"runs/{sweep_id}/", recursive=True):
        if o.object_name.endswith("/manifest.json"):
            m = json.loads(client.get_object("duet", o.object_name).read())
            files = {f: client.get_object("duet", o.object_name.rsplit("/", 1)[0] + "/" + f).read()
                     for f in m["raw_files"]}
            runs[m["cni"]] = (m, files)
    return runs


def test_a_duet_rounds_http_runs_share_one_window_in_bursts(minio_server, tmp_path):
    runs = _sweep(minio_server, tmp_path, "duet-on", "1")
    assert set(runs) == {"host", "flannel"}
    stamps = []
    for cni, (m, files) in runs.items():
        assert m["status"] == "ok", m["error"]
        assert m["metrics"]["client"] == driver.DUET_CLIENT and m["metrics"]["requests"] == 100
        assert m["metrics"]["interleaved"] == {"members": 2, "burst": driver.DUET_BURST}
        assert {"httpduet-access.jsonl", "http-requests.json", "fortio-server.log"} <= set(files)
        lines = [json.loads(x) for x in files["httpduet-access.jsonl"].decode().splitlines()]
        assert len(lines) == 100 and all(x["ok"] for x in lines)
        assert [x["iter"] for x in lines] == list(range(100))
        stamps += [(x["timestamp"], cni) for x in lines]
    # one window: the members' requests alternate in blocks of DUET_BURST, never overlapping in time
    order = [cni for _, cni in sorted(stamps)]
    blocks = [order[i:i + driver.DUET_BURST] for i in range(0, len(order), driver.DUET_BURST)]
    assert all(len(set(b)) == 1 for b in blocks), order
    assert len(blocks) == 200 // driver.DUET_BURST and {b[0] for b in blocks} == {"host", "flannel"}
    # the HTTP p50 came out of each member's own requests: flannel's VXLAN path costs more than the host's
    assert runs["flannel"][0]["metrics"]["response_p50_ms"] > runs["host"][0]["metrics"]["response_p50_ms"]


def test_interleaving_off_measures_each_run_alone_with_fortio(minio_server, tmp_path):
    runs = _sweep(minio_server, tmp_path, "duet-off", "0")
    for m, files in runs.values():
        assert m["status"] == "ok", m["error"]
        assert m["metrics"]["client"] == "fortio" and "interleaved" not in m["metrics"]
        assert "fortio-access.jsonl" in files and "httpduet-access.jsonl" not in files
