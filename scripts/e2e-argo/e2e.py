"""Submit edgebench workflows to the e2e cluster's real Argo controller and check what they stored.

A Workflow object is all `argo submit` creates, so this creates the object itself (kubectl create) with the
`-p NAME=VALUE` overrides written into spec.arguments, waits for it while printing the node phases, and then
checks MinIO (the in-cluster one, reached through its ClusterIP) for exactly the run prefixes the planner
expects for the same parameters — the keys a local sweep writes — and builds the warehouse from them.

    python scripts/e2e-argo/e2e.py --kubeconfig K [--report FILE]

Exits 1 with one line per failed check; writes a JSON report (times, workflow names, key counts).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
NS = "edgebench"
# the tiny sweep of the issue: two CNI modes, one workload, one repetition, on the network-namespace testbed
TINY = {
    "substrate": "local", "target": "local", "cnis": '["flannel:vxlan","flannel:host-gw"]',
    "workloads": '["iperf3:tcp"]', "iperf3-paths": '["pod-to-pod:cross-node"]', "repetitions": "1", "duration": "3",
}


class Kube:
    def __init__(self, kubeconfig: str):
        self.base = [os.environ.get("KUBECTL", "kubectl"), "--kubeconfig", kubeconfig]

    def __call__(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        p = subprocess.run(self.base + list(args), input=stdin, capture_output=True, text=True)
        if check and p.returncode:
            raise RuntimeError(f"kubectl {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def json(self, *args: str) -> dict:
        return json.loads(self(*args, "-o", "json"))


def workflow_object(path: Path, overrides: dict[str, str], name: str) -> dict:
    """The Workflow `argo submit FILE -p ...` would create, under a fixed name."""
    wf = yaml.safe_load(path.read_text())
    params = wf["spec"].setdefault("arguments", {}).setdefault("parameters", [])
    known = {p["name"]: p for p in params}
    for k, v in overrides.items():
        if k in known:
            known[k]["value"] = v
        else:
            params.append({"name": k, "value": v})
    wf["metadata"].pop("generateName", None)
    wf["metadata"]["name"] = name
    return wf


def wait(kube: Kube, name: str, timeout: float) -> dict:
    t0, last = time.monotonic(), ""
    while True:
        wf = kube.json("-n", NS, "get", "workflow", name)
        st = wf.get("status", {})
        nodes = st.get("nodes", {}).values()
        counts: dict[str, int] = {}
        for n in nodes:
            if n.get("type") == "Pod":
                counts[n.get("phase", "?")] = counts.get(n.get("phase", "?"), 0) + 1
        line = f"{name}: {st.get('phase', 'Pending')} pods {dict(sorted(counts.items()))}"
        if line != last:
            print(f"e2e-argo: [{time.monotonic() - t0:5.0f} s] {line}", flush=True)
            last = line
        if st.get("phase") in ("Succeeded", "Failed", "Error"):
            return wf
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"{name} not finished after {timeout:.0f} s (phase {st.get('phase')})")
        time.sleep(3)


def explain_failure(kube: Kube, wf: dict) -> str:
    lines = [f"workflow {wf['metadata']['name']} {wf['status'].get('phase')}: {wf['status'].get('message', '')}"]
    for n in wf["status"].get("nodes", {}).values():
        if n.get("phase") in ("Failed", "Error") and n.get("type") == "Pod":
            lines.append(f"  {n.get('displayName')}: {n.get('message', '')}")
            pod = n.get("id")
            logs = kube("-n", NS, "logs", pod, "-c", "main", "--tail", "15", check=False)
            lines += [f"    | {x}" for x in logs.splitlines()]
    return "\n".join(lines)


def minio_env(kube: Kube) -> dict[str, str]:
    ip = kube("-n", NS, "get", "svc", "minio", "-o", "jsonpath={.spec.clusterIP}").strip()
    return {"EDGEBENCH_S3_ENDPOINT": f"{ip}:9000", "EDGEBENCH_S3_ACCESS_KEY": "edgebench",
            "EDGEBENCH_S3_SECRET_KEY": "edgebench-secret", "EDGEBENCH_BUCKET": "edgebench"}


def expected_prefixes(path: Path, overrides: dict[str, str]) -> dict[str, str]:
    """run prefix -> status the planner gives it, for the same file and parameters (what a local sweep writes)."""
    from edgebench.plan import cells as cells_mod
    from edgebench.plan import spec

    sweep = spec.load(path, substrate="local", overrides=overrides)
    return {r.prefix: r.label for c in cells_mod.expand(sweep) for r in cells_mod.runs_for(sweep, c)}


def stored_objects(env: dict[str, str], sweep_id: str) -> list[str]:
    from minio import Minio

    client = Minio(env["EDGEBENCH_S3_ENDPOINT"], env["EDGEBENCH_S3_ACCESS_KEY"], env["EDGEBENCH_S3_SECRET_KEY"],
                   secure=False)
    return [o.object_name for o in client.list_objects(env["EDGEBENCH_BUCKET"], prefix=f"runs/{sweep_id}/",
                                                       recursive=True)]


def run_one(kube: Kube, label: str, path: Path, overrides: dict[str, str], timeout: float, report: dict) -> list[str]:
    name = f"e2e-{label}-{int(time.time())}"
    overrides = {**overrides, "sweep-id": name}
    wf = workflow_object(path, overrides, name)
    t0 = time.monotonic()
    kube("-n", NS, "create", "-f", "-", stdin=yaml.safe_dump(wf))
    done = wait(kube, name, timeout)
    entry = {"workflow": name, "file": str(path.relative_to(REPO)), "parameters": overrides,
             "phase": done["status"].get("phase"), "seconds": round(time.monotonic() - t0, 1)}
    report["workflows"].append(entry)
    errors = []
    if entry["phase"] != "Succeeded":
        return [explain_failure(kube, done)]
    env = minio_env(kube)
    objects = stored_objects(env, name)
    want = expected_prefixes(path, overrides)
    got = {"/".join(o.split("/")[:4]) + "/" for o in objects}
    entry.update(objects=len(objects), runs_expected=len(want), runs_stored=len(got & set(want)))
    for prefix in sorted(set(want) - got):
        errors.append(f"{name}: run {prefix} ({want[prefix]}) is not in MinIO")
    for prefix in sorted(got - set(want)):
        errors.append(f"{name}: unexpected prefix {prefix} in MinIO (the planner does not produce it)")
    for prefix in sorted(set(want) & got):
        if f"{prefix}manifest.json" not in objects:
            errors.append(f"{name}: {prefix} has no manifest.json")
    return errors


def warehouse(kube: Kube, report: dict) -> list[str]:
    env = {**os.environ, **minio_env(kube)}
    with tempfile.TemporaryDirectory() as tmp:
        env["EDGEBENCH_WAREHOUSE"] = f"{tmp}/e2e.duckdb"
        t0 = time.monotonic()
        p = subprocess.run([str(Path(sys.executable).parent / "edgebench"), "warehouse", "--no-summary"], env=env,
                           capture_output=True, text=True)
        report["warehouse_seconds"] = round(time.monotonic() - t0, 1)
        if p.returncode:
            return [f"edgebench warehouse failed: {p.stderr.strip()[-2000:]}"]
        import duckdb

        con = duckdb.connect(env["EDGEBENCH_WAREHOUSE"], read_only=True)
        by_sweep = dict(con.execute("select sweep_id, count(*) from stg_edgebench__runs group by 1").fetchall())
        report["warehouse_runs"] = by_sweep
    errors = []
    for wf in report["workflows"]:
        if wf.get("runs_expected") and by_sweep.get(wf["workflow"], 0) != wf["runs_expected"]:
            errors.append(f"warehouse: {wf['workflow']} has {by_sweep.get(wf['workflow'], 0)} runs in stg_runs, "
                          f"expected {wf['runs_expected']}")
    return errors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--report", default=str(REPO / ".edgebench" / "e2e-argo" / "report.json"))
    ap.add_argument("--timeout", type=float, default=900, help="seconds per workflow (default 900)")
    a = ap.parse_args(argv)
    kube = Kube(a.kubeconfig)
    report: dict = {"workflows": []}
    errors = run_one(kube, "smoke", REPO / "workflows" / "smoke.yaml", {}, a.timeout, report)
    errors += run_one(kube, "tiny", REPO / "workflows" / "sweep.yaml", TINY, a.timeout, report)
    if not errors:
        errors += warehouse(kube, report)
    report["errors"] = errors
    Path(a.report).parent.mkdir(parents=True, exist_ok=True)
    Path(a.report).write_text(json.dumps(report, indent=2) + "\n")
    for e in errors:
        print(f"e2e-argo: FAIL {e}", file=sys.stderr)
    print(f"e2e-argo: report {a.report}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
