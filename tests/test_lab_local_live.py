"""`make lab-local` live: one flannel:vxlan cell on the local lab through the ssh substrate (kubeadm over SSH from
the artifact mirror, real pods), then teardown, then the leftover check. Opt-in (EDGEBENCH_LAB_LIVE=1) and only
where the builds are cached (~40 min cold); otherwise it skips naming what is missing."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from edgebench.substrates.clusters import artifacts

REPO = Path(__file__).resolve().parents[1]
LABC = Path(os.environ.get("EDGEBENCH_LAB_CACHE", Path.home() / ".local/share/edgebench/lab"))
MIRROR = Path(os.environ.get("EDGEBENCH_MIRROR", LABC / "mirror"))


def _not_cached() -> list[str]:
    index = MIRROR / "index.yaml"
    if not index.exists():
        return [f"{index} (scripts/lab-local/mirror.sh build)"]
    doc = yaml.safe_load(index.read_text())
    need = artifacts.needed("kubeadm", "flannel")
    return [f"{n} for amd64" for n in need if "amd64" not in doc["artifacts"].get(n, {}).get("arches", {})]


def _reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    missing = _not_cached()
    if missing:
        return "not cached: " + ", ".join(missing)
    if os.environ.get("EDGEBENCH_LAB_LIVE") != "1":
        return "opt-in: EDGEBENCH_LAB_LIVE=1 (a kubeadm cluster per cell, minutes)"
    return None


@pytest.mark.skipif(_reason() is not None, reason=str(_reason()))
def test_one_real_cell_through_the_ssh_substrate():
    env = {**os.environ, "CNIS": '["flannel:vxlan"]', "REPS": "1", "SKIP_TESTBED": "1",
           "SWEEP_ID": "lab-live-test"}
    run = subprocess.run([str(REPO / "scripts/lab-local/run.sh")], env=env, capture_output=True, text=True,
                         timeout=3600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "down: nothing of the lab is left" in run.stderr
    report = json.loads((REPO / ".edgebench/lab-local/report.json").read_text())
    assert report["sweep_lab"] > 0
