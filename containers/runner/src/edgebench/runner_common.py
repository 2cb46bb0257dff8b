"""What every phase and runner shares: timestamps, the environment record, the manifest."""

from __future__ import annotations

import datetime as dt
import platform
import socket
from typing import Any

from . import __version__
from .cells import Run
from .drivers import iperf3


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def environment() -> dict[str, Any]:
    return {
        "kernel": platform.release(),
        "machine": platform.machine(),
        "hostname": socket.gethostname(),
        "edgebench_version": __version__,
        "tools": {"iperf3": iperf3.version()},
        "cni_version": None,
    }


def manifest(run: Run, status: str, started: str, *, error: str | None = None, metrics: dict | None = None,
             raw_files: list[str] | None = None, mtu: int | None = None, attempt: int = 1,
             env: dict[str, Any] | None = None, params: dict[str, Any] | None = None,
             conditions: dict[str, Any] | None = None) -> dict[str, Any]:
    cell, cm = run.cell, run.cell.cni_info
    return {
        "schema_version": 1,
        "sweep_id": cell.sweep_id,
        "cell_id": cell.cell_id,
        "run_id": run.run_id,
        "substrate": cell.substrate,
        "distribution": cell.distribution,
        "cni": cell.cni,
        "cni_mode": cell.cni_mode,
        "datapath": cm.datapath,
        "mtu": mtu,
        "netem_scenario": cell.netem_scenario,
        "tuning_profile": cell.tuning_profile,
        "workload": run.workload,
        "protocol": run.protocol,
        "path": run.path,
        "placement": run.placement,
        "length_bytes": run.length_bytes,
        "duration_s": run.duration_s,
        "repetition": run.repetition,
        "params": run.params if params is None else params,
        "status": status,
        "error": error,
        "attempt": attempt,
        "started_at": started,
        "finished_at": now(),
        "raw_files": raw_files or [],
        "environment": env or environment(),
        "metrics": metrics if status == "ok" else None,
        # what was in force (docs/results-layout.md, "Link conditions, tuning, validity, resources")
        "netem": (conditions or {}).get("netem"),
        "tuning": (conditions or {}).get("tuning"),
        "is_valid": (conditions or {}).get("is_valid", True),
        "invalid_reason": (conditions or {}).get("invalid_reason"),
    }
