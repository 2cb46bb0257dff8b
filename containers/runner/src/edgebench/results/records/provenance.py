"""Provenance of a run: the machine, edgebench's version and commit, and the versions of the tools that produced
*that* run (its workload's tools, and the link emulator in force)."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
from pathlib import Path

from edgebench import __version__, sh
from edgebench.results.records.manifest import Environment
from edgebench.workloads import REGISTRY


@functools.lru_cache(maxsize=None)
def tool_versions(workload: str | None) -> dict[str, str]:
    """{tool: version} of the tools that produce the workload's numbers (workloads/<name>.py), once per process."""

    return dict(REGISTRY[workload].versions()) if workload in REGISTRY else {}


@functools.lru_cache(maxsize=None)
def netem_tool_version(mechanism: str | None) -> dict[str, str]:
    """What emulates the link: the kernel's sch_netem through tc (iproute2's version), or edgebench's userspace
    emulator (the sha256 of the binary that ran: it is built from this repository, so the digest names it)."""
    if mechanism == "tc-netem":
        return {"tc": _first_line(["tc", "-V"])}
    if mechanism == "userspace-nfqueue":
        return {"edgebench-netem-emu": sh.digest("edgebench-netem-emu") or "missing"}
    return {}


def _first_line(argv: list[str]) -> str:
    try:
        proc = sh.call(argv, capture_output=True, text=True, timeout=10)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return "missing"
    return ((proc.stdout or proc.stderr).strip().splitlines() or ["unknown"])[0]


@functools.lru_cache(maxsize=None)
def edgebench_commit() -> str | None:
    """The git commit of the edgebench that ran (EDGEBENCH_COMMIT, set in container images at build time, else
    `git rev-parse` of this checkout, "+dirty" when tracked files differ from it); None outside both."""
    if env := os.environ.get("EDGEBENCH_COMMIT"):
        return env
    root = Path(__file__).resolve().parents[6]  # containers/runner/src/edgebench/results/records/ -> repository root
    try:
        head = sh.call(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = sh.call(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+dirty" if dirty else "")


def environment(workload: str | None = None, netem_mechanism: str | None = None) -> Environment:
    """The run's environment: machine, kernel, edgebench's version and commit, and the versions of the tools that
    produced *this* run (the workload's tools and the link emulator in force)."""
    return {
        "kernel": platform.release(),
        "machine": platform.machine(),
        "hostname": socket.gethostname(),
        "edgebench_version": __version__,
        "edgebench_commit": edgebench_commit(),
        "tools": {**tool_versions(workload), **netem_tool_version(netem_mechanism)},
        "cni_version": None,  # the CNI version a cluster reports (None on the testbed: no CNI software runs)
        "cni_version_requested": None,  # the version a triggered rerun was asked to measure (its trigger's `new`)
    }
