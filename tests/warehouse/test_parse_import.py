"""`edgebench parse` and `edgebench import`: real tool outputs in, warehouse-shaped records out; bad files give one
line naming the file, exit 2, and nothing stored."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"


def fixture(pattern: str) -> Path:
    found = sorted(DATA.rglob(pattern))
    assert found, f"no fixture {pattern} under {DATA}"
    return found[0]


def edgebench(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edgebench.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_parse_iperf3_prints_the_normalized_record():
    path = fixture("iperf3-3.12-tcp-client.json")
    proc = edgebench("parse", "--tool", "iperf3", str(path))
    assert proc.returncode == 0, proc.stderr
    (record,) = json.loads(proc.stdout)
    raw = json.loads(path.read_text())
    assert record["file"] == str(path) and record["tool"] == "iperf3" and record["workload"] == "iperf3"
    assert record["metrics"]["throughput_mbps"] == pytest.approx(raw["end"]["sum_received"]["bits_per_second"] / 1e6)


def test_parse_hey_gives_per_request_rows():
    path = fixture("hey-0.1.4-echo-60B.csv")
    proc = edgebench("parse", "--tool", "hey", str(path))
    assert proc.returncode == 0, proc.stderr
    (record,) = json.loads(proc.stdout)
    n_rows = len([line for line in path.read_text().splitlines()[1:] if line.strip()])
    assert len(record["samples"]) == n_rows and record["metrics"]["requests"] == n_rows


@pytest.mark.parametrize("tool, content, words", [
    ("iperf3", "{not json", "not a valid iperf3 output"),
    ("iperf3", '{"start": {"test_start": {"protocol": null}}, "end": {}}', "not a valid iperf3 output"),
    ("ddsperf", "", "not a valid ddsperf output"),
    ("ddsperf", "garbage\x00 lines\nmore garbage\n", "not a valid ddsperf output"),
    ("perftest", '{"an": "object"}', "not a valid perftest output"),
    ("hey", "this,is,not\nhey,csv,at all\n", "not a valid hey output"),
])
def test_parse_rejects_bad_files_with_one_line_exit_2(tmp_path, tool, content, words):
    bad = tmp_path / "bad.out"
    bad.write_text(content)
    good = fixture("iperf3-3.12-tcp-client.json")
    proc = edgebench("parse", "--tool", tool, str(bad), *([str(good)] if tool == "iperf3" else []))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""  # nothing printed when one file fails
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and words in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_parse_rejects_missing_files_and_unknown_tools(tmp_path):
    proc = edgebench("parse", "--tool", "iperf3", str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr
    proc = edgebench("parse", "--tool", "netperf", str(fixture("iperf3-3.12-tcp-client.json")))
    assert proc.returncode == 2 and "unknown tool 'netperf'" in proc.stderr


def test_import_stores_runs_under_their_own_keys_marked_imported(minio_server, tmp_path, monkeypatch):
    from minio import Minio

    env = {**minio_server["env"], "EDGEBENCH_BUCKET": "imports", "EDGEBENCH_STATE": str(tmp_path / "state")}
    tcp, udp = fixture("iperf3-3.12-tcp-client.json"), fixture("iperf3-3.12-udp-client.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    client = Minio(minio_server["endpoint"].split("://")[1], minio_server["access_key"],
                   minio_server["secret_key"], secure=False)

    where = ["--label", "path=pod-to-pod", "--label", "placement=cross-node"]
    # one bad file: nothing stored
    proc = edgebench("import", "--tool", "iperf3", str(tcp), str(bad), "--label", "cni=flannel", *where, env=env)
    assert proc.returncode == 2 and str(bad) in proc.stderr
    assert not client.bucket_exists("imports") or not list(client.list_objects("imports", recursive=True))
    proc = edgebench("import", "--tool", "iperf3", str(tcp), "--label", "substrate=local", *where, env=env)
    assert proc.returncode == 2 and "substrate" in proc.stderr

    labels = ["--label", "cni=flannel", "--label", "cni_mode=vxlan", "--label", "distribution=k3s",
              "--label", "path=pod-to-pod", "--label", "placement=cross-node", "--label", "lab=pi-rack-2"]
    proc = edgebench("import", "--tool", "iperf3", str(tcp), str(udp), *labels, env=env)
    assert proc.returncode == 0, proc.stderr
    keys = sorted(o.object_name for o in client.list_objects("imports", recursive=True))
    manifests = [k for k in keys if k.endswith("/manifest.json")]
    assert len(manifests) == 2 and all(k.startswith("runs/imported-") for k in manifests)
    docs = [json.loads(client.get_object("imports", k).read()) for k in manifests]
    for d in docs:
        assert d["status"] == "ok" and d["substrate"] == "imported" and d["cni"] == "flannel"
        assert d["imported"]["tool"] == "iperf3" and d["imported"]["labels"]["lab"] == "pi-rack-2"
        assert d["metrics"]["throughput_mbps"] > 0
    assert {d["protocol"] for d in docs} == {"tcp", "udp"}

    # again: the same keys, nothing duplicated
    assert edgebench("import", "--tool", "iperf3", str(tcp), str(udp), *labels, env=env).returncode == 0
    assert sorted(o.object_name for o in client.list_objects("imports", recursive=True)) == keys

    # the warehouse reads them, marked imported
    import duckdb

    from edgebench.results import warehouse

    for k, v in minio_server["env"].items():
        monkeypatch.setenv(k, v)
    warehouse.build(warehouse_path=tmp_path / "wh.duckdb", raw_root="s3://imports", quiet=True)
    with duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True) as con:
        rows = con.execute("select substrate, cni, protocol, is_imported from fct_iperf3_runs order by protocol")
        assert rows.fetchall() == [("imported", "flannel", "tcp", True), ("imported", "flannel", "udp", True)]


def test_ddsperf_role_option(tmp_path):
    pong = fixture("ddsperf-lat64-reliable-pong.log")
    proc = edgebench("parse", "--tool", "ddsperf", str(pong))
    assert proc.returncode == 2 and "role" in proc.stderr and "Traceback" not in proc.stderr
    proc = edgebench("parse", "--tool", "ddsperf", "--role", "pong", str(pong), "--no-samples")
    assert proc.returncode == 0, proc.stderr
    proc = edgebench("parse", "--tool", "iperf3", "--role", "pong", str(fixture("iperf3-3.12-tcp-client.json")))
    assert proc.returncode == 2 and "--role applies to ddsperf and perftest" in proc.stderr


@pytest.mark.parametrize("tool, path, labels, missing", [
    ("iperf3", "iperf3-3.12-tcp-client.json", ["--label", "path=pod-to-pod"], "placement"),
    ("ddsperf", "ddsperf-lat64-reliable-ping.log", ["--label", "placement=cross-node"], "reliability"),
    ("hey", "hey-0.1.4-echo-60B.csv", ["--label", "path=pod-to-pod", "--label", "placement=cross-node"], "service"),
])
def test_import_refuses_runs_the_warehouse_could_not_compare(tmp_path, tool, path, labels, missing):
    proc = edgebench("import", "--tool", tool, str(fixture(path)), *labels, "--dry-run",
                     env={"EDGEBENCH_STATE": str(tmp_path / "state")})
    assert proc.returncode == 2 and f"--label {missing}=" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "state").exists()


def test_import_dry_run_of_a_dds_latency_output(tmp_path):
    labels = ["--label", "placement=cross-node", "--label", "reliability=reliable", "--label", "transport=unicast",
              "--label", "discovery=multicast", "--label", "length_bytes=64", "--label", "cni=calico"]
    proc = edgebench("import", "--tool", "ddsperf", str(fixture("ddsperf-lat64-reliable-ping.log")), *labels,
                     "--dry-run", env={"EDGEBENCH_STATE": str(tmp_path / "state")})
    assert proc.returncode == 0, proc.stderr
    assert "runs/imported-" in proc.stdout and "dds-samples.json" in proc.stdout
    from edgebench.results.records import importer, parsing

    record = parsing.parse_file("ddsperf", fixture("ddsperf-lat64-reliable-ping.log"))
    _, manifest, _ = importer.build_run("ddsperf", record, b"", importer.parse_labels([x for x in labels if x != "--label"]))
    assert manifest["params"]["mode"] == "latency" and manifest["length_bytes"] == 64
    assert manifest["path"] == "pod-to-pod" and manifest["protocol"] == "udp"
