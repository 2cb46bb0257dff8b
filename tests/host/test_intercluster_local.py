"""Inter-cluster tools on the local testbed (real namespaces): two clusters that cannot reach each other until a tool
joins them; Submariner's kernel data path, the relay-emulated L7 tools, cables the kernel lacks, cleanup, and a
whole cell through the phases with its manifests."""

import json
import subprocess
import time
from pathlib import Path

import pytest

from edgebench import sh
from edgebench.plan import cells as cells_mod
from edgebench.plan import spec
from edgebench.plan.catalog import resolve_intercluster
from edgebench.substrates.base import Unsupported
from edgebench.substrates.local.provider import LocalProvider
from edgebench.substrates.local.testbed import Testbed
from edgebench.sweep import phases

PREFIX = "ebic"
ROOT = Path(__file__).resolve().parents[2]
PORT = 5311


def netns():
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True).stdout.strip() or "[]"
    return sorted(n["name"] for n in json.loads(out) if n["name"].startswith(PREFIX + "-"))


def relays():
    """This test's relay processes (their certificates live in the testbed's join directory; other testbeds on the
    machine, e.g. a sweep, have their own)."""
    pids = subprocess.run(["pgrep", "-x", "edgebench-relay"], capture_output=True, text=True).stdout.split()
    mine = []
    for pid in pids:
        try:
            if f"intercluster-{PREFIX}".encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                mine.append(pid)
        except OSError:
            continue
    return mine


def sweep_of(entry, cni="flannel:vxlan", **extra):
    params = {"cnis": json.dumps([cni]), "intercluster": json.dumps([entry]), "repetitions": "1",
              "workloads": json.dumps(["http:payload-echo"]), "http-payloads": json.dumps(["60", "100000"]),
              "http-requests": "10", "http-paths": json.dumps(["pod-to-service:cross-node", "pod-to-pod:cross-node"]),
              **extra}
    return spec.from_parameters({**params, "substrate": "local"}, source="test")


def provider_for(entry, cni="flannel:vxlan"):
    s = sweep_of(entry, cni)
    cell = cells_mod.expand(s)[0]
    return s, cell, LocalProvider(Testbed(PREFIX), cell)


@pytest.fixture(autouse=True)
def clean():
    Testbed(PREFIX).down()
    yield
    Testbed(PREFIX).down()
    assert netns() == []


def tcp_roundtrip(client, server, address, nbytes=200_000):
    """HTTP echo of nbytes through `address` (fortio, 5 requests on one kept-alive connection): True if every
    request came back 200 with the whole body."""
    srv = subprocess.Popen(server.cmd([sh.exe("fortio"), "server", "-http-port", str(PORT), "-grpc-port", "disabled",
                                       "-redirect-port", "disabled"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if subprocess.run(server.cmd(["ss", "-Hltn", f"sport = :{PORT}"]), capture_output=True, text=True).stdout:
                break
            time.sleep(0.05)
        out = subprocess.run(client.cmd([sh.exe("fortio"), "load", "-c", "1", "-n", "5", "-qps", "-1", "-timeout", "10s",
                                         "-payload-size", str(nbytes), "-httpbufferkb", str(nbytes // 1024 + 64),
                                         "-json", "-", f"http://{address}:{PORT}/echo"]),
                             capture_output=True, text=True, timeout=120)
        try:
            doc = json.loads(out.stdout)
        except ValueError:
            doc = {}
        ok = doc.get("RetCodes") == {"200": 5} and doc.get("Sizes", {}).get("Min", 0) >= nbytes
        if not ok:
            print(f"fortio via {address}: rc={out.returncode} codes={doc.get('RetCodes')} sizes={doc.get('Sizes', {}).get('Min')} {out.stderr[-300:]}")
        return ok
    finally:
        srv.kill()
        srv.wait()


def ping(ep, ip, size=None):
    argv = ["ping", "-c", "1", "-W", "2"] + (["-M", "do", "-s", str(size)] if size else []) + [ip]
    return subprocess.run(ep.cmd(argv), capture_output=True).returncode == 0


def build(p, cell):
    p.provision()
    p.install_cni(cell.cni_info)


@pytest.mark.parametrize("cni", ["flannel:vxlan", "calico:bgp"])
def test_submariner_vxlan_joins_two_isolated_clusters(cni):
    s, cell, p = provider_for("submariner:vxlan", cni)
    build(p, cell)
    client, server = p.client(), p.server("cross-node")
    assert p.testbed.cluster_of(client.node) == 2 and p.testbed.cluster_of(server.node) == 1
    assert not ping(client, server.ip), "the clusters must not reach each other before a tool joins them"
    detail = p.connect_clusters(resolve_intercluster("submariner:vxlan"))
    assert detail["implementation"] == "kernel" and detail["cable_driver"] == "vxlan" and detail["model"] is None
    assert detail["readback"]["devices"][p.testbed.node_ns(1)] == ["vx-submariner", "vxlan-tunnel"]
    assert ping(client, server.ip)
    # the path MTU across the clusters: the pod MTU, or the tunnels' (1500 - 50) below a routed CNI's 1500;
    # TCP still gets through at full size because the MSS is clamped to the route's MTU (as Submariner does)
    mtu = min(p.read_mtu(client), 1450)
    assert ping(client, server.ip, mtu - 28) and not ping(client, server.ip, mtu - 27)
    address = p.export_service(PORT, server, "pod-to-service")
    assert address == "10.96.0.10"  # cluster 1's ClusterIP, reached across the cable
    assert tcp_roundtrip(client, server, address)
    p.disconnect_clusters()
    assert not ping(client, server.ip)
    for i in range(1, 5):
        links = sh.run(["ip", "-n", p.testbed.node_ns(i), "-o", "link", "show"])
        assert "vx-submariner" not in links and "vxlan-tunnel" not in links


@pytest.mark.parametrize("entry", ["skupper", "clusterlink"])
def test_emulated_l7_tools_relay_the_exported_service_only(entry):
    if not sh.which("edgebench-relay"):
        pytest.skip("edgebench-relay is not built (make tools)")
    s, cell, p = provider_for(entry)
    build(p, cell)
    client, server = p.client(), p.server("cross-node")
    detail = p.connect_clusters(resolve_intercluster(entry))
    assert detail["implementation"] == "emulated" and "edgebench-relay" in detail["model"]
    assert "not" in detail["model"].lower()  # the model says what it is not
    assert not ping(client, server.ip), "an L7 tool does not route pod addresses between clusters"
    address = p.export_service(PORT, server, "pod-to-service")
    assert address == "10.97.0.10"  # the router / dataplane service in cluster 2
    assert tcp_roundtrip(client, server, address)
    # a phase in another process finds the join again (Argo steps): a fresh provider can export and disconnect
    fresh = LocalProvider(Testbed(PREFIX), cell)
    fresh.flush_services()
    assert tcp_roundtrip(client, server, fresh.export_service(PORT, server, "pod-to-service"))
    fresh.disconnect_clusters()
    p.disconnect_clusters()
    time.sleep(0.2)
    assert relays() == []


@pytest.mark.parametrize("entry, transport", [("submariner:libreswan", "ipsec"), ("submariner:wireguard", "wireguard")])
def test_a_cable_the_kernel_lacks_is_unsupported_with_the_kernels_reason(entry, transport):
    s, cell, p = provider_for(entry)
    build(p, cell)
    reason = p.testbed.probe(transport)
    if reason is None:  # this kernel has it: the cable must carry traffic
        p.connect_clusters(resolve_intercluster(entry))
        assert ping(p.client(), p.server("cross-node").ip)
        return
    with pytest.raises(Unsupported) as exc:
        p.connect_clusters(resolve_intercluster(entry))
    assert reason in str(exc.value)
    assert "vx-submariner" not in sh.run(["ip", "-n", p.testbed.node_ns(2), "-o", "link", "show"])


def test_a_whole_cell_through_the_phases(tmp_path):
    if not sh.which("edgebench-relay"):
        pytest.skip("edgebench-relay is not built (make tools)")
    s = sweep_of("skupper", **{"workloads": json.dumps(["http:payload-echo", "iperf3:udp"])})
    cell = cells_mod.expand(s)[0]
    ctx = phases.CellContext(s, cell, workdir=tmp_path / "work", results=tmp_path / "out",
                             provider=LocalProvider(Testbed(PREFIX), cell), log=lambda m: None)
    phases.run_cell(ctx)
    docs = [json.loads(f.read_text()) for f in (tmp_path / "out").rglob("manifest.json")]
    assert netns() == [] and relays() == []
    by = {(d["workload"], d["path"], d["length_bytes"]): d for d in docs}
    ok = by[("http", "pod-to-service", 60)]
    assert ok["status"] == "ok" and ok["intercluster"] == "skupper:amqp"
    assert ok["intercluster_implementation"] == "emulated"
    assert "AMQP" in ok["intercluster_detail"]["model"] and ok["intercluster_detail"]["tool_version"] is None
    assert ok["metrics"]["response_p50_ms"] > 0
    # the relays are part of what the run's resource samples cover
    samples = json.loads((tmp_path / "out" / cell_run_dir(ok) / "resources.json").read_text())
    assert any("edgebench-relay" in name for name in json.dumps(samples).split('"'))
    refused = by[("http", "pod-to-pod", 60)]
    assert refused["status"] == "unsupported" and "pod-to-service" in refused["error"]
    udp = [d for d in docs if d["workload"] == "iperf3"]
    assert udp and all(d["status"] == "unsupported" for d in udp)
    reasons = {(d["path"], d["placement"]): d["error"] for d in udp}
    assert "not udp" in reasons[("pod-to-service", "cross-node")]
    assert "cluster 2" in reasons[("pod-to-pod", "same-node")]


def cell_run_dir(doc):
    return Path("runs") / doc["sweep_id"] / doc["cell_id"] / doc["run_id"]


def test_cells_of_an_intercluster_sweep():
    s = spec.from_parameters({"substrate": "local", "cnis": json.dumps(["host", "flannel:vxlan"]),
                              "intercluster": json.dumps(["none", "submariner:vxlan", "clusterlink"])}, source="t")
    ok, skipped = cells_mod.expand_checked(s)
    assert [c.label for c in ok] == ["host:host", "flannel:vxlan", "flannel:vxlan via submariner:vxlan",
                                     "flannel:vxlan via clusterlink:mtls"]
    assert [c.label for c, _ in skipped] == ["host:host via submariner:vxlan", "host:host via clusterlink:mtls"]
    assert all("pod-network CNI" in reason for _, reason in skipped)
    # the baseline keeps the ids cells had before the dimension existed
    before = spec.from_parameters({"substrate": "local", "cnis": json.dumps(["flannel:vxlan"])}, source="t")
    assert cells_mod.expand(before)[0].cell_id == ok[1].cell_id
