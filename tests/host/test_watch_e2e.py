"""End to end: `edgebench watch` on the local testbed. A local HTTP server plays the CNIs' release sources
(real-shaped files); bumping calico's Helm index reruns exactly the sweep's calico cells, once, with the trigger in
their manifests, into a real MinIO. A malformed index afterwards: one message, nothing started or written."""

from __future__ import annotations

import copy
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from minio import Minio

from edgebench.substrates.local.testbed import Testbed

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "versions"
PREFIX = "ebw"
TINY = ["-p", 'cnis=["host","flannel:vxlan","calico:vxlan"]', "-p", 'workloads=["iperf3:tcp"]',
        "-p", 'iperf3-paths=["pod-to-pod:cross-node"]', "-p", "repetitions=1", "-p", "duration=1"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def index_server(tmp_path):
    www = tmp_path / "www"
    (www / "calico").mkdir(parents=True)
    index = yaml.safe_load((DATA / "calico-index.yaml").read_text())  # newest release v3.31.7 = the catalog pin
    (www / "calico" / "index.yaml").write_text(yaml.safe_dump(index))
    shutil.copy(DATA / "flannel-releases.json", www / "flannel-releases.json")  # v0.28.9 = the pin
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(www)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", www, index
    finally:
        httpd.shutdown()
        httpd.server_close()


def _watch(env, *extra):
    return subprocess.run([sys.executable, "-m", "edgebench.cli", "watch", str(ROOT / "workflows" / "sweep.yaml"),
                           *TINY, *extra], capture_output=True, text=True, env=env, timeout=600)


def _objects(client, bucket):
    return {o.object_name: (o.etag, o.last_modified) for o in client.list_objects(bucket, recursive=True)}


def test_watch_reruns_only_the_changed_cni(minio_server, index_server, tmp_path):
    url, www, index = index_server
    sources = tmp_path / "sources.yaml"
    sources.write_text(yaml.safe_dump({"calico": {"type": "helm", "url": f"{url}/calico", "chart": "tigera-operator"},
                                       "flannel": {"type": "github-releases", "url": f"{url}/flannel-releases.json"}}))
    state = tmp_path / "state"
    env = {**os.environ, **minio_server["env"], "EDGEBENCH_BUCKET": "watch", "EDGEBENCH_STATE": str(state),
           "EDGEBENCH_TESTBED_PREFIX": PREFIX, "EDGEBENCH_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
           "EDGEBENCH_VERSION_SOURCES": str(sources)}
    client = Minio(minio_server["endpoint"].split("://")[1], minio_server["access_key"], minio_server["secret_key"],
                   secure=False)

    # 1. upstream has nothing newer than the pins: nothing runs, nothing is written
    first = _watch(env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "no warehouse yet" in first.stdout and "nothing to rerun" in first.stdout
    assert not client.bucket_exists("watch") and not (state / "cni-versions.json").exists()

    # 2. calico publishes v3.31.8 (and a pre-release, which does not count): its cells rerun, nothing else
    bumped = copy.deepcopy(index)
    for version in ("v3.31.8", "v3.32.0-0.rc1"):
        entry = copy.deepcopy(bumped["entries"]["tigera-operator"][1])
        entry.update(version=version, appVersion=version)
        bumped["entries"]["tigera-operator"].insert(0, entry)
    (www / "calico" / "index.yaml").write_text(yaml.safe_dump(bumped))
    second = _watch(env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "calico: newest release v3.31.8, edgebench has v3.31.7 -> newer" in second.stdout
    objects = _objects(client, "watch")
    manifests = sorted(k for k in objects if k.endswith("/manifest.json"))
    assert len(manifests) == 1, manifests  # one cell (calico:vxlan) x one run
    sweep_ids = {k.split("/")[1] for k in objects}
    assert len(sweep_ids) == 1 and next(iter(sweep_ids)).startswith("local-calico-v3-31-8-")
    doc = json.loads(client.get_object("watch", manifests[0]).read())
    assert (doc["cni"], doc["cni_mode"], doc["substrate"]) == ("calico", "vxlan", "local")
    assert doc["status"] == "ok", doc["error"]
    trigger = doc["trigger"]
    assert {k: trigger[k] for k in ("cni", "new", "previous", "source")} == \
        {"cni": "calico", "new": "v3.31.8", "previous": "v3.31.7", "source": f"{url}/calico/index.yaml"}
    assert trigger["at"].endswith("Z")
    # the version is what was requested; no CNI software runs on the testbed, so nothing claims it is installed
    assert doc["environment"]["cni_version_requested"] == "v3.31.8" and doc["environment"]["cni_version"] is None
    sweep_doc = json.loads(client.get_object("watch", f"sweeps/{doc['sweep_id']}/sweep.json").read())
    assert json.loads(sweep_doc["parameters"]["cnis"]) == ["calico:vxlan"]
    assert json.loads(sweep_doc["parameters"]["trigger"]) == trigger
    recorded = json.loads((state / "cni-versions.json").read_text())
    assert recorded["cnis"]["calico"]["version"] == "v3.31.8" and recorded["pending"] == {}
    assert Testbed(PREFIX).namespaces() == []

    # 3. the same upstream again: nothing reruns, nothing is duplicated or rewritten
    third = _watch(env)
    assert third.returncode == 0 and "nothing to rerun" in third.stdout, third.stdout + third.stderr
    assert _objects(client, "watch") == objects

    # 4. the index turns malformed: one message, exit 2, nothing started, nothing written
    (www / "calico" / "index.yaml").write_text("apiVersion: v1\nentries:\n  tigera-operator: {version: [\n")
    state_before = (state / "cni-versions.json").read_text()
    bad = _watch(env)
    assert bad.returncode == 2, bad.stdout + bad.stderr
    errors = [ln for ln in bad.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1 and "calico release source" in errors[0] and "not a Helm repository index" in errors[0]
    assert "rerun" not in bad.stdout
    assert _objects(client, "watch") == objects and (state / "cni-versions.json").read_text() == state_before
