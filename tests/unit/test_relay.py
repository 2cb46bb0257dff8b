"""edgebench-relay (containers/relay): the Go models of the Skupper and ClusterLink data planes.

Its own Go tests (*_test.go, offline, in-process: byte-exact relaying, keep-alive, concurrency, half-close,
AMQP frame sizes and session window, one TLS connection per application connection for ClusterLink, mutual TLS)
run here when a Go toolchain is present; the installed binary is checked when `make tools` has built it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

RELAY = Path(__file__).resolve().parents[2] / "containers" / "relay"


@pytest.mark.skipif(not shutil.which("go"), reason="needs a Go toolchain (go) on PATH to run the relay's Go tests")
def test_relay_go_tests():
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-buildvcs=false")
    proc = subprocess.run(["go", "test", "-count=1", "./..."], cwd=RELAY, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"go test failed:\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.skipif(not shutil.which("edgebench-relay"),
                    reason="edgebench-relay is not installed on PATH (make tools builds it into $EDGEBENCH_TOOLS)")
def test_installed_relay_version():
    proc = subprocess.run(["edgebench-relay", "version"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"edgebench-relay \d+\.\d+\.\d+\n", proc.stdout), proc.stdout
