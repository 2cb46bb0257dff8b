"""intercluster/multicluster.py offline: two ClusterProviders (cluster 2 on planned CIDRs) and an
inter-cluster plan run through a fake runner (kubectl / subctl / skupper / clusterlink / docker answered from the
readback fixtures in tests/data/intercluster); bad specs raise one SpecError before anything runs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgebench.errors import SpecError
from edgebench.plan.catalog import resolve_intercluster
from edgebench.sh import CommandError
from edgebench.substrates.clusters import inventory
from edgebench.substrates.clusters import placement as pl
from edgebench.substrates.clusters.intercluster.multicluster import MultiCluster
from edgebench.substrates.clusters.provider import ClusterEndpoint
from edgebench.substrates.clusters.transport import FakeTransport
from manifest_validation import validate

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "intercluster"
INV2 = inventory.load(DATA / "inventory-two-clusters.yaml")


class FakeRunner:
    """The runner side: records argv (and stdin); answers readback commands from the fixtures."""

    ANSWERS = [  # (substrings that must all occur, fixture file or literal text)
        (("show versions",), "@subctl-show-versions-c1.txt"),
        (("bin/subctl version",), "subctl version: v0.18.0\n"),
        (("show connections", "/c1/"), "@subctl-show-connections-c1.txt"),
        (("show connections", "/c2/"), "@subctl-show-connections-c2.txt"),
        (("show gateways", "/c1/"), "@subctl-show-gateways-c1.txt"),
        (("show gateways", "/c2/"), "@subctl-show-gateways-c2.txt"),
        (("skupper", " version"), "@skupper-version-c1.txt"),
        (("link status",), "@skupper-link-status-connected.txt"),
        (("skupper.io/component=router", "/c1/"), "@skupper-router-nodes-c1.txt"),
        (("skupper.io/component=router", "/c2/"), "@skupper-router-nodes-c2.txt"),
        (("clusterlink --version",), "clusterlink version v0.4.0-rev-1a2b3c4\n"),
        (("deployment/cl-controlplane", "jsonpath"), "@clusterlink-controlplane-image.txt"),
        (("peers.clusterlink.net -o json", "/c1/"), "@clusterlink-peers-c1.json"),
        (("peers.clusterlink.net -o json", "/c2/"), "@clusterlink-peers-c2.json"),
        (("app=cl-dataplane", "/c1/"), "@clusterlink-dataplane-nodes-c1.txt"),
        (("app=cl-dataplane", "/c2/"), "@clusterlink-dataplane-nodes-c2.txt"),
        (("docker inspect", "-c1-worker"), "172.18.0.3\n"),
        (("docker inspect", "-c2-worker"), "172.18.0.4\n"),
    ]

    def __init__(self, fail_on: str | None = None):
        self.calls: list[list[str]] = []
        self.inputs: list[str | None] = []
        self.fail_on = fail_on

    def __call__(self, argv, input=None, check=True):
        argv = list(argv)
        self.calls.append(argv)
        self.inputs.append(input)
        text = " ".join(argv)
        if self.fail_on and self.fail_on in text:
            if check:
                raise CommandError(argv, 1, "failed on purpose")
            return ""
        for subs, answer in self.ANSWERS:
            if all(s in text for s in subs):
                return (DATA / answer[1:]).read_text() if answer.startswith("@") else answer
        return ""

    def texts(self) -> list[str]:
        return [" ".join(c) for c in self.calls]

    def index(self, *subs: str) -> int:
        return next(i for i, t in enumerate(self.texts()) if all(s in t for s in subs))


def _mc(tmp_path, runner, distribution="k3s", inv=INV2, transport=None, substrate="ssh", cni="flannel"):
    return MultiCluster(substrate, distribution, cni, "vxlan", tmp_path, inventory=inv if substrate == "ssh" else None,
                        transport=transport or FakeTransport(), local=runner, cell_id="c-multi")


def _backend(tmp_path) -> ClusterEndpoint:
    kc = str(tmp_path / "c1" / "kubeconfig")
    return ClusterEndpoint(pl.NAMESPACE, "10.42.1.11", "c1-worker", "eb-w1-c1-worker", kc)


def test_submariner_connect_export_disconnect(tmp_path):
    run = FakeRunner()
    mc = _mc(tmp_path, run)
    detail = mc.connect_clusters(resolve_intercluster("submariner:vxlan"))
    assert detail["readback"]["connected"] is True and detail["tool_version"] == "0.18.0"
    assert detail["implementation"] == "installed" and detail["model"] is None
    assert detail["cable_driver"] == "libreswan"  # what the clusters report (the fixtures' cable), not the request
    assert detail["gateways"] == ["c1-worker", "c2-worker"]
    assert detail["readback"]["cli_version"] == "subctl version: v0.18.0"
    assert [m["pod_cidr"] for m in detail["readback"]["members"]] == ["10.42.0.0/16", "10.44.0.0/16"]
    assert [m["name"] for m in detail["readback"]["members"]] == ["eb-multi-c1", "eb-multi-c2"]  # from the cell
    texts = run.texts()
    wd = str(tmp_path / "intercluster")
    assert texts[0].startswith("sh -c set -eu") and f"mkdir -p {wd}/bin" in texts[0]
    assert "${WORKDIR}" not in "".join(texts)
    broker = run.index("deploy-broker")
    j1, j2 = run.index("join", "/c1/kubeconfig"), run.index("join", "/c2/kubeconfig")
    assert run.index("label node c1-worker submariner.io/gateway=true") < broker < j1 < j2
    assert "--cable-driver vxlan" in texts[j2] and "--clustercidr 10.44.0.0/16 --servicecidr 10.45.0.0/16" in texts[j2]
    assert not any("serviceexport" in t or "export service" in t for t in texts)  # nothing exported yet
    # export: a Service in cluster 1, subctl export, waits; the clusterset name back
    run.calls.clear(), run.inputs.clear()
    address = mc.export_service(8080, _backend(tmp_path))
    assert address == "eb-ic-8080.edgebench-bench.svc.clusterset.local"
    svc = yaml.safe_load(run.inputs[0])
    validate(svc, source="exported service")
    assert run.calls[0][:3] == ["kubectl", "--kubeconfig", str(tmp_path / "c1" / "kubeconfig")]
    assert svc["metadata"]["name"] == "eb-ic-8080" and svc["spec"]["selector"]["edgebench.io/node"] == "c1-worker"
    assert any("export service" in t and t.endswith("eb-ic-8080") for t in run.texts())
    assert (tmp_path / "intercluster" / "submariner-namespace.yaml").exists()
    n = len(run.calls)
    assert mc.export_service(8080, _backend(tmp_path)) == address  # again: the Service only, no second export
    assert len(run.calls) == n + 1 and run.calls[-1][-3:] == ["apply", "-f", "-"]
    state = json.loads((tmp_path / "intercluster" / "state.json").read_text())
    assert state == {"tool": "submariner", "mode": "vxlan", "service": "eb-ic-8080", "namespace": pl.NAMESPACE,
                     "port": 8080, "exported": {"eb-ic-8080": {"port": 8080, "address": address}}}
    # disconnect: unexport, uninstall cluster 2 before cluster 1; a second call is a no-op
    run.calls.clear()
    mc.disconnect_clusters()
    assert run.index("unexport service", "eb-ic-8080") < run.index("uninstall --yes", "/c2/") < \
        run.index("uninstall --yes", "/c1/")
    assert not (tmp_path / "intercluster" / "state.json").exists()
    run.calls.clear()
    mc.disconnect_clusters()
    assert run.calls == []


def test_disconnect_after_restart_uses_the_saved_plan(tmp_path):
    run = FakeRunner()
    _mc(tmp_path, run).connect_clusters(resolve_intercluster("skupper"))
    run.calls.clear()
    again = _mc(tmp_path, run)  # a new process: only state.json is left
    again.disconnect_clusters()
    texts = run.texts()
    assert any("unexpose service eb-ic" in t for t in texts) and any(t.endswith("--platform kubernetes")
                                                                     and " delete " in t for t in texts)


def test_failed_connect_disconnects(tmp_path):
    run = FakeRunner(fail_on="subctl join")
    mc = _mc(tmp_path, run)
    with pytest.raises(CommandError, match="failed on purpose"):
        mc.connect_clusters(resolve_intercluster("submariner"))
    assert any("uninstall --yes" in t for t in run.texts())
    assert not (tmp_path / "intercluster" / "state.json").exists()


def test_skupper_and_clusterlink_readback(tmp_path):
    for tool, version in (("skupper", "1.7.3"), ("clusterlink", "v0.4.0")):
        run = FakeRunner()
        detail = _mc(tmp_path / tool, run).connect_clusters(resolve_intercluster(tool))
        assert detail["readback"]["connected"] is True and detail["tool_version"] == version
        assert detail["cable_driver"] is None and detail["implementation"] == "installed"
        if tool == "clusterlink":
            assert detail["readback"]["cli_version"].startswith("clusterlink version v0.4.0")
            assert (tmp_path / tool / "intercluster" / "clusterlink-c2.yaml").exists()
            peer = list(yaml.safe_load_all((tmp_path / tool / "intercluster" / "clusterlink-c2.yaml").read_text()))[1]
            assert peer["spec"]["gateways"] == [{"host": "192.0.2.21", "port": 30443}]


@pytest.mark.parametrize("make, message", [
    (lambda tmp, run: _mc(tmp, run, inv=inventory.load(REPO / "kustomize" / "overlays" / "lab" / "inventory.yaml")),
     "cluster 2 has no server"),
    (lambda tmp, run: _mc(tmp, run, distribution="microk8s", cni="calico").connect_clusters(
        resolve_intercluster("submariner")), "does not run on microk8s"),
    (lambda tmp, run: _mc(tmp, run).connect_clusters(resolve_intercluster("submariner:ipsec")),
     "unknown cable driver 'ipsec'"),
    (lambda tmp, run: _mc(tmp, run).export_service(8080, _backend(tmp)), "no inter-cluster tool is connected"),
])
def test_bad_spec_runs_nothing(tmp_path, make, message):
    run = FakeRunner()
    with pytest.raises(SpecError, match=message):
        make(tmp_path, run)
    assert run.calls == []


def test_cluster_2_is_installed_on_the_planned_cidrs(tmp_path):
    mc = _mc(tmp_path, FakeRunner())
    p1, p2 = mc.providers[1], mc.providers[2]
    assert [n.name for n in p1.inventory.nodes] == ["c1-server", "c1-worker"]
    assert [n.name for n in p2.inventory.nodes] == ["c2-server", "c2-worker"]
    s1 = p1.dist_plan().install[1].command
    s2 = p2.dist_plan().install[1].command
    assert "--cluster-cidr=10.42.0.0/16 --service-cidr=10.43.0.0/16 --cluster-dns=10.43.0.10" in s1
    assert "--cluster-cidr=10.44.0.0/16 --service-cidr=10.45.0.0/16 --cluster-dns=10.45.0.10" in s2
    assert p2.params().pod_cidr == "10.44.0.0/16" and p2.service_ip() == "10.45.0.200"
    k0s = _mc(tmp_path / "k0s", FakeRunner(), distribution="k0s", cni="calico")
    net = yaml.safe_load(k0s.providers[2].dist_plan().files["k0sctl.yaml"])["spec"]["k0s"]["config"]["spec"]["network"]
    assert (net["podCIDR"], net["serviceCIDR"]) == ("10.245.0.0/16", "10.112.0.0/12")
    mk = _mc(tmp_path / "mk", FakeRunner(), distribution="microk8s", cni="calico")  # CIDRs not configurable
    assert mk.providers[2].pod_cidr == mk.providers[1].pod_cidr == "10.1.0.0/16"


def test_kind_members(tmp_path):
    run = FakeRunner()
    mc = _mc(tmp_path, run, distribution="kind", substrate="kind")
    c1, c2 = mc.members()
    assert c1.gateway_node == "eb-multi-c1-worker" and c1.gateway_address == "172.18.0.3"
    assert c2.api_address == "eb-multi-c2-control-plane" and c2.gateway_address == "172.18.0.4"
    cfg = mc.providers[2].kind_config()
    assert (cfg["networking"]["podSubnet"], cfg["networking"]["serviceSubnet"]) == ("10.245.0.0/16", "10.97.0.0/16")
    plan = mc.render(resolve_intercluster("submariner:libreswan"))
    assert "--broker-url https://eb-multi-c1-control-plane:6443" in next(
        s.argv[-1] for s in plan.steps if "deploy-broker" in s.argv[-1])


def test_teardown_cleans_submariner_leftovers_on_every_node(tmp_path):
    t = FakeTransport()
    mc = _mc(tmp_path, FakeRunner(), transport=t)
    mc.connect_clusters(resolve_intercluster("submariner:wireguard"))
    mc.teardown()
    cleanups = [c for c in t.calls if "edgebench cleanup: submariner" in c.text]
    assert {c.node for c in cleanups} == {n.name for n in INV2.nodes} and all(c.sudo for c in cleanups)
    assert all("vx-submariner" in c.text and "ip xfrm state flush" in c.text for c in cleanups)
