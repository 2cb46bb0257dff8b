"""Triggered reruns on real clusters, offline: a sweep whose `trigger` names the cell's CNI installs trigger.new
instead of the catalog pin (Helm --version, the release manifest URL and image), a CNI the distribution provides
itself is unsupported with the reason, and the installed version read back from the cluster decides whether the
cell's runs are valid. Plain sweeps render exactly as before (the goldens of test_clusters.py).

Golden files: tests/golden/cluster-reruns/<distribution>-<cni>-<mode>.yaml hold what a trigger changes in the
rendering of tests/golden/clusters/ (path -> pinned, rerun). Regenerate them after an intended change with
    EDGEBENCH_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/host/test_cluster_reruns.py
and review the diff before keeping it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from goldens import check_golden
from edgebench.sweep import sampling
from edgebench.plan import spec
from edgebench.plan.catalog import resolve_cni
from edgebench.plan.cells import cell_json, expand, from_json
from edgebench.substrates.base import Unsupported
from edgebench.substrates.clusters.install import cni as cni_mod
from edgebench.substrates.clusters import from_cell
from edgebench.plan.matrix import cni_installs
from edgebench.substrates.clusters.provider import ClusterProvider
from edgebench.substrates.clusters.transport import FakeTransport
from edgebench.sweep import phases
from test_clusters import COMBOS, INV, KUBECONFIG_TEXT, LAB, SAMPLE_FLANNEL, FakeKubectl, render_cell

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "cluster-reruns"

# (distribution, cni, mode, trigger.new): helm, manifest (URL and image), a helm/manifest fallback next to a
# built-in CNI, and the built-in / addon cells that cannot take another version
CASES = [
    ("k3s", "calico", "vxlan", "v3.31.8"),
    ("k3s", "cilium", "vxlan", "1.18.1"),
    ("kubeadm", "antrea", "geneve", "2.6.3"),  # the pin is v2.6.2: spelled as the pin is (v2.6.3)
    ("kubeadm", "flannel", "vxlan", "v0.29.0"),
    ("kind", "kube-router", "bgp", "v2.12.0"),
    ("kubeadm", "weave", "fastdp", "v2.8.2"),
    ("k3s", "flannel", "ipsec", "v0.29.0"),  # k3s dropped ipsec: upstream flannel, so the new version
    ("k0s", "calico", "ebpf", "v3.31.8"),  # not a k0s option: the operator chart, so the new version
    ("k3s", "flannel", "vxlan", "v0.29.0"),  # k3s's own flannel
    ("k0s", "calico", "vxlan", "v3.31.8"),  # k0s's own calico
    ("k0s", "kube-router", "bgp", "v2.12.0"),
    ("microk8s", "calico", "vxlan", "v3.31.8"),
    ("microk8s", "cilium", "vxlan", "1.18.1"),  # the MicroK8s addon
]


def _changes(a: Any, b: Any, path: str = "") -> dict[str, Any]:
    """path -> {pinned, rerun} for every leaf that differs (lists by index, missing = null)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = {}
        for k in list(a) + [k for k in b if k not in a]:
            out.update(_changes(a.get(k), b.get(k), f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = {}
        for i, (x, y) in enumerate(zip(a, b)):
            out.update(_changes(x, y, f"{path}[{i}]"))
        return out
    return {} if a == b else {path: {"pinned": a, "rerun": b}}


@pytest.mark.parametrize("distribution,cni,mode,new", CASES, ids=[f"{d}-{c}-{m}" for d, c, m, _ in CASES])
def test_golden_rerun_changes(distribution, cni, mode, new):
    changes = _changes(render_cell(distribution, cni, mode), render_cell(distribution, cni, mode, new))
    text = yaml.safe_dump({"trigger": {"cni": cni, "new": new}, "changes": changes}, sort_keys=False, width=120)
    check_golden(GOLDEN / f"{distribution}-{cni}-{mode}.yaml", text)


def test_no_stale_rerun_golden_files():
    assert set(GOLDEN.glob("*.yaml")) == {GOLDEN / f"{d}-{c}-{m}.yaml" for d, c, m, _ in CASES}


def _helm_install(doc: dict) -> list[str]:
    return next(c for c in doc["cni"]["commands"] if "upgrade" in c and "--install" in c)


def test_helm_cells_install_the_new_chart_version():
    for cni, mode, new in (("calico", "vxlan", "v3.31.8"), ("cilium", "vxlan", "1.18.1")):
        pinned, rerun = render_cell("k3s", cni, mode), render_cell("k3s", cni, mode, new)
        pin = cni_installs()[cni]["version"]
        argv = _helm_install(rerun)
        assert argv[argv.index("--version") + 1] == new and pin not in argv
        assert _helm_install(pinned)[argv.index("--version") + 1] == pin
        assert rerun["cni"]["version"] == rerun["cni"]["version_requested"] == new
        assert "unsupported" not in rerun["cni"]
        assert rerun["distribution"] == pinned["distribution"]  # the cluster is built the same way
    # a CI that writes 3.31.8 for the tag v3.31.8 gets the pin's spelling (the version in URLs and image tags)
    assert cni_mod.spelled_like("v3.31.7", "3.31.8") == "v3.31.8"
    assert cni_mod.spelled_like("1.18.0", "v1.18.1") == "1.18.1"
    argv = _helm_install(render_cell("kubeadm", "calico", "bgp", "3.31.8"))
    assert argv[argv.index("--version") + 1] == "v3.31.8"


def test_manifest_cells_fetch_the_new_release():
    doc = render_cell("kubeadm", "flannel", "vxlan", "v0.29.0")["cni"]
    assert doc["manifest_url"] == "https://github.com/flannel-io/flannel/releases/download/v0.29.0/kube-flannel.yml"
    assert doc["version"] == "v0.29.0"
    doc = render_cell("kind", "kube-router", "bgp", "v2.12.0")["cni"]
    assert doc["manifest_url"] == ("https://raw.githubusercontent.com/cloudnativelabs/kube-router/v2.12.0/daemonset/"
                                   "kubeadm-kuberouter.yaml")
    assert doc["patches"][0] == {"op": "image", "kind": "DaemonSet", "name": "kube-router", "container": "kube-router",
                                 "image": "docker.io/cloudnativelabs/kube-router:v2.12.0"}
    assert "v2.11.1" not in json.dumps(doc)


def test_no_trigger_renders_exactly_as_before():
    """A plain sweep passes no version: the plan is the pinned one, without the rerun fields (test_clusters.py
    checks every cell against its golden file). A trigger at the pinned version changes nothing but
    version_requested (and, where the distribution provides the CNI, the reason it is unsupported): the override
    touches the version and nothing else."""
    for d, c, m in COMBOS:
        pinned = render_cell(d, c, m)
        assert "version_requested" not in pinned["cni"] and "unsupported" not in pinned["cni"]
        pin = cni_installs()[c]["version"]
        if pin is None:  # the host baseline has no version to rerun
            continue
        rerun = render_cell(d, c, m, pin)
        assert rerun["cni"].pop("version_requested") == pin, (d, c, m)
        reason = rerun["cni"].pop("unsupported", None)
        assert (reason is not None) == (pinned["cni"]["via"] in ("builtin", "addon")), (d, c, m)
        assert rerun == pinned, (d, c, m)
    # what the cell JSON carries on Argo: a plain sweep asks for no version
    sweep = _sweep("calico:vxlan")
    assert sweep.cni_version_requested(expand(sweep)[0]) is None
    back, cell = from_json(cell_json(sweep, expand(sweep)[0]))
    assert back.cni_version_requested(cell) is None


def test_built_in_cnis_are_unsupported_under_a_trigger():
    doc = render_cell("k3s", "flannel", "vxlan", "v0.29.0")["cni"]
    assert doc["unsupported"].startswith("flannel is built into k3s v1.33.3+k3s1; its version follows the "
                                         "distribution's")
    assert doc["version"] == "v0.28.9" and doc["via"] == "builtin"  # nothing else is installed in its place
    assert "calico is built into k0s" in render_cell("k0s", "calico", "wireguard", "v3.31.8")["cni"]["unsupported"]
    addon = render_cell("microk8s", "cilium", "vxlan", "1.18.1")["cni"]["unsupported"]
    assert "installed by the distribution's addon (microk8s enable community && microk8s enable cilium)" in addon
    assert "follows the distribution's (microk8s 1.33/stable)" in addon
    # a mode the catalog installs separately next to the built-in CNI takes the new version
    assert "unsupported" not in render_cell("k3s", "flannel", "ipsec", "v0.29.0")["cni"]
    assert "unsupported" not in render_cell("k0s", "calico", "ebpf", "v3.31.8")["cni"]


# ---------------------------------------------------------------------------------------------- provider
class Cluster(FakeKubectl):
    """FakeKubectl that also answers the version readback: `helm list -o json` with `chart` for the CNI's release,
    `kubectl get daemonset -o json` with `image` in the readback container."""

    def __init__(self, cni: str, chart: str | None = None, image: str | None = None, fail_on: str | None = None):
        super().__init__(fail_on)
        self.cni, self.chart, self.image = cni, chart, image

    def __call__(self, argv, input=None, check=True):
        out = super().__call__(argv, input, check)
        info = cni_installs()[self.cni]
        if argv[0] == "helm" and "list" in argv and self.chart is not None:
            return json.dumps([{"name": info["helm"]["release"], "namespace": info["helm"]["namespace"],
                                "revision": "1", "status": "deployed", "chart": self.chart, "app_version": "x"}])
        if argv[0] == "kubectl" and "get" in argv and "daemonset" in argv and self.image is not None:
            rb = info["version_readback"]
            return json.dumps({"kind": "DaemonSet", "spec": {"template": {"spec": {"containers": [
                {"name": "sidecar", "image": "example.org/other:v9.9.9"},
                {"name": rb["container"], "image": self.image}]}}}})
        return out


def _transport() -> FakeTransport:
    t = FakeTransport()
    t.respond("cat /etc/rancher/k3s/k3s.yaml", KUBECONFIG_TEXT)
    t.respond("uname -r", "6.6.31+rpt-rpi-v8\naarch64\ncoherent_pool=1M")
    return t


def _provider(tmp_path, cni, mode, runner, version, distribution="k3s", fetch=None):
    return ClusterProvider("ssh", distribution, cni, mode, tmp_path, inventory=INV, transport=_transport(),
                           local=runner, fetch=fetch or (lambda url: pytest.fail(f"unexpected fetch {url}")),
                           key_path="/etc/edgebench/ssh/id_ed25519", cell_id="c-test", token=lambda n: "T" * n,
                           cni_version=version)


def test_helm_readback_of_the_requested_version_is_valid(tmp_path):
    k = Cluster("calico", chart="tigera-operator-v3.31.8")
    p = _provider(tmp_path, "calico", "vxlan", k, "v3.31.8")
    p.provision()
    state = p.install_cni(resolve_cni("calico:vxlan"))
    install = next(c for c in k.calls if "upgrade" in c and "--install" in c)
    assert install[install.index("--version") + 1] == "v3.31.8"
    listing = [c for c in k.calls if c[0] == "helm" and "list" in c]
    assert listing == [["helm", "--kubeconfig", str(tmp_path / "kubeconfig"), "list", "--namespace", "tigera-operator",
                        "--filter", "^calico$", "--output", "json"]]
    assert state["cni_version"] == "v3.31.8" and state["cni_version_requested"] == "v3.31.8"
    assert "invalid_reason" not in state
    assert json.loads((tmp_path / "cluster.json").read_text())["cni_version"] == "v3.31.8"


def test_helm_readback_mismatch_makes_the_runs_invalid(tmp_path):
    k = Cluster("calico", chart="tigera-operator-v3.31.7")  # e.g. a mirror that does not have the new chart yet
    p = _provider(tmp_path, "calico", "vxlan", k, "v3.31.8")
    p.provision()
    state = p.install_cni()
    assert state["cni_version"] == "v3.31.7"  # what is installed, never what was asked
    assert state["invalid_reason"] == ("CNI version not in force: calico v3.31.8 was requested, v3.31.7 is installed "
                                       "(Helm release calico in tigera-operator)")
    # nothing could be read: invalid as well, and the cluster is kept (the runs are recorded, not failed)
    k2 = Cluster("cilium", chart=None)
    p2 = _provider(tmp_path / "b", "cilium", "vxlan", k2, "1.18.1")
    p2.provision()
    state = p2.install_cni()
    assert state["cni_version"] is None
    assert "cilium 1.18.1 was requested, but the installed version could not be read back" in state["invalid_reason"]
    assert (tmp_path / "b" / "kubeconfig").exists()  # not torn down: the runs go ahead and are recorded as invalid


def test_manifest_readback_from_the_daemonset_image(tmp_path):
    fetched = []

    def fetch(url):
        fetched.append(url)
        return SAMPLE_FLANNEL.replace("flannel:v0.28.9", "flannel:v0.29.0")

    k = Cluster("flannel", image="ghcr.io/flannel-io/flannel:v0.29.0@sha256:" + "0" * 64)
    p = ClusterProvider("kind", "kind", "flannel", "vxlan", tmp_path, local=k, cell_id="c-kindtest", fetch=fetch,
                        cni_version="v0.29.0")
    p.provision()
    k.nodes = list(p.inventory.nodes)
    state = p.install_cni()
    assert fetched == ["https://github.com/flannel-io/flannel/releases/download/v0.29.0/kube-flannel.yml"]
    assert ["kubectl", "--kubeconfig", str(tmp_path / "kubeconfig"), "get", "daemonset", "-n", "kube-flannel",
            "kube-flannel-ds", "-o", "json"] in k.calls
    assert state["cni_version"] == "v0.29.0" and "invalid_reason" not in state
    k.image = "ghcr.io/flannel-io/flannel:v0.28.9"
    state = p.install_cni()
    assert state["invalid_reason"] == ("CNI version not in force: flannel v0.29.0 was requested, v0.28.9 is installed "
                                       "(DaemonSet kube-flannel/kube-flannel-ds container kube-flannel)")
    # upstream spells the tag 2.8.2 where the pin says v2.8.1: the same version
    plan = cni_mod.render("kubeadm", "weave", "fastdp", cni_mod.ClusterParams("kubeadm", "h", 6443, "h", "k",
                                                                             cni_version="v2.8.2"))
    assert cni_mod.version_problem(plan, "2.8.2") is None and cni_mod.version_problem(plan, "latest")


def test_built_in_cni_under_a_trigger_builds_nothing_and_is_unsupported(tmp_path):
    k = Cluster("flannel")
    p = _provider(tmp_path, "flannel", "vxlan", k, "v0.29.0")
    t = p.transport
    p.provision()
    assert not any("INSTALL_K3S_EXEC" in c.text for c in t.calls)  # no cluster built only to be removed
    with pytest.raises(Unsupported) as exc:
        p.install_cni()
    assert str(exc.value) == ("unsupported: flannel is built into k3s v1.33.3+k3s1; its version follows the "
                              "distribution's, so flannel:vxlan cannot be installed at v0.29.0 there")
    p.teardown()  # idempotent as ever


# ---------------------------------------------------------------------------------------------- phases
def _sweep(cnis: str, trigger: dict | None = None, distribution: str = "k3s") -> spec.Sweep:
    raw = {"substrate": "ssh", "distribution": distribution, "cnis": json.dumps([cnis]),
           "workloads": '["http:payload-echo"]', "http-paths": '["pod-to-pod:cross-node"]', "http-payloads": '["60"]',
           "http-requests": "2", "repetitions": "1"}
    if trigger:
        raw["trigger"] = json.dumps(trigger)
    return spec.from_parameters(raw, source="test")


@pytest.fixture
def key(tmp_path) -> Path:
    k = tmp_path / "keys" / "id_ed25519"
    k.parent.mkdir()
    k.write_text("not a key\n")
    k.chmod(0o600)
    return k


def _run_cell(tmp_path, key, sweep, runner, monkeypatch, transport: FakeTransport | None = None) -> list[dict]:
    """The cell as Argo runs it: the cell JSON (parameters incl. trigger) -> from_json -> the provider with the
    sweep's requested version -> every phase; the manifests written."""
    from edgebench.drivers import http as driver

    monkeypatch.setattr(driver, "measure", lambda *a, **kw: ({}, {"response_p50_ms": 1.0, "response_p99_ms": 2.0},
                                                              None))
    monkeypatch.setattr(sampling, "IDLE_S", 0)
    s, cell = from_json(json.dumps(cell_json(sweep, expand(sweep)[0])))
    provider = from_cell(cell, tmp_path / "work", inventory_path=str(LAB), ssh_key=str(key),
                         cni_version=s.cni_version_requested(cell), transport=transport or _transport(),
                         local=runner,
                         fetch=lambda url: pytest.fail(f"unexpected fetch {url}"), token=lambda n: "T" * n)
    ctx = phases.CellContext(s, cell, workdir=tmp_path / "work", results=tmp_path / "out", provider=provider,
                             log=lambda m: None)
    phases.run_cell(ctx)
    cell_dir = tmp_path / "out" / "runs" / s.sweep_id / cell.cell_id
    return [json.loads((d / "manifest.json").read_text()) for d in sorted(cell_dir.iterdir())]


TRIGGER = {"cni": "calico", "new": "v3.31.8", "previous": "v3.31.7", "source": "https://docs.tigera.io/calico/charts",
           "at": "2026-07-14T06:00:00Z"}


def test_triggered_cell_records_the_mismatch_as_invalid(tmp_path, key, monkeypatch):
    runner = Cluster("calico", chart="tigera-operator-v3.31.7")
    docs = _run_cell(tmp_path, key, _sweep("calico:vxlan", TRIGGER), runner, monkeypatch)
    install = next(c for c in runner.calls if "upgrade" in c and "--install" in c)
    assert install[install.index("--version") + 1] == "v3.31.8"
    assert docs and all(d["status"] == "ok" and d["is_valid"] is False for d in docs)
    assert docs[0]["invalid_reason"] == ("CNI version not in force: calico v3.31.8 was requested, v3.31.7 is "
                                         "installed (Helm release calico in tigera-operator)")
    env = docs[0]["environment"]
    assert env["cni_version"] == "v3.31.7" and env["cni_version_requested"] == "v3.31.8"
    assert docs[0]["trigger"]["new"] == "v3.31.8"


def test_triggered_cell_with_the_new_version_in_force_is_valid(tmp_path, key, monkeypatch):
    docs = _run_cell(tmp_path, key, _sweep("calico:vxlan", TRIGGER), Cluster("calico", chart="tigera-operator-v3.31.8"),
                     monkeypatch)
    assert docs and all(d["status"] == "ok" and d["is_valid"] is True and d["invalid_reason"] is None for d in docs)
    assert docs[0]["environment"]["cni_version"] == docs[0]["environment"]["cni_version_requested"] == "v3.31.8"


def test_triggered_built_in_cell_records_unsupported_runs(tmp_path, key, monkeypatch):
    trigger = {"cni": "flannel", "new": "v0.29.0"}
    t = _transport()
    docs = _run_cell(tmp_path, key, _sweep("flannel:vxlan", trigger), Cluster("flannel"), monkeypatch, t)
    assert docs and all(d["status"] == "unsupported" for d in docs)
    assert docs[0]["error"] == ("unsupported: flannel is built into k3s v1.33.3+k3s1; its version follows the "
                                "distribution's, so flannel:vxlan cannot be installed at v0.29.0 there")
    assert docs[0]["trigger"]["cni"] == "flannel"
    assert not any("INSTALL_K3S_EXEC" in c.text for c in t.calls)  # no k3s was installed for it
    assert any(c.text.endswith("k3s-uninstall.sh") for c in t.calls)  # teardown ran as ever


def test_plain_cell_keeps_the_pin(tmp_path, key, monkeypatch):
    runner = Cluster("calico", chart="tigera-operator-v3.31.7")
    docs = _run_cell(tmp_path, key, _sweep("calico:vxlan"), runner, monkeypatch)
    install = next(c for c in runner.calls if "upgrade" in c and "--install" in c)
    assert install[install.index("--version") + 1] == "v3.31.7"
    # a plain cell reads the installed version back too (issue 32): what the runs record is what the cluster reports
    assert any(c[0] == "helm" and "list" in c for c in runner.calls)
    assert docs and all(d["is_valid"] is True and d["trigger"] is None for d in docs)
    assert docs[0]["environment"]["cni_version"] == "v3.31.7"


def test_cli_threads_the_trigger_into_the_provider(tmp_path):
    from edgebench.cli import phases as cli_phases

    raw = {"substrate": "kind", "distribution": "kind", "cnis": '["cilium:vxlan"]',
           "workloads": '["http:payload-echo"]',
           "trigger": json.dumps({"cni": "cilium", "new": "1.18.1"})}
    s, cell = from_json(json.dumps(cell_json(spec.from_parameters(raw, source="test"),
                                             expand(spec.from_parameters(raw, source="test"))[0])))
    p = cli_phases.provider_for(s, cell, tmp_path)
    assert p.cni_version == "1.18.1" and p.cni_plan().version == "1.18.1"
    raw.pop("trigger")
    s, cell = from_json(json.dumps(cell_json(spec.from_parameters(raw, source="test"),
                                             expand(spec.from_parameters(raw, source="test"))[0])))
    assert cli_phases.provider_for(s, cell, tmp_path).cni_plan().version == "1.18.0"


def test_two_cluster_cell_is_invalid_when_either_member_differs(tmp_path):
    from edgebench.substrates.clusters.intercluster.multicluster import MultiCluster
    from test_multicluster_phases import INV2, Runner, _transport as transport2

    class Members(Runner):
        def __call__(self, argv, input=None, check=True):
            out = super().__call__(argv, input, check)
            if argv[0] == "helm" and "list" in argv:
                version = "v3.31.8" if "/c1/" in " ".join(argv) else "v3.31.7"
                return json.dumps([{"name": "calico", "chart": f"tigera-operator-{version}"}])
            return out

    run = Members()
    mc = MultiCluster("ssh", "k3s", "calico", "vxlan", tmp_path, inventory=INV2, transport=transport2(), local=run,
                      cell_id="c-multi", token=lambda n: "T" * n, cni_version="v3.31.8")
    assert {p.cni_plan().version for p in mc.providers.values()} == {"v3.31.8"}
    mc.provision()
    state = mc.install_cni()
    assert state["invalid_reason"] == ("cluster 2: CNI version not in force: calico v3.31.8 was requested, v3.31.7 is "
                                       "installed (Helm release calico in tigera-operator)")
    assert state["clusters"]["1"]["cni_version"] == "v3.31.8" and "invalid_reason" not in state["clusters"]["1"]
