"""Benchmark part "engine" (opt-in: `make bench ONLY=engine`, with the kind management cluster up: `make up`): what
Argo itself costs per cell and per run against `edgebench sweep --local` on the same machine.

The default sweep (workflows/sweep.yaml's own parameters on the network-namespace testbed: 8 CNI modes, 5 workload
variants, 3 repetitions; what `make sweep` runs) runs back to back: through the real Argo controller of the e2e
cluster (the Workflow `argo submit workflows/sweep.yaml` creates; every cell is a pod of the runner image), then
locally (`edgebench sweep --local`, into the management cluster's MinIO, through `kubectl port-forward`). Both are the same testbed, so what differs is the
engine: pod starts, artifact and parameter passing, the controller's reconcile loop. About 25 min. QUICK=1 runs a
3-cell sweep of one repetition instead (host, flannel:vxlan, kube-router; about 6 min), locally before and after
Argo: its cells are a third as long, so the same per-cell cost weighs three times as much in its ratio.

Rows: Argo / local wall time (target <= 1.10), the time per cell and per run of each, and Argo's cost per cell in
seconds (what does not shrink with longer cells). The detail splits Argo's wall time by its pods' own timestamps.

Skips (value None, with the reason) when the management cluster is not up.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, t95  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(1, str(REPO / "scripts" / "e2e-argo"))
MGMT = REPO / "scripts" / "kind" / "mgmt.sh"
E2E_BIN = Path(os.environ.get("EDGEBENCH_E2E", Path.home() / ".local/share/edgebench/e2e-argo")) / "bin"
SWEEP = {"substrate": "local", "target": "local"}  # the default sweep, as `make sweep` runs it
QUICK_SWEEP = {**SWEEP, "cnis": '["host","flannel:vxlan","kube-router"]', "repetitions": "1"}


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


def _container_times(pod: dict, name: str, init: bool = False) -> tuple[float, float] | None:
    key = "initContainerStatuses" if init else "containerStatuses"
    for c in pod.get("status", {}).get(key) or []:
        t = (c.get("state") or {}).get("terminated") or {}
        if c.get("name") == name and t.get("startedAt") and t.get("finishedAt"):
            return _iso(t["startedAt"]), _iso(t["finishedAt"])
    return None


def timeline(wf: dict, pods: list[dict]) -> dict[str, float]:
    """Where the workflow's wall time went, from its pods' own timestamps (kubectl get pods -o json), in seconds summed
    over the pods in the order they were created:
    - work: the `main` containers running (edgebench's own phases: what the local sweep also does);
    - pod start: the pod's creation until its first container starts (scheduling, sandbox and image setup);
    - artifacts: Argo's `init` container (inputs in) and the `wait` container after main ended (outputs and logs
      out to the artifact repository);
    - controller: the workflow's start until the first pod's creation, and each pod's end (its last container's
      end) until the next pod's creation, where no other pod was running: the reconcile loop noticing a node ended,
      the semaphore's hand-over, and creating the next pod; the last pod's end until the workflow finished.
    Overlapping pods (the sweep's matrix expansion beside a cell) are counted in full, so the parts may sum to
    more than the wall time. "per pod": each pod's own engine cost in creation order (the controller's gap before
    it, its start and its artifacts; the gap after the last pod goes to the last)."""
    st = wf["status"]
    start, end = _iso(st["startedAt"]), _iso(st["finishedAt"])
    out = {"wall": end - start, "work": 0.0, "pod start": 0.0, "artifacts": 0.0, "controller": 0.0, "pods": 0,
           "per pod": []}
    busy_until = start
    for pod in sorted(pods, key=lambda p: _iso(p["metadata"]["creationTimestamp"])):
        created = _iso(pod["metadata"]["creationTimestamp"])
        main = _container_times(pod, "main")
        if main is None:
            continue
        init = _container_times(pod, "init", init=True)
        wait = _container_times(pod, "wait")
        first = min(t[0] for t in (init, main, wait) if t)
        last = max(t[1] for t in (init, main, wait) if t)
        gap, starting = max(0.0, created - busy_until), max(0.0, first - created)
        artifacts = (init[1] - init[0] if init else 0.0) + max(0.0, (wait[1] if wait else main[1]) - main[1])
        out["pods"] += 1
        out["controller"] += gap
        out["pod start"] += starting
        out["work"] += main[1] - main[0]
        out["artifacts"] += artifacts
        out["per pod"].append(gap + starting + artifacts)
        busy_until = max(busy_until, last)
    out["controller"] += max(0.0, end - busy_until)
    if out["per pod"]:
        out["per pod"][-1] += max(0.0, end - busy_until)
    return out


def per_cell_cost(parts: dict) -> tuple[float, float, int] | None:
    """Argo's own cost per cell pod (the pods after the matrix expansion's): mean, 95% CI half-width (Student t),
    n. None with fewer than 2 cells."""
    costs = parts["per pod"][1:]
    if len(costs) < 2:
        return None
    mean, sd = statistics.fmean(costs), statistics.stdev(costs)
    return mean, t95(len(costs) - 1) * sd / len(costs) ** 0.5, len(costs)


class PodLog:
    """The workflow's pods as last seen, read every `every` seconds while it runs: the sweep's podGC deletes a pod
    10 minutes after it ended (templates/sweep.yaml), so a long sweep's first pods are gone by its end."""

    def __init__(self, kube, workflow: str, every: float = 20):
        self.kube, self.workflow, self.every = kube, workflow, every
        self.pods: dict[str, dict] = {}
        self.error: Exception | None = None
        self._last = 0.0

    def maybe(self) -> None:
        if time.monotonic() - self._last >= self.every:
            self.read()

    def read(self) -> None:
        import e2e

        self._last = time.monotonic()
        try:
            items = json.loads(self.kube("-n", e2e.NS, "get", "pods", "-l",
                                         f"workflows.argoproj.io/workflow={self.workflow}", "-o", "json"))["items"]
        except (RuntimeError, ValueError, KeyError) as exc:
            self.error = exc
            return
        self.error = None
        self.pods.update({p["metadata"]["uid"]: p for p in items})


def _expansion_work(pods: list[dict]) -> float:
    """The first pod's (the matrix expansion's) main container time."""
    first = min(pods, key=lambda p: _iso(p["metadata"]["creationTimestamp"]))
    main = _container_times(first, "main")
    return main[1] - main[0] if main else 0.0


def _timeline_text(t: dict[str, float], local_s: float) -> str:
    parts = ", ".join(f"{k} {t[k]:.1f} s" for k in ("work", "pod start", "artifacts", "controller"))
    return (f"where Argo's {t['wall']:.0f} s went, from its {t['pods']} pods' timestamps: {parts} "
            f"(the local sweep: {local_s:.0f} s)")


def _local(sweep: dict[str, str], sweep_id: str, env: dict[str, str]) -> float:
    args = [str(REPO / ".venv" / "bin" / "edgebench"), "sweep", str(REPO / "workflows" / "sweep.yaml"), "--local",
            *[x for k, v in {**sweep, "sweep-id": sweep_id}.items() for x in ("-p", f"{k}={v}")]]
    t0 = time.monotonic()
    proc = subprocess.run(args, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"the local sweep failed: {proc.stdout[-800:]}{proc.stderr[-800:]}")
    return time.monotonic() - t0


def run(quick: bool = False) -> list[Row]:
    import e2e

    def skipped(reason: str) -> list[Row]:
        return [Row("engine", "Argo / local wall time, same sweep on the testbed", None, "ratio", "<= 1.10", None,
                    f"not measured: {reason}")]

    p = subprocess.run(["bash", str(MGMT), "kubeconfig"], capture_output=True, text=True)
    if p.returncode:
        return skipped(f"the kind management cluster is not up (make up): {p.stderr.strip()}")
    env = {**os.environ, "PATH": f"{E2E_BIN}:{os.environ['PATH']}"}
    os.environ["PATH"] = env["PATH"]
    kube = e2e.Kube(p.stdout.strip())
    try:
        kube("-n", e2e.NS, "get", "deploy", "minio")
        forward, e2e.S3_ENDPOINT = e2e.port_forward(kube)
    except RuntimeError as exc:
        return skipped(f"the management cluster does not answer ({exc})")
    try:
        return _measure(kube, env, quick)
    finally:
        forward.kill()


def _measure(kube, env: dict, quick: bool) -> list[Row]:
    import yaml

    import e2e
    from edgebench.plan import cells as cells_mod
    from edgebench.plan import spec

    def skipped(reason: str) -> list[Row]:
        return [Row("engine", "Argo / local wall time, same sweep on the testbed", None, "ratio", "<= 1.10", None,
                    f"not measured: {reason}")]

    env.update(e2e.minio_env(kube))
    params = QUICK_SWEEP if quick else SWEEP
    sweep = spec.load(REPO / "workflows" / "sweep.yaml", substrate="local", overrides=params)
    n_cells = len(cells_mod.expand(sweep))
    n_runs = sum(len(cells_mod.runs_for(sweep, c)) for c in cells_mod.expand(sweep))
    stamp = int(time.time())
    local = [_local(params, f"engine-local-a-{stamp}", env)] if quick else []
    name = f"engine-argo-{stamp}"
    wf = e2e.workflow_object(REPO / "workflows" / "sweep.yaml", {**params, "sweep-id": name}, name)
    seen = PodLog(kube, name)
    t0 = time.monotonic()
    kube("-n", e2e.NS, "create", "-f", "-", stdin=yaml.safe_dump(wf))
    # poll 0.5 s: the poll's own lag stays small beside a cell
    done = e2e.wait(kube, name, timeout=3 * 3600, poll=0.5, each=seen.maybe)
    argo_s = time.monotonic() - t0
    if done["status"].get("phase") != "Succeeded":
        return skipped(e2e.explain_failure(kube, done))
    seen.read()
    local.append(_local(params, f"engine-local-b-{stamp}", env))
    local_s = sum(local) / len(local)
    ratio = argo_s / local_s
    where = _where_argo_time_goes(done)
    try:
        if seen.error is not None:
            raise seen.error
        pods = list(seen.pods.values())
        parts = timeline(done, pods)
        where += "; " + _timeline_text(parts, local_s)
        n_nodes = sum(n.get("type") == "Pod" for n in done["status"].get("nodes", {}).values())
        # per_cell_cost takes the first pod for the matrix expansion's: only so when every pod was read
        cell_cost, no_cost = per_cell_cost(parts), "fewer than 2 cell pods"
        if len(pods) < n_nodes:  # a read failed while pods were deleted: the split misses some
            no_cost = f"only {len(pods)} of the {n_nodes} pods were read before their deletion"
            cell_cost, where = None, where + f" ({no_cost})"
    except (RuntimeError, ValueError, KeyError) as exc:
        parts, cell_cost, no_cost = None, None, f"no pod timeline ({exc})"
        where += f"; {no_cost}"
    what = (f"{'a 3-cell sweep of 1 repetition (QUICK)' if quick else 'the default sweep'} on the testbed "
            f"({n_cells} cells, {n_runs} runs)")
    locals_text = (f"local {local[0]:.0f} s and {local[1]:.0f} s (before and after)" if len(local) == 2
                   else f"local {local[0]:.0f} s (after)")
    return [
        Row("engine", f"Argo / local wall time, {what}", ratio, "ratio", "<= 1.10", ratio <= 1.10,
            f"Argo {argo_s:.0f} s (submit to Succeeded), {locals_text}; Argo: {where}",
            {"argo_s": argo_s, "local_s": local, "cells": n_cells, "runs": n_runs, "timeline_s": parts,
             "sweep": params}),
        Row("engine", "wall time per cell, Argo / local", argo_s / n_cells, "s", "", None,
            f"Argo {argo_s / n_cells:.1f} s, local {local_s / n_cells:.1f} s per cell"),
        Row("engine", "Argo's own cost per cell pod (controller gap before it, pod start, artifacts)",
            cell_cost[0] if cell_cost else None, "s", "", None,
            (f"{cell_cost[0]:.1f} s ± {cell_cost[1]:.1f} s (95% CI, n = {cell_cost[2]} cells), from the pods' "
             f"timestamps (whole seconds); the matrix expansion's pod before them: "
             f"{parts['per pod'][0] + _expansion_work(pods):.0f} s in all; (Argo - local) / cells: "
             f"{(argo_s - local_s) / n_cells:.1f} s. The same seconds whatever a cell's length"
             if cell_cost else f"not measured: {no_cost}")),
        Row("engine", "wall time per run, Argo / local", argo_s / n_runs, "s", "", None,
            f"Argo {argo_s / n_runs:.2f} s, local {local_s / n_runs:.2f} s per run"),
    ]
