"""edgebench.substrates.clusters.intercluster offline: golden plans of every supported tool x mode x distribution,
the Kubernetes objects they apply, CIDR planning, the readback parsers on sample output (tests/data/intercluster,
see its README for the source lines each sample follows), and bad input giving one SpecError with nothing rendered.

Golden files: tests/golden/intercluster/<tool>-<mode>-<distribution>.txt hold the rendered plan (ordered steps,
manifests, node cleanup). After an intended change, regenerate them once with
    EDGEBENCH_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/unit/test_intercluster_clusters.py
and review the diff (git diff tests/golden) before keeping it.
"""
from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import yaml

from edgebench.errors import SpecError
from edgebench.plan import catalog
from edgebench.substrates.clusters.intercluster import render as ic
from edgebench.substrates.clusters import inventory
from edgebench.plan.matrix import distributions
from manifest_validation import validate
from goldens import check_golden

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "intercluster"
DATA = REPO / "tests" / "data" / "intercluster"
INV2 = inventory.load(DATA / "inventory-two-clusters.yaml")
WORKDIR = "/work/cell"
SERVICE, NAMESPACE, PORT = "eb-http", "edgebench", 8080

TOOLS = catalog.intercluster_tools()
COMBOS = sorted((t, m, d) for t, info in TOOLS.items() if t != "none" for m in info["modes"]
                for d, reason in info["distributions"].items() if reason is None)
UNSUPPORTED = sorted((t, d) for t, info in TOOLS.items() if t != "none"
                     for d, reason in info["distributions"].items() if reason)


def members(distribution: str) -> tuple[ic.MemberCluster, ic.MemberCluster]:
    """The two members of a cell: ssh distributions from the two-cluster inventory, kind from its node names
    (the gateway addresses stand for the kind nodes' docker addresses, read at run time)."""
    (p1, s1), (p2, s2) = ic.cidr_plan(distribution)
    cidrs = {1: (p1, s1), 2: (p2, s2)}
    out = []
    for i in (1, 2):
        kc = f"{WORKDIR}/c{i}/kubeconfig"
        if distribution == "kind":
            name = f"eb-golden-c{i}"
            out.append(ic.MemberCluster(i, name, kc, "kind", *cidrs[i], f"{name}-worker", f"172.18.0.{i * 10 + 3}",
                                        f"{name}-control-plane", 6443))
        else:
            out.append(ic.member_from_inventory(INV2, i, f"eb-golden-c{i}", kc, distribution, cidrs[i]))
    return out[0], out[1]


def render(tool: str, mode: str, distribution: str) -> ic.InterclusterPlan:
    c1, c2 = members(distribution)
    return ic.plan(tool, mode, c1, c2, service=SERVICE, namespace=NAMESPACE, port=PORT)


# ---------------------------------------------------------------------------------------------- goldens
@pytest.mark.parametrize("tool,mode,distribution", COMBOS, ids=[f"{t}-{m}-{d}" for t, m, d in COMBOS])
def test_golden_plan(tool, mode, distribution):
    p = render(tool, mode, distribution)
    text = p.text()
    check_golden(GOLDEN / f"{tool}-{mode}-{distribution}.txt", text)
    assert text == render(tool, mode, distribution).text()  # deterministic
    assert {s.phase for s in p.steps} <= set(ic.PHASES)
    assert [s.phase for s in p.steps if s.phase in ("install", "readback", "disconnect")][:1] == ["install"]
    assert all(s.phase == "disconnect" for s in p.steps[p.steps.index(p.phase("disconnect")[0]):])
    # unexport (what flush_services runs between runs) comes right before disconnect and names the service
    tail = p.steps[p.steps.index(p.phase("unexport")[0]):]
    n_unexport, n_disconnect = len(p.phase("unexport")), len(p.phase("disconnect"))
    assert n_unexport and [s.phase for s in tail] == ["unexport"] * n_unexport + ["disconnect"] * n_disconnect
    assert all(SERVICE in s.argv or any(a.startswith(SERVICE + "-") for a in s.argv) for s in p.phase("unexport"))
    assert all(not s.check for s in p.phase("unexport", "disconnect"))  # idempotent: failures are ignored
    assert p.phase("readback") and all(s.capture for s in p.phase("readback"))
    assert all(s.cluster in (None, 1, 2) for s in p.steps)
    for s in p.steps:  # every command names the cluster it acts on by its kubeconfig
        if s.cluster is not None:
            assert any(p.members[s.cluster - 1].kubeconfig in a for a in s.argv), s
    for name, objs in p.manifests.items():
        assert any(f"${{WORKDIR}}/{name}" in a for s in p.steps for a in s.argv), f"{name} is never applied"
        for obj in objs:
            check_object(obj)


def test_no_stale_golden_files():
    assert set(GOLDEN.glob("*.txt")) == {GOLDEN / f"{t}-{m}-{d}.txt" for t, m, d in COMBOS}


def test_every_tool_mode_is_rendered_somewhere():
    assert {(t, m) for t, m, _ in COMBOS} == {(t, m) for t, info in TOOLS.items() if t != "none"
                                              for m in info["modes"]}
    assert len(COMBOS) == 22


# ClusterLink v0.4.0 CRDs (config/crds/clusterlink.net_*.yaml): spec fields marked required
CL_REQUIRED = {"Peer": {"gateways"}, "Import": {"port", "sources", "lbScheme"}, "Export": set(),
               "AccessPolicy": {"action", "from", "to"}}


def check_object(obj: dict) -> None:
    if obj["apiVersion"] == "clusterlink.net/v1alpha1":
        assert obj["kind"] in CL_REQUIRED, obj
        md, spec = obj["metadata"], obj["spec"]
        assert md["name"] and md["namespace"] and len(md["name"]) <= 63
        assert CL_REQUIRED[obj["kind"]] <= set(spec), obj
        if obj["kind"] == "Peer":
            for gw in spec["gateways"]:
                ipaddress.ip_address(gw["host"])
                assert set(gw) == {"host", "port"} and 30000 <= gw["port"] <= 32767
        if obj["kind"] in ("Import", "Export"):
            assert isinstance(spec["port"], int) and 0 < spec["port"] < 65536
        if obj["kind"] == "Import":
            assert spec["lbScheme"] in ("random", "round-robin", "static")
            for src in spec["sources"]:
                assert set(src) == {"exportName", "exportNamespace", "peer"}
        if obj["kind"] == "AccessPolicy":
            assert spec["action"] in ("allow", "deny")
            for side in (spec["from"], spec["to"]):
                assert side and all(set(x) == {"workloadSelector"} for x in side)
    else:
        validate(obj, source="intercluster plan")


# ---------------------------------------------------------------------------------------------- contents
def test_submariner_join_flags():
    p = render("submariner", "wireguard", "k3s")
    joins = [s.argv for s in p.steps if "join" in s.argv]
    assert len(joins) == 2
    j1, j2 = joins
    assert j1[j1.index("--clusterid") + 1] == "eb-golden-c1" and j2[j2.index("--clusterid") + 1] == "eb-golden-c2"
    assert j1[j1.index("--clustercidr") + 1] == "10.42.0.0/16" and j2[j2.index("--clustercidr") + 1] == "10.44.0.0/16"
    assert j2[j2.index("--servicecidr") + 1] == "10.45.0.0/16"
    assert all(j[j.index("--cable-driver") + 1] == "wireguard" and "--natt=false" in j and "--label-gateway=false" in j
               and j[j.index("--version") + 1] == "0.18.0" for j in joins)
    broker = next(s for s in p.steps if "deploy-broker" in s.argv[-1])
    assert "--broker-url https://192.0.2.11:6443" in broker.argv[-1] and "--version 0.18.0" in broker.argv[-1]
    labels = [s.argv for s in p.phase("connect") if "label" in s.argv]
    assert [a[a.index("node") + 1] for a in labels] == ["c1-worker", "c2-worker"]
    assert p.address == "eb-http.edgebench.svc.clusterset.local"
    assert any(s.argv[-4:] == ("--namespace", NAMESPACE, SERVICE)[-3:] or SERVICE in s.argv
               for s in p.phase("export") if "export" in s.argv)
    kind = render("submariner", "libreswan", "kind")
    assert "--broker-url https://eb-golden-c1-control-plane:6443" in next(
        s.argv[-1] for s in kind.steps if "deploy-broker" in s.argv[-1])


def test_submariner_install_verifies_checksum():
    script = render("submariner", "libreswan", "k3s").phase("install")[0].argv[-1]
    assert "releases/download/v0.18.0/subctl-v0.18.0-linux-$arch.tar.gz" in script
    assert "subctl-checksums.txt" in script and "sha256sum -c -" in script
    for tool in ("skupper", "clusterlink"):
        s = render(tool, TOOLS[tool]["default_mode"], "k3s").phase("install")[0].argv[-1]
        assert "sha256sum" not in s and TOOLS[tool]["version"] in s


def test_skupper_sites_token_link_expose():
    p = render("skupper", "amqp", "k0s")
    inits = [s.argv for s in p.steps if "init" in s.argv]
    assert inits[0][inits[0].index("--ingress") + 1] == "nodeport" and "--ingress-host" in inits[0]
    assert inits[0][inits[0].index("--ingress-host") + 1] == "192.0.2.21"
    assert inits[1][inits[1].index("--ingress") + 1] == "none"
    assert "kubernetes.io/hostname=c2-worker" in inits[1]
    token = next(s for s in p.steps if "token" in s.argv)
    link = next(s for s in p.steps if s.argv[1:3] == ("link", "create"))
    assert token.cluster == 1 and link.cluster == 2 and token.argv[3] == link.argv[3]
    assert "cert" in token.argv
    expose = next(s for s in p.steps if "expose" in s.argv)
    assert expose.argv[2:5] == ("service", SERVICE, "--address") and expose.argv[5] == "eb-http-skupper"
    assert p.address == "eb-http-skupper.edgebench.svc.cluster.local"
    assert p.steps.index(token) < p.steps.index(link) < p.steps.index(expose)


def test_clusterlink_peers_export_import():
    p = render("clusterlink", "mtls", "kubeadm")
    deploys = [s.argv for s in p.steps if "deploy" in s.argv]
    assert all(a[0] == "env" and a[1].startswith("KUBECONFIG=") for a in deploys)
    assert all(a[a.index("--tag") + 1] == "v0.4.0" and a[a.index("--ingress") + 1] == "NodePort"
               and a[a.index("--ingress-port") + 1] == "30443" for a in deploys)
    peers = {name: [o for o in objs if o["kind"] == "Peer"] for name, objs in p.manifests.items()}
    assert peers["clusterlink-c1.yaml"][0]["metadata"]["name"] == "eb-golden-c2"
    assert peers["clusterlink-c1.yaml"][0]["spec"]["gateways"] == [{"host": "192.0.2.41", "port": 30443}]
    assert peers["clusterlink-c2.yaml"][0]["spec"]["gateways"] == [{"host": "192.0.2.21", "port": 30443}]
    imp = p.manifests["clusterlink-import.yaml"][0]
    assert imp["spec"]["sources"] == [{"exportName": SERVICE, "exportNamespace": NAMESPACE, "peer": "eb-golden-c1"}]
    assert p.manifests["clusterlink-export.yaml"][0]["spec"] == {"port": PORT}
    assert p.address == "eb-http.edgebench.svc.cluster.local"


def test_versions_agree_with_the_catalog():
    for tool, inst in ic.installs().items():
        assert str(inst["version"]) == str(TOOLS[tool]["version"]), tool
        assert str(inst["version"]).lstrip("v") in inst["cli"]["url"], tool
        assert inst["sources"] and all(t in catalog.sources() for t in inst["sources"]), tool
    assert set(ic.installs()) == set(TOOLS) - {"none"}


# ---------------------------------------------------------------------------------------------- CIDRs
@pytest.mark.parametrize("distribution", sorted(distributions()))
def test_cidr_plan_keeps_defaults_and_never_overlaps(distribution):
    d = distributions()[distribution]
    plan = ic.cidr_plan(distribution, 3)
    assert plan[0] == (d["pod_cidr"], d["service_cidr"])
    nets = [ipaddress.ip_network(c) for pair in plan for c in pair]
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])
    for a, b in zip(plan[0], plan[1]):
        assert ipaddress.ip_network(a).prefixlen == ipaddress.ip_network(b).prefixlen
    ic.check_cidrs(plan[0], plan[1], "submariner")


def test_cidr_plan_k3s_example():
    assert ic.cidr_plan("k3s") == [("10.42.0.0/16", "10.43.0.0/16"), ("10.44.0.0/16", "10.45.0.0/16")]


def test_overlapping_cidrs_are_one_error_naming_both():
    c1, c2 = members("k3s")
    c2 = ic.MemberCluster(**{**c2.__dict__, "pod_cidr": "10.43.128.0/17"})
    with pytest.raises(SpecError) as exc:
        ic.plan("submariner", "vxlan", c1, c2, service=SERVICE, namespace=NAMESPACE, port=PORT)
    msg = str(exc.value)
    assert "10.43.0.0/16" in msg and "10.43.128.0/17" in msg and "cluster 1 service" in msg and "\n" not in msg
    same = ic.MemberCluster(**{**c2.__dict__, "pod_cidr": c1.pod_cidr, "service_cidr": c1.service_cidr})
    ic.plan("skupper", None, c1, same, service=SERVICE, namespace=NAMESPACE, port=PORT)  # L7: overlap is fine


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("tool,mode,distribution,message", [
    ("istio", None, "k3s", r"unknown inter-cluster tool 'istio'.*known tools: none, submariner, skupper, clusterlink"),
    ("submariner", "strongswan", "k3s", r"unknown cable driver 'strongswan' for submariner; choices: libreswan, "
                                        r"wireguard, vxlan"),
    ("skupper", "http2", "k3s", r"unknown mode 'http2' for skupper; choices: amqp"),
    ("submariner", "libreswan", "microk8s", r"submariner:libreswan does not run on microk8s: .*Calico"),
    ("clusterlink", None, "openshift", r"unknown distribution 'openshift'"),
])
def test_bad_tool_mode_distribution(tool, mode, distribution, message):
    with pytest.raises(SpecError, match=message):
        ic.check_supported(tool, mode, distribution)
    c1, c2 = members("k3s")
    c1 = ic.MemberCluster(**{**c1.__dict__, "distribution": distribution})
    with pytest.raises(SpecError, match=message):
        ic.plan(tool, mode, c1, c2, service=SERVICE, namespace=NAMESPACE, port=PORT)


@pytest.mark.parametrize("tool,distribution", UNSUPPORTED)
def test_unsupported_distributions_have_a_reason(tool, distribution):
    with pytest.raises(SpecError) as exc:
        ic.check_supported(tool, None, distribution)
    assert len(str(exc.value)) > 60


@pytest.mark.parametrize("change,message", [
    ({"service": "Bad_Name"}, r"service 'Bad_Name' must be a DNS label"),
    ({"port": 70000}, r"port 70000"),
    ({"namespace": ""}, r"namespace '' must be a DNS label"),
])
def test_bad_names(change, message):
    c1, c2 = members("k3s")
    kw = {"service": SERVICE, "namespace": NAMESPACE, "port": PORT, **change}
    with pytest.raises(SpecError, match=message):
        ic.plan("clusterlink", None, c1, c2, **kw)


def test_none_and_member_order_are_refused():
    c1, c2 = members("k3s")
    with pytest.raises(SpecError, match="nothing to connect"):
        ic.plan("none", None, c1, c2, service=SERVICE, namespace=NAMESPACE, port=PORT)
    with pytest.raises(SpecError, match="cluster 1 .* then cluster 2"):
        ic.plan("skupper", None, c2, c1, service=SERVICE, namespace=NAMESPACE, port=PORT)
    same = ic.MemberCluster(**{**c2.__dict__, "name": c1.name})
    with pytest.raises(SpecError, match="both clusters are named"):
        ic.plan("skupper", None, c1, same, service=SERVICE, namespace=NAMESPACE, port=PORT)


def test_inventory_without_cluster_2():
    one = inventory.load(REPO / "kustomize" / "overlays" / "lab" / "inventory.yaml")
    with pytest.raises(SpecError, match="cluster 2 has no server"):
        one.require_two_clusters()
    with pytest.raises(SpecError, match="no node belongs to cluster 2"):
        ic.member_from_inventory(one, 2, "eb-c2", "kc", "k3s", ic.cidr_plan("k3s")[1])
    INV2.require_two_clusters()


# ---------------------------------------------------------------------------------------------- readback
def fixture(name: str) -> str:
    return (DATA / name).read_text()


def test_submariner_readback():
    out = {"c1.versions": fixture("subctl-show-versions-c1.txt"),
           "c1.connections": fixture("subctl-show-connections-c1.txt"),
           "c2.connections": fixture("subctl-show-connections-c2.txt"),
           "c1.gateways": fixture("subctl-show-gateways-c1.txt"), "c2.gateways": fixture("subctl-show-gateways-c2.txt")}
    assert ic.parse_readback("submariner", out) == {"tool_version": "0.18.0", "cable_driver": "libreswan",
                                                    "gateway_nodes": ["c1-worker", "c2-worker"], "connected": True}
    out["c2.connections"] = fixture("subctl-show-connections-connecting.txt")
    r = ic.parse_readback("submariner", out)
    assert r["connected"] is False and r["cable_driver"] == "libreswan,wireguard"
    assert ic.parse_readback("submariner", {}) == {"tool_version": None, "cable_driver": None, "gateway_nodes": [],
                                                  "connected": False}


def test_subctl_table_columns_with_spaces():
    rows = ic.table_rows(fixture("subctl-show-connections-c1.txt"),
                         ["GATEWAY", "CLUSTER", "REMOTE IP", "NAT", "CABLE DRIVER", "SUBNETS", "STATUS", "RTT avg."])
    assert rows == [{"GATEWAY": "c2-worker", "CLUSTER": "eb-c2", "REMOTE IP": "192.0.2.41", "NAT": "no",
                     "CABLE DRIVER": "libreswan", "SUBNETS": "10.45.0.0/16, 10.44.0.0/16", "STATUS": "connected",
                     "RTT avg.": "1.208431ms"}]
    rows = ic.table_rows(fixture("subctl-show-connections-connecting.txt"),
                         ["GATEWAY", "CLUSTER", "REMOTE IP", "NAT", "CABLE DRIVER", "SUBNETS", "STATUS", "RTT avg."])
    assert rows[0]["STATUS"] == "connecting" and rows[0]["RTT avg."] == ""


def test_skupper_readback():
    out = {"c1.version": fixture("skupper-version-c1.txt"), "c2.link": fixture("skupper-link-status-connected.txt"),
           "c1.router_nodes": fixture("skupper-router-nodes-c1.txt"),
           "c2.router_nodes": fixture("skupper-router-nodes-c2.txt")}
    assert ic.parse_readback("skupper", out) == {"tool_version": "1.7.3", "cable_driver": None,
                                                 "gateway_nodes": ["c1-worker", "c2-worker"], "connected": True}
    out["c2.link"] = fixture("skupper-link-status-not-connected.txt")
    assert ic.parse_readback("skupper", out)["connected"] is False


def test_clusterlink_readback():
    out = {"c1.controlplane_image": fixture("clusterlink-controlplane-image.txt"),
           "c1.peers": fixture("clusterlink-peers-c1.json"), "c2.peers": fixture("clusterlink-peers-c2.json"),
           "c1.dataplane_nodes": fixture("clusterlink-dataplane-nodes-c1.txt"),
           "c2.dataplane_nodes": fixture("clusterlink-dataplane-nodes-c2.txt")}
    assert ic.parse_readback("clusterlink", out) == {"tool_version": "v0.4.0", "cable_driver": None,
                                                     "gateway_nodes": ["c1-server", "c2-worker"], "connected": True}
    out["c2.peers"] = fixture("clusterlink-peers-unreachable.json")
    assert ic.parse_readback("clusterlink", out)["connected"] is False
    out["c2.peers"] = "error: the server doesn't have a resource type \"peers\""
    assert ic.parse_readback("clusterlink", out)["connected"] is False


def test_readback_captures_match_the_parsers():
    """Every key a parser reads is captured by the plan's readback steps."""
    for tool, keys in {"submariner": {"c1.versions", "c1.connections", "c2.connections", "c1.gateways",
                                      "c2.gateways"},
                       "skupper": {"c1.version", "c2.link", "c1.router_nodes", "c2.router_nodes"},
                       "clusterlink": {"c1.controlplane_image", "c1.peers", "c2.peers", "c1.dataplane_nodes",
                                       "c2.dataplane_nodes"}}.items():
        p = render(tool, TOOLS[tool]["default_mode"], "k3s")
        assert {s.capture for s in p.phase("readback")} == keys, tool
    with pytest.raises(SpecError, match="unknown inter-cluster tool"):
        ic.parse_readback("istio", {})


def test_golden_yaml_parses():
    doc = yaml.safe_load(render("submariner", "vxlan", "kubeadm").text())
    assert doc["client_dials"] == "eb-http.edgebench.svc.clusterset.local:8080"
    assert doc["members"][1]["pod_cidr"] == "10.245.0.0/16" and doc["members"][1]["service_cidr"] == "10.112.0.0/12"
    assert "vx-submariner" in doc["node_cleanup"]
