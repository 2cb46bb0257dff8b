"""The kind substrate live (issue 44, faults): a node container killed in the middle of a cell's runs. Opt-in
(EDGEBENCH_KIND_LIVE=1) and only where `make up` runs (the engine, the node image loaded, kind) and the lab's mirror
is built; otherwise it skips naming what is missing. Two kind clusters, one after the other: about 5 minutes."""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from edgebench.results.records.store import S3Config
from servers import throwaway_minio

REPO = Path(__file__).resolve().parents[2]
SHARE = Path.home() / ".local/share/edgebench"
MIRROR = Path(os.environ.get("EDGEBENCH_MIRROR", SHARE / "lab/mirror"))
TOOLS = SHARE / "tools"
NODE_IMAGE = "edgebench.local/kind-node:v1.33.4"


def _reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if not (MIRROR / "index.yaml").exists():
        return f"not built: {MIRROR}/index.yaml (scripts/lab-local/mirror.sh build)"
    if not (TOOLS / "kind").exists():
        return f"not built: {TOOLS}/kind (make up)"
    if subprocess.run(["docker", "image", "inspect", NODE_IMAGE], capture_output=True).returncode != 0:
        return f"no Docker engine with {NODE_IMAGE} (make up)"
    if os.environ.get("EDGEBENCH_KIND_LIVE") != "1":
        return "opt-in: EDGEBENCH_KIND_LIVE=1 (two kind clusters, about 5 minutes)"
    return None


@pytest.fixture
def mirror_url():
    """The lab's mirror over HTTP on 127.0.0.1: the kind provider reads it from this machine only (it loads the
    images into the nodes with `kind load image-archive`), so no node needs to reach it."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(MIRROR))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _kind_containers(names: list[str]) -> list[str]:
    out = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True).stdout
    return [c for c in out.split() if any(c.startswith(n) for n in names)]


@pytest.mark.skipif(_reason() is not None, reason=str(_reason()))
def test_a_node_killed_mid_cell_fails_that_cell_s_runs_tears_it_down_and_the_next_cell_goes_on(tmp_path, mirror_url,
                                                                                              monkeypatch):
    (tmp_path / "minio").mkdir()
    with throwaway_minio(tmp_path / "minio") as server:
        env = {**os.environ, **server["env"], "EDGEBENCH_ARTIFACT_SOURCE": mirror_url,
               "EDGEBENCH_STATE": str(tmp_path / "state"),
               "PATH": f"{SHARE / 'e2e-argo/bin'}:{TOOLS}:{os.environ['PATH']}"}
        exe = Path(sys.executable).parent / "edgebench"
        argv = [str(exe), "sweep", str(REPO / "workflows/sweep.yaml"), "--cell-by-cell",
                "-p", "substrate=kind", "-p", "distribution=kind", "-p", 'cnis=["host","flannel:vxlan"]',
                "-p", 'workloads=["iperf3:tcp"]', "-p", 'iperf3-paths=["pod-to-pod:cross-node"]',
                "-p", "repetitions=4", "-p", "duration=2", "-p", "sweep-id=kind-live-fault"]
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: list[str] = []
        cells: list[str] = []
        killed = None
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            m = re.search(r"\((c-[0-9a-f]+)\)\s*$", line)
            if m and m.group(1) not in cells:
                cells.append(m.group(1))
            if killed is None and re.match(r"\[1/\d+\] host", line):  # the first cell's first run is stored
                killed = f"eb-{cells[0].removeprefix('c-')}"[:32] + "-worker"
                subprocess.run(["docker", "kill", killed], check=True, capture_output=True)
        rc = proc.wait(timeout=1800)
        log = "".join(lines)
        assert killed, log[-3000:]
        assert rc == 1, log[-3000:]  # some runs failed: exit 1, not a crash
        for k, v in server["env"].items():
            monkeypatch.setenv(k, v)
        runs = [json.loads(m) for m in _manifests("kind-live-fault")]
        first = [r for r in runs if r["cell_id"] == cells[0]]
        second = [r for r in runs if r["cell_id"] == cells[1]]
        assert [r["status"] for r in sorted(first, key=lambda r: r["repetition"])][0] == "ok"
        failed = [r for r in first if r["status"] == "failed"]
        assert failed and all(r["error"] for r in failed), first  # with the reason, never empty
        assert len(second) == 4 and {r["status"] for r in second} == {"ok"}, second  # the next cell went on
        names = [f"eb-{c.removeprefix('c-')}"[:32] for c in cells]
        assert _kind_containers(names) == []  # both cells torn down, the killed one too
        clusters = subprocess.run([str(TOOLS / "kind"), "get", "clusters"], capture_output=True, text=True).stdout
        assert not set(clusters.split()) & set(names)


def _manifests(sweep: str) -> list[bytes]:
    cfg = S3Config.from_env()
    client = cfg.client()
    return [client.get_object(cfg.bucket, o.object_name).read()
            for o in client.list_objects(cfg.bucket, prefix=f"runs/{sweep}/", recursive=True)
            if o.object_name.endswith("manifest.json")]
