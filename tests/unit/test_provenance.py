"""Provenance: a run records the versions of the tools that produced it, and edgebench's commit."""
from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from edgebench import sh
from edgebench.results.records import provenance

ROOT = Path(__file__).resolve().parents[2]


def test_each_workload_records_its_own_tools():
    assert set(provenance.environment("iperf3")["tools"]) == {"iperf3"}
    assert set(provenance.environment("dds")["tools"]) == {"ddsperf", "edgebench-ddsrr"}
    rr = sh.which("edgebench-ddsrr")
    assert rr, "make tools builds the round-robin DDS pinger"
    assert provenance.environment("dds")["tools"]["edgebench-ddsrr"] == \
        f"sha256:{hashlib.sha256(Path(rr).read_bytes()).hexdigest()[:16]}"
    assert {"fortio"} <= set(provenance.environment("http")["tools"])
    assert provenance.environment("dds")["tools"]["ddsperf"].startswith("cyclonedds-tools ")
    assert provenance.environment("iperf3")["tools"]["iperf3"].startswith("iperf 3.")


def test_link_emulator_is_recorded_by_what_ran():
    tc = provenance.netem_tool_version("tc-netem")["tc"]
    assert "iproute2" in tc
    emu = sh.which("edgebench-netem-emu")
    assert emu, "make tools builds the netem emulator"
    digest = hashlib.sha256(Path(emu).read_bytes()).hexdigest()[:16]
    assert provenance.netem_tool_version("userspace-nfqueue") == {"edgebench-netem-emu": f"sha256:{digest}"}
    assert provenance.netem_tool_version("none") == {} and provenance.netem_tool_version(None) == {}


def test_commit_is_this_checkout(monkeypatch):
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    provenance.edgebench_commit.cache_clear()
    assert provenance.edgebench_commit().split("+")[0] == head
    provenance.edgebench_commit.cache_clear()
    monkeypatch.setenv("EDGEBENCH_COMMIT", "abc123")
    assert provenance.edgebench_commit() == "abc123"
    provenance.edgebench_commit.cache_clear()
