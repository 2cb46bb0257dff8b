"""The management-cluster install (kustomize/): every kustomization builds offline and every object validates.

The upstream kustomizations point at release URLs on GitHub, which CI cannot reach: they are built here from the
same kustomization.yaml with the URL swapped for a local install (argo_schemas: ../shared/vendor's install.yaml of
the pinned release where present, else the install in the pinned Go module).
"""
from __future__ import annotations

import copy
import ipaddress
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import argo_schemas
import manifest_validation as mv

REPO = mv.REPO
KUSTOMIZE = REPO / "kustomize"
OVERLAYS = sorted(p.parent.name for p in (KUSTOMIZE / "overlays").glob("*/kustomization.yaml"))
UPSTREAM = {  # folder -> (release URL, argo_schemas family, pinned version, namespace)
    "argo-workflows": ("https://github.com/argoproj/argo-workflows/releases/download/{v}/install.yaml",
                       "workflows", mv.ARGO_WORKFLOWS_VERSION, "argo"),
    "argo-events": ("https://github.com/argoproj/argo-events/releases/download/{v}/install.yaml",
                    "events", mv.ARGO_EVENTS_VERSION, "argo-events"),
}
RUNNER, HTTP = "ghcr.io/edgebench/edgebench-runner", "ghcr.io/edgebench/edgebench-http"


def kustomize_command() -> list[str]:
    """The standalone kustomize `make setup` builds into $EDGEBENCH_TOOLS (on PATH under make), else kubectl's."""
    from edgebench import sh
    if exe := sh.which("kustomize"):
        return [exe, "build"]
    if exe := shutil.which("kubectl"):
        return [exe, "kustomize"]
    pytest.fail("kustomize is required for these tests (make setup builds it into $EDGEBENCH_TOOLS)", pytrace=False)


def kustomize_build(path: Path) -> list[dict]:
    cmd = kustomize_command()
    proc = subprocess.run([*cmd, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{' '.join(cmd)} {path} failed:\n{proc.stderr}"
    return mv.load_yaml_docs(proc.stdout)


@pytest.fixture(scope="module")
def builds() -> dict[str, list[dict]]:
    out = {"base": kustomize_build(KUSTOMIZE / "base")}
    for name in OVERLAYS:
        out[name] = kustomize_build(KUSTOMIZE / "overlays" / name)
    return out


def by_kind(objs, kind, name=None):
    return [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


# ------------------------------------------------------------------------------------------ build + validate
def test_expected_overlays_exist():
    assert {"kind", "lab"} <= set(OVERLAYS)


@pytest.mark.parametrize("target", ["base", *OVERLAYS])
def test_build_validates(builds, target):
    objs = builds[target]
    assert objs, f"{target} built nothing"
    mv.validate_all(objs, source=f"kustomize {target}")
    for o in objs:  # everything of the install lives in the management namespace
        if o["kind"] != "Namespace":
            assert o["metadata"].get("namespace") == "edgebench", mv.object_id(o)


def test_base_contents(builds):
    objs = builds["base"]
    for kind, name in [("Deployment", "minio"), ("Service", "minio"), ("PersistentVolumeClaim", "minio"),
                       ("Job", "minio-make-bucket"), ("ConfigMap", "artifact-repositories"),
                       ("ConfigMap", "edgebench-semaphores"), ("ServiceAccount", "edgebench-runner"),
                       ("Role", "edgebench-runner"), ("RoleBinding", "edgebench-runner"),
                       ("ServiceAccount", "edgebench-sensor"), ("Role", "edgebench-sensor"),
                       ("RoleBinding", "edgebench-sensor"), ("Namespace", "edgebench")]:
        assert by_kind(objs, kind, name), f"base lacks {kind} {name}"
    # the controllers stay out of base (they come from kustomize/upstream), so base builds offline
    assert not by_kind(objs, "CustomResourceDefinition")
    assert not [o for o in objs if o["metadata"].get("namespace") in ("argo", "argo-events")]


def test_base_file_layout():
    base = KUSTOMIZE / "base"
    files = [p for p in base.rglob("*.yaml") if p.name != "kustomization.yaml" and "kustomizeconfig" not in p.parts]
    assert files
    for p in files:
        docs = mv.load_yaml_docs(p)
        assert len(docs) == 1, f"{p}: one object per file"
        expected = f"{docs[0]['metadata']['name']}-{docs[0]['kind'].lower()}.yaml"
        assert p.name == expected, f"{p.relative_to(REPO)} should be named {expected}"
        assert p.parent != base, f"{p}: group files in a component folder"


def test_overlays_hold_only_allowed_fields():
    allowed = {"apiVersion", "kind", "resources", "patches", "namespace", "secretGenerator", "configMapGenerator",
               "images", "generatorOptions"}
    for name in OVERLAYS:
        k = yaml.safe_load((KUSTOMIZE / "overlays" / name / "kustomization.yaml").read_text())
        assert set(k) <= allowed, f"overlay {name}: unexpected {set(k) - allowed}"
        assert "../../base" in k["resources"]


# ------------------------------------------------------------------------------------------ MinIO
def test_minio(builds):
    dep = by_kind(builds["base"], "Deployment", "minio")[0]
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert re.fullmatch(r"quay\.io/minio/minio:RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ", c["image"]), c["image"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["readinessProbe"]["httpGet"]["path"].startswith("/minio/health/")
    assert c["livenessProbe"]["httpGet"]["path"].startswith("/minio/health/")
    refs = {e["valueFrom"]["secretKeyRef"]["key"] for e in c["env"] if "valueFrom" in e
            and e["valueFrom"]["secretKeyRef"]["name"] == "edgebench-minio"}
    assert refs == {"accesskey", "secretkey"}
    svc = by_kind(builds["base"], "Service", "minio")[0]
    assert {p["port"] for p in svc["spec"]["ports"]} == {9000, 9001}
    job = by_kind(builds["base"], "Job", "minio-make-bucket")[0]
    (mc,) = job["spec"]["template"]["spec"]["containers"]
    assert re.fullmatch(r"quay\.io/minio/mc:RELEASE\.[0-9TZ-]+", mc["image"])
    assert "mb --ignore-existing" in " ".join(mc["args"]) and "edgebench/edgebench" in " ".join(mc["args"])


def test_artifact_repository(builds):
    cm = by_kind(builds["base"], "ConfigMap", "artifact-repositories")[0]
    key = cm["metadata"]["annotations"]["workflows.argoproj.io/default-artifact-repository"]
    assert key == "default-v1" and key in cm["data"]
    repo = yaml.safe_load(cm["data"][key])
    assert mv.validate_schema_definition(repo, "io.argoproj.workflow.v1alpha1.ArtifactRepository") == []
    s3 = repo["s3"]
    assert (s3["endpoint"], s3["bucket"], s3["insecure"]) == ("minio.edgebench.svc:9000", "edgebench", True)
    assert s3["keyFormat"].startswith("argo/{{workflow.name}}/{{pod.name}}")
    assert s3["accessKeySecret"] == {"name": "edgebench-minio", "key": "accesskey"}
    assert s3["secretKeySecret"] == {"name": "edgebench-minio", "key": "secretkey"}
    # and a typo in the repository would be caught
    bad = copy.deepcopy(repo)
    bad["s3"]["endpont"] = bad["s3"].pop("endpoint")
    assert any("endpont" in p for p in mv.validate_schema_definition(bad, "io.argoproj.workflow.v1alpha1.ArtifactRepository"))


def test_semaphores(builds):
    cm = by_kind(builds["base"], "ConfigMap", "edgebench-semaphores")[0]
    assert set(cm["data"]) == {"local", "kind", "lab"}
    for key, value in cm["data"].items():
        assert isinstance(value, str) and re.fullmatch(r"[1-9][0-9]*", value), f"{key}: {value!r}"
    assert all(v == "1" for v in cm["data"].values()), "one cell per target at a time"


# ------------------------------------------------------------------------------------------ RBAC
def test_rbac_least_privilege(builds):
    objs = builds["base"]
    assert not by_kind(objs, "ClusterRole") and not by_kind(objs, "ClusterRoleBinding")
    for role in by_kind(objs, "Role"):
        for rule in role["rules"]:
            for field in ("verbs", "resources", "apiGroups"):
                assert "*" not in rule.get(field, []), f"Role {role['metadata']['name']}: wildcard in {field}"
            if "secrets" in rule["resources"]:
                assert rule.get("resourceNames"), "secrets only by name"
                assert set(rule["verbs"]) <= {"get"}
    runner = by_kind(objs, "Role", "edgebench-runner")[0]
    assert {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"],
            "verbs": ["create", "patch"]} in runner["rules"]
    sensor = by_kind(objs, "Role", "edgebench-sensor")[0]  # argo submit: get the templates, create; then list
    # validation follows templateRefs: `sweep` and every WorkflowTemplate it refers to, transitively
    wts = {o["metadata"]["name"]: o for o in by_kind(objs, "WorkflowTemplate")}
    reach, todo = set(), ["sweep"]
    while todo:
        name = todo.pop()
        reach.add(name)
        todo += sorted(set(re.findall(r"'templateRef': \{'name': '([a-z0-9-]+)'", str(wts[name]))) - reach)
    assert reach == {"sweep", "cell-phases", "cell-phase", "collect-results"}
    assert sensor["rules"] == [{"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["create", "list"]},
                               {"apiGroups": ["argoproj.io"], "resources": ["workflowtemplates"],
                                "resourceNames": sorted(reach, key=["sweep", "cell-phases", "cell-phase",
                                                                    "collect-results"].index),
                                "verbs": ["get"]}]
    # the other Argo Events and probe identities: tests/host/test_events.py checks their exact rules
    for name in ("edgebench-runner", "edgebench-sensor", "edgebench-version-watch", "edgebench-version-probe"):
        rb = by_kind(objs, "RoleBinding", name)[0]
        assert rb["roleRef"]["name"] == name
        assert rb["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": "edgebench"}]


# ------------------------------------------------------------------------------------------ secrets
def test_nothing_secret_committed(builds):
    for target in ("base", "lab"):
        for s in by_kind(builds[target], "Secret"):
            assert not s.get("data") and not s.get("stringData"), f"{target}: Secret {s['metadata']['name']} has data"
    assert not list((KUSTOMIZE).rglob("*.pem")) and not list(KUSTOMIZE.rglob("id_*"))
    secrets = by_kind(builds["kind"], "Secret")
    assert [s["metadata"]["name"] for s in secrets] == ["edgebench-minio"], "the dev MinIO secret only"
    assert set(secrets[0]["data"]) == {"accesskey", "secretkey"}


# ------------------------------------------------------------------------------------------ images
def _images(objs):
    out = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "image" and isinstance(v, str):
                    out.add(v)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(objs)
    return out


def test_all_images_pinned(builds):
    for target, objs in builds.items():
        for image in _images(objs):
            name, _, tag = image.rpartition(":") if "@" not in image else (image, ":", "digest")
            assert name and tag and tag != "latest", f"{target}: image {image!r} not pinned"


WT_FIXTURE = """\
apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata:
  name: fixture-images
spec:
  entrypoint: main
  templates:
    - name: main
      container: {image: "ghcr.io/edgebench/edgebench-runner:0.1.0", command: [edgebench]}
    - name: script
      script: {image: "ghcr.io/edgebench/edgebench-runner:0.1.0", command: [sh], source: "true"}
    - name: with-sidecar
      container: {image: "ghcr.io/edgebench/edgebench-runner:0.1.0"}
      sidecars: [{name: http, image: "ghcr.io/edgebench/edgebench-http:0.1.0"}]
"""


def test_images_transformer_rewrites_workflowtemplates(tmp_path):
    """Copy base with a fixture WorkflowTemplate in place of ../../templates, apply the kind overlay's images."""
    root = tmp_path / "kustomize"
    shutil.copytree(KUSTOMIZE / "base", root / "base")
    shutil.copytree(KUSTOMIZE / "overlays" / "kind", root / "overlays" / "kind")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "fixture-images.yaml").write_text(WT_FIXTURE)
    (tmp_path / "templates" / "kustomization.yaml").write_text("resources: [fixture-images.yaml]\n")
    objs = kustomize_build(root / "overlays" / "kind")
    (wt,) = by_kind(objs, "WorkflowTemplate", "fixture-images")
    t = {x["name"]: x for x in wt["spec"]["templates"]}
    assert t["main"]["container"]["image"] == "edgebench-runner:dev"
    assert t["script"]["script"]["image"] == "edgebench-runner:dev"
    assert t["with-sidecar"]["sidecars"][0]["image"] == "edgebench-http:dev"
    mv.validate(wt)


def test_real_templates_use_the_runner_image(builds):
    wts = by_kind(builds["kind"], "WorkflowTemplate")
    for img in _images(wts):
        assert not img.startswith(RUNNER) and not img.startswith(HTTP), f"not retagged by the kind overlay: {img}"
    assert not [i for i in _images(by_kind(builds["base"], "WorkflowTemplate"))
                if "edgebench-runner" in i and not i.startswith(RUNNER + ":")]


# ------------------------------------------------------------------------------------------ overlays
def test_kind_cluster_config():
    cfg = yaml.safe_load((KUSTOMIZE / "overlays" / "kind" / "kind-cluster.yaml").read_text())
    assert cfg["kind"] == "Cluster" and cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    roles = [n["role"] for n in cfg["nodes"]]
    assert roles.count("control-plane") == 1 and "worker" in roles
    for n in cfg["nodes"]:
        assert re.fullmatch(r"kindest/node:v1\.\d+\.\d+@sha256:[0-9a-f]{64}", n["image"]), n["image"]
        minor = re.search(r":v1\.(\d+)\.", n["image"]).group(1)
        assert mv.K8S_SCHEMA_VERSION == f"1.{minor}", "validate against the version the kind cluster runs"


RFC5737 = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]


def test_lab_inventory(builds):
    cm = by_kind(builds["lab"], "ConfigMap", "edgebench-inventory")[0]
    inv = yaml.safe_load(cm["data"]["inventory.yaml"])
    assert inv["target"] in by_kind(builds["lab"], "ConfigMap", "edgebench-semaphores")[0]["data"]
    nodes = inv["nodes"]
    assert len({n["name"] for n in nodes}) == len(nodes) >= 2
    assert any(n["role"] == "server" for n in nodes)
    for n in nodes:
        assert set(n) <= {"name", "address", "arch", "role", "user", "port"}, n
        assert n["arch"] in ("arm64", "amd64") and n["role"] in ("server", "agent") and n["user"]
        assert any(ipaddress.ip_address(n["address"]) in net for net in RFC5737), \
            f"{n['name']}: the committed inventory must use RFC 5737 example addresses"


# ------------------------------------------------------------------------------------------ upstream
@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_upstream_pinned_and_builds_from_local_install(tmp_path, name):
    url_format, family, version, namespace = UPSTREAM[name]
    src = KUSTOMIZE / "upstream" / name / "kustomization.yaml"
    k = yaml.safe_load(src.read_text())
    assert k["resources"] == [url_format.format(v=version)], "pinned release URL, same version as argo_schemas pins"
    assert k["namespace"] == namespace
    # the same kustomization, with the remote resource replaced by a local install: the pinned release's from
    # ../shared/vendor, else the Go module's (Argo Workflows: v3.7.9, whose images the `images:` pins retag)
    argo_schemas.install_yaml(mv.schema_source(family), tmp_path, kustomize_command())
    (tmp_path / "kustomization.yaml").write_text(src.read_text().replace(k["resources"][0], "install.yaml"))
    objs = kustomize_build(tmp_path)
    crds = by_kind(objs, "CustomResourceDefinition")
    assert crds and all(o["metadata"].get("namespace") in (None, namespace) for o in objs)
    for dep in by_kind(objs, "Deployment"):
        assert dep["metadata"]["namespace"] == namespace
        for c in dep["spec"]["template"]["spec"]["containers"]:
            assert c["image"].endswith(":" + version), f"{c['image']} not pinned to {version}"
    for o in objs:
        if o["kind"] in ("Deployment", "Service", "ServiceAccount", "Role", "RoleBinding", "ConfigMap"):
            mv.validate(o, source=f"upstream/{name}")


# ------------------------------------------------------------------------------------------ validate() itself
WT = """\
apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata:
  name: run-probe
  annotations: {workflows.argoproj.io/description: "a probe"}
spec:
  entrypoint: main
  serviceAccountName: edgebench-runner
  activeDeadlineSeconds: 600
  templates:
    - name: main
      retryStrategy: {limit: 3}
      activeDeadlineSeconds: 300
      synchronization:
        semaphores:
          - configMapKeyRef: {name: edgebench-semaphores, key: "{{inputs.parameters.target}}"}
      inputs:
        parameters:
          - {name: target, description: "target cluster"}
      container:
        image: ghcr.io/edgebench/edgebench-runner:0.1.0
        args: [probe]
        resources: {requests: {cpu: 1, memory: 64Mi}}
"""


def test_validate_accepts_good_workflowtemplate():
    (wt,) = mv.load_yaml_docs(WT)
    mv.validate(wt)


@pytest.mark.parametrize("mutate, expect", [
    (lambda o: o["spec"]["templates"][0].__setitem__("contaner", o["spec"]["templates"][0].pop("container")),
     "spec.templates[0].contaner"),
    (lambda o: o["spec"]["templates"][0]["container"].__setitem__("imagePullPolicyy", "Always"), "imagePullPolicyy"),
    (lambda o: o["metadata"].__setitem__("lables", {}), "metadata.lables"),
    (lambda o: o["spec"].__setitem__("activeDeadlineSeconds", ["600"]), "spec.activeDeadlineSeconds"),
    (lambda o: o["spec"].__setitem__("templates", {"name": "main"}), "spec.templates"),
    (lambda o: o.__setitem__("apiVersion", "argoproj.io/v1"), "apiVersion"),
    # a controller rule no schema states (found on the real v3.7.9 controller by make e2e-argo)
    (lambda o: o["spec"]["templates"].append({"name": "all", "activeDeadlineSeconds": 60,
                                              "dag": {"tasks": [{"name": "a", "template": "main"}]}}),
     "spec.templates[1].activeDeadlineSeconds: only valid for leaf templates"),
    (lambda o: o["spec"]["templates"].append({"name": "all", "dag": {"tasks": [
        {"name": "a", "template": "main", "withParam": "[1]", "hooks": {"exit": {"template": "main", "arguments": {
            "parameters": [{"name": "target", "value": "{{item}}"}]}}}}]}}),
     "exit hook arguments use {{item}}"),
    (lambda o: o["spec"]["templates"].append({"name": "all", "dag": {"tasks": [
        {"name": "a", "template": "main", "when": "1 == 2", "hooks": {"exit": {"template": "main"}}}]}}),
     "the controller runs it even when the task is skipped"),
    (lambda o: o["spec"]["templates"][0]["container"]["args"].append("{{inputs.parameters.sweep-id}}"),
     "{{inputs.parameters.sweep-id}} is not an input of template 'main'"),
])
def test_validate_rejects_bad_workflowtemplate(mutate, expect):
    (wt,) = mv.load_yaml_docs(WT)
    mutate(wt)
    with pytest.raises(mv.ManifestError) as exc:
        mv.validate(wt, source="fixture")
    assert "WorkflowTemplate run-probe (fixture)" in str(exc.value) and expect in str(exc.value)


def test_validate_builtin_kinds_strict():
    good = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}}
    mv.validate(good)
    with pytest.raises(mv.ManifestError, match="dta"):
        mv.validate({**good, "dta": {}})
    with pytest.raises(mv.ManifestError, match="rules"):
        mv.validate({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
                     "rules": [{"apiGroups": [""], "resources": "pods", "verbs": ["get"]}]})
    with pytest.raises(mv.ManifestError, match="no schema"):
        mv.validate({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}})


def test_validate_events_kinds():
    sensor = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Sensor", "metadata": {"name": "s"},
              "spec": {"template": {"serviceAccountName": "edgebench-sensor"},
                       "dependencies": [{"name": "d", "eventSourceName": "webhook", "eventName": "sweep"}],
                       "triggers": [{"template": {"name": "t", "argoWorkflow": {"operation": "submit"}}}]}}
    mv.validate(sensor)
    bad = copy.deepcopy(sensor)
    bad["spec"]["dependencies"][0]["eventSourceNam"] = "x"
    with pytest.raises(mv.ManifestError, match="eventSourceNam"):
        mv.validate(bad)
