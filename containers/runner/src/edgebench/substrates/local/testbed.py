"""The local testbed: real kernel datapaths in Linux network namespaces (no Kubernetes, no Docker).

  <prefix>-lan        the emulated LAN: bridge lan0, one veth per node
  <prefix>-n<i>       node i: eth0 = 10.77.0.(10+i)/24 on the LAN, pod CIDR 10.244.<i>.0/24, forwarding on
  <prefix>-n<i>-p<j>  pod j on node i, attached the way the CNI mode attaches pods (bridge or ptp)

With clusters=2 (inter-cluster cells) the nodes form two clusters of nodes/2 each on the same LAN: the first node of
each cluster is its gateway (head node), the others its workers; the CNI connects the nodes of one cluster only,
cluster c has the service CIDR 10.(95+c).0.0/16, and substrates/local/intercluster.py joins the clusters.

Inter-node pod traffic crosses the LAN the way the mode's datapath carries it (routes, VXLAN, Geneve, IPIP,
WireGuard, IPsec). ClusterIP services are nftables DNAT rules in every node (the default), or the kernel state of
kube-proxy's iptables, nftables or IPVS mode (service_proxy.py, the `service-proxy` cell dimension).
Every name carries the prefix; `down` deletes every namespace with it (and kills what runs inside), so it also
cleans up after a killed run. A datapath this kernel cannot build raises Unsupported with the kernel's reason.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Callable, Sequence

from edgebench import sh
from edgebench.plan.catalog import CniMode
from edgebench.errors import EdgebenchError, NotRootError
from edgebench.substrates.base import Unsupported
from edgebench.substrates.local.datapath import (PODS_PER_NODE, Datapath, pod_ip,  # noqa: F401 - PODS_PER_NODE
                                                 service_cidr)  # (re-exported)
from edgebench.substrates.local import container, cpuclass, ebpf, node_chains, processes, sock_lb
from edgebench.substrates.local.processes import netns_pids
from edgebench.substrates.local.testbed_conditions import NodeConditions
from edgebench.substrates.local.endpoints import Endpoint, Endpoints  # noqa: F401 - Endpoint: re-exported

STATE_DIR = Path(os.environ.get("EDGEBENCH_RUN_DIR", "/run/edgebench"))


def default_prefix() -> str:
    p = os.environ.get("EDGEBENCH_TESTBED_PREFIX", "eb")
    if re.search(r"-d[0-9]+$", p):
        raise EdgebenchError(f"EDGEBENCH_TESTBED_PREFIX={p!r}: a name ending in -d<number> is a duet member's "
                             "prefix (sweep/duet.py); choose another, e.g. eb2")
    return p


def require_root() -> None:
    if os.geteuid() != 0:
        raise NotRootError(
            "the local testbed creates network namespaces and needs root: run as root (e.g. `sudo make sweep`)"
        )


def _batch_word(arg: str) -> str:
    if not arg or any(c.isspace() or c in "\"'\\#" for c in arg):
        raise EdgebenchError(f"cannot pass {arg!r} to `ip -batch`")
    return arg


class Testbed(NodeConditions, Datapath, Endpoints):
    __test__ = False  # not a pytest class
    def __init__(self, prefix: str | None = None, nodes: int = 2, runner: Callable[..., str] = sh.run,
                 clusters: int = 1):
        self.prefix = prefix or default_prefix()
        if not self.prefix.replace("-", "").isalnum() or len(self.prefix) > 12:
            raise EdgebenchError(f"testbed prefix {self.prefix!r} must be short (<=12) letters/digits/'-'")
        if clusters < 1 or nodes % clusters or nodes // clusters < 2 - (clusters == 1):
            raise EdgebenchError(f"a testbed of {nodes} nodes cannot form {clusters} clusters of two or more nodes")
        self.nodes = nodes
        self.clusters = clusters
        self._runner = runner
        self._batch: tuple[str, list[list[str]]] | None = None  # (namespace, queued `ip` argvs) while batching
        self._batching = False
        self.service_proxy = "dnat"  # how ClusterIP services are built (service_proxy.py); set by install_service_proxy
        self.cpu_limit = cpuclass.NONE  # the class whose CPU limit the nodes run under (cpuclass.install)

    # clusters ------------------------------------------------------------------------------------
    def cluster_of(self, i: int) -> int:
        return (i - 1) // (self.nodes // self.clusters) + 1

    def cluster_nodes(self, c: int) -> list[int]:
        per = self.nodes // self.clusters
        return list(range((c - 1) * per + 1, c * per + 1))

    def gateway(self, c: int) -> int:
        """The gateway (head) node of cluster c: its first node."""
        return self.cluster_nodes(c)[0]

    # names ---------------------------------------------------------------------------------------
    @property
    def lan_ns(self) -> str:
        return f"{self.prefix}-lan"

    def node_ns(self, i: int) -> str:
        return f"{self.prefix}-n{i}"

    def pod_ns(self, i: int, j: int) -> str:
        return f"{self.prefix}-n{i}-p{j}"

    @property
    def state_file(self) -> Path:
        return STATE_DIR / f"testbed-{self.prefix}.json"

    def _run(self, argv: Sequence[str], check: bool = True, input: str | None = None) -> str:
        self._flush_ip()  # queued `ip` lines first: commands run in the order they were issued
        return self._runner(argv, check=check, input=input)

    def _ns(self, ns: str, *argv: str, check: bool = True, input: str | None = None) -> str:
        return self._run(["ip", "netns", "exec", ns, *argv], check=check, input=input)

    def _ip(self, ns: str, *argv: str, check: bool = True) -> str:
        """`ip -n ns argv`. While building (see _batched), checked commands whose output nobody reads are queued,
        and consecutive ones in one namespace run as one `ip -batch` (a process per command was most of the build's
        time); any other command runs the queue first."""
        if self._batching and check and not any(a in ("show", "-j", "list") for a in argv):
            if self._batch is not None and self._batch[0] != ns:
                self._flush_ip()
            if self._batch is None:
                self._batch = (ns, [])
            self._batch[1].append([_batch_word(a) for a in argv])
            return ""
        return self._run(["ip", "-n", ns, *argv], check=check)

    def _flush_ip(self) -> None:
        if self._batch is None:
            return
        ns, commands = self._batch
        self._batch = None
        if len(commands) == 1:
            self._runner(["ip", "-n", ns, *commands[0]], check=True, input=None)
        else:
            self._runner(["ip", "-n", ns, "-batch", "-"], check=True,
                         input="".join(" ".join(argv) + "\n" for argv in commands))

    @contextlib.contextmanager
    def _batched(self):
        """Queue the `ip` commands issued inside (see _ip); the queue has run when the block is left (or failed)."""
        self._batching = True
        try:
            yield
            self._flush_ip()
        finally:
            self._batching = False
            self._batch = None

    # discovery -----------------------------------------------------------------------------------
    def namespaces(self) -> list[str]:
        out = self._run(["ip", "-j", "netns", "list"], check=False) or "[]"
        names = [n["name"] for n in json.loads(out)] if out.strip() else []
        return sorted(n for n in names if n.startswith(self.prefix + "-"))

    def probe(self, transport: str) -> str | None:
        """None if this kernel can build `transport`, else the reason it cannot."""
        checks = {
            "routed": [],
            "vxlan": [["ip", "link", "add", "p0", "type", "vxlan", "id", "1", "dstport", "4789"]],
            "geneve": [["ip", "link", "add", "p0", "type", "geneve", "id", "1", "remote", "192.0.2.1"]],
            "ipip": [["ip", "link", "add", "p0", "type", "ipip", "local", "192.0.2.2"]],
            "wireguard": [["ip", "link", "add", "p0", "type", "wireguard"]],
            "ipsec": [
                ["ip", "xfrm", "state", "add", "src", "192.0.2.1", "dst", "192.0.2.2", "proto", "esp", "spi",
                 "0x100", "mode", "tunnel", "aead", "rfc4106(gcm(aes))", "0x" + "00" * 20, "128"]
            ],
        }
        if transport not in checks:
            return f"unknown transport {transport!r}"
        if not checks[transport]:
            return None
        ns = f"{self.prefix}-probe"
        sh.ok(["ip", "netns", "del", ns])
        self._run(["ip", "netns", "add", ns])
        try:
            for argv in checks[transport]:
                good, err = sh.ok(["ip", "netns", "exec", ns, *argv])
                if not good:
                    return f"kernel has no {transport} support (`{' '.join(argv[:6])} ...`: {err})"
            if transport == "wireguard" and not sh.which("wg"):
                return "wireguard-tools (`wg`) is not installed"
            return None
        finally:
            sh.ok(["ip", "netns", "del", ns])

    def probe_ebpf(self, vni: int) -> str | None:
        """None if the eBPF forwarding (ebpf.py) builds here and this kernel loads it, else the reason."""
        ns = f"{self.prefix}-probe"
        sh.ok(["ip", "netns", "del", ns])
        self._run(["ip", "netns", "add", ns])
        try:
            return ebpf.probe(ns, vni)
        finally:
            sh.ok(["ip", "netns", "del", ns])

    # lifecycle -----------------------------------------------------------------------------------
    def check(self, cm: CniMode) -> None:
        """Raise Unsupported if this kernel (or the testbed) cannot build the mode's datapath. No side effects
        outside a scratch namespace."""
        if cm.local.get("unsupported"):
            raise Unsupported(f"unsupported: {cm.local['unsupported']}")
        reason = self.probe(cm.local["transport"])
        if not reason and cm.local.get("forward") == "ebpf":
            reason = self.probe_ebpf(int(cm.local.get("vni", 0))) or sock_lb.probe(self.prefix)
        if reason:
            raise Unsupported(f"unsupported: {reason}")

    def up(self, cm: CniMode, lan_mtu: int | None = None, pod_mtu: int | None = None) -> dict:
        """provision() + install_cni(): the whole testbed for one CNI mode."""
        require_root()
        self.check(cm)
        self.provision(lan_mtu)
        return self.install_cni(cm, pod_mtu)

    def owner(self) -> int | None:
        """The live process, other than this one and its parent, whose testbed the prefix holds, or None."""
        try:
            return processes.other_live(int(json.loads(self.state_file.read_text()).get("pid") or 0))
        except (OSError, ValueError, AttributeError):
            return None

    def provision(self, lan_mtu: int | None = None) -> None:
        """The 'cluster': the LAN and the node namespaces (replacing any testbed with the same prefix, unless a
        running process holds it: then EdgebenchError, and nothing is touched).
        `lan_mtu` sets the node uplinks' MTU (jumbo frames: an MTU tuning profile); default 1500."""
        require_root()
        pid = self.owner()
        if pid is not None:
            raise EdgebenchError(f"testbed prefix {self.prefix!r} is in use by process {pid} "
                                 f"({processes.cmdline(pid)}): wait for it, or give this one another prefix "
                                 "(EDGEBENCH_TESTBED_PREFIX=eb2); `edgebench testbed down --prefix "
                                 f"{self.prefix}` removes a testbed whose process is gone")
        self.down()
        try:
            with self._batched():
                self._build_nodes(lan_mtu or 1500)
        except BaseException:
            self.down()
            raise

    def install_cni(self, cm: CniMode, pod_mtu: int | None = None) -> dict:
        """Attach pods and connect nodes the way the mode's datapath does; returns the read-back state.
        `pod_mtu` replaces the mode's default pod MTU (an MTU tuning profile).
        Raises Unsupported (nothing built) if the kernel lacks the datapath; tears down on any other failure."""
        require_root()
        self.check(cm)
        if pod_mtu:
            cm = dataclasses.replace(cm, mtu=pod_mtu)
        if not self.namespaces():
            raise EdgebenchError(f"testbed {self.prefix} is not provisioned (no namespaces); provision it first")
        if cm.runtime and self.cpu_limit != cpuclass.NONE:
            raise Unsupported(f"{cm.key} with a CPU class: the container's cgroup is not nested in the node's "
                              "CPU-class cgroup")
        if cm.runtime and sh.which(container.RUNTIME) is None:
            raise Unsupported(f"{cm.key}: {container.RUNTIME} is not installed (apt-get install {container.RUNTIME})")
        self._host = cm.host_network
        self._runtime = cm.runtime
        self._sock_lb_recs = {}
        try:
            with self._batched():
                self._build_datapath(cm)
            chains = self._node_chains(cm)
        except BaseException:
            self.down()
            raise
        state = {"prefix": self.prefix, "nodes": self.nodes, "clusters": self.clusters, "cni": cm.cni, "mode": cm.mode,
                 "datapath": cm.datapath, "runtime": cm.runtime, "mtu": self.read_mtu(self.client()),
                 "multicast_flood": bool(cm.local.get("multicast_flood")), "pid": os.getpid(),
                 "sock_lb": {str(i): rec for i, rec in getattr(self, "_sock_lb_recs", {}).items()},
                 "node_chains": chains}
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(json.dumps(state, indent=2))
        return state

    def _node_chains(self, cm: CniMode) -> dict[str, str]:
        """The iptables chains a real node running this mode carries (node_chains.py), in every node."""
        attach = cm.local["attach"]
        nodes = list(range(1, self.nodes + 1))
        pods = {i: [] if attach == "host" else [pod_ip(i, j) for j in range(1, PODS_PER_NODE + 1)] for i in nodes}
        return node_chains.install(self, cm, nodes=nodes, pods=pods, bridge=cm.local.get("bridge", "cni0"),
                                   pod_ifs="cali+" if attach == "ptp" else "veth+",
                                   service_cidr={i: str(service_cidr(self.cluster_of(i))) for i in nodes},
                                   service_proxy=self.service_proxy)

    def down(self) -> list[str]:
        """Remove every namespace carrying the prefix (killing processes inside first). Idempotent. The processes
        are found in /proc and the namespaces deleted by one `ip -batch` (-force: a failed line does not stop it)."""
        removed = self.namespaces()
        self.kill_processes(removed)
        if removed:
            self._run(["ip", "-force", "-batch", "-"], check=False, input="".join(f"netns del {ns}\n" for ns in removed))
        self.state_file.unlink(missing_ok=True)
        shutil.rmtree(STATE_DIR / f"intercluster-{self.prefix}", ignore_errors=True)  # a join's certificates, marker

        cpuclass.remove(self.prefix)  # the nodes' CPU-class cgroups, also after a killed run
        sock_lb.remove(self.prefix)  # the socket load balancer's cgroups, and with them its programs and maps
        self._sock_lb_recs = {}
        container.cleanup(self.prefix)  # host-container's runc containers, bundles and root bind mount
        for sub in self.duet_members(removed):  # a duet's testbeds live under this prefix: their state goes too
            removed += Testbed(sub, runner=self._runner).down()
        return removed

    def duet_members(self, names: Sequence[str] = ()) -> list[str]:
        """The prefixes of the duet members under this one (`<prefix>-d<k>`, sweep/duet.py) that left namespaces
        (among `names`) or a state file."""
        pattern = re.compile(re.escape(self.prefix) + r"-d[0-9]+(?=-|\.json$)")
        found = {m.group(0) for n in names for m in [pattern.match(n)] if m}
        if STATE_DIR.is_dir():
            found |= {m.group(0) for f in STATE_DIR.glob(f"testbed-{self.prefix}-d*.json")
                      for m in [pattern.match(f.name[len("testbed-"):])] if m}
        return sorted(found)

    def kill_processes(self, namespaces: Sequence[str] | None = None, spare: Sequence[int] = ()) -> int:
        """SIGKILL every process in the testbed's namespaces (found in /proc) but those in `spare` (the mode's own
        daemons, agent_pids); returns how many there were."""
        n = 0
        for pids in netns_pids(self.namespaces() if namespaces is None else namespaces).values():
            for pid in pids:
                if pid in spare:
                    continue
                try:
                    os.kill(pid, signal.SIGKILL)
                    n += 1
                except ProcessLookupError:
                    pass
        return n

    def forget_traffic(self) -> None:
        """Flush what earlier traffic left in the kernel's caches of every namespace (TCP metrics: cached RTT and
        congestion window of past peers; the neighbour tables; cached path MTUs), so a reused testbed starts like a
        new one."""
        for ns in self.namespaces():
            self._run(["ip", "-n", ns, "-force", "-batch", "-"], check=False,
                      input="tcp_metrics flush all\nneigh flush all\nroute flush cache\n")

    def fingerprint(self, namespaces: Sequence[str]) -> dict[str, str]:
        """{namespace: its qdiscs and nftables ruleset, without counters}: what link conditions and services change
        in a built testbed (tuning is checked against its own snapshot). A reused testbed must read as when built."""
        out = {}
        for ns in namespaces:
            text = self._ns(ns, "sh", "-c", "tc qdisc show; "
                            "nft list ruleset 2>/dev/null | sed -E 's/(packets|bytes) [0-9]+/\\1 -/g'", check=False)
            out[ns] = "\n".join(ln for ln in text.splitlines() if ln.strip())
        return out

    def status(self) -> dict:
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else None
        spaces = {}
        for ns in self.namespaces():
            out = self._run(["ip", "-n", ns, "-br", "addr"], check=False)
            spaces[ns] = [" ".join(line.split()) for line in out.splitlines() if not line.startswith("lo ")]
        return {"prefix": self.prefix, "up": bool(spaces), "state": state, "namespaces": spaces}

    def read_mtu(self, ep: Endpoint) -> int:
        dev = "eth0"
        info = json.loads(self._run(["ip", "-n", ep.ns, "-j", "link", "show", "dev", dev]))
        return int(info[0]["mtu"])
