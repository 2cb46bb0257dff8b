"""The local lab's sweep through the management cluster's Argo controller: `argo submit workflows/sweep.yaml -p
substrate=ssh` as a user with a lab runs it (docs/lab-argo.md).

Needs the kind management cluster up (`make up`; `make lab-argo` runs `scripts/kind/mgmt.sh lab`, which passes
--kubeconfig, --minio-port-forward and --index-host for it) and the lab up with its mirror served (`make lab-local
KEEP=1`); `make lab-argo` checks both and loads the runner image (kubectl and helm in it) first. Then:
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
                                     [--minio-port-forward] [--index-host ADDR]

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

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "e2e-argo"))
import e2e  # noqa: E402  (Kube, wait, explain_failure, minio_env)

NS = e2e.NS
E2E = Path(os.environ.get("EDGEBENCH_E2E", Path.home() / ".local/share/edgebench/e2e-argo"))
TARGET = "lab-local"
SWEEP = REPO / "workflows" / "sweep.yaml"


def apply_templates(kube: e2e.Kube) -> None:
    """This checkout's WorkflowTemplates (and the rest of the e2e overlay) on the management cluster."""
    kube("apply", "--server-side", "--force-conflicts", "-k", str(REPO / "kustomize" / "overlays" / "e2e"))


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


def submit(kube: e2e.Kube, kubeconfig: str, params: dict[str, str], name: str, file: Path = SWEEP) -> None:
    """`argo submit FILE` with the CLI built here (build.sh), else the same Workflow object by kubectl."""
    argo = shutil.which("argo") or (str(E2E / "bin" / "argo") if (E2E / "bin" / "argo").exists() else None)
    if argo:
        cmd = [argo, "--kubeconfig", kubeconfig, "-n", NS, "submit", str(file),
               "--name", name, *[a for k, v in params.items() for a in ("-p", f"{k}={v}")]]
        print("lab-argo: " + " ".join(cmd[:1] + cmd[3:]), flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"lab-argo: argo submit failed: {p.stderr.strip()}")
        return
    print("lab-argo: no argo CLI here (scripts/e2e-argo/build.sh builds it): creating the Workflow object", flush=True)
    wf = e2e.workflow_object(file, params, name)
    kube("-n", NS, "create", "-f", "-", stdin=json.dumps(wf))


def planned(params: dict[str, str], inventory: Path, file: Path = SWEEP) -> dict[str, str]:
    """run prefix -> label, as the planner gives them for these parameters on this lab (what a cell pod writes)."""
    from edgebench.plan import cells as cells_mod
    from edgebench.plan import spec
    from edgebench.substrates.clusters import inventory as inv_mod

    sweep = spec.load(file, overrides=params)
    lab = inv_mod.load(str(inventory))
    ok, _ = cells_mod.expand_checked(sweep, frozenset(lab.arches), lab)
    return {r.prefix: r.label for c in ok for r in cells_mod.runs_for(sweep, c)}


def collect(src_env: dict[str, str], sweep_id: str) -> tuple[dict, list[dict]]:
    """Copy the sweep's objects from the management cluster's MinIO into this machine's store; the manifests."""
    from edgebench.results.records.store import S3Config

    src = e2e.minio_client(src_env)
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


# ---------------------------------------------------------------------------------------------- rerun (--rerun)
TAGS_PORT = 18090  # on the host address the probe's pod reaches (--index-host)
LAB_RERUN = {"substrate": "ssh", "distribution": "kubeadm", "target": TARGET}
E2E_RERUN_NAMES = {"substrate", "target", "distribution", "workloads", "iperf3-paths", "repetitions"}


def sensor_to_lab(kube: e2e.Kube, extra: dict[str, str]) -> None:
    """Point the Sensor's reruns at the lab: the e2e overlay's local-substrate parameters replaced by the lab's."""
    sensor = kube.json("-n", NS, "get", "sensor", "edgebench-rerun")
    for trig in sensor["spec"]["triggers"]:
        spec = trig["template"]["argoWorkflow"]["source"]["resource"]["spec"]
        params = [p for p in spec["arguments"]["parameters"] if p["name"] not in E2E_RERUN_NAMES]
        spec["arguments"]["parameters"] = params + [{"name": k, "value": v} for k, v in {**LAB_RERUN, **extra}.items()]
    for k in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
        sensor["metadata"].pop(k, None)
    sensor.pop("status", None)
    kube("replace", "-f", "-", stdin=json.dumps(sensor))


def version_sources(kube: e2e.Kube, host: str) -> None:
    """The probe reads flannel's releases from the tags file served here on HOST (besides e2e.py's calico index)."""
    if host != e2e.INDEX_ADDR[0]:
        e2e.point_sources_at(kube, host)
    cm = kube.json("-n", NS, "get", "configmap", "edgebench-e2e-version-sources")
    doc = yaml.safe_load(cm["data"]["sources.yaml"]) or {}
    doc["flannel"] = {"type": "tags", "url": f"http://{host}:{TAGS_PORT}/flannel.txt"}
    kube("-n", NS, "patch", "configmap", "edgebench-e2e-version-sources", "--type", "merge", "-p",
         json.dumps({"data": {"sources.yaml": yaml.safe_dump(doc)}}))


def first_run_of(env: dict[str, str], new: str, since: set[str], after: float = 0.0) -> tuple[str, str] | None:
    """(sweep id, key) of a run manifest of the rerun (its trigger's new version) stored after `after` (a Unix time;
    an earlier try's runs of the same bump do not count), not among `since`."""
    c = e2e.minio_client(env)
    for o in c.list_objects(env["EDGEBENCH_BUCKET"], prefix="runs/", recursive=True):
        if o.object_name.endswith("/manifest.json") and o.object_name not in since:
            since.add(o.object_name)
            if o.last_modified is not None and o.last_modified.timestamp() < after:
                continue
            r = c.get_object(env["EDGEBENCH_BUCKET"], o.object_name)
            try:
                m = json.loads(r.read())
            finally:
                r.close()
                r.release_conn()
            if (m.get("trigger") or {}).get("new") == new:
                return m["sweep_id"], o.object_name
    return None


def rerun(kube: e2e.Kube, a: argparse.Namespace, report: dict) -> list[str]:
    """A flannel version bump seen by the probe: the Sensor's paired rerun on the lab (the pin and the new version,
    interleaved by round), timed from the bump to the first stored lab run, collected here for the regression card."""
    import functools
    import http.server
    import tempfile
    import threading

    pin, new = "v0.28.9", a.rerun_version
    www = Path(tempfile.mkdtemp(prefix="edgebench-lab-tags-"))
    (www / "flannel.txt").write_text(f"{pin}\nv0.28.7\n")  # the releases as upstream lists them: the pin newest
    httpd = http.server.ThreadingHTTPServer((a.index_host, TAGS_PORT),
                                            functools.partial(e2e._Quiet, directory=str(www)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    entry: dict = {"pin": pin, "new": new}
    report["rerun"] = entry
    try:
        sensor_to_lab(kube, {"repetitions": a.rerun_reps, **({"workloads": a.rerun_workloads} if a.rerun_workloads
                                                            else {})})
        version_sources(kube, a.index_host)
        # what an earlier try recorded as triggered would keep the same bump from triggering again: start clean
        cm = kube.json("-n", NS, "get", "configmap", "edgebench-cni-version-flannel")
        if cm.get("data"):
            cm.pop("data")
            for k in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
                cm["metadata"].pop(k, None)
            kube("replace", "-f", "-", stdin=json.dumps(cm))
        e2e._wait_rollouts(kube, "sensor-name=edgebench-rerun", "Sensor edgebench-rerun")
        stamp = int(time.time())
        cnis = json.dumps(["flannel:vxlan"])
        e2e.PROBE_CNIS = cnis
        first = e2e._probe(kube, f"lab-probe-same-{stamp}", 600)
        if first["status"].get("phase") != "Succeeded":
            return [e2e.explain_failure(kube, first)]
        if "version" in kube.json("-n", NS, "get", "configmap", "edgebench-cni-version-flannel").get("data", {}):
            return ["the probe recorded a flannel version although the newest release is the pin"]
        env = e2e.minio_env(kube)
        seen: set[str] = set()
        before = {w["metadata"]["name"] for w in e2e._reruns(kube)}  # e2e-argo's own calico rerun, say
        (www / "flannel.txt").write_text(f"{new}\n{pin}\nv0.28.7\n")  # the bump
        t_bump, bump_at = time.monotonic(), time.time()
        second = e2e._probe(kube, f"lab-probe-bump-{stamp}", 600)
        if second["status"].get("phase") != "Succeeded":
            return [e2e.explain_failure(kube, second)]
        entry["probe_seconds"] = round(time.monotonic() - t_bump, 1)
        while not (mine := [w for w in e2e._reruns(kube) if w["metadata"]["name"] not in before]):
            if time.monotonic() - t_bump > 300:
                return ["no rerun Workflow was submitted within 300 s of the version bump"]
            time.sleep(2)
        if len(mine) > 1:
            return [f"{len(mine)} reruns were submitted for one bump: {[w['metadata']['name'] for w in mine]}"]
        name = mine[0]["metadata"]["name"]
        entry.update(workflow=name, submitted_after_seconds=round(time.monotonic() - t_bump, 1))
        print(f"lab-argo: rerun {name} submitted {entry['submitted_after_seconds']:.0f} s after the bump", flush=True)
        found = None

        def poll() -> None:
            nonlocal found
            if found is None:
                found = first_run_of(env, new, seen, after=bump_at)
                if found:
                    entry["first_stored_run_after_seconds"] = round(time.monotonic() - t_bump, 1)
                    print(f"lab-argo: first lab run of the rerun stored {entry['first_stored_run_after_seconds']:.0f} s"
                          " after the bump", flush=True)

        done = e2e.wait(kube, name, a.timeout, poll=5, each=poll)
        poll()
        params = {p["name"]: p.get("value", "") for p in done["spec"]["arguments"]["parameters"]}
        entry.update(phase=done["status"].get("phase"), seconds_from_bump=round(time.monotonic() - t_bump, 1),
                     cni_versions=params.get("cni-versions"), cnis=params.get("cnis"))
        errors = [] if entry["phase"] == "Succeeded" else [e2e.explain_failure(kube, done)]
        if found is None:
            return errors + ["the rerun stored no run"]
        entry["sweep_id"] = found[0]
        entry["collect"], manifests = collect(env, found[0])
        versions: dict[str, int] = {}
        for m in manifests:
            v = f"requested {(m.get('environment') or {}).get('cni_version_requested')}, read back " \
                f"{(m.get('environment') or {}).get('cni_version')}, {m.get('status')}"
            versions[v] = versions.get(v, 0) + 1
        entry["runs"] = versions
        return errors
    finally:
        httpd.shutdown()
        httpd.server_close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", default="/var/lib/edgebench-kind-mgmt/kubeconfig",
                    help="the management cluster's (default: the one scripts/kind/mgmt.sh writes for make up's "
                         "cluster)")
    ap.add_argument("--minio-port-forward", action="store_true",
                    help="reach the cluster's MinIO through `kubectl port-forward` (kind: the host does not route "
                         "cluster IPs)")
    ap.add_argument("--index-host", default=e2e.INDEX_ADDR[0],
                    help=f"the host address the cluster's pods reach, where the rerun's release list is served "
                         f"(default {e2e.INDEX_ADDR[0]}; kind: the kind network's gateway, which mgmt.sh lab passes)")
    ap.add_argument("--lab", type=Path, default=Path(os.environ.get("EDGEBENCH_LAB", "/srv/edgebench-lab")))
    ap.add_argument("--preset", type=Path, default=SWEEP, help="the sweep file to submit: workflows/sweep.yaml or "
                    "a preset (workflows/presets/seed-004-kubeadm.yaml); its parameters, then the lab's, then ours")
    ap.add_argument("--cnis", default=None, help="JSON list (default: the preset's, or "
                    "host, flannel vxlan, kube-router bgp, cilium vxlan for sweep.yaml)")
    ap.add_argument("--reps", default=None, help="repetitions (default: the preset's, or 3 for sweep.yaml)")
    ap.add_argument("--sweep-id", default=f"lab-argo-{int(time.time())}")
    ap.add_argument("--param", "-p", action="append", default=[], help="more sweep parameters, NAME=VALUE")
    ap.add_argument("--timeout", type=float, default=6 * 3600, help="seconds the sweep may take (default 6 h)")
    ap.add_argument("--report", type=Path, default=REPO / ".edgebench" / "lab-argo" / "report.json")
    ap.add_argument("--rerun", action="store_true", help="after the sweep (or instead of it, with --no-sweep): a "
                    "flannel version bump seen by the probe, and the Sensor's paired rerun on the lab")
    ap.add_argument("--no-sweep", action="store_true", help="skip the sweep (with --rerun)")
    ap.add_argument("--rerun-version", default="v0.28.10", help="the new flannel version the mirror carries")
    ap.add_argument("--rerun-reps", default="3")
    ap.add_argument("--rerun-workloads", default="", help="the rerun's workloads (JSON list; default: the sweep's)")
    a = ap.parse_args(argv)
    for f in ("inventory.yaml", "id_ed25519", "known_hosts"):
        if not (a.lab / f).is_file():
            print(f"lab-argo: error: {a.lab / f} is missing: the local lab is not up (make lab-local KEEP=1)",
                  file=sys.stderr)
            return 2
    if not Path(a.kubeconfig).is_file():
        print(f"lab-argo: error: {a.kubeconfig} is missing: the management cluster is not up "
              "(make up)", file=sys.stderr)
        return 2
    kube = e2e.Kube(a.kubeconfig)
    forward = None
    if a.minio_port_forward:
        forward, e2e.S3_ENDPOINT = e2e.port_forward(kube)
    try:
        return _main(a, kube)
    finally:
        if forward is not None:
            forward.kill()


def _main(a: argparse.Namespace, kube: e2e.Kube) -> int:
    params = {"substrate": "ssh", "distribution": "kubeadm", "target": TARGET, "sweep-id": a.sweep_id}
    if a.preset.resolve() == SWEEP.resolve():
        params.update(cnis='["host","flannel:vxlan","kube-router:bgp","cilium:vxlan"]', repetitions="3")
    params.update({k: v for k, v in (("cnis", a.cnis), ("repetitions", a.reps)) if v is not None})
    params.update(dict(p.split("=", 1) for p in a.param))
    report: dict = {"sweep_id": a.sweep_id, "parameters": params}
    t0 = time.monotonic()
    apply_templates(kube)
    apply_lab_objects(kube, a.lab)
    if a.no_sweep:
        errors = rerun(kube, a, report) if a.rerun else []
        return _finish(a, report, errors)
    submit(kube, a.kubeconfig, params, a.sweep_id, a.preset)
    done = e2e.wait(kube, a.sweep_id, a.timeout, poll=5)
    report.update(phase=done["status"].get("phase"), seconds=round(time.monotonic() - t0, 1),
                  started=done["status"].get("startedAt"), finished=done["status"].get("finishedAt"))
    errors = [] if report["phase"] == "Succeeded" else [e2e.explain_failure(kube, done)]
    want = planned(params, a.lab / "inventory.yaml", a.preset)
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
                  cni_versions={k: sorted(v) for k, v in versions.items()})
    print(f"lab-argo: {a.sweep_id} {report['phase']} in {report['seconds']:.0f} s: {report['runs_stored']} of "
          f"{len(want)} planned runs stored ({statuses}); versions read back {report['cni_versions']}")
    print(f"lab-argo: copied into {report['collect']['to']}; `make warehouse` shows them beside the host's sweeps")
    if a.rerun and not errors:
        errors += rerun(kube, a, report)
    return _finish(a, report, errors)


def _finish(a: argparse.Namespace, report: dict, errors: list[str]) -> int:
    report["errors"] = errors
    a.report.parent.mkdir(parents=True, exist_ok=True)
    a.report.write_text(json.dumps(report, indent=2, default=str) + "\n")
    if report.get("rerun"):
        print(f"lab-argo: rerun {json.dumps(report['rerun'], default=str)}")
    for e in errors:
        print(f"lab-argo: FAIL {e}", file=sys.stderr)
    print(f"lab-argo: report {a.report}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
