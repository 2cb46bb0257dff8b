"""`edgebench import`: tool outputs of runs made outside edgebench, stored as runs the warehouse reads.

Each file becomes one run under its own keys, runs/<sweep_id>/<cell_id>/<run_id>/ (docs/results-layout.md):
  * sweep_id  `imported-<10 hex>` from the tool and the labels, unless the label sweep-id names one;
  * cell_id   from the labels that describe the environment (substrate, distribution, CNI, mode, netem, tuning);
  * run_id    from the tool, the file's bytes and the labels, so importing the same file again overwrites it.
The manifest says where the numbers came from: `imported` = {tool, file, sha256, labels, imported_at}, status ok,
`environment.tools` = what the output itself says about the tool's version (if anything). Substrate defaults to
`imported`: the numbers were not measured on a substrate edgebench set up.

What the warehouse compares on must be known: what the output states is taken from it (iperf3's protocol, buffer
length and duration; the DDS mode), the rest must come as labels (REQUIRED), and a missing or invalid one is one
clear message before anything is stored. Nothing is guessed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from edgebench import workloads
from edgebench.errors import SpecError
from edgebench.plan import catalog
from edgebench.results.records import parsing
from edgebench.results.records.manifest import RunManifest
from edgebench.results.records.provenance import edgebench_commit
from edgebench.results.records.runstore import now

SUBSTRATES = ("imported", "ssh", "kind")  # never `local`: that label means "measured on edgebench's testbed"
CELL_LABELS = ("substrate", "distribution", "cni", "cni_mode", "datapath", "netem_scenario", "tuning_profile")
RUN_LABELS = ("protocol", "path", "placement", "length_bytes", "duration_s", "repetition", "mtu")
INT_LABELS = ("length_bytes", "duration_s", "repetition", "mtu", "subscribers")
CHOICES: dict[str, tuple[str, ...]] = {
    "path": ("pod-to-pod", "pod-to-service"),
    "placement": ("same-node", "cross-node"),
    "reliability": ("reliable", "best-effort"),
    "transport": ("unicast", "multicast"),
    "discovery": ("multicast", "static-peers"),
    "security": ("none", "auth-encrypt"),
    "service": tuple(catalog.workloads()["http"]["services"]),
}
_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_SWEEP_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def parse_labels(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not _LABEL_KEY.match(key):
            raise SpecError(f"--label takes KEY=VALUE with a lower-case key (e.g. cni=flannel); got {item[:80]!r}")
        if key in out:
            raise SpecError(f"--label {key} is given twice")
        out[key] = value.strip()
    if "substrate" in out and out["substrate"] not in SUBSTRATES:
        raise SpecError(f"--label substrate must be one of {', '.join(SUBSTRATES)} (local means edgebench's own "
                        f"testbed measured it); got {out['substrate']!r}")
    for key in INT_LABELS:
        if key in out and not re.fullmatch(r"\d{1,12}", out[key]):
            raise SpecError(f"--label {key} must be a non-negative integer; got {out[key][:40]!r}")
    for key, choices in CHOICES.items():
        if key in out and out[key] not in choices:
            raise SpecError(f"--label {key} must be one of {', '.join(choices)}; got {out[key][:40]!r}")
    if "sweep-id" in out and not _SWEEP_ID.match(out["sweep-id"]):
        raise SpecError(f"--label sweep-id must be a DNS label (lower-case letters, digits, '-'); got "
                        f"{out['sweep-id'][:70]!r}")
    return out


def check_required(tool: str, labels: dict[str, str]) -> None:
    """The labels a workload's runs need for the warehouse's comparisons (its import_labels), when the tool output
    does not state them."""
    workload = workloads.for_tool(tool).name
    missing = [k for k in workloads.for_tool(tool).import_labels if k not in labels]
    if missing:
        raise SpecError(f"importing {tool} output needs " + ", ".join(
            f"--label {k}=" + ("|".join(CHOICES[k]) if k in CHOICES else "N") for k in missing)
            + f": the warehouse compares {workload} runs on them and the output does not say")


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:10]


def build_run(tool: str, record: dict[str, Any], data: bytes, labels: dict[str, str]
              ) -> tuple[str, RunManifest, dict[str, bytes]]:
    """(key prefix, manifest, raw files) for one parsed file."""
    fmt, workload = workloads.tool_format(tool), workloads.for_tool(tool)
    metrics = record["metrics"]
    stated = workload.stated(data.decode("utf-8"), record)
    cell = {k: labels.get(k) for k in CELL_LABELS}
    cell.update(substrate=cell["substrate"] or "imported", cni=cell["cni"] or "unknown",
                cni_mode=cell["cni_mode"] or "unknown", datapath=cell["datapath"] or "unknown",
                netem_scenario=cell["netem_scenario"] or "none",
                tuning_profile=cell["tuning_profile"] or "default_settings")
    sweep_id = labels.get("sweep-id") or f"imported-{_digest({'tool': fmt.tool, 'labels': labels})}"
    cell_id = f"c-{_digest({'imported': True, **cell})}"
    sha = hashlib.sha256(data).hexdigest()
    run_id = f"r-{_digest({'tool': fmt.tool, 'sha256': sha, 'labels': labels})}"
    run: dict[str, Any] = {k: labels.get(k, stated.get(k)) for k in RUN_LABELS}
    for key in INT_LABELS:
        if key in run and isinstance(run[key], str):
            run[key] = int(run[key])
    run["repetition"] = run["repetition"] or 1
    params = workload.imported_params({k: labels[k] for k in workload.import_params if k in labels}, stated, metrics)
    extra = {k: v for k, v in labels.items()
             if k not in CELL_LABELS + RUN_LABELS + workload.import_params + ("sweep-id",)}
    if extra:
        params["labels"] = extra
    version = metrics.get(f"{fmt.tool}_version") or metrics.get("tool_version")
    raw = {fmt.raw_name: data}
    if fmt.samples_name:
        raw[fmt.samples_name] = json.dumps(record["samples"], indent=1).encode()
    stamp = now()
    manifest: RunManifest = {
        "schema_version": 1, "sweep_id": sweep_id, "cell_id": cell_id, "run_id": run_id,
        **cell, "workload": workload.name, **run, "params": params,
        "status": "ok", "error": None, "attempt": 1, "started_at": stamp, "finished_at": stamp,
        "raw_files": sorted(raw), "metrics": metrics,
        "netem": None, "tuning": None, "is_valid": True, "invalid_reason": None,
        "environment": {"kernel": None, "machine": None, "hostname": None, "edgebench_version": None,
                        "edgebench_commit": edgebench_commit(),
                        "tools": {fmt.tool: str(version)} if version else {}, "cni_version": None},
        "imported": {"tool": fmt.tool, "file": record["file"], "sha256": sha, "labels": labels,
                     "imported_at": stamp},
    }
    return f"runs/{sweep_id}/{cell_id}/{run_id}/", manifest, raw


def prepare(tool: str, paths: list[Path], labels: dict[str, str], **options: Any
            ) -> list[tuple[str, RunManifest, dict[str, bytes]]]:
    """Every file parsed and turned into a run, or SpecError naming what is wrong (nothing stored)."""
    check_required(tool, labels)
    records, problems = parsing.parse_files(tool, paths, **options)
    if problems:
        raise parsing.ParseFailure("\n".join(problems))
    return [build_run(tool, record, path.read_bytes(), labels) for path, record in zip(paths, records)]
