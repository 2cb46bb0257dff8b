"""The local testbed on real network namespaces: every datapath this kernel has, cleanup, errors."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from edgebench.plan.catalog import resolve_cni
from edgebench.substrates.base import Unsupported
from edgebench.substrates.local.testbed import PODS_PER_NODE, Testbed

PREFIX = "ebt"
WORKING = ["host", "flannel:vxlan", "flannel:host-gw", "kube-router", "calico:bgp", "calico:vxlan", "cilium:vxlan",
           "weave:fastdp"]
KERNEL_DEPENDENT = ["calico:ipip", "cilium:geneve", "flannel:wireguard", "flannel:ipsec", "antrea:geneve"]


def netns(prefix=PREFIX):
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True).stdout.strip() or "[]"
    return sorted(n["name"] for n in json.loads(out) if n["name"].startswith(prefix + "-"))


@pytest.fixture
def tb():
    t = Testbed(PREFIX)
    t.down()
    yield t
    t.down()
    assert netns() == []


def ping(ep, ip, size=None):
    argv = ["ping", "-c", "1", "-W", "2"] + (["-M", "do", "-s", str(size)] if size else []) + [ip]
    return subprocess.run(ep.cmd(argv), capture_output=True).returncode == 0


def check_datapath(tb, cm):
    state = tb.up(cm)
    assert state["mtu"] == cm.mtu
    client = tb.client()
    for placement in ("same-node", "cross-node"):
        server = tb.server(placement)
        assert ping(client, server.ip), f"{cm.key}: {placement} unreachable"
    far = tb.server("cross-node")
    # the path MTU across nodes is the mode's MTU: a full-size DF packet passes, one byte more does not
    assert ping(client, far.ip, cm.mtu - 28)
    if not cm.is_host:
        assert not ping(client, far.ip, cm.mtu - 27)
    # ClusterIP: nftables DNAT to the backend, TCP through the service address
    tb.add_service("10.96.0.10", 5301, far)
    srv = subprocess.Popen(far.cmd(["iperf3", "-s", "-1", "-p", "5301"]), stdout=subprocess.DEVNULL)
    try:
        for _ in range(50):
            if subprocess.run(far.cmd(["ss", "-Hltn", "sport = :5301"]), capture_output=True, text=True).stdout:
                break
            time.sleep(0.05)
        out = subprocess.run(client.cmd(["iperf3", "-c", "10.96.0.10", "-p", "5301", "-t", "1", "-J"]),
                             capture_output=True, text=True, timeout=30)
        assert json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"] > 0
    finally:
        srv.kill()


def test_kube_router_nodes_carry_its_pod_rule(tb):
    """kube-router's routing controller adds `from <node's pod CIDR> lookup 77` on each node (the local lab's node:
    pref 32765): every route lookup of a pod's packet goes through the rules. Flannel adds none."""
    def rules(node):
        return json.loads(subprocess.run(["ip", "-n", f"{PREFIX}-n{node}", "-j", "rule"], capture_output=True,
                                         text=True, check=True).stdout)
    tb.up(resolve_cni("kube-router:bgp"))
    for node, cidr in ((1, "10.244.1.0"), (2, "10.244.2.0")):
        mine = [r for r in rules(node) if r.get("priority") == 32765]
        assert [(r["src"], r["srclen"], r["table"]) for r in mine] == [(cidr, 24, "77")], rules(node)
    assert ping(tb.client(), tb.server("cross-node").ip)  # the rule's table is empty: main still routes them
    tb.down()
    tb.up(resolve_cni("flannel:vxlan"))
    assert not [r for r in rules(1) if r.get("priority") == 32765]


def test_nodes_carry_the_chains_a_real_node_carries(tb):
    """node_chains.py: every node has the kubelet's KUBE-FIREWALL; kube-proxy's KUBE-FORWARD where kube-proxy runs
    (not beside cilium, which replaces it); the CNI's own chains (flannel's forward accepts, kube-router's per-pod
    firewall, cilium's raw, mangle and filter feeders); the host baseline carries flannel's, as the lab's host
    cluster does. Packets still pass, and the cell's state says what was built."""
    def saved(node):
        return subprocess.run(["ip", "netns", "exec", f"{PREFIX}-n{node}", "iptables-save"], capture_output=True,
                              text=True, check=True).stdout

    expect = {"host:host": ({"KUBE-FIREWALL", "KUBE-FORWARD", "FLANNEL-FWD"}, {"CILIUM_FORWARD", "KUBE-ROUTER-FORWARD"}),
              "flannel:vxlan": ({"KUBE-FIREWALL", "KUBE-FORWARD", "FLANNEL-FWD"}, {"CILIUM_FORWARD"}),
              "kube-router:bgp": ({"KUBE-FIREWALL", "KUBE-FORWARD", "KUBE-ROUTER-FORWARD", "KUBE-NWPLCY-DEFAULT"},
                                  {"FLANNEL-FWD"}),
              "cilium:vxlan": ({"KUBE-FIREWALL", "CILIUM_FORWARD", "CILIUM_PRE_raw", "CILIUM_PRE_mangle"},
                               {"KUBE-FORWARD", "FLANNEL-FWD"})}
    for entry, (present, absent) in expect.items():
        state = tb.up(resolve_cni(entry))
        for node in (1, 2):
            text = saved(node)
            chains = {ln[1:].split()[0] for ln in text.splitlines() if ln.startswith(":")}
            assert present <= chains and not absent & chains, (entry, node, text)
        assert set(state["node_chains"].values()) == {"built"}, state["node_chains"]
        if entry == "kube-router:bgp":  # a firewall chain per pod of the node, jumped to from FORWARD
            assert sum(ln.startswith(":KUBE-POD-FW-") for ln in saved(1).splitlines()) == PODS_PER_NODE
        assert ping(tb.client(), tb.server("cross-node").ip), entry
        tb.down()


@pytest.mark.parametrize("entry", WORKING)
def test_datapath_works(tb, entry):
    check_datapath(tb, resolve_cni(entry))


def test_vxlan_uses_the_cnis_port_and_device(tb):
    for entry, dev, port in (("flannel:vxlan", "flannel.1", 8472), ("calico:vxlan", "vxlan.calico", 4789)):
        tb.up(resolve_cni(entry))
        info = json.loads(subprocess.run(["ip", "-n", f"{PREFIX}-n1", "-d", "-j", "link", "show", dev],
                                         capture_output=True, text=True, check=True).stdout)[0]
        assert info["linkinfo"]["info_kind"] == "vxlan"
        assert info["linkinfo"]["info_data"]["port"] == port
        tb.down()


@pytest.mark.parametrize("entry", KERNEL_DEPENDENT)
def test_kernel_dependent_datapaths_are_built_or_reported(tb, entry):
    cm = resolve_cni(entry)
    reason = tb.probe(cm.local["transport"])
    if reason is None:  # a kernel that has it (most users' kernels): it must really work
        check_datapath(tb, cm)
    else:
        with pytest.raises(Unsupported, match="^unsupported: ") as exc:
            tb.up(cm)
        assert reason in str(exc.value)
        assert netns() == []


def test_cilium_pod_traffic_takes_the_ebpf_forwarding(tb):
    """Cilium's modes forward pod traffic with tc programs (ebpf.py): with node 1's route to node 2's pods removed,
    pod-to-pod across nodes still works (from_pod redirects to the tunnel device), while the node itself, which the
    stack routes, can no longer reach them."""
    state = tb.up(resolve_cni("cilium:vxlan"))
    assert state["datapath"] == "ebpf-vxlan"
    n1 = f"{PREFIX}-n1"
    filters = subprocess.run(["ip", "netns", "exec", n1, "tc", "filter", "show", "dev", "cali11", "ingress"],
                             capture_output=True, text=True, check=True).stdout
    assert "tc/from_pod]" in filters
    link = json.loads(subprocess.run(["ip", "-n", n1, "-d", "-j", "link", "show", "cilium_vxlan"],
                                     capture_output=True, text=True, check=True).stdout)[0]
    assert link["linkinfo"]["info_data"].get("external") is True
    far = tb.server("cross-node")
    node_ping = ["ip", "netns", "exec", n1, "ping", "-c", "1", "-W", "2", far.ip]
    assert subprocess.run(node_ping, capture_output=True).returncode == 0
    subprocess.run(["ip", "-n", n1, "route", "del", "10.244.2.0/24"], check=True)
    assert ping(tb.client(), far.ip)
    assert subprocess.run(node_ping, capture_output=True).returncode != 0


def test_cilium_pods_reach_a_service_by_the_socket_load_balancer_alone(tb):
    """Cilium's modes run every pod process in its node's cgroup with the socket load balancer's programs
    (sock_lb.py): with service proxy `none` (no DNAT rule anywhere) a pod reaches the ClusterIP over UDP and TCP, and
    sees the answers come from the ClusterIP; the programs counted the translations. Down removes the cgroups."""
    from edgebench.substrates.local import sock_lb
    cm = resolve_cni("cilium:vxlan")
    state = tb.up(cm)
    tb.install_service_proxy("none", cm)
    assert sorted(state["sock_lb"]) == ["1", "2"]
    client, server = tb.client(), tb.server("cross-node")
    assert client.hooks == state["sock_lb"]["1"]["cgroup"] and client.cgroups == ()
    tb.add_service("10.96.0.10", 5201, server)
    echo = ("import socket\nu=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); u.bind(('0.0.0.0',5201))\n"
            "t=socket.socket(); t.bind(('0.0.0.0',5201)); t.listen(1)\nd,a=u.recvfrom(64); u.sendto(d,a)\n"
            "c,_=t.accept(); c.sendall(c.recv(64))")
    srv = subprocess.Popen(server.cmd([sys.executable, "-c", echo]))
    try:
        time.sleep(0.5)
        ask = ("import socket\nu=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); u.settimeout(3)\n"
               "u.sendto(b'u',('10.96.0.10',5201)); d,a=u.recvfrom(64); print(d.decode(),a[0])\n"
               "t=socket.create_connection(('10.96.0.10',5201),timeout=3); t.sendall(b't'); print(t.recv(64).decode())")
        out = subprocess.run(client.cmd([sys.executable, "-c", ask]), capture_output=True, text=True, timeout=20)
        assert out.stdout.split() == ["u", "10.96.0.10", "t"], out.stderr
    finally:
        srv.kill()
        srv.wait()
    counted = sock_lb.counts(tb.sock_lb_nodes()[1])
    assert counted["translated"] >= 2 and counted["reversed"] >= 1
    tb.down()
    assert not [d for d in os.listdir(sock_lb.cgroup2()) if d.startswith(f"edgebench-{PREFIX}-sock-")]


def test_without_the_ebpf_build_cilium_is_unsupported_and_nothing_is_built(tb, monkeypatch):
    from edgebench.substrates.local import ebpf
    monkeypatch.setattr(ebpf, "missing", lambda: "clang is not installed (apt-get install clang libbpf-dev)")
    with pytest.raises(Unsupported, match="^unsupported: the eBPF forwarding cannot be built: clang is not"):
        tb.up(resolve_cni("cilium:vxlan"))
    assert netns() == []


def test_unsupported_by_design_is_reported_without_touching_the_kernel(tb):
    with pytest.raises(Unsupported, match="eBPF"):
        tb.up(resolve_cni("calico:ebpf"))
    assert netns() == []


def test_down_cleans_up_after_a_killed_run():
    """A process that built a testbed and started a server inside is SIGKILLed; `testbed down` removes it all."""
    script = (
        "import subprocess, time\n"
        "from edgebench.substrates.local.testbed import Testbed\n"
        "from edgebench.plan.catalog import resolve_cni\n"
        "tb = Testbed('ebk'); tb.up(resolve_cni('flannel:vxlan'))\n"
        "subprocess.Popen(tb.server('cross-node').cmd(['iperf3', '-s', '-p', '5401']))\n"
        "print('ready', flush=True); time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left = netns("ebk")
    expected = 1 + 2 + 2 * PODS_PER_NODE  # the LAN, 2 nodes and their pods survive the kill
    assert "ebk-n2-p1" in left and len(left) == expected
    pids = subprocess.run(["ip", "netns", "pids", "ebk-n2-p1"], capture_output=True, text=True).stdout.split()
    assert pids, "the iperf3 server should still be running inside the pod namespace"
    out = subprocess.run([sys.executable, "-m", "edgebench.cli", "testbed", "down", "--prefix", "ebk"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and f"removed {expected}" in out.stdout
    assert netns("ebk") == []
    time.sleep(0.2)
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read().lower()


def test_status_reports_up_and_down(tb):
    tb.up(resolve_cni("calico:bgp"))
    st = tb.status()
    assert st["up"] and st["state"]["cni"] == "calico" and f"{PREFIX}-n1-p1" in st["namespaces"]
    tb.down()
    assert not tb.status()["up"]


def test_not_root_gets_a_clear_error():
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                           "edgebench.cli", "testbed", "up", "--prefix", "ebnr"], capture_output=True, text=True,
                          cwd="/")
    assert proc.returncode == 1
    assert "needs root" in proc.stderr and "Traceback" not in proc.stderr
    assert netns("ebnr") == []


def test_workload_processes_are_found_by_namespace(tb):
    from edgebench.substrates.local.provider import LocalProvider

    tb.up(resolve_cni("flannel:vxlan"))
    provider = LocalProvider(tb)
    proc = subprocess.Popen(tb.server("cross-node").cmd(["sleep", "30"]))
    try:
        time.sleep(0.2)
        found = provider.workload_pids()
        assert found.get(f"sleep@{PREFIX}-n2-p1") == proc.pid
        assert all(name.split("@")[1].startswith(PREFIX + "-") for name in found)
    finally:
        proc.kill()
        proc.wait()


def test_build_commands_run_batched_in_the_order_issued():
    """Inside _batched, consecutive `ip` commands of one namespace whose output nobody reads become one `ip -batch`;
    any other command (or a command that reads output) runs the queue first."""
    calls = []

    def rec(argv, check=True, input=None):
        calls.append((list(argv), input))
        return ""

    t = Testbed("ebrec", runner=rec)
    with t._batched():
        t._ip("a", "link", "set", "x", "up")
        t._ip("a", "addr", "add", "10.0.0.1/32", "dev", "x")
        t._ns("a", "sysctl", "-qw", "k=v")
        t._ip("b", "link", "set", "y", "up")
        t._ip("b", "-j", "link", "show")
        t._ip("a", "route", "add", "default", "dev", "x")
    t._ip("a", "link", "set", "x", "down")  # outside: runs at once
    assert calls == [
        (["ip", "-n", "a", "-batch", "-"], "link set x up\naddr add 10.0.0.1/32 dev x\n"),
        (["ip", "netns", "exec", "a", "sysctl", "-qw", "k=v"], None),
        (["ip", "-n", "b", "link", "set", "y", "up"], None),
        (["ip", "-n", "b", "-j", "link", "show"], None),
        (["ip", "-n", "a", "route", "add", "default", "dev", "x"], None),
        (["ip", "-n", "a", "link", "set", "x", "down"], None),
    ]
    with pytest.raises(Exception, match="ip -batch"):
        with t._batched():
            t._ip("a", "link", "set", "x y", "up")  # a word `ip -batch` would split


def test_a_failing_batched_command_fails_the_build(tb):
    """A bad line in an `ip -batch` raises with ip's message, as the command alone would."""
    from edgebench.sh import CommandError

    tb.provision()
    try:
        with pytest.raises(CommandError, match="batch"):
            with tb._batched():
                tb._ip(tb.node_ns(1), "link", "set", "lo", "up")
                tb._ip(tb.node_ns(1), "link", "set", "nosuchdev0", "up")
    finally:
        tb.down()
    assert not netns()


def test_a_testbed_another_live_process_holds_is_refused():
    """Two sweeps on one machine with the same prefix: the second one is refused with one message and the first
    one's testbed is left alone (once its process is gone, the prefix is free)."""
    from edgebench.errors import EdgebenchError

    t = Testbed("ebo")
    t.down()
    holder = subprocess.Popen(["sleep", "60"])
    try:
        t.provision()
        state = json.loads(t.state_file.read_text()) if t.state_file.exists() else {}
        t.state_file.parent.mkdir(parents=True, exist_ok=True)
        t.state_file.write_text(json.dumps({**state, "prefix": "ebo", "pid": holder.pid}))
        with pytest.raises(EdgebenchError, match=rf"in use by process {holder.pid} \(sleep 60\)"):
            Testbed("ebo").provision()
        assert netns("ebo")  # untouched
    finally:
        holder.kill()
        holder.wait()
    Testbed("ebo").provision()  # the holder is gone: the prefix is free again
    t.down()
    assert netns("ebo") == []


RECEIVE = """
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", 7411))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton("239.255.0.7") + socket.inet_aton("0.0.0.0"))
s.settimeout(3)
print("ready", flush=True)
try:
    print(s.recvfrom(64)[0].decode())
except socket.timeout:
    print("nothing")
"""
SEND = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 4)
for _ in range(3):
    s.sendto(b"hello", ("239.255.0.7", 7411))
"""


def multicast_received(tb, receivers):
    procs = [subprocess.Popen(ep.cmd([sys.executable, "-c", RECEIVE]), stdout=subprocess.PIPE, text=True)
             for ep in receivers]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    subprocess.run(tb.client().cmd([sys.executable, "-c", SEND]), check=True)
    return [p.communicate(timeout=10)[0].strip() for p in procs]


@pytest.mark.parametrize("entry,crosses", [("weave:fastdp-1438", True), ("flannel:vxlan", False)])
def test_multicast_crosses_nodes_only_where_the_mode_floods_it(entry, crosses):
    """Weave floods IPv4 multicast to every peer node (its `multicast_flood` VXLAN port); flannel's VXLAN carries
    none. What multicast_reason says is what the kernel does."""
    t = Testbed(PREFIX, nodes=3)
    t.down()
    try:
        t.up(resolve_cni(entry))
        assert (t.multicast_reason("cross-node") is None) is crosses
        far = t.pods(2) + t.pods(3)
        assert multicast_received(t, far) == (["hello"] * len(far) if crosses else ["nothing"] * len(far))
        assert multicast_received(t, t.pods(1)[1:]) == ["hello"] * (PODS_PER_NODE - 1)  # one bridge: always
        if crosses:  # unicast stays on the mode's own transport: the flood port learns and floods nothing else
            info = json.loads(subprocess.run(["bridge", "-n", t.node_ns(1), "-d", "-j", "link", "show", "dev",
                                              "weave-mc"], capture_output=True, text=True, check=True).stdout)[0]
            assert (info["learning"], info["flood"], info["bcast_flood"], info["mcast_flood"]) == (
                False, False, False, True)
            assert ping(t.client(), t.pods(2)[0].ip)
    finally:
        t.down()
    assert netns() == []
