"""The local step runner: runs a sweep's cells through the phases, in the order the Argo DAG runs them.

Every run ends in a manifest (ok, failed or unsupported) that is spooled and uploaded at once, so a failure or an
interrupt mid-sweep loses nothing already measured; teardown always runs.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import socket
from dataclasses import dataclass, field
from typing import Any, Callable

from . import __version__, sh
from .cells import Cell, Run, expand, runs_for
from .drivers import iperf3
from .spec import Sweep
from .store import ResultStore
from .testbed import Testbed, Unsupported, require_root

# The phases of a cell, in order. templates/sweep.yaml runs the same order (checked by a test).
PHASES = ("provision-cluster", "install-cni", "tune-nodes", "apply-netem", "run-workloads", "collect-results",
          "teardown-cluster")
SERVICE_IP = "10.96.0.10"
PORT = 5201


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
             env: dict[str, Any] | None = None) -> dict[str, Any]:
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
        "params": run.params,
        "status": status,
        "error": error,
        "attempt": attempt,
        "started_at": started,
        "finished_at": now(),
        "raw_files": raw_files or [],
        "environment": env or environment(),
        "metrics": metrics if status == "ok" else None,
    }


@dataclass
class SweepReport:
    sweep_id: str
    counts: dict[str, int] = field(default_factory=lambda: {"ok": 0, "failed": 0, "unsupported": 0, "skipped": 0})
    failures: list[str] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)


Log = Callable[[str], None]


def run_local(sweep: Sweep, store: ResultStore, *, rerun: bool = False, log: Log = print,
              testbed: Testbed | None = None) -> SweepReport:
    require_root()
    sh.require("ip", "bridge", "nft", "ss", "iperf3")
    store.check()
    leftover = store.flush()
    if leftover:
        log(f"uploaded {leftover} object(s) left in the spool by an earlier run")
    cells = expand(sweep)
    report = SweepReport(sweep.sweep_id)
    previous = {} if rerun else store.run_statuses(sweep.sweep_id)
    store.put_json(f"sweeps/{sweep.sweep_id}/sweep.json", {
        "sweep_id": sweep.sweep_id, "source": sweep.source, "parameters": sweep.raw, "written_at": now(),
        "edgebench_version": __version__, "cells": [c.to_json() for c in cells],
    })
    env = environment()
    tb = testbed or Testbed()
    total = sum(len(runs_for(sweep, c)) for c in cells)
    done = 0
    for cell in cells:
        runs = runs_for(sweep, cell)
        todo = [r for r in runs if previous.get(r.run_id, {}).get("status") != "ok"]
        report.counts["skipped"] += len(runs) - len(todo)
        done += len(runs) - len(todo)
        if not todo:
            log(f"[{done}/{total}] {cell.cni}:{cell.cni_mode}: all {len(runs)} runs already stored, skipped")
            continue
        attempt = {r.run_id: previous.get(r.run_id, {}).get("attempt", 0) + 1 for r in todo}
        started = now()
        try:
            log(f"{cell.cni}:{cell.cni_mode}: building the {cell.cni_info.datapath} datapath ({cell.cell_id})")
            state = tb.up(cell.cni_info)
        except Unsupported as exc:
            log(f"{cell.cni}:{cell.cni_mode}: {exc}")
            for r in todo:
                store.put_run(r.prefix, manifest(r, "unsupported", started, error=str(exc), attempt=attempt[r.run_id],
                                                 env=env), {})
                report.counts["unsupported"] += 1
            done += len(todo)
            continue
        except Exception as exc:
            tb.down()
            log(f"{cell.cni}:{cell.cni_mode}: testbed failed: {exc}")
            for r in todo:
                store.put_run(r.prefix, manifest(r, "failed", started, error=f"testbed: {exc}",
                                                 attempt=attempt[r.run_id], env=env), {})
                report.counts["failed"] += 1
                report.failures.append(f"{r.label}: testbed: {exc}")
            done += len(todo)
            continue
        try:
            for r in todo:
                done += 1
                m, raw = _execute(tb, r, state["mtu"], attempt[r.run_id], env)
                store.put_run(r.prefix, m, raw)
                report.counts[m["status"]] += 1
                report.results.append(m)
                if m["status"] == "ok":
                    log(f"[{done}/{total}] {r.label}: {m['metrics']['throughput_mbps']:.0f} Mbit/s")
                else:
                    report.failures.append(f"{r.label}: {m['error']}")
                    log(f"[{done}/{total}] {r.label}: FAILED {m['error']}")
        finally:
            tb.down()
    return report


def _execute(tb: Testbed, run: Run, mtu: int, attempt: int, env: dict[str, Any]
             ) -> tuple[dict[str, Any], dict[str, bytes]]:
    started = now()
    client, server = tb.client(), tb.server(run.placement)
    target = server.ip
    try:
        tb.flush_services()
        if run.path == "pod-to-service":
            tb.add_service(SERVICE_IP, PORT, server)
            target = SERVICE_IP
        raw, metrics, error = iperf3.measure(client, server, target, PORT, run.protocol, run.length_bytes,
                                             run.duration_s, run.params.get("bitrate", "0"))
    except Exception as exc:  # a setup command failed: record the run as failed, keep going
        raw, metrics, error = {}, None, str(exc)
    status = "ok" if error is None else "failed"
    m = manifest(run, status, started, error=error, metrics=metrics, raw_files=sorted(raw), mtu=mtu,
                 attempt=attempt, env=env)
    return m, raw
