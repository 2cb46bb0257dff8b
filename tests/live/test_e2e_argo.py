"""`make e2e-argo`: the sweep on a real Argo controller (v3.7.9) and Argo Events (v1.9.11) on the kind management
cluster that `make up` builds here.

The end-to-end test runs only where everything `make up` needs is already built and cached (the binaries, images,
the lab's mirror and the kind node image: about an hour cold, too long for CI); everything else here is offline: the
overlays, the workflow objects the driver creates, the scripts' usage.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import manifest_validation as mv
from test_kustomize import by_kind, kustomize_build

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts" / "e2e-argo"
E2E = Path(os.environ.get("EDGEBENCH_E2E", Path.home() / ".local/share/edgebench/e2e-argo"))
spec = importlib.util.spec_from_file_location("e2e_driver", SCRIPTS / "e2e.py")
e2e = importlib.util.module_from_spec(spec)
spec.loader.exec_module(e2e)


def _gomodcache() -> Path | None:
    if not shutil.which("go"):
        return None
    return Path(subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip())


def test_e2e_overlay_uses_local_images_and_no_storage_provisioner():
    objs = kustomize_build(REPO / "kustomize" / "overlays" / "e2e")
    mv.validate_all(objs, source="kustomize e2e")
    assert not by_kind(objs, "PersistentVolumeClaim"), "the e2e cluster has no storage provisioner"
    minio = by_kind(objs, "Deployment", "minio")[0]["spec"]["template"]["spec"]
    assert minio["volumes"] == [{"name": "data", "emptyDir": {}}]
    assert minio["containers"][0]["image"] == "edgebench.local/minio:e2e"
    runner_images = set()
    for wt in by_kind(objs, "WorkflowTemplate"):
        for t in wt["spec"]["templates"]:
            for part in ("container", "script"):
                if part in t:
                    runner_images.add(t[part]["image"])
    assert runner_images == {"edgebench.local/edgebench-runner:e2e"}
    # the same base as kind: identical object set apart from the storage claim
    kind = kustomize_build(REPO / "kustomize" / "overlays" / "kind")
    ids = lambda xs: {(o["kind"], o["metadata"]["name"]) for o in xs}  # noqa: E731
    assert ids(kind) - ids(objs) == {("PersistentVolumeClaim", "minio")}


def test_e2e_overlay_runs_the_rerun_path_on_this_cluster():
    objs = kustomize_build(REPO / "kustomize" / "overlays" / "e2e")
    bus = by_kind(objs, "EventBus", "default")[0]["spec"]
    assert "jetstream" not in bus and bus["jetstreamExotic"]["url"] == "nats://e2e-nats.edgebench.svc:4222"
    assert by_kind(objs, "Service", "e2e-nats") and by_kind(objs, "Deployment", "e2e-nats")
    sensor = by_kind(objs, "Sensor", "edgebench-rerun")[0]
    wf = sensor["spec"]["triggers"][0]["template"]["argoWorkflow"]["source"]["resource"]
    params = {p["name"]: p["value"] for p in wf["spec"]["arguments"]["parameters"]}
    # the event fills parameters 0 and 1 (cnis, trigger); the overlay only appends
    assert list(params)[:2] == ["cnis", "trigger"] and params["substrate"] == "local" and params["target"] == "local"
    probe = by_kind(objs, "WorkflowTemplate", "version-probe")[0]
    check = {t["name"]: t for t in probe["spec"]["templates"]}["check"]
    env = {e["name"]: e["value"] for e in check["container"]["env"]}
    sources = by_kind(objs, "ConfigMap", "edgebench-e2e-version-sources")[0]["data"]["sources.yaml"]
    assert env["EDGEBENCH_VERSION_SOURCES"] == "/etc/edgebench/sources/sources.yaml"
    host, port = e2e.INDEX_ADDR
    assert f"http://{host}:{port}/calico" in sources  # a Helm repository: its index.yaml is below it


def test_e2e_argo_install_from_the_module(tmp_path):
    cache = _gomodcache()
    wf = cache / "github.com/argoproj/argo-workflows/v3@v3.7.9/manifests" if cache else None
    ev = cache / "github.com/argoproj/argo-events@v1.9.11/manifests" if cache else None
    if not (wf and wf.is_dir() and ev and ev.is_dir()):
        pytest.skip("Argo Workflows v3.7.9 / Argo Events v1.9.11 modules are not in the Go module cache "
                    "(make argo-schemas, a prerequisite of make test, downloads them)")
    root = tmp_path / "argo"
    shutil.copytree(REPO / "kustomize" / "overlays" / "e2e" / "argo", root, symlinks=False,
                    ignore=shutil.ignore_patterns("upstream", "upstream-events"))
    (root / "upstream").symlink_to(wf)
    (root / "upstream-events").symlink_to(ev)
    objs = kustomize_build(root)
    deps = by_kind(objs, "Deployment")
    assert [d["metadata"]["name"] for d in deps] == ["workflow-controller"], "no argo-server (its UI build fails)"
    pod = deps[0]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["image"] == "edgebench.local/workflow-controller:v3.7.9"
    assert c["args"][c["args"].index("--executor-image") + 1] == "edgebench.local/argoexec:v3.7.9"
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] == 8737
    crds = {o["spec"]["names"]["kind"] for o in by_kind(objs, "CustomResourceDefinition")}
    assert {"Workflow", "WorkflowTemplate", "WorkflowTaskResult", "EventBus", "EventSource", "Sensor"} <= crds
    # Argo Events' controller, with the image built here for itself and for the pods it creates
    shutil.copytree(REPO / "kustomize" / "overlays" / "e2e" / "events", tmp_path / "events")
    events = kustomize_build(tmp_path / "events")
    (ctl,) = by_kind(events, "Deployment", "controller-manager")
    c = ctl["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "edgebench.local/argo-events:v1.9.11" and c["imagePullPolicy"] == "IfNotPresent"
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["ARGO_EVENTS_IMAGE"] == "edgebench.local/argo-events:v1.9.11" and "NAMESPACE" in env
    assert env["IMAGE_PULL_POLICY"] == "IfNotPresent"  # for the EventSource/Sensor pods (default Always)


def test_templates_and_workflows_are_valid_for_v3_7_9_too():
    """The project pins v4.1.2 for users; the e2e run proves v3.7.9: the files must be valid for both schemas."""
    import copy

    import jsonschema

    cache = _gomodcache()
    path = cache / "github.com/argoproj/argo-workflows/v3@v3.7.9/api/jsonschema/schema.json" if cache else None
    if not (path and path.is_file()):
        pytest.skip("github.com/argoproj/argo-workflows/v3@v3.7.9 is not in the Go module cache "
                    "(make argo-schemas, a prerequisite of make test, downloads it)")
    full = copy.deepcopy(json.loads(path.read_text()))
    defs = full["definitions"]
    defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {"type": ["integer", "string"]}
    defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {"type": ["number", "string"]}
    files = sorted((REPO / "templates").glob("*.yaml")) + sorted((REPO / "workflows").rglob("*.yaml"))
    checked = 0
    for f in files:
        for obj in mv.load_yaml_docs(f):
            if obj.get("apiVersion") != "argoproj.io/v1alpha1":
                continue
            ref = {"definitions": defs, "$ref": f"#/definitions/io.argoproj.workflow.v1alpha1.{obj['kind']}"}
            problems = mv._schema_errors(jsonschema.Draft202012Validator(ref), obj)
            assert not problems, f"{f.relative_to(REPO)} {obj['kind']}: {problems}"
            checked += 1
    assert checked >= 10


def test_workflow_object_is_what_argo_submit_creates():
    wf = e2e.workflow_object(REPO / "workflows" / "sweep.yaml", {**e2e.TINY, "sweep-id": "e2e-tiny-1"}, "e2e-tiny-1")
    mv.validate_all([wf], source="e2e tiny sweep")
    assert wf["metadata"]["name"] == "e2e-tiny-1" and "generateName" not in wf["metadata"]
    params = {p["name"]: p["value"] for p in wf["spec"]["arguments"]["parameters"]}
    assert params["cnis"] == '["flannel:vxlan","flannel:host-gw"]' and params["sweep-id"] == "e2e-tiny-1"
    assert params["substrate"] == "local" and params["repetitions"] == "1"
    # the run keys the check expects are the planner's for the same parameters: two cells, one run each
    want = e2e.expected_prefixes(REPO / "workflows" / "sweep.yaml", {**e2e.TINY, "sweep-id": "e2e-tiny-1"})
    assert len(want) == 2 and all(k.startswith("runs/e2e-tiny-1/c-") for k in want)


@pytest.mark.parametrize("script", ["build.sh", "images.sh", "install.sh"])
def test_scripts_parse(script):
    assert subprocess.run(["bash", "-n", str(SCRIPTS / script)]).returncode == 0


KIND = REPO / "scripts" / "kind"
LAB_CACHE = Path(os.environ.get("EDGEBENCH_LAB_CACHE", Path.home() / ".local/share/edgebench/lab"))
KIND_CACHE = Path(os.environ.get("EDGEBENCH_KIND_CACHE", Path.home() / ".local/share/edgebench/kind"))


def _not_cached() -> list[str]:
    out = subprocess.run(["bash", str(SCRIPTS / "build.sh"), "--print"], capture_output=True, text=True,
                         env={**os.environ, "EDGEBENCH_E2E": str(E2E)}).stdout
    missing = [line.split()[0] for line in out.splitlines() if line.endswith("missing")]
    out = subprocess.run(["bash", str(SCRIPTS / "images.sh"), "list"], capture_output=True, text=True,
                         env={**os.environ, "EDGEBENCH_E2E": str(E2E)}).stdout
    missing += [f"image {line.split()[0]}" for line in out.splitlines() if "missing" in line]
    if not (LAB_CACHE / "mirror" / "manifests" / "flannel" / "v0.28.9" / "kube-flannel.yml").is_file():
        missing.append(f"the lab's mirror ({LAB_CACHE}/mirror: scripts/lab-local/mirror.sh build)")
    if not (KIND_CACHE / "images" / "node.tar").is_file():
        missing.append(f"the kind node image ({KIND_CACHE}: scripts/kind/node-image.sh)")
    return missing


@pytest.mark.skipif(os.geteuid() != 0, reason="make up needs root")
def test_sweep_on_a_real_argo_controller():
    missing = _not_cached()
    if missing:
        pytest.skip(f"not built (make e2e-argo builds them, about an hour once): {', '.join(missing)}")
    if subprocess.run(["bash", str(KIND / "mgmt.sh"), "running"], capture_output=True).returncode == 0:
        pytest.skip("a kind management cluster is up (make down first: this test makes its own and removes it)")
    if subprocess.run(["flock", "-n", "/run/edgebench-kind-mgmt.lock", "true"]).returncode != 0:
        pytest.skip("another make up / make down runs on this machine (its lock is held)")
    engine_before = subprocess.run(["docker", "info"], capture_output=True).returncode == 0
    report = REPO / ".edgebench" / "e2e-kind" / "report.json"
    report.unlink(missing_ok=True)
    p = subprocess.run(["make", "--no-print-directory", "e2e-argo"], cwd=REPO, capture_output=True, text=True,
                       timeout=3600, env={**os.environ, "EDGEBENCH_E2E": str(E2E)})
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    r = json.loads(report.read_text())
    assert not r["errors"]
    assert [w["phase"] for w in r["workflows"]] == ["Succeeded", "Succeeded"]
    for w in r["workflows"]:
        assert w["runs_stored"] == w["runs_expected"] > 0
        assert r["warehouse_runs"][w["workflow"]] == w["runs_expected"]
    # Argo Events: the version bump reran only calico's cells, with the trigger, into MinIO and the warehouse
    ev = r["events"]
    assert ev["recorded"] == ev["bumped_to"] != ev["previous"] and ev["phase"] == "Succeeded"
    assert ev["cnis"] == '["calico:vxlan"]' and ev["trigger"]["new"] == ev["bumped_to"]
    assert ev["runs_stored"] == ev["runs_expected"] >= 1 and r["warehouse_runs"][ev["sweep_id"]] == ev["runs_expected"]
    # everything it started is gone: the cluster, and the engine where make up started it
    assert subprocess.run(["bash", str(KIND / "mgmt.sh"), "running"], capture_output=True).returncode != 0
    assert not Path("/var/lib/edgebench-kind-mgmt").exists()
    if not engine_before:  # make up started edgebench's own engine: make down stopped it and left nothing
        left = subprocess.run(["bash", str(KIND / "dockerd.sh"), "leftovers"], capture_output=True, text=True)
        assert left.returncode == 0, left.stdout
