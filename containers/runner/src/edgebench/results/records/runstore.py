"""One run's record: its manifest (manifest.RunManifest, docs/results-layout.md) and its directory of raw files.
Every writer of runs (the phases, `edgebench import`) builds manifests here and writes run directories here."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from edgebench.plan.dimensions import DIMENSIONS, Run
from edgebench.results.records.manifest import Environment, RunManifest, Trigger
from edgebench.results.records.provenance import environment


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_run(directory: Path, doc: RunManifest, raw: dict[str, bytes]) -> None:
    """Raw files first, the manifest last (atomically): a manifest marks a complete run."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in raw.items():
        (directory / name).write_bytes(data)
    tmp = directory / "manifest.json.part"
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True))
    tmp.replace(directory / "manifest.json")


def manifest(run: Run, status: str, started: str, *, error: str | None = None, metrics: dict | None = None,
             raw_files: list[str] | None = None, mtu: int | None = None, attempt: int = 1,
             env: Environment | None = None, params: dict[str, Any] | None = None,
             conditions: dict[str, Any] | None = None) -> RunManifest:
    """The manifest of one run of the cell (its fields: manifest.RunManifest). `conditions` is what the substrate
    read back for the cell (netem, tuning, validity, the inter-cluster tool, the service proxy, the dimensions'
    details); only an inter-cluster tool it read nothing back of is described by what the cell asked for."""
    cell, cm, tool = run.cell, run.cell.cni_info, run.cell.intercluster_info
    detail = (conditions or {}).get("intercluster")
    if detail is None and not tool.is_none:  # nothing read back (e.g. the cell never connected): what was asked
        local = cell.substrate == "local"  # the testbed builds or models the tool; real clusters install it
        detail = {"tool": tool.tool, "mode": tool.mode, "version": tool.version,
                  "implementation": tool.implementation if local else "installed",
                  "model": tool.local.get("model") if local else None, "tool_version": None,
                  "cable_driver": tool.info.get("cable_driver"), "gateways": []}
    return {
        "schema_version": 1,
        "sweep_id": cell.sweep_id,
        "cell_id": cell.cell_id,
        "run_id": run.run_id,
        "datapath": cm.datapath,
        "mtu": mtu,
        **cell.manifest_fields(),  # substrate, distribution, CNI mode and every cell dimension (plan/dimensions.py)
        # and what the substrate read back of a dimension (its `detail` field, e.g. the CPU class calibration)
        **{d.detail: (conditions or {}).get(d.field) for d in DIMENSIONS if d.detail},
        "intercluster_tool": tool.tool,
        "intercluster_mode": tool.mode,
        "intercluster_implementation": (detail or {}).get("implementation", tool.implementation),
        "intercluster_detail": detail,
        # the service proxy: the cell's `service-proxy` entry and the mode that implements ClusterIPs (testbed: the
        # one it built; clusters: the distribution's kube-proxy mode, or none where the CNI replaces kube-proxy)
        "service_proxy_mode": cell.service_proxy_mode,
        "service_proxy_readback": ((conditions or {}).get("service_proxy") or {}).get("readback") or None,
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
        "environment": env or environment(run.workload),
        "metrics": metrics if status == "ok" else None,
        # what was in force (docs/results-layout.md, "Link conditions, tuning, validity, resources")
        "netem": (conditions or {}).get("netem"),
        "tuning": (conditions or {}).get("tuning"),
        "is_valid": (conditions or {}).get("is_valid", True),
        "invalid_reason": (conditions or {}).get("invalid_reason"),
        "trigger": None,  # set by with_trigger() for the runs of a triggered rerun
    }


def with_trigger(doc: RunManifest, trigger: Trigger | None, requested: str | None = None) -> RunManifest:
    """A manifest of a triggered rerun: the trigger {cni, new, previous, source, at} as its own object, and the
    version the cell asked for (`requested`: its cni-versions entry, Sweep.cni_version_requested; else the trigger's
    new one) as environment.cni_version_requested. What was asked, never claimed as installed: cni_version stays
    what the substrate read back (None on the local testbed, where no CNI software runs)."""
    if not trigger and requested is None:
        return doc
    out = {**doc, "trigger": dict(trigger)} if trigger else dict(doc)
    version = requested if requested is not None else trigger["new"]
    return {**out, "environment": {**(doc.get("environment") or {}), "cni_version_requested": version}}
