"""`make sweep`'s recipe: bad input (the sweep's exit 2) leaves the warehouse as it was; any other end of the sweep
still builds the warehouse from what was measured. Run with a stand-in for the edgebench command that logs its calls
(setup and minio are taken as made: `make -o`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _make_sweep(tmp_path: Path, sweep_rc: int) -> tuple[int, list[str]]:
    log = tmp_path / "calls"
    stub = tmp_path / "edgebench"
    stub.write_text(f'#!/bin/sh\necho "$1" >> {log}\nif [ "$1" = sweep ]; then exit {sweep_rc}; fi\n')
    stub.chmod(0o755)
    p = subprocess.run([shutil.which("make") or "make", "-s", "-o", "setup", "-o", "minio", "sweep",
                        f"EDGEBENCH={stub}"], cwd=REPO, capture_output=True, text=True, timeout=60)
    return p.returncode, log.read_text().split() if log.exists() else []


def test_bad_input_leaves_the_warehouse_alone(tmp_path):
    rc, calls = _make_sweep(tmp_path, 2)
    assert rc != 0
    assert calls == ["sweep"]


@pytest.mark.parametrize("sweep_rc", [0, 1, 130])
def test_any_other_end_builds_the_warehouse(tmp_path, sweep_rc):
    rc, calls = _make_sweep(tmp_path, sweep_rc)
    assert calls == ["sweep", "warehouse"]
    assert (rc == 0) == (sweep_rc == 0)
