"""Inter-cluster cells on real clusters, offline: the phases (sweep/phases.py) of a submariner:vxlan and a skupper
cell on the two-cluster inventory (tests/data/intercluster), through clusters.from_cell with a FakeTransport for the
nodes and a fake runner for kubectl / subctl / skupper (readback answered from the fixtures); a provider rebuilt
from the same work dir in a later phase, as Argo runs every phase in a new process; teardown of both clusters when
one fails; the cells skipped because Submariner is not run over their CNI mode, and a one-cluster inventory refused
before anything runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from edgebench.sweep import sampling
from edgebench.errors import EdgebenchError, SpecError
from edgebench.plan import catalog, spec
from edgebench.plan.cells import expand, expand_checked
from edgebench.sh import CommandError
from edgebench.substrates.base import Unsupported
from edgebench.substrates.clusters import from_cell, inventory
from edgebench.substrates.clusters import placement as pl
from edgebench.plan.matrix import cni_installs
from edgebench.substrates.clusters.intercluster.multicluster import MultiCluster
from edgebench.substrates.clusters.transport import FakeTransport
from edgebench.sweep import phases
from edgebench.workloads.base import endpoints
from manifest_validation import validate
from test_multicluster import FakeRunner as ReadbackRunner

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "intercluster"
INV2_PATH = DATA / "inventory-two-clusters.yaml"
INV2 = inventory.load(INV2_PATH)
LAB = REPO / "kustomize" / "overlays" / "lab" / "inventory.yaml"
KUBECONFIG_TEXT = yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [
    {"name": "default", "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": "eA=="}}],
    "users": [], "contexts": []})


def _pod_ip(cluster: int, pod: str) -> str:
    """Cluster 1 pods in 10.42/16, cluster 2 pods in 10.44/16 (the CIDR plan of k3s)."""
    return next(f"10.{40 + 2 * cluster}.{j}.{10 + s}" for j, n in enumerate(INV2.member(cluster).nodes)
                for s in range(1, pl.PEERS_PER_NODE + 1) if pl.pod_name(n, s) == pod)


class Runner(ReadbackRunner):
    """The runner side of both clusters: the readback fixtures, plus each member's workload pods (`get pods`), the
    pod MTU (`ip -j addr show`), and the CLI appearing in <workdir>/intercluster/bin when its install step runs.
    `explode` raises on a matching command even when the step may fail (a missing binary, a lost API)."""

    def __init__(self, fail_on: str | None = None, explode: str | None = None):
        super().__init__(fail_on)
        self.explode = explode

    def __call__(self, argv, input=None, check=True):
        text = " ".join(argv)
        if self.explode and self.explode in text:
            self.calls.append(list(argv))
            self.inputs.append(input)
            raise OSError(f"{argv[0]}: exploded on purpose")
        out = super().__call__(argv, input, check)
        cluster = 1 if "/c1/" in text else 2
        if "get pods -n" in text and pl.POD_LABEL in text:
            items = [{"metadata": {"name": pl.pod_name(n, s)}, "spec": {"nodeName": n.name},
                      "status": {"podIP": _pod_ip(cluster, pl.pod_name(n, s))}}
                     for n in INV2.member(cluster).nodes for s in range(1, pl.PEERS_PER_NODE + 1)]
            return json.dumps({"items": items})
        if "ip -j addr show" in text:
            ip = _pod_ip(cluster, argv[argv.index("exec") + 3])
            return json.dumps([{"ifname": "lo", "mtu": 65536, "addr_info": [{"local": "127.0.0.1"}]},
                               {"ifname": "eth0", "mtu": 1450, "addr_info": [{"local": ip}]}])
        if argv[:2] == ["sh", "-c"] and argv[2].startswith("set -eu") and "/bin/" in argv[2]:
            wd = argv[2].split("mkdir -p ", 1)[1].split("/bin", 1)[0]
            name = argv[2].rsplit("chmod 0755 ", 1)[1].strip().rsplit("/", 1)[1]
            (Path(wd) / "bin").mkdir(parents=True, exist_ok=True)
            (Path(wd) / "bin" / name).write_text("#!/bin/sh\n")
        return out

    def since(self, n: int) -> list[str]:
        return self.texts()[n:]


def _transport() -> FakeTransport:
    t = FakeTransport()
    t.respond("cat /etc/rancher/k3s/k3s.yaml", KUBECONFIG_TEXT)
    t.respond("uname -r", "6.8.0-45-generic\nx86_64\n")
    return t


def _sweep(tool: str, cnis: str = '["flannel:vxlan"]', substrate: str = "ssh", distribution: str = "k3s",
           intercluster: str | None = None) -> spec.Sweep:
    return spec.from_parameters({
        "substrate": substrate, "distribution": distribution, "cnis": cnis,
        "intercluster": intercluster or json.dumps([tool]), "workloads": '["http:payload-echo"]',
        "http-paths": '["pod-to-service:cross-node"]', "http-payloads": '["60"]', "http-requests": "2",
        "repetitions": "1", "sweep-id": "ic-fake"})


@pytest.fixture
def key(tmp_path) -> Path:
    k = tmp_path / "keys" / "id_ed25519"
    k.parent.mkdir()
    k.write_text("not a key\n")
    k.chmod(0o600)
    return k


def _provider(cell, workdir: Path, key: Path, t: FakeTransport, run: Runner, inv: Path = INV2_PATH):
    return from_cell(cell, workdir, inventory_path=str(inv), ssh_key=str(key), transport=t, local=run,
                     fetch=lambda url: pytest.fail(f"unexpected fetch {url}"), token=lambda n: "T" * n)


def _ctx(sweep, cell, tmp_path: Path, provider, logs: list[str]) -> phases.CellContext:
    return phases.CellContext(sweep, cell, workdir=tmp_path / "work", results=tmp_path / "out", provider=provider,
                              log=logs.append)


def _order(texts: list[str], *needles: str) -> list[int]:
    """Indexes of the first command containing each needle (all of a tuple), asserting every one is found."""
    out = []
    for n in needles:
        subs = n if isinstance(n, tuple) else (n,)
        hits = [i for i, t in enumerate(texts) if all(s in t for s in subs)]
        assert hits, f"no command with {subs}"
        out.append(hits[0])
    return out


# ---------------------------------------------------------------------------------------------- phase sequences
def test_submariner_cell_phase_by_phase(tmp_path, key):
    sweep = _sweep("submariner:vxlan")
    cell = expand(sweep)[0]
    assert cell.intercluster == "submariner:vxlan"
    t, run, logs = _transport(), Runner(), []
    wd = tmp_path / "work"
    kc1, kc2 = str(wd / "c1" / "kubeconfig"), str(wd / "c2" / "kubeconfig")
    ctx = _ctx(sweep, cell, tmp_path, _provider(cell, wd, key, t, run), logs)
    assert isinstance(ctx.provider, MultiCluster) and ctx.provider.name == "ssh"

    # provision-cluster: cluster 1 (its CIDRs, its nodes), then cluster 2 on the planned CIDRs; two kubeconfigs
    phases.provision_cluster(ctx)
    seq = [(c.node, c.text) for c in t.calls]
    servers = [i for i, (_, x) in enumerate(seq) if "INSTALL_K3S_EXEC='server" in x]
    assert [seq[i][0] for i in servers] == ["c1-server", "c2-server"]
    assert "--cluster-cidr=10.42.0.0/16 --service-cidr=10.43.0.0/16" in seq[servers[0]][1]
    assert "--cluster-cidr=10.44.0.0/16 --service-cidr=10.45.0.0/16" in seq[servers[1]][1]
    first_c2 = next(i for i, (n, _) in enumerate(seq) if n.startswith("c2-"))
    assert seq[first_c2 - 1] == ("c1-server", "cat /etc/rancher/k3s/k3s.yaml")  # cluster 1 complete before cluster 2
    assert all(n.startswith("c2-") for n, _ in seq[first_c2:])
    agents = [n for n, x in seq if "K3S_URL=" in x]
    assert agents == ["c1-worker", "c2-worker"]
    assert next(x for n, x in seq if n == "c2-worker" and "K3S_URL=" in x).count("K3S_URL=https://192.0.2.31:6443")
    assert Path(kc1).exists() and Path(kc2).exists() and ctx.state["provisioned"] is True

    # install-cni: both members (workload pods validated), the client's MTU recorded
    n = len(run.calls)
    phases.install_cni(ctx)
    texts = run.since(n)
    ready = _order(texts, (kc1, "wait --for=condition=Ready nodes"), (kc2, "wait --for=condition=Ready nodes"))
    assert ready[0] < ready[1]
    for i, c in enumerate(run.calls[n:], start=n):
        if c[-3:] == ["apply", "-f", "-"]:
            for obj in yaml.safe_load_all(run.inputs[i]):
                validate(obj, source="workloads")
    assert ctx.state["supported"] is True and ctx.state["mtu"] == 1450 and ctx.state["cni_version"] == "v0.28.9"

    # connect-clusters: CLI, gateways labelled, broker on cluster 1, join 1 then 2 with the vxlan cable
    n = len(run.calls)
    phases.connect_clusters(ctx)
    texts = run.since(n)
    label1, label2, broker, join1, join2, waited, versions = _order(
        texts, (kc1, "label node c1-worker submariner.io/gateway=true"),
        (kc2, "label node c2-worker submariner.io/gateway=true"), ("deploy-broker", kc1), ("subctl join", kc1),
        ("subctl join", kc2), ("show connections", kc2, "grep -qw connected"), "show versions")
    assert texts[0].startswith("sh -c set -eu") and label1 < label2 < broker < join1 < join2 < waited < versions
    assert all("--cable-driver vxlan" in texts[i] for i in (join1, join2))
    assert f"--clusterid {ctx.provider.names[1]} --clustercidr 10.42.0.0/16" in texts[join1]
    assert ctx.provider.names[1] == f"eb-{cell.cell_id.removeprefix('c-')}-c1"  # derived from the cell
    detail = ctx.state["intercluster"]
    assert detail["implementation"] == "installed" and detail["model"] is None
    assert detail["tool"] == "submariner" and detail["mode"] == "vxlan" and detail["tool_version"] == "0.18.0"
    assert detail["gateways"] == ["c1-worker", "c2-worker"] and detail["readback"]["connected"] is True
    saved = json.loads((wd / "state.json").read_text())
    assert saved["intercluster"] == detail  # what the next phase (a new process) reads

    # one HTTP run's endpoints: flush, the Service in cluster 1, subctl export, the import awaited in cluster 2
    http = ctx.runs("http")
    assert len(http) == 1
    n = len(run.calls)
    client, server, address = endpoints(ctx, http[0], 8080)
    texts = run.since(n)
    assert (client.node, client.kubeconfig, client.pod) == ("c2-worker", kc2, "eb-w1-c2-worker")
    assert (server.node, server.kubeconfig, server.pod) == ("c1-worker", kc1, "eb-w1-c1-worker")
    assert address == "eb-ic-8080.edgebench-bench.svc.clusterset.local"
    flush1, flush2, svc, ns2, export, valid, ready, imported = _order(
        texts, (kc1, "delete service"), (kc2, "delete service"), (kc1, "apply -f -"),
        (kc2, "apply -f", "submariner-namespace.yaml"), ("subctl export service", kc1, "eb-ic-8080"),
        ("condition=Valid", kc1), ("condition=Ready", kc1), ("serviceimports", kc2, "eb-ic-8080"))
    assert flush1 < flush2 < svc < ns2 < export < valid < ready < imported
    assert not any("sh -c set -eu" in x for x in texts)  # the CLI is already installed
    service = yaml.safe_load(run.inputs[n + svc])
    validate(service, source="exported service")
    assert service["spec"]["selector"] == {"edgebench.io/node": "c1-worker", "edgebench.io/slot": "1"}
    assert ctx.provider.peers("cross-node")[0].kubeconfig == kc1
    assert "cross clusters" in ctx.provider.multicast_reason("cross-node")

    # the next run: the previous export is unexported before the Service is exported again
    n = len(run.calls)
    assert endpoints(ctx, http[0], 8080)[2] == address
    texts = run.since(n)
    unexport, export = _order(texts, ("subctl unexport service", kc1, "eb-ic-8080"), "subctl export service")
    assert unexport < export

    # a later phase in a new process: a provider rebuilt from the work dir exports (unexporting first) and disconnects
    run2, logs2 = Runner(), []
    ctx2 = _ctx(sweep, cell, tmp_path, _provider(cell, wd, key, _transport(), run2), logs2)
    assert ctx2.state["intercluster"] == detail
    assert endpoints(ctx2, http[0], 8080)[2] == address
    texts = run2.texts()
    unexport, export = _order(texts, "subctl unexport service", "subctl export service")
    assert unexport < export and not any("sh -c set -eu" in x for x in texts)  # the CLI came with the work dir
    run2.calls.clear()
    phases.disconnect_clusters(ctx2)
    texts = run2.texts()
    unexport, uninstall2, uninstall1, broker_rm = _order(
        texts, ("subctl unexport service", "eb-ic-8080"), ("subctl uninstall --yes", kc2),
        ("subctl uninstall --yes", kc1), "broker-info.subm")
    assert unexport < uninstall2 < uninstall1 < broker_rm
    assert not (wd / "intercluster" / "state.json").exists() and "disconnected_at" in ctx2.state
    run2.calls.clear()
    phases.disconnect_clusters(ctx2)  # idempotent
    assert run2.calls == []

    # teardown-cluster in yet another process: Submariner's kernel leftovers on all four nodes, then both clusters
    t3, run3 = _transport(), Runner()
    ctx3 = _ctx(sweep, cell, tmp_path, _provider(cell, wd, key, t3, run3), [])
    removed = phases.teardown_cluster(ctx3)
    seq = [(c.node, c.text) for c in t3.calls]
    cleanups = [n for n, x in seq if "edgebench cleanup: submariner" in x]
    assert sorted(cleanups) == sorted(n.name for n in INV2.nodes)
    last_cleanup = max(i for i, (_, x) in enumerate(seq) if "edgebench cleanup: submariner" in x)
    uninstalls = [(i, n) for i, (n, x) in enumerate(seq) if x.endswith("k3s-uninstall.sh")]
    assert [n for _, n in uninstalls] == ["c1-server", "c2-server"] and uninstalls[0][0] > last_cleanup
    assert any("c1-server" in r for r in removed) and any("c2-server" in r for r in removed)
    assert not Path(kc1).exists() and not Path(kc2).exists() and not (wd / "intercluster").exists()


def test_skupper_cell_phase_by_phase(tmp_path, key):
    sweep = _sweep("skupper")
    cell = expand(sweep)[0]
    t, run = _transport(), Runner()
    wd = tmp_path / "work"
    kc1, kc2 = str(wd / "c1" / "kubeconfig"), str(wd / "c2" / "kubeconfig")
    ctx = _ctx(sweep, cell, tmp_path, _provider(cell, wd, key, t, run), [])
    phases.provision_cluster(ctx)
    phases.install_cni(ctx)
    n = len(run.calls)
    phases.connect_clusters(ctx)
    texts = run.since(n)
    init1, init2, token, link, status = _order(
        texts, ("skupper init", kc1), ("skupper init", kc2),
        ("token create", kc1), ("link create", kc2), ("link status", kc2, "is connected"))
    assert init1 < init2 < token < link < status
    assert "--ingress nodeport --ingress-host 192.0.2.21" in texts[init1] and "--ingress none" in texts[init2]
    assert f"--site-name {ctx.provider.names[2]}" in texts[init2]
    assert "--router-node-selector kubernetes.io/hostname=c2-worker" in texts[init2]
    detail = ctx.state["intercluster"]
    assert (detail["tool"], detail["mode"], detail["implementation"]) == ("skupper", "amqp", "installed")
    assert detail["tool_version"] == "1.7.3" and detail["cable_driver"] is None and detail["model"] is None

    run_ = ctx.runs("http")[0]
    n = len(run.calls)
    client, server, address = endpoints(ctx, run_, 8080)
    texts = run.since(n)
    assert address == "eb-ic-8080-skupper.edgebench-bench.svc.cluster.local"
    assert client.kubeconfig == kc2 and server.kubeconfig == kc1
    svc, expose, appeared = _order(texts, (kc1, "apply -f -"), ("expose service eb-ic-8080", kc1),
                                   ("service/eb-ic-8080-skupper", kc2))
    assert svc < expose < appeared
    assert "--address eb-ic-8080-skupper --port 8080 --protocol tcp" in texts[expose]

    # disconnect in a new process, then teardown in another one (no node cleanup: nothing outside the pods)
    run2 = Runner()
    ctx2 = _ctx(sweep, cell, tmp_path, _provider(cell, wd, key, _transport(), run2), [])
    phases.disconnect_clusters(ctx2)
    texts = run2.texts()
    unexpose, unlink, delete2, delete1 = _order(
        texts, ("unexpose service eb-ic-8080", kc1), ("link delete eb-link", kc2), ("skupper delete", kc2),
        ("skupper delete", kc1))
    assert unexpose < unlink < delete2 < delete1
    t3 = _transport()
    phases.teardown_cluster(_ctx(sweep, cell, tmp_path, _provider(cell, wd, key, t3, Runner()), []))
    assert not any("edgebench cleanup: submariner" in c.text for c in t3.calls)
    assert [c.node for c in t3.calls if c.text.endswith("k3s-uninstall.sh")] == ["c1-server", "c2-server"]


def test_whole_cell_records_installed_detail_on_its_runs(tmp_path, key, monkeypatch):
    """The whole cell (phases.run_cell) against the fakes, with the HTTP driver replaced: the run is measured between
    a cluster-2 client and the exported address, and its manifest carries the connect readback."""
    from edgebench.drivers import http as driver

    seen = []

    def measure(client, server, target, port, service, length, requests):
        seen.append((client.node, server.node, target, port))
        return {}, {"response_p50_ms": 1.0, "response_p99_ms": 2.0}, None

    monkeypatch.setattr(driver, "measure", measure)
    monkeypatch.setattr(sampling, "IDLE_S", 0)
    sweep = _sweep("submariner:wireguard")
    cell = expand(sweep)[0]
    t, run = _transport(), Runner()
    ctx = _ctx(sweep, cell, tmp_path, _provider(cell, tmp_path / "work", key, t, run), [])
    phases.run_cell(ctx)  # every phase in order, tuning and netem (default / none) included, teardown last
    assert ctx.state["tuning"]["profile"] == "default_settings" and ctx.state["netem"]["mechanism"] == "none"
    assert "disconnected_at" in ctx.state and "torn_down_at" in ctx.state
    assert any("subctl uninstall" in x for x in run.texts())
    assert [c.node for c in t.calls if c.text.endswith("k3s-uninstall.sh")][-2:] == ["c1-server", "c2-server"]
    assert seen == [("c2-worker", "c1-worker", "eb-ic-8080.edgebench-bench.svc.clusterset.local", 8080)]
    run_dir = next((tmp_path / "out" / "runs" / sweep.sweep_id / cell.cell_id).iterdir())
    doc = json.loads((run_dir / "manifest.json").read_text())
    assert doc["status"] == "ok" and doc["substrate"] == "ssh" and doc["intercluster"] == "submariner:wireguard"
    assert doc["intercluster_implementation"] == "installed" and doc["intercluster_detail"]["tool_version"] == "0.18.0"


# ---------------------------------------------------------------------------------------------- failures
def test_teardown_removes_both_clusters_when_the_first_removal_fails(tmp_path, key):
    # ssh: cluster 1's uninstall exits 1 -> logged, cluster 2 is still removed
    sweep = _sweep("submariner:libreswan")
    cell = expand(sweep)[0]
    t = _transport()
    t.responses.insert(0, ("k3s-uninstall.sh", (1, "", "k3s-uninstall.sh: not found")))
    p = _provider(cell, tmp_path / "ssh", key, t, Runner())
    p.teardown()
    assert [c.node for c in t.calls if c.text.endswith("k3s-uninstall.sh")] == ["c1-server", "c2-server"]
    # kind: deleting cluster 1 raises -> cluster 2 is deleted anyway, then the error names cluster 1
    ksweep = _sweep("skupper", substrate="kind", distribution="kind")
    kcell = expand(ksweep)[0]
    names = [f"eb-{kcell.cell_id.removeprefix('c-')}-c{i}" for i in (1, 2)]
    run = Runner(explode=f"kind delete cluster --name {names[0]}")
    kp = from_cell(kcell, tmp_path / "kind", local=run)
    assert isinstance(kp, MultiCluster) and [p.kind_name for p in kp.providers.values()] == names
    with pytest.raises(EdgebenchError, match=f"cluster 1 \\({names[0]}\\): .*exploded on purpose"):
        kp.teardown()
    assert [t for t in run.texts() if t.startswith("kind delete")] == [f"kind delete cluster --name {n}" for n in names]


def test_failed_provision_of_cluster_2_removes_cluster_1(tmp_path, key):
    cell = expand(_sweep("skupper"))[0]
    t = _transport()
    t.responses.insert(0, ("K3S_URL=https://192.0.2.31", (1, "", "agent join failed")))
    p = _provider(cell, tmp_path / "w", key, t, Runner())
    with pytest.raises(CommandError, match="agent join failed"):
        p.provision()
    texts = [(c.node, c.text) for c in t.calls]
    last_c2_join = max(i for i, (n, x) in enumerate(texts) if n == "c2-worker" and "K3S_URL=" in x)
    after = texts[last_c2_join + 1:]
    assert ("c1-server", "/usr/local/bin/k3s-uninstall.sh") in after and \
        ("c2-server", "/usr/local/bin/k3s-uninstall.sh") in after
    assert not (tmp_path / "w" / "c1" / "kubeconfig").exists()


def test_one_cluster_inventory_is_refused_before_anything_runs(tmp_path, key):
    cell = expand(_sweep("submariner:vxlan"))[0]
    t, run = _transport(), Runner()
    with pytest.raises(SpecError, match="cluster 2 has no server"):
        _provider(cell, tmp_path / "w", key, t, run, inv=LAB)
    assert t.calls == [] and run.calls == []
    one = inventory.load(LAB)
    with pytest.raises(SpecError, match="cluster 2 has no server.*`cluster: 2`"):
        expand_checked(_sweep("skupper"), frozenset(one.arches), one)
    ok, _ = expand_checked(_sweep("none"), frozenset(one.arches), one)  # one-cluster cells need no cluster 2
    assert ok and ok[0].intercluster == "none"
    ok, skipped = expand_checked(_sweep("skupper"), frozenset(INV2.arches), INV2)
    assert len(ok) == 1 and skipped == []


def test_single_cluster_cells_keep_the_cluster_provider(tmp_path, key):
    from edgebench.substrates.clusters.provider import ClusterProvider

    cell = expand(_sweep("none"))[0]
    p = _provider(cell, tmp_path / "w", key, _transport(), Runner())
    assert type(p) is ClusterProvider and p.kubeconfig == str(tmp_path / "w" / "kubeconfig")
    assert [n.name for n in p.inventory.nodes] == ["c1-server", "c1-worker"]  # cluster 1 of a two-cluster inventory


# ---------------------------------------------------------------------------------------------- skipped cells
CNIS = '["flannel:vxlan", "calico:vxlan", "calico:bgp", "calico:ebpf", "cilium:vxlan", "antrea:geneve", "weave:fastdp"]'


def test_submariner_cells_over_unsupported_cnis_are_skipped_with_the_reason():
    sweep = _sweep("", cnis=CNIS, distribution="kubeadm", intercluster='["submariner:vxlan", "skupper"]')
    ok, skipped = expand_checked(sweep, frozenset({"amd64"}))
    reasons = {(c.intercluster, f"{c.cni}:{c.cni_mode}"): r for c, r in skipped}
    assert set(reasons) == {("submariner:vxlan", k) for k in ("calico:bgp", "calico:ebpf", "cilium:vxlan",
                                                                "antrea:geneve")}
    assert reasons[("submariner:vxlan", "calico:bgp")] == (
        "submariner over calico:bgp: Submariner is validated with Calico only in VXLAN encapsulation (Calico BGP "
        "without encapsulation is not) [sub-cal]")
    assert "replaces kube-proxy" in reasons[("submariner:vxlan", "calico:ebpf")]
    assert "not among Submariner's validated CNIs" in reasons[("submariner:vxlan", "antrea:geneve")]
    kept = {(c.intercluster, f"{c.cni}:{c.cni_mode}") for c in ok}
    assert {("submariner:vxlan", "flannel:vxlan"), ("submariner:vxlan", "calico:vxlan"),
            ("submariner:vxlan", "weave:fastdp")} <= kept
    assert {k for t, k in kept if t == "skupper:amqp"} == {k.strip('" ') for k in CNIS[1:-1].split(",")}
    # kube-router on kubeadm: possible as a CNI, but not under Submariner
    ok, skipped = expand_checked(_sweep("submariner", cnis='["kube-router:bgp"]', distribution="kubeadm"))
    assert not ok and "kube-router is not among" in skipped[0][1]
    # Calico VXLAN is refused on k0s only (its built-in Calico has no API server for Submariner's IPPools)
    ok, skipped = expand_checked(_sweep("submariner", cnis='["calico:vxlan", "flannel:vxlan"]', distribution="k0s"))
    assert [f"{c.cni}:{c.cni_mode}" for c in ok] == ["flannel:vxlan"]
    assert skipped[0][1].startswith("submariner over calico:vxlan on k0s: k0s installs its own Calico")


def test_local_cells_are_not_skipped_for_the_cni():
    sweep = _sweep("submariner:vxlan", cnis=CNIS, substrate="local")
    ok, skipped = expand_checked(sweep)
    assert len(ok) == 7 and skipped == []


def test_every_kube_proxy_replacement_mode_is_refused_by_submariner():
    sub = catalog.resolve_intercluster("submariner:wireguard")
    for cni, inst in cni_installs().items():
        for mode, m in inst["modes"].items():
            if (m or {}).get("kube_proxy_replacement", inst.get("kube_proxy_replacement")):
                assert sub.unsupported_cni(cni, mode), f"{cni}:{mode} replaces kube-proxy"
    assert sub.unsupported_cni("flannel", "ipsec") is None and sub.unsupported_cni("calico", "vxlan", "k3s") is None
    assert sub.unsupported_cni("calico", "vxlan") is None
    assert "API server" in sub.unsupported_cni("calico", "vxlan", "k0s")
    for other in ("none", "skupper", "clusterlink"):
        assert catalog.resolve_intercluster(other).unsupported_cni("cilium", "vxlan") is None


def test_from_cell_refuses_an_unsupported_cni_before_anything_runs(tmp_path, key):
    cell = expand(_sweep("submariner:vxlan", cnis='["calico:ipip"]'))[0]
    t, run = _transport(), Runner()
    with pytest.raises(Unsupported, match="submariner over calico:ipip"):
        _provider(cell, tmp_path / "w", key, t, run)
    assert t.calls == [] and run.calls == []


def test_cells_command_reports_the_skip_and_refuses_a_one_cluster_inventory(tmp_path):
    def cells(inv: Path):
        return subprocess.run(
            [sys.executable, "-m", "edgebench.cli", "cells", "-p", "substrate=ssh", "-p", "distribution=k3s",
             "-p", 'cnis=["flannel:vxlan","calico:ipip"]', "-p", 'intercluster=["submariner:vxlan"]',
             "--inventory", str(inv)], capture_output=True, text=True, timeout=120,
            env={**os.environ, "COLUMNS": "400"})

    proc = cells(INV2_PATH)
    assert proc.returncode == 0, proc.stderr
    assert [(c["cni"], c["intercluster"]) for c in json.loads(proc.stdout)] == [("flannel", "submariner:vxlan")]
    assert "skipped calico:ipip via submariner:vxlan" in proc.stderr and "Calico IPIP is not" in proc.stderr
    proc = cells(LAB)
    assert proc.returncode != 0 and "cluster 2 has no server" in proc.stderr and "Traceback" not in proc.stderr


def test_a_run_of_a_cell_that_never_connected_names_the_installed_tool():
    from edgebench.results.records.runstore import manifest, now

    for substrate, implementation in (("ssh", "installed"), ("local", "kernel")):
        sweep = _sweep("submariner:vxlan", substrate=substrate)
        run_ = phases.runs_for(sweep, expand(sweep)[0])[0]
        doc = manifest(run_, "unsupported", now(), error="unsupported: no connection")
        assert doc["intercluster_implementation"] == implementation == doc["intercluster_detail"]["implementation"]
        assert doc["intercluster_detail"]["tool_version"] is None
