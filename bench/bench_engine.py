"""Benchmark part "engine" (opt-in: `make bench ONLY=engine`, with the e2e cluster up: `make e2e-argo KEEP=1`): what
Argo itself costs per cell and per run against `edgebench sweep --local` on the same machine.

The same sweep (the default sweep's workloads on three CNI modes of the testbed, one repetition) runs back to back:
locally (`edgebench sweep --local`, into the e2e cluster's MinIO), through the real Argo controller of the e2e
cluster (the Workflow `argo submit workflows/sweep.yaml` creates; every cell phase is a pod of the runner image),
then locally again. Both substrates are the network-namespace testbed, so what differs is the engine: pod starts,
artifact and parameter passing, the controller's reconcile loop. Rows: Argo / local wall time (target <= 1.10),
and the time per cell and per run of each. The detail gives the pods' summed node durations against the workflow's
wall time.

Skips (value None, with the reason) when the e2e cluster is not up.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(1, str(REPO / "scripts" / "e2e-argo"))
KUBECONFIG = Path("/var/lib/edgebench-e2e/pki/admin.kubeconfig")
E2E_BIN = Path(os.environ.get("EDGEBENCH_E2E", Path.home() / ".local/share/edgebench/e2e-argo")) / "bin"
SWEEP = {"substrate": "local", "target": "local", "cnis": '["host","flannel:vxlan","kube-router"]',
         "repetitions": "1"}


def _iso(text: str) -> float:
    import datetime as dt
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _where_argo_time_goes(wf: dict) -> str:
    """Pod nodes' summed durations vs the workflow's wall time (Argo counts a node from its creation: the sums include
    waiting for the target's semaphore and the pod's start)."""
    st = wf["status"]
    wall = _iso(st["finishedAt"]) - _iso(st["startedAt"])
    pods = [n for n in st.get("nodes", {}).values() if n.get("type") == "Pod" and n.get("finishedAt")]
    busy = sum(_iso(n["finishedAt"]) - _iso(n["startedAt"]) for n in pods)
    return (f"{len(pods)} pods, their node durations sum to {busy:.0f} s in {wall:.0f} s of workflow time "
            f"({busy / len(pods):.1f} s per pod on average)" if pods else "no pod times")


def _local(sweep_id: str, env: dict[str, str]) -> float:
    args = [str(REPO / ".venv" / "bin" / "edgebench"), "sweep", str(REPO / "workflows" / "sweep.yaml"), "--local",
            *[x for k, v in {**SWEEP, "sweep-id": sweep_id}.items() for x in ("-p", f"{k}={v}")]]
    t0 = time.monotonic()
    proc = subprocess.run(args, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"the local sweep failed: {proc.stdout[-800:]}{proc.stderr[-800:]}")
    return time.monotonic() - t0


def run(quick: bool = False) -> list[Row]:
    import yaml

    import e2e
    from edgebench.plan import cells as cells_mod
    from edgebench.plan import spec

    def skipped(reason: str) -> list[Row]:
        return [Row("engine", "Argo / local wall time, same sweep on the testbed", None, "ratio", "<= 1.10", None,
                    f"not measured: {reason}")]

    if not KUBECONFIG.exists():
        return skipped("the e2e cluster is not up (make e2e-argo KEEP=1 starts it and leaves it up)")
    env = {**os.environ, "PATH": f"{E2E_BIN}:{os.environ['PATH']}"}
    os.environ["PATH"] = env["PATH"]
    kube = e2e.Kube(str(KUBECONFIG))
    try:
        kube("-n", e2e.NS, "get", "deploy", "minio")
    except RuntimeError as exc:
        return skipped(f"the e2e cluster does not answer ({exc})")
    env.update(e2e.minio_env(kube))
    sweep = spec.load(REPO / "workflows" / "sweep.yaml", substrate="local", overrides=SWEEP)
    n_cells = len(cells_mod.expand(sweep))
    n_runs = sum(len(cells_mod.runs_for(sweep, c)) for c in cells_mod.expand(sweep))
    stamp = int(time.time())
    local1 = _local(f"engine-local-a-{stamp}", env)
    name = f"engine-argo-{stamp}"
    wf = e2e.workflow_object(REPO / "workflows" / "sweep.yaml", {**SWEEP, "sweep-id": name}, name)
    t0 = time.monotonic()
    kube("-n", e2e.NS, "create", "-f", "-", stdin=yaml.safe_dump(wf))
    done = e2e.wait(kube, name, timeout=3600)
    argo_s = time.monotonic() - t0
    if done["status"].get("phase") != "Succeeded":
        return skipped(e2e.explain_failure(kube, done))
    local2 = _local(f"engine-local-b-{stamp}", env)
    local_s = (local1 + local2) / 2
    ratio = argo_s / local_s
    where = _where_argo_time_goes(done)
    return [
        Row("engine", f"Argo / local wall time, same sweep on the testbed ({n_cells} cells, {n_runs} runs)", ratio,
            "ratio", "<= 1.10", ratio <= 1.10,
            f"Argo {argo_s:.0f} s (submit to Succeeded), local {local1:.0f} s and {local2:.0f} s (before and after); "
            f"Argo: {where}", {"argo_s": argo_s, "local_s": [local1, local2], "cells": n_cells, "runs": n_runs}),
        Row("engine", "wall time per cell, Argo / local", argo_s / n_cells, "s", "", None,
            f"Argo {argo_s / n_cells:.1f} s, local {local_s / n_cells:.1f} s per cell"),
        Row("engine", "wall time per run, Argo / local", argo_s / n_runs, "s", "", None,
            f"Argo {argo_s / n_runs:.2f} s, local {local_s / n_runs:.2f} s per run"),
    ]
