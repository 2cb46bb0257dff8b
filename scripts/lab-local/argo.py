"""The local lab's sweep through the management cluster's Argo controller: `argo submit workflows/sweep.yaml -p
substrate=ssh` as a user with a lab runs it (docs/lab-local.md, "The lab through Argo").

Needs the management cluster up (`make e2e-argo KEEP=1`) and the lab up with its mirror served (`make lab-local
KEEP=1`); `make lab-argo` checks both and imports the runner image (kubectl and helm in it) first. Then:
1. the lab's inventory as ConfigMap edgebench-inventory and its key and known_hosts as Secret edgebench-ssh-key
   (the two objects kustomize/overlays/lab asks for, made from the lab's own files), and a semaphore for the target;
2. the sweep submitted with the argo CLI (`argo submit -n edgebench workflows/sweep.yaml -p substrate=ssh ...`),
   watched until it ends; the cell pods reach the nodes over SSH and take everything from the mirror the inventory
   names (`artifact_source`);
3. checks: every run the planner gives for these parameters is in the management cluster's MinIO with a manifest;
   statuses and the CNI versions read back are counted;
4. the runs copied into this machine's store (where `make lab-local`'s own sweep is), so one warehouse (`edgebench
   warehouse`) and the portal show both, side by side.

    python scripts/lab-local/argo.py [--cnis JSON] [--reps N] [--sweep-id ID] [--kubeconfig K] [--lab DIR]

Exits 1 with one line per failed check; the report (times, counts, versions) goes to .edgebench/lab-argo/.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "e2e-argo"))
import e2e  # noqa: E402  (Kube, wait, explain_failure, minio_env)

NS = e2e.NS
E2E = Path(os.environ.get("EDGEBENCH_E2E", Path.home() / ".local/share/edgebench/e2e-argo"))
TARGET = "lab-local"


def apply_lab_objects(kube: e2e.Kube, lab: Path) -> None:
    """ConfigMap edgebench-inventory and Secret edgebench-ssh-key from the lab's files; a semaphore for the target."""
    for kind, name, files in (("configmap", "edgebench-inventory", [f"inventory.yaml={lab / 'inventory.yaml'}"]),
                              ("secret generic", "edgebench-ssh-key", [f"id_ed25519={lab / 'id_ed25519'}",
                                                                       f"known_hosts={lab / 'known_hosts'}"])):
        args = ["-n", NS, "create", *kind.split(), name, *[f"--from-file={f}" for f in files],
                "--dry-run=client", "-o", "yaml"]
        kube("apply", "-f", "-", stdin=kube(*args))
    kube("-n", NS, "patch", "configmap", "edgebench-semaphores", "--type", "merge", "-p",
         json.dumps({"data": {TARGET: "1"}}))


def submit(kube: e2e.Kube, kubeconfig: str, params: dict[str, str], name: str) -> None:
    """`argo submit` with the CLI built here (build.sh), else the same Workflow object by kubectl."""
    argo = shutil.which("argo") or (str(E2E / "bin" / "argo") if (E2E / "bin" / "argo").exists() else None)
    if argo:
        cmd = [argo, "--kubeconfig", kubeconfig, "-n", NS, "submit", str(REPO / "workflows" / "sweep.yaml"),
               "--name", name, *[a for k, v in params.items() for a in ("-p", f"{k}={v}")]]
        print("lab-argo: " + " ".join(cmd[:1] + cmd[3:]), flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"lab-argo: argo submit failed: {p.stderr.strip()}")
        return
    print("lab-argo: no argo CLI here (scripts/e2e-argo/build.sh builds it): creating the Workflow object", flush=True)
    wf = e2e.workflow_object(REPO / "workflows" / "sweep.yaml", params, name)
    kube("-n", NS, "create", "-f", "-", stdin=json.dumps(wf))


def planned(params: dict[str, str], inventory: Path) -> dict[str, str]:
    """run prefix -> label, as the planner gives them for these parameters on this lab (what a cell pod writes)."""
    from edgebench.plan import cells as cells_mod
    from edgebench.plan import spec
    from edgebench.substrates.clusters import inventory as inv_mod

    sweep = spec.load(REPO / "workflows" / "sweep.yaml", overrides=params)
    lab = inv_mod.load(str(inventory))
    ok, _ = cells_mod.expand_checked(sweep, frozenset(lab.arches), lab)
    return {r.prefix: r.label for c in ok for r in cells_mod.runs_for(sweep, c)}


def collect(src_env: dict[str, str], sweep_id: str) -> tuple[dict, list[dict]]:
    """Copy the sweep's objects from the management cluster's MinIO into this machine's store; the manifests."""
    from minio import Minio

    from edgebench.results.store import S3Config

    src = Minio(src_env["EDGEBENCH_S3_ENDPOINT"], src_env["EDGEBENCH_S3_ACCESS_KEY"],
                src_env["EDGEBENCH_S3_SECRET_KEY"], secure=False)
    dst_cfg = S3Config.from_env()
    dst = dst_cfg.client()
    bucket, copied, manifests = src_env["EDGEBENCH_BUCKET"], 0, []
    for prefix in (f"runs/{sweep_id}/", f"sweeps/{sweep_id}/"):
        for o in src.list_objects(bucket, prefix=prefix, recursive=True):
            r = src.get_object(bucket, o.object_name)
            try:
                data = r.read()
            finally:
                r.close()
                r.release_conn()
            dst.put_object(dst_cfg.bucket, o.object_name, io.BytesIO(data), len(data))
            copied += 1
            if o.object_name.endswith("/manifest.json"):
                manifests.append(json.loads(data))
    return {"objects_copied": copied, "to": f"{dst_cfg.endpoint}/{dst_cfg.bucket}"}, manifests


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", default="/var/lib/edgebench-e2e/pki/admin.kubeconfig")
    ap.add_argument("--lab", type=Path, default=Path(os.environ.get("EDGEBENCH_LAB", "/srv/edgebench-lab")))
    ap.add_argument("--cnis", default='["host","flannel:vxlan","kube-router:bgp","cilium:vxlan"]')
    ap.add_argument("--reps", default="3")
    ap.add_argument("--sweep-id", default=f"lab-argo-{int(time.time())}")
    ap.add_argument("--param", "-p", action="append", default=[], help="more sweep parameters, NAME=VALUE")
    ap.add_argument("--timeout", type=float, default=6 * 3600, help="seconds the sweep may take (default 6 h)")
    ap.add_argument("--report", type=Path, default=REPO / ".edgebench" / "lab-argo" / "report.json")
    a = ap.parse_args(argv)
    for f in ("inventory.yaml", "id_ed25519", "known_hosts"):
        if not (a.lab / f).is_file():
            print(f"lab-argo: error: {a.lab / f} is missing: the local lab is not up (make lab-local KEEP=1)",
                  file=sys.stderr)
            return 2
    if not Path(a.kubeconfig).is_file():
        print(f"lab-argo: error: {a.kubeconfig} is missing: the management cluster is not up "
              "(make e2e-argo KEEP=1)", file=sys.stderr)
        return 2
    kube = e2e.Kube(a.kubeconfig)
    params = {"substrate": "ssh", "distribution": "kubeadm", "target": TARGET, "cnis": a.cnis,
              "repetitions": a.reps, "sweep-id": a.sweep_id}
    params.update(dict(p.split("=", 1) for p in a.param))
    report: dict = {"sweep_id": a.sweep_id, "parameters": params}
    t0 = time.monotonic()
    apply_lab_objects(kube, a.lab)
    submit(kube, a.kubeconfig, params, a.sweep_id)
    done = e2e.wait(kube, a.sweep_id, a.timeout, poll=5)
    report.update(phase=done["status"].get("phase"), seconds=round(time.monotonic() - t0, 1),
                  started=done["status"].get("startedAt"), finished=done["status"].get("finishedAt"))
    errors = [] if report["phase"] == "Succeeded" else [e2e.explain_failure(kube, done)]
    want = planned(params, a.lab / "inventory.yaml")
    report["collect"], manifests = collect(e2e.minio_env(kube), a.sweep_id)
    got = {f"runs/{m['sweep_id']}/{m['cell_id']}/{m['run_id']}/" for m in manifests}
    missing = sorted(set(want) - got)
    errors += [f"run {p} ({want[p]}) is not in MinIO" for p in missing]
    statuses: dict[str, int] = {}
    versions: dict[str, set] = {}
    for m in manifests:
        statuses[m.get("status", "?")] = statuses.get(m.get("status", "?"), 0) + 1
        versions.setdefault(f"{m.get('cni')}:{m.get('cni_mode')}", set()).add(
            str((m.get("environment") or {}).get("cni_version")))
    report.update(runs_planned=len(want), runs_stored=len(got & set(want)), statuses=statuses,
                  cni_versions={k: sorted(v) for k, v in versions.items()}, errors=errors)
    a.report.parent.mkdir(parents=True, exist_ok=True)
    a.report.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"lab-argo: {a.sweep_id} {report['phase']} in {report['seconds']:.0f} s: {report['runs_stored']} of "
          f"{len(want)} planned runs stored ({statuses}); versions read back {report['cni_versions']}")
    print(f"lab-argo: copied into {report['collect']['to']}; `make warehouse` shows them beside the host's sweeps")
    for e in errors:
        print(f"lab-argo: FAIL {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
