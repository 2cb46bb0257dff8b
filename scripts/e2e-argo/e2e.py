"""Submit edgebench workflows to the management cluster's real Argo controller (`make e2e-argo`: kind, built here by
`make up`) and check what they stored.

A Workflow object is all `argo submit` creates, so this creates the object itself (kubectl create) with the
`-p NAME=VALUE` overrides written into spec.arguments, waits for it while printing the node phases, and then
checks MinIO (the in-cluster one, through `kubectl port-forward`) for exactly the run prefixes the planner
expects for the same parameters — the keys a local sweep writes — and builds the warehouse from them.

    python scripts/e2e-argo/e2e.py --kubeconfig K --minio-port-forward --index-host GATEWAY [--report FILE]
    (scripts/kind/mgmt.sh e2e passes these for the kind cluster)

Exits 1 with one line per failed check; writes a JSON report (times, workflow names, key counts).
"""
from __future__ import annotations

import argparse
import copy
import functools
import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
NS = "edgebench"
# the default sweep's tiny variant (workflows/tiny.params.yaml, also `make submit-tiny`'s)
TINY = {k: str(v) for k, v in yaml.safe_load((REPO / "workflows" / "tiny.params.yaml").read_text()).items()}


# the version bump: e2e.py serves calico's Helm index where kustomize/overlays/e2e/version-sources.yaml points
INDEX_ADDR = ("10.250.0.1", 18089)
PROBE_CNIS = '["calico:vxlan"]'


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


def wait(kube: Kube, name: str, timeout: float, poll: float = 3, each=None) -> dict:
    """Poll the Workflow every `poll` seconds (and print its pods' phases when they change) until it ended;
    `each()`, if given, is called before every poll."""
    t0, last = time.monotonic(), ""
    while True:
        if each is not None:
            each()
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
        time.sleep(poll)


def explain_failure(kube: Kube, wf: dict) -> str:
    lines = [f"workflow {wf['metadata']['name']} {wf['status'].get('phase')}: {wf['status'].get('message', '')}"]
    for n in wf["status"].get("nodes", {}).values():
        if n.get("phase") in ("Failed", "Error") and n.get("type") == "Pod":
            lines.append(f"  {n.get('displayName')}: {n.get('message', '')}")
            pod = n.get("id")
            logs = kube("-n", NS, "logs", pod, "-c", "main", "--tail", "15", check=False)
            lines += [f"    | {x}" for x in logs.splitlines()]
    return "\n".join(lines)


# where this process reaches MinIO: None = the service's cluster IP (for a cluster whose service network the host
# routes); kind's is not routed, so --minio-port-forward sets a local port of `kubectl port-forward`
S3_ENDPOINT: str | None = None


def minio_env(kube: Kube) -> dict[str, str]:
    endpoint = S3_ENDPOINT
    if endpoint is None:
        endpoint = kube("-n", NS, "get", "svc", "minio", "-o", "jsonpath={.spec.clusterIP}").strip() + ":9000"
    return {"EDGEBENCH_S3_ENDPOINT": endpoint, "EDGEBENCH_S3_ACCESS_KEY": "edgebench",
            "EDGEBENCH_S3_SECRET_KEY": "edgebench-secret", "EDGEBENCH_BUCKET": "edgebench"}


def minio_client(env: dict[str, str]):
    """A MinIO client for the store minio_env names (results.store's own S3Config)."""
    from edgebench.results.records.store import S3Config

    return S3Config(env["EDGEBENCH_S3_ENDPOINT"], env["EDGEBENCH_S3_ACCESS_KEY"], env["EDGEBENCH_S3_SECRET_KEY"],
                    env["EDGEBENCH_BUCKET"]).client()


def expected_prefixes(path: Path, overrides: dict[str, str]) -> dict[str, str]:
    """run prefix -> status the planner gives it, for the same file and parameters (what a local sweep writes)."""
    from edgebench.plan import cells as cells_mod
    from edgebench.plan import spec

    sweep = spec.load(path, substrate="local", overrides=overrides)
    return {r.prefix: r.label for c in cells_mod.expand(sweep) for r in cells_mod.runs_for(sweep, c)}


def stored_objects(env: dict[str, str], sweep_id: str) -> list[str]:
    client = minio_client(env)
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
    rerun = report.get("events") or {}
    if rerun.get("sweep_id") and by_sweep.get(rerun["sweep_id"], 0) != rerun.get("runs_expected"):
        errors.append(f"warehouse: the rerun {rerun['sweep_id']} has {by_sweep.get(rerun['sweep_id'], 0)} runs in "
                      f"stg_edgebench__runs, expected {rerun.get('runs_expected')}")
    for wf in report["workflows"]:
        if wf.get("runs_expected") and by_sweep.get(wf["workflow"], 0) != wf["runs_expected"]:
            errors.append(f"warehouse: {wf['workflow']} has {by_sweep.get(wf['workflow'], 0)} runs in stg_runs, "
                          f"expected {wf['runs_expected']}")
    return errors


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _wait_rollouts(kube: Kube, selector: str, what: str, timeout: float = 180) -> None:
    t0 = time.monotonic()
    while not kube("-n", NS, "get", "deploy", "-l", selector, "-o", "name", check=False).strip():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"the Argo Events controller made no Deployment for {what} in {timeout:.0f} s")
        time.sleep(2)
    kube("-n", NS, "wait", "--for=condition=Available", "deploy", "-l", selector, f"--timeout={int(timeout)}s")


def _probe(kube: Kube, name: str, timeout: float) -> dict:
    wf = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": name},
          "spec": {"workflowTemplateRef": {"name": "version-probe"},
                   "arguments": {"parameters": [{"name": "cnis", "value": PROBE_CNIS}]}}}
    kube("-n", NS, "create", "-f", "-", stdin=yaml.safe_dump(wf))
    return wait(kube, name, timeout)


def _reruns(kube: Kube) -> list[dict]:
    items = kube.json("-n", NS, "get", "workflows")["items"]
    return [w for w in items if w["metadata"]["name"].startswith("edgebench-rerun-")]


def port_forward(kube: Kube) -> tuple[subprocess.Popen, str]:
    """`kubectl port-forward svc/minio :9000` on a free local port: (the process, 127.0.0.1:PORT)."""
    p = subprocess.Popen(kube.base + ["-n", NS, "port-forward", "svc/minio", ":9000"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()  # "Forwarding from 127.0.0.1:PORT -> 9000"
    m = re.search(r"127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        raise RuntimeError(f"kubectl port-forward svc/minio: {line.strip() or p.stderr.read().strip()}")
    return p, f"127.0.0.1:{m.group(1)}"


def point_sources_at(kube: Kube, host: str) -> None:
    """Rewrite the version sources' ConfigMap so that the probe asks the index server on HOST (a host address the
    cluster's pods reach: the kind network's gateway)."""
    text = (REPO / "kustomize" / "overlays" / "e2e" / "version-sources.yaml").read_text()
    text = text.replace(f"http://{INDEX_ADDR[0]}:", f"http://{host}:")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "edgebench-e2e-version-sources", "namespace": NS},
          "data": {"sources.yaml": text}}
    kube("apply", "-f", "-", stdin=yaml.safe_dump(cm))


def events(kube: Kube, timeout: float, report: dict, index_host: str = INDEX_ADDR[0]) -> list[str]:
    """Bump calico's version on the index server: the probe records it, the EventSource sees the ConfigMap change,
    the Sensor submits a sweep of only calico's cells, and its runs land in MinIO with the trigger."""
    if index_host != INDEX_ADDR[0]:
        point_sources_at(kube, index_host)
    www = Path(tempfile.mkdtemp(prefix="edgebench-e2e-index-"))
    (www / "calico").mkdir()
    index = yaml.safe_load((REPO / "tests" / "data" / "versions" / "calico-index.yaml").read_text())
    (www / "calico" / "index.yaml").write_text(yaml.safe_dump(index))
    httpd = http.server.ThreadingHTTPServer((index_host, INDEX_ADDR[1]), functools.partial(_Quiet, directory=str(www)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    t0 = time.monotonic()
    entry: dict = {}
    report["events"] = entry
    try:
        _wait_rollouts(kube, "eventsource-name=edgebench-cni-versions", "EventSource edgebench-cni-versions")
        _wait_rollouts(kube, "sensor-name=edgebench-rerun", "Sensor edgebench-rerun")
        entry["ready_seconds"] = round(time.monotonic() - t0, 1)
        stamp = int(time.time())
        # 1. the index's newest release is the catalog pin: the probe records nothing, nothing reruns
        first = _probe(kube, f"e2e-probe-same-{stamp}", timeout)
        if first["status"].get("phase") != "Succeeded":
            return [explain_failure(kube, first)]
        unchanged = kube.json("-n", NS, "get", "configmap", "edgebench-cni-version-calico").get("data", {})
        if "version" in unchanged:
            return [f"the probe recorded calico {unchanged['version']!r} although the index's newest release is "
                    "the catalog pin"]
        # 2. a newer calico appears upstream
        bumped = copy.deepcopy(index)
        chart = bumped["entries"]["tigera-operator"]
        stable = [e for e in chart if re.fullmatch(r"v?\d+\.\d+\.\d+", str(e["version"]))]
        newest = copy.deepcopy(stable[0])  # the newest release (pre-releases do not count)
        old_version = str(newest["version"])
        major, minor, patch = old_version.lstrip("v").split(".")[:3]
        new_version = f"v{major}.{minor}.{int(patch) + 1}"
        newest["version"] = newest["appVersion"] = new_version
        chart.insert(0, newest)
        (www / "calico" / "index.yaml").write_text(yaml.safe_dump(bumped))
        if _reruns(kube):
            return ["a rerun was submitted although no CNI version changed"]
        t_bump = time.monotonic()
        second = _probe(kube, f"e2e-probe-bump-{stamp}", timeout)
        if second["status"].get("phase") != "Succeeded":
            return [explain_failure(kube, second)]
        cm = kube.json("-n", NS, "get", "configmap", "edgebench-cni-version-calico")
        recorded = cm.get("data", {}).get("version")
        entry.update(previous=old_version, bumped_to=new_version, recorded=recorded)
        if recorded != new_version:
            return [f"the probe recorded calico {recorded!r}, expected {new_version}"]
        # 3. the Sensor's rerun
        while not _reruns(kube):
            if time.monotonic() - t_bump > 180:
                return ["no rerun Workflow was submitted within 180 s of the version bump "
                        f"(sensor logs: kubectl -n {NS} logs -l sensor-name=edgebench-rerun)"]
            time.sleep(2)
        (rerun,) = _reruns(kube)
        name = rerun["metadata"]["name"]
        entry["submitted_after_seconds"] = round(time.monotonic() - t_bump, 1)
        done = wait(kube, name, timeout)
        entry.update(workflow=name, phase=done["status"].get("phase"),
                     seconds_from_bump=round(time.monotonic() - t_bump, 1))
        if entry["phase"] != "Succeeded":
            return [explain_failure(kube, done)]
        params = {p["name"]: p.get("value", "") for p in done["spec"]["arguments"]["parameters"]}
        trigger = json.loads(params.get("trigger") or "{}")
        entry.update(cnis=params.get("cnis"), trigger=trigger)
        errors = []
        if json.loads(params["cnis"]) != ["calico:vxlan"]:
            errors.append(f"the rerun's cnis are {params['cnis']}, expected only calico's: [\"calico:vxlan\"]")
        if trigger.get("cni") != "calico" or trigger.get("new") != new_version:
            errors.append(f"the rerun's trigger is {trigger}, expected calico {new_version}")
        # its runs in MinIO: the planner's runs for the same parameters, each manifest carrying the trigger
        env = minio_env(kube)
        client = minio_client(env)
        manifests = [o.object_name for o in client.list_objects(env["EDGEBENCH_BUCKET"], prefix="runs/",
                                                                  recursive=True)
                     if o.object_name.endswith("/manifest.json")]
        mine = {}
        for key in manifests:
            m = json.loads(client.get_object(env["EDGEBENCH_BUCKET"], key).read())
            if (m.get("trigger") or {}).get("new") == new_version:
                mine[key[: -len("manifest.json")]] = m
        sweep_ids = {k.split("/")[1] for k in mine}
        entry["runs_stored"] = len(mine)
        if len(sweep_ids) != 1:
            return errors + [f"the rerun's runs are under {len(sweep_ids)} sweep ids: {sorted(sweep_ids)}"]
        (sweep_id,) = sweep_ids
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            yaml.safe_dump({"apiVersion": done["apiVersion"], "kind": "Workflow", "metadata": {"name": name},
                            "spec": {k: done["spec"][k] for k in ("workflowTemplateRef", "arguments")}}, f)
            f.flush()
            planned = {k.split("/", 2)[2] for k in expected_prefixes(Path(f.name), {"sweep-id": sweep_id})}
        stored = {k.split("/", 2)[2] for k in mine}
        entry.update(sweep_id=sweep_id, runs_expected=len(planned))
        if stored != planned:
            errors.append(f"the rerun stored runs {sorted(stored)}, the planner gives {sorted(planned)}")
        # a paired rerun (cni-versions [previous, new] from the probe's record) runs each mode at both versions
        paired = [new_version if v == "default" else v for v in json.loads(params.get("cni-versions") or '["default"]')]
        entry["cni_versions"] = paired
        if paired != [old_version, new_version]:
            errors.append(f"the rerun's cni-versions are {paired}, expected the paired [{old_version}, {new_version}]")
        requested = set()
        for key, m in mine.items():
            env_ = m.get("environment", {})
            requested.add(env_.get("cni_version_requested"))
            if env_.get("cni_version_requested") not in paired:
                errors.append(f"{key}manifest.json: environment.cni_version_requested is "
                              f"{env_.get('cni_version_requested')!r}, expected one of {paired}")
        if requested != set(paired):
            errors.append(f"the rerun's runs request {sorted(map(str, requested))}, expected each of {paired}")
        return errors
    finally:
        httpd.shutdown()
        httpd.server_close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--report", default=str(REPO / ".edgebench" / "e2e-argo" / "report.json"))
    ap.add_argument("--timeout", type=float, default=900, help="seconds per workflow (default 900)")
    ap.add_argument("--no-events", action="store_true",
                    help="skip the Argo Events part (version bump -> probe -> Sensor -> rerun)")
    ap.add_argument("--minio-port-forward", action="store_true",
                    help="reach MinIO through `kubectl port-forward` (kind: the host does not route cluster IPs)")
    ap.add_argument("--index-host", default=INDEX_ADDR[0],
                    help=f"the host address the cluster's pods reach, where the version index is served (default "
                         f"{INDEX_ADDR[0]}, the address kustomize/overlays/e2e/version-sources.yaml names; kind: the kind "
                         "network's gateway, which mgmt.sh e2e passes)")
    a = ap.parse_args(argv)
    kube = Kube(a.kubeconfig)
    report: dict = {"workflows": []}
    global S3_ENDPOINT
    forward = None
    if a.minio_port_forward:
        forward, S3_ENDPOINT = port_forward(kube)
    try:
        return _run(kube, a, report)
    finally:
        if forward is not None:
            forward.kill()


def _run(kube: Kube, a: argparse.Namespace, report: dict) -> int:
    errors = run_one(kube, "smoke", REPO / "workflows" / "smoke.yaml", {}, a.timeout, report)
    errors += run_one(kube, "tiny", REPO / "workflows" / "sweep.yaml", TINY, a.timeout, report)
    if not errors and not a.no_events:
        errors += events(kube, a.timeout, report, a.index_host)
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
