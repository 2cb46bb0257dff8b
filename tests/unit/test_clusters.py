"""edgebench.substrates.clusters offline: golden files of every possible distribution x CNI mode, compatibility reasons,
Kubernetes manifests validated strictly, and ClusterProvider against FakeTransport + a fake kubectl runner.

Golden files: tests/golden/clusters/<distribution>/<cni>-<mode>.yaml hold the rendered install (distribution
steps, CNI commands, Helm values / manifest patches, readiness, uninstall, teardown; kind: the kind config).
The test compares the rendering with them. After an intended change, regenerate them once with
    EDGEBENCH_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/unit/test_clusters.py
and review the diff (git diff tests/golden) before keeping it.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgebench.substrates.clusters import inventory
from edgebench.substrates.clusters.install import cni as cni_mod
from edgebench.substrates.clusters.install import distributions as dist_mod
from edgebench.substrates.clusters.install import kind as kind_mod
from edgebench.substrates.clusters.install import node_steps
from edgebench.substrates.clusters.install.cni_manifests import apply_patches
from edgebench.plan import matrix
from edgebench.substrates.clusters import placement as pl
from edgebench.substrates.clusters.provider import ClusterProvider, rewrite_kubeconfig
from edgebench.substrates.clusters.transport import FakeTransport, SSHTransport
from edgebench.plan.catalog import cnis
from edgebench.substrates.base import Unsupported
from manifest_validation import validate
from goldens import check_golden

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "clusters"
LAB = REPO / "kustomize" / "overlays" / "lab" / "inventory.yaml"
INV = inventory.load(LAB)
ARCHES = INV.arches
WORKDIR = "/work/cell"
KUBECONFIG = f"{WORKDIR}/kubeconfig"

COMBOS = sorted(k for k, v in matrix.matrix().items() if v is None)
IMPOSSIBLE = sorted(k for k, v in matrix.matrix().items() if v is not None)


def render_cell(distribution: str, cni: str, mode: str, cni_version: str | None = None) -> dict:
    """cni_version: a triggered rerun's requested version (tests/host/test_cluster_reruns.py); None = the catalog pin."""
    if distribution == "kind":
        params = cni_mod.ClusterParams("kind", "eb-golden-control-plane", 6443, "eb-golden-control-plane",
                                       KUBECONFIG, *kind_mod.subnets("c-golden"), cni_version=cni_version)
        plan = cni_mod.render("kind", cni, mode, params)
        return {"cni": plan.to_json(), "kind_config": kind_mod.config(plan, 2, *kind_mod.subnets("c-golden")),
                "create": kind_mod.create_argv("eb-golden", f"{WORKDIR}/kind-config.yaml", KUBECONFIG),
                "delete": kind_mod.delete_argv("eb-golden")}
    d = matrix.distributions()[distribution]
    params = cni_mod.ClusterParams(distribution, INV.server.address, d["api_port"], INV.server.address, KUBECONFIG,
                                   cni_version=cni_version)
    plan = cni_mod.render(distribution, cni, mode, params)
    dplan = dist_mod.render(distribution, INV, plan, WORKDIR, "/etc/edgebench/ssh/id_ed25519")
    return {"cni": plan.to_json(), "distribution": dplan.to_json()}


def _check_golden(path: Path, doc: dict) -> None:
    check_golden(path, yaml.safe_dump(doc, sort_keys=False, width=120))


@pytest.mark.parametrize("distribution,cni,mode", COMBOS, ids=[f"{d}-{c}-{m}" for d, c, m in COMBOS])
def test_golden_install(distribution, cni, mode):
    doc = render_cell(distribution, cni, mode)
    _check_golden(GOLDEN / distribution / f"{cni}-{mode}.yaml", doc)
    # every Kubernetes object the install renders itself is valid
    for name, text in doc["cni"]["files"].items():
        if name != "cni-values.yaml":
            for obj in yaml.safe_load_all(text):
                validate(obj, source=name)


def test_no_stale_golden_files():
    expected = {GOLDEN / d / f"{c}-{m}.yaml" for d, c, m in COMBOS}
    assert set(GOLDEN.glob("*/*.yaml")) == expected


@pytest.mark.parametrize("distribution,cni,mode", IMPOSSIBLE, ids=[f"{d}-{c}-{m}" for d, c, m in IMPOSSIBLE])
def test_impossible_cells_have_a_reason(distribution, cni, mode):
    reason = matrix.compatibility(distribution, cni, mode, ARCHES)
    assert reason and len(reason) > 20
    with pytest.raises(ValueError, match="impossible"):
        cni_mod.render(distribution, cni, mode, cni_mod.ClusterParams(distribution, "h", 6443, "h", "k"))


def test_seed_004_matrix_is_possible():
    """Seed 004 ran Flannel on kubeadm/k3s/MicroK8s, Calico on all four, Cilium on kubeadm/k3s, Kube-router on
    kubeadm/k0s, Kube-OVN on kubeadm/MicroK8s (their default modes)."""
    ran = {"flannel": ["kubeadm", "k3s", "microk8s"], "calico": ["kubeadm", "k3s", "k0s", "microk8s"],
           "cilium": ["kubeadm", "k3s"], "kube-router": ["kubeadm", "k0s"], "kube-ovn": ["kubeadm", "microk8s"]}
    defaults = {"flannel": "vxlan", "calico": "vxlan", "cilium": "vxlan", "kube-router": "bgp", "kube-ovn": "geneve"}
    for cni, dists in ran.items():
        for d in dists:
            assert matrix.compatibility(d, cni, defaults[cni], ARCHES) is None, (d, cni)


def test_compatibility_reasons():
    assert "riscv64" in matrix.compatibility("k3s", "cilium", "vxlan", {"riscv64"})
    assert "unknown mode" in matrix.compatibility("k3s", "flannel", "udp", set())
    assert "unknown distribution" in matrix.compatibility("openshift", "flannel", "vxlan", set())
    assert matrix.compatibility("k3s", "weave", "fastdp", {"arm64", "amd64"}) is None


def test_catalog_covers_every_mode_with_version_and_sources():
    installs, dists = matrix.cni_installs(), matrix.distributions()
    assert set(installs) == set(cnis())
    for name, info in cnis().items():
        inst = installs[name]
        assert set(inst["modes"]) == set(info["modes"]), name
        assert inst["sources"] and inst["version_source"], name
        assert set(inst["distributions"]) == set(dists), name
        if name == "host-container":  # the testbed only: every distribution names why not
            assert all(d.get("impossible", {}).get("*") for d in inst["distributions"].values())
        elif name != "host":
            assert inst["version"] and inst["readiness"], name
            possible = {d: e for d, e in inst["distributions"].items() if not e.get("impossible", {}).get("*")}
            if all(e["via"] == "builtin" for e in possible.values()):
                # a distribution's own CNI only (kindnet: kind's): its node image carries it, it goes with the cluster
                assert possible and all(name in dists[d]["builtin_cnis"] for d in possible), name
                continue
            assert inst["uninstall"], name
            ref = inst.get("manifest") or inst["helm"]["url"]
            assert ref.startswith("https://"), name
            if "manifest" in inst:
                assert "latest" not in inst["manifest"] and inst["version"] in inst["manifest"], name
    assert "archived" in installs["weave"]["warning"]
    for name, d in dists.items():
        assert d["version"] and d["version_source"] and d["sources"], name
        assert d["pod_cidr"] and d["service_cidr"], name
    # one place for versions: what the catalog reports is what the installers pin (install-facts' pins kept)
    from edgebench.plan.catalog import resolve_cni

    for name, info in cnis().items():
        assert "version" not in info, f"{name}: pin versions in cni_installs.yaml only"
        assert resolve_cni(name).version == installs[name]["version"]
    assert (installs["flannel"]["version"], installs["calico"]["version"]) == ("v0.28.9", "v3.31.7")


def test_k3s_flags_per_cni():
    def flags(cni, mode):
        return render_cell("k3s", cni, mode)["distribution"]["install"][1]["command"]
    assert "--flannel-backend=vxlan" in flags("flannel", "vxlan")
    assert "--flannel-backend=wireguard-native" in flags("flannel", "wireguard")
    ipsec = flags("flannel", "ipsec")
    assert "--flannel-backend=none" in ipsec and "--disable-network-policy" in ipsec
    assert "--disable-kube-proxy" in flags("cilium", "vxlan")
    assert "--disable-kube-proxy" not in flags("calico", "bgp")


def test_kubeadm_skips_kube_proxy_for_replacements():
    init = [s for s in render_cell("kubeadm", "cilium", "native")["distribution"]["install"]
            if s["command"][:2] == ["kubeadm", "init"]][0]["command"]
    assert "--skip-phases=addon/kube-proxy" in init and "--pod-network-cidr=10.244.0.0/16" in init


def test_kind_config_and_subnets():
    cfg = render_cell("kind", "cilium", "vxlan")["kind_config"]
    assert cfg["networking"]["disableDefaultCNI"] is True and cfg["networking"]["kubeProxyMode"] == "none"
    assert render_cell("kind", "host", "host")["kind_config"]["networking"]["disableDefaultCNI"] is False
    a, b = kind_mod.subnets("c-aaaaaaaaaa"), kind_mod.subnets("c-golden")
    assert a[0] != a[1] and a[0].startswith("10.")
    assert set(a).isdisjoint(b)  # distinct cells, distinct pod/service subnets (inter-cluster tools need that)


def test_k0s_builtin_calico_and_custom():
    cfg = yaml.safe_load(render_cell("k0s", "calico", "wireguard")["distribution"]["files"]["k0sctl.yaml"])
    net = cfg["spec"]["k0s"]["config"]["spec"]["network"]
    assert net["provider"] == "calico" and net["calico"]["wireguard"] is True
    cfg = yaml.safe_load(render_cell("k0s", "cilium", "geneve")["distribution"]["files"]["k0sctl.yaml"])
    net = cfg["spec"]["k0s"]["config"]["spec"]["network"]
    assert net["provider"] == "custom" and net["kubeProxy"]["disabled"] is True


SAMPLE_FLANNEL = """
apiVersion: v1
kind: ConfigMap
metadata: {name: kube-flannel-cfg, namespace: kube-flannel}
data: {net-conf.json: '{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}'}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-flannel-ds, namespace: kube-flannel}
spec:
  selector: {matchLabels: {app: flannel}}
  template:
    metadata: {labels: {app: flannel}}
    spec:
      containers: [{name: kube-flannel, image: ghcr.io/flannel-io/flannel:v0.28.9}]
"""


def test_manifest_patches_apply():
    p = cni_mod.ClusterParams("kubeadm", "192.0.2.11", 6443, "192.0.2.11", "kc")
    plan = cni_mod.render("kubeadm", "flannel", "ipsec", p)
    out = list(yaml.safe_load_all(apply_patches(SAMPLE_FLANNEL, plan.patches)))
    conf = json.loads(out[0]["data"]["net-conf.json"])
    assert conf["Backend"]["Type"] == "ipsec" and conf["Network"] == "10.244.0.0/16"
    for obj in out:
        validate(obj, source="patched flannel")
    with pytest.raises(ValueError, match="matched nothing"):
        apply_patches(SAMPLE_FLANNEL, cni_mod.render("kubeadm", "weave", "fastdp", p).patches)


@pytest.mark.parametrize("host_network", [False, True])
def test_workload_manifests_validate(host_network):
    docs = pl.workload_manifests(INV, pl.PLACEMENTS, host_network)
    docs.append(pl.service("eb-svc-5201", "10.43.0.200", 5201, {"edgebench.io/node": "x86-agent-1"}))
    docs.append(pl.http_server_pod(INV.node("x86-agent-1"), host_network))
    for obj in docs:
        validate(obj, source="placement")
    pods = [d for d in docs if d["kind"] == "Pod"]
    assert all(p["spec"].get("hostNetwork", False) == host_network for p in pods)
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {pl.RUNNER_IMAGE, pl.HTTP_IMAGE}


def test_placements_from_arch_labels():
    assert [n.name for n in pl.choose(INV, "pi-to-x86")] == ["pi-agent-1", "x86-agent-1"]
    assert [n.name for n in pl.choose(INV, "x86-to-pi")] == ["x86-agent-1", "pi-agent-1"]
    c, s = pl.choose(INV, "cross-node")
    assert c != s and c.arch == s.arch  # a same-arch pair (the two Pis)
    c, s = pl.choose(INV, "same-node")
    assert c == s
    x86_only = inventory.parse({"target": "x", "nodes": [
        {"name": "a", "address": "192.0.2.1", "arch": "amd64", "role": "server", "user": "u"},
        {"name": "b", "address": "192.0.2.2", "arch": "amd64", "role": "agent", "user": "u"}]})
    with pytest.raises(Unsupported, match="arm64"):
        pl.choose(x86_only, "pi-to-x86")


def test_ssh_transport_argv(tmp_path):
    t = SSHTransport(tmp_path / "key", known_hosts=tmp_path / "known_hosts")
    argv, stdin = t.ssh_argv(INV.node("x86-agent-1"), ["cat", "/etc/os release"], sudo=True)
    assert argv[0] == "ssh" and "BatchMode=yes" in argv and "StrictHostKeyChecking=yes" in argv
    assert f"UserKnownHostsFile={tmp_path / 'known_hosts'}" in argv and str(tmp_path / "key") in argv
    assert argv[-4:] == ["sudo", "-n", "cat", "'/etc/os release'"] and stdin is None
    argv, stdin = SSHTransport(tmp_path / "key").ssh_argv(INV.server, "echo hi\n")
    assert argv[-2:] == ["sh", "-s"] and stdin == "echo hi\n" and "StrictHostKeyChecking=accept-new" in argv


def test_rewrite_kubeconfig():
    kc = yaml.safe_dump({"apiVersion": "v1", "kind": "Config",
                         "clusters": [{"name": "default", "cluster": {"server": "https://127.0.0.1:6443"}}]})
    assert yaml.safe_load(rewrite_kubeconfig(kc, "192.0.2.11", 6443))["clusters"][0]["cluster"]["server"] == \
        "https://192.0.2.11:6443"


# ---------------------------------------------------------------------------------------------- provider
KUBECONFIG_TEXT = yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [
    {"name": "default", "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": "eA=="}}],
    "users": [], "contexts": []})


class FakeKubectl:
    """The runner side: records argv; answers `get pods -o json` and `ip -j addr show`; fails on demand."""

    def __init__(self, fail_on: str | None = None, mtu: int = 1450):
        self.calls: list[list[str]] = []
        self.inputs: list[str | None] = []
        self.fail_on, self.mtu = fail_on, mtu
        self.nodes = list(INV.nodes)

    def __call__(self, argv, input=None, check=True):
        from edgebench.sh import CommandError
        argv = list(argv)
        self.calls.append(argv)
        self.inputs.append(input)
        text = " ".join(argv)
        if self.fail_on and self.fail_on in text:
            if check:
                raise CommandError(argv, 1, "timed out waiting for the condition")
            return ""
        if "get pods" in text:
            items = []
            for i, n in enumerate(self.nodes):
                for slot in range(1, pl.PEERS_PER_NODE + 1):
                    items.append({"metadata": {"name": pl.pod_name(n, slot)}, "spec": {"nodeName": n.name},
                                  "status": {"podIP": f"10.42.{i}.{10 + slot}"}})
            return json.dumps({"items": items})
        if "ip -j addr show" in text:
            pod = argv[argv.index("exec") + 3]
            ip = next(f"10.42.{i}.{10 + s}" for i, n in enumerate(self.nodes) for s in range(1, 4)
                      if pl.pod_name(n, s) == pod)
            return json.dumps([{"ifname": "lo", "mtu": 65536, "addr_info": [{"local": "127.0.0.1"}]},
                               {"ifname": "eth0", "mtu": self.mtu, "addr_info": [{"local": ip}]}])
        return ""

    def texts(self):
        return [" ".join(c) for c in self.calls]


def _provider(tmp_path, cni="flannel", mode="vxlan", fail_on=None, distribution="k3s"):
    t = FakeTransport()
    t.respond("cat /etc/rancher/k3s/k3s.yaml", KUBECONFIG_TEXT)
    t.respond("uname -r", "6.6.31+rpt-rpi-v8\naarch64\ncoherent_pool=1M")
    k = FakeKubectl(fail_on)
    p = ClusterProvider("ssh", distribution, cni, mode, tmp_path, inventory=INV, transport=t, local=k,
                        fetch=lambda url: pytest.fail(f"unexpected fetch {url}"),
                        key_path="/etc/edgebench/ssh/id_ed25519", cell_id="c-test", token=lambda n: "T" * n)
    return p, t, k


def test_k3s_flannel_vxlan_full_sequence(tmp_path):
    p, t, k = _provider(tmp_path)
    p.provision()
    from edgebench.plan.catalog import resolve_cni
    state = p.install_cni(resolve_cni("flannel:vxlan"))
    removed = p.teardown()

    seq = [(c.node, c.text.splitlines()[0] if isinstance(c.command, str) else c.text) for c in t.calls]
    nodes = [n.name for n in INV.nodes]
    # provision (after a first, idempotent cleanup teardown): preflight on all, server, server wait, agents
    first_install = next(i for i, (n, x) in enumerate(seq) if "INSTALL_K3S_EXEC" in x)
    install = seq[first_install - 3:]
    assert [n for n, _ in install[:3]] == nodes and all(x.startswith("uname -r") for _, x in install[:3])
    assert install[3][0] == "pi-server-1" and "--flannel-backend=vxlan" in install[3][1]
    assert "K3S_TOKEN='" + "T" * 32 + "'" in install[3][1] and "INSTALL_K3S_VERSION=v1.33.3+k3s1" in install[3][1]
    assert "--disable-kube-proxy" not in install[3][1]
    assert install[4] == ("pi-server-1", "k3s kubectl wait --for=condition=Ready node/pi-server-1 --timeout=300s")
    assert sorted(n for n, _ in install[5:7]) == ["pi-agent-1", "x86-agent-1"]  # the agents join at once
    assert all("K3S_URL=https://192.0.2.11:6443" in x for _, x in install[5:7])
    assert install[7] == ("pi-server-1", "cat /etc/rancher/k3s/k3s.yaml")
    kc = yaml.safe_load((tmp_path / "kubeconfig").read_text()) if (tmp_path / "kubeconfig").exists() else None
    assert kc is None  # teardown removed it
    # install-cni: readiness on the runner, workload pods, MTU read back in the client pod
    kt = k.texts()
    assert any("wait --for=condition=Ready nodes --all" in x for x in kt)
    applied = [i for i, c in enumerate(k.calls) if c[-3:] == ["apply", "-f", "-"]][0]
    objs = list(yaml.safe_load_all(k.inputs[applied]))
    for obj in objs:
        validate(obj, source="applied workloads")
    assert any(x.endswith("-- ip -j addr show") and "eb-w1-pi-agent-1" in x for x in kt)
    assert state["mtu"] == 1450 and state["cni_version"] == "v0.28.9" and state["via"] == "builtin"
    # endpoints run through kubectl exec
    ep = p.server("cross-node")
    assert ep.cmd(["iperf3", "-s"]) == ["kubectl", "--kubeconfig", str(tmp_path / "kubeconfig"), "exec", "-n",
                                        pl.NAMESPACE, "eb-w2-pi-agent-1", "--", "iperf3", "-s"] or ep.pod
    # teardown: the agents' and the server's uninstall (at once: one node each), then the cleanup script on every node
    tail = seq[-(len(nodes) + 3):]
    assert set(tail[:3]) == {("pi-agent-1", "/usr/local/bin/k3s-agent-uninstall.sh"),
                             ("x86-agent-1", "/usr/local/bin/k3s-agent-uninstall.sh"),
                             ("pi-server-1", "/usr/local/bin/k3s-uninstall.sh")}
    scripts = [c.text for c in t.calls[-3:]]
    assert all("flannel.1" in s and "cni0" in s and "/etc/cni/net.d" in s and "/var/lib/cni" in s for s in scripts)
    assert all(c.sudo for c in t.calls[-6:])
    assert any("k3s" in r for r in removed)


def test_endpoints_and_services(tmp_path):
    p, t, k = _provider(tmp_path)
    p.provision()
    p.install_cni()
    c, s = p.client(), p.server("cross-node")
    assert (c.node, s.node) == ("pi-agent-1", "x86-agent-1") or c.node != s.node
    assert p.server("same-node").node == c.node and p.server("same-node").pod != c.pod
    assert p.client("x86-to-pi").node == "x86-agent-1"
    assert len(p.peers("cross-node")) == pl.PEERS_PER_NODE
    assert p.multicast_reason("cross-node") and "flannel:vxlan" in p.multicast_reason("cross-node")
    ip = p.add_service("10.96.0.10", 5201, s)
    assert ip == "10.43.0.200"  # 10.96.0.10 is outside k3s's service CIDR
    svc = yaml.safe_load(k.inputs[-1])
    validate(svc, source="service")
    assert svc["spec"]["clusterIP"] == ip and svc["spec"]["selector"]["edgebench.io/node"] == s.node
    p.flush_services()
    assert any("delete service" in x for x in k.texts())


def test_failed_cni_install_still_tears_down(tmp_path):
    p, t, k = _provider(tmp_path, fail_on="wait --for=condition=Ready nodes")
    p.provision()
    n_before = len(t.calls)
    with pytest.raises(Exception, match="timed out"):
        p.install_cni()
    after = [c for c in t.calls[n_before:]]
    texts = [c.text for c in after]
    assert any("k3s-agent-uninstall.sh" in x for x in texts) and any(x.endswith("k3s-uninstall.sh") for x in texts)
    cleanups = [c for c in after if isinstance(c.command, str) and c.command.startswith("# edgebench cleanup")]
    assert {c.node for c in cleanups} == {n.name for n in INV.nodes}
    for c in cleanups:
        assert "ip link delete" in c.text and "flannel.1" in c.text and "rm -rf" in c.text
        assert "iptables" in c.text and "/etc/cni/net.d" in c.text
    assert not (tmp_path / "kubeconfig").exists()


def test_failed_helm_install_uninstalls_and_cleans(tmp_path):
    p, t, k = _provider(tmp_path, cni="cilium", mode="vxlan", fail_on="upgrade --install cilium")
    p.provision()
    with pytest.raises(Exception):
        p.install_cni()
    assert any("helm --kubeconfig" in x and "uninstall cilium" in x for x in k.texts())
    cleanup = [c.text for c in t.calls if "edgebench cleanup" in c.text]
    assert cleanup and all("cilium_host" in x and "cilium_vxlan" in x for x in cleanup)
    server_install = next(c.text for c in t.calls if "INSTALL_K3S_EXEC" in c.text)
    assert "--flannel-backend=none" in server_install and "--disable-kube-proxy" in server_install


def test_old_kernel_is_unsupported_not_failed(tmp_path):
    p, t, k = _provider(tmp_path, cni="calico", mode="ebpf")
    t.responses.insert(0, ("uname -r", (0, "5.4.0-150-generic\nx86_64\n", "")))
    p.provision()
    with pytest.raises(Unsupported, match="kernel >= 5.10"):
        p.install_cni()


def test_impossible_cell_is_refused_at_construction(tmp_path):
    with pytest.raises(Unsupported, match="kube-router"):
        _provider(tmp_path, cni="kube-router", mode="bgp")


def test_kind_provider_commands(tmp_path):
    k = FakeKubectl()
    p = ClusterProvider("kind", "kind", "flannel", "vxlan", tmp_path, local=k, cell_id="c-kindtest",
                        fetch=lambda url: SAMPLE_FLANNEL)
    p.provision()
    cfg = yaml.safe_load((tmp_path / "kind-config.yaml").read_text())
    assert cfg["networking"]["disableDefaultCNI"] is True
    assert any(x.startswith("kind create cluster --name eb-kindtest") for x in k.texts())
    k.calls.clear()
    k.nodes = list(p.inventory.nodes)
    p.install_cni()
    texts = k.texts()
    assert any(x.startswith("docker exec eb-kindtest-worker sh -c curl -fsSL") for x in texts)  # CNI plugins
    assert any("apply -f " + str(tmp_path / "cni-manifest.yaml") in x for x in texts)
    p.teardown()
    assert k.texts()[-1] == "kind delete cluster --name eb-kindtest"


def test_kubeadm_on_an_emulated_control_plane_waits_longer_through_a_config_file():
    import dataclasses
    d = matrix.distributions()["kubeadm"]
    slow = dataclasses.replace(INV, nodes=tuple(dataclasses.replace(n, cpu="emulated") if n.is_server else n
                                                for n in INV.nodes))

    def init_of(inv, cni, mode):
        params = cni_mod.ClusterParams("kubeadm", inv.server.address, d["api_port"], inv.server.address, KUBECONFIG)
        plan = dist_mod.render("kubeadm", inv, cni_mod.render("kubeadm", cni, mode, params), WORKDIR, "k")
        (step,) = [s["command"] for s in plan.to_json()["install"] if "kubeadm init" in " ".join(
            s["command"] if isinstance(s["command"], list) else [s["command"]])]
        return step

    fast = init_of(INV, "flannel", "vxlan")
    assert isinstance(fast, list) and not any("--config" in a for a in fast)
    script = init_of(slow, "flannel", "vxlan")
    body = script.split("<<'EDGEBENCH_EOF'\n", 1)[1].split("\nEDGEBENCH_EOF\n", 1)[0]
    init, cluster = yaml.safe_load_all(body)
    assert init["apiVersion"] == "kubeadm.k8s.io/v1beta4" and init["kind"] == "InitConfiguration"
    assert init["timeouts"] == {"controlPlaneComponentHealthCheck": "20m0s", "kubeletHealthCheck": "20m0s"}
    assert init["localAPIEndpoint"]["advertiseAddress"] == INV.server.address
    assert init["nodeRegistration"]["name"] == INV.server.name
    # everything the flags said, said by the file (kubeadm refuses to mix --config with them)
    assert cluster["kubernetesVersion"] == d["version"] and cluster["apiServer"]["certSANs"] == [INV.server.address]
    assert cluster["networking"] == {"podSubnet": d["pod_cidr"], "serviceSubnet": d["service_cidr"]}
    assert script.rstrip().endswith(f"kubeadm init --config {dist_mod.KUBEADM_INIT_CONFIG}")
    replaced = init_of(slow, "cilium", "native")
    assert replaced.rstrip().endswith("--config /etc/kubernetes/edgebench-kubeadm-init.yaml --skip-phases=addon/kube-proxy")


def test_the_config_file_kubeadm_init_is_timed_as_kubeadm_init():
    """Its script starts with mkdir; the stage times (node_steps.label) still call it kubeadm init."""
    import dataclasses
    d = matrix.distributions()["kubeadm"]
    slow = dataclasses.replace(INV, nodes=tuple(dataclasses.replace(n, cpu="emulated") if n.is_server else n
                                                for n in INV.nodes))
    params = cni_mod.ClusterParams("kubeadm", slow.server.address, d["api_port"], slow.server.address, KUBECONFIG)
    plan = dist_mod.render("kubeadm", slow, cni_mod.render("kubeadm", "flannel", "vxlan", params), WORKDIR, "k")
    labels = [node_steps.label(s) for s in plan.install]
    assert "kubeadm init" in labels and not any(x.startswith("mkdir") for x in labels)
