"""The lab's sweep through Argo (`make lab-argo`, scripts/lab-local/argo.py): offline, the Workflow it submits, the
lab overlay's objects and what a cell pod makes of them; live (opt-in), the whole path on the e2e management
cluster and the local lab, skipped naming what is not built or not up."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import manifest_validation as mv
from edgebench.plan import cells as cells_mod
from edgebench.plan import spec
from edgebench.substrates.clusters import inventory as inv_mod
from edgebench.substrates.clusters import lease

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "lab-local"))
import argo as lab_argo  # noqa: E402

LAB_INVENTORY = """# as scripts/lab-local/lab.sh writes it
target: lab-local
artifact_source: http://10.77.0.1:8089   # the lab's mirror
nodes:
  - {name: lab-cp, address: 10.77.0.11, arch: amd64, role: server, user: edgebench, port: 22}
  - {name: lab-w1, address: 10.77.0.12, arch: amd64, role: agent, user: edgebench, port: 22}
  - {name: lab-w2, address: 10.77.0.13, arch: amd64, role: agent, user: edgebench, port: 22}
"""
PARAMS = {"substrate": "ssh", "distribution": "kubeadm", "target": "lab-local", "repetitions": "3",
          "cnis": '["host","flannel:vxlan","kube-router:bgp","cilium:vxlan"]', "sweep-id": "lab-argo-test"}


def test_the_submitted_workflow_is_valid_and_plans_the_lab_cells(tmp_path):
    wf = lab_argo.e2e.workflow_object(REPO / "workflows" / "sweep.yaml", PARAMS, "lab-argo-test")
    mv.validate(wf, source="the Workflow make lab-argo submits")
    got = {p["name"]: p.get("value") for p in wf["spec"]["arguments"]["parameters"]}
    assert {k: got[k] for k in PARAMS} == PARAMS
    inv = tmp_path / "inventory.yaml"
    inv.write_text(LAB_INVENTORY)
    want = lab_argo.planned(PARAMS, inv)
    sweep = spec.load(REPO / "workflows" / "sweep.yaml", overrides=PARAMS)
    cells = cells_mod.expand(sweep)
    assert {(c.cni, c.cni_mode) for c in cells} == {("host", "host"), ("flannel", "vxlan"), ("kube-router", "bgp"),
                                                    ("cilium", "vxlan")}
    assert {c.substrate for c in cells} == {"ssh"} and {c.distribution for c in cells} == {"kubeadm"}
    assert len(want) == sum(len(cells_mod.runs_for(sweep, c)) for c in cells) > 0
    assert all(p.startswith("runs/lab-argo-test/") and p.endswith("/") for p in want)


def test_a_cell_pod_takes_the_lab_mirror_from_the_inventory_and_holds_the_lab_as_its_workflow(tmp_path, monkeypatch):
    inv = inv_mod.loads(LAB_INVENTORY)
    assert inv.artifact_source == "http://10.77.0.1:8089" and inv.target == "lab-local"
    pod = [t for t in yaml.safe_load((REPO / "templates" / "cell-phase.yaml").read_text())["spec"]["templates"]
           if t["name"] == "main"][0]
    env = {e["name"]: e.get("value") for e in pod["container"]["env"]}
    assert env[lease.ENV_HOLDER] == "argo workflow {{workflow.namespace}}/{{workflow.name}}"
    monkeypatch.setenv(lease.ENV_HOLDER, "argo workflow edgebench/lab-argo-test")
    assert lease.default_holder("anything") == "argo workflow edgebench/lab-argo-test"
    monkeypatch.delenv(lease.ENV_HOLDER)
    assert lease.default_holder("s1").startswith(f"edgebench sweep s1 (pid {os.getpid()} on ")
    mounts = {m["name"]: m["mountPath"] for m in pod["container"]["volumeMounts"]}
    assert Path(mounts["inventory"]) == inv_mod.INVENTORY_MOUNT and Path(mounts["ssh-key"]) == inv_mod.SSH_MOUNT


def test_the_lab_objects_are_the_ones_the_lab_overlay_names():
    kust = yaml.safe_load((REPO / "kustomize" / "overlays" / "lab" / "kustomization.yaml").read_text())
    assert kust["configMapGenerator"][0]["name"] == "edgebench-inventory"
    text = (REPO / "kustomize" / "overlays" / "lab" / "kustomization.yaml").read_text()
    assert "edgebench-ssh-key" in text and "id_ed25519" in text and "known_hosts" in text
    calls = []

    class Kube:
        def __call__(self, *args, stdin=None, check=True):
            calls.append(args)
            return "kind: X\n"

    lab_argo.apply_lab_objects(Kube(), Path("/srv/lab"))
    created = [c for c in calls if "create" in c]
    assert any("edgebench-inventory" in c and "--from-file=inventory.yaml=/srv/lab/inventory.yaml" in c
               for c in created)
    assert any("edgebench-ssh-key" in c and "--from-file=id_ed25519=/srv/lab/id_ed25519" in c
               and "--from-file=known_hosts=/srv/lab/known_hosts" in c for c in created)
    patch = [c for c in calls if "patch" in c][0]
    assert json.loads(patch[-1]) == {"data": {"lab-local": "1"}}  # one cell at a time on this lab


def test_without_a_lab_or_a_management_cluster_it_says_which_and_changes_nothing(tmp_path):
    rc = lab_argo.main(["--lab", str(tmp_path), "--kubeconfig", str(tmp_path / "k")])
    assert rc == 2


class _FakeKube:
    """Records kubectl calls; `get configmap` answers with the e2e overlay's version sources."""

    def __init__(self):
        self.calls: list[tuple] = []

    def json(self, *args):
        self.calls.append(("json", *args))
        return {"data": {"sources.yaml": "calico: {type: index, url: 'http://10.250.0.1:18089/calico.json'}\n"}}

    def __call__(self, *args, stdin=None):
        self.calls.append((*args, stdin))
        return ""


@pytest.mark.parametrize("host", ["10.250.0.1", "172.30.0.1"])
def test_the_rerun_release_list_is_served_where_the_management_cluster_s_pods_reach(host):
    kube = _FakeKube()
    lab_argo.version_sources(kube, host)
    patch = [c for c in kube.calls if c[0] == "-n" and "patch" in c]
    doc = yaml.safe_load(json.loads(patch[-1][-2])["data"]["sources.yaml"])
    assert doc["flannel"]["url"] == f"http://{host}:{lab_argo.TAGS_PORT}/flannel.txt"
    applied = [c for c in kube.calls if c[0] == "apply"]
    if host == lab_argo.e2e.INDEX_ADDR[0]:
        assert not applied  # the e2e cluster's sources already name its address
    else:  # kind: every source of the overlay rewritten to the kind network's gateway first
        text = yaml.safe_load(applied[0][-1])["data"]["sources.yaml"]
        assert f"http://{host}:" in text and f"http://{lab_argo.e2e.INDEX_ADDR[0]}:" not in text


def test_help_names_the_kind_options(capsys):
    with pytest.raises(SystemExit) as e:
        lab_argo.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--minio-port-forward", "--index-host", "--kubeconfig", "make up"):
        assert opt in out


def test_mgmt_lab_without_the_kind_cluster_says_so_and_submits_nothing(tmp_path):
    env = {**os.environ, "CLUSTER": "edgebench-no-such-cluster", "EDGEBENCH_TOOLS": str(tmp_path)}
    p = subprocess.run(["bash", str(REPO / "scripts" / "kind" / "mgmt.sh"), "lab"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip() == "mgmt: error: no kind cluster edgebench-no-such-cluster: make up"
    assert not list(tmp_path.iterdir())


def test_install_sh_without_a_kubectl_prints_its_usage():
    p = subprocess.run(["bash", str(REPO / "scripts" / "e2e-argo" / "install.sh")], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 2 and p.stderr.startswith("usage: install.sh KUBECTL")


# -------------------------------------------------------------------------------------------------- live (opt-in)
E2E = Path(os.environ.get("EDGEBENCH_E2E", Path.home() / ".local/share/edgebench/e2e-argo"))
LAB = Path(os.environ.get("EDGEBENCH_LAB", "/srv/edgebench-lab"))
def _kind_up() -> bool:
    return subprocess.run(["bash", str(REPO / "scripts" / "kind" / "mgmt.sh"), "running"],
                          capture_output=True).returncode == 0


def _live_missing() -> list[str]:
    missing = []
    if os.geteuid() != 0:
        missing.append("root")
    if not _kind_up():
        missing.append("the kind management cluster (make up)")
    if not (LAB / "inventory.yaml").is_file():
        missing.append(f"the local lab ({LAB}/inventory.yaml: make lab-local KEEP=1)")
    if not (E2E / "bin" / "kubectl").exists():
        missing.append(f"kubectl for the runner image ({E2E}/bin/kubectl: scripts/e2e-argo/build.sh --k8s)")
    if os.environ.get("EDGEBENCH_LAB_ARGO_LIVE") != "1":
        missing.append("opt-in: EDGEBENCH_LAB_ARGO_LIVE=1 (a kubeadm cluster per cell, tens of minutes)")
    return missing


@pytest.mark.skipif(bool(_live_missing()), reason="not built or not up: " + "; ".join(_live_missing()))
def test_one_real_cell_through_argo_on_the_lab():
    make = shutil.which("make") or "make"
    p = subprocess.run([make, "lab-argo", 'CNIS=["flannel:vxlan"]', "REPS=1", "SWEEP_ID=lab-argo-live-test"],
                       cwd=REPO, capture_output=True, text=True, timeout=3600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    report = json.loads((REPO / ".edgebench" / "lab-argo" / "report.json").read_text())
    assert report["phase"] == "Succeeded" and report["runs_stored"] == report["runs_planned"] > 0
    assert report["cni_versions"]["flannel:vxlan"] == ["v0.28.9"]
