"""The local testbed: real kernel datapaths in Linux network namespaces (no Kubernetes, no Docker).

  <prefix>-lan        the emulated LAN: bridge lan0, one veth per node
  <prefix>-n<i>       node i: eth0 = 10.77.0.(10+i)/24 on the LAN, pod CIDR 10.244.<i>.0/24, forwarding on
  <prefix>-n<i>-p<j>  pod j on node i, attached the way the CNI mode attaches pods (bridge or ptp)

Inter-node pod traffic crosses the LAN the way the mode's datapath carries it (routes, VXLAN, Geneve, IPIP,
WireGuard, IPsec). ClusterIP services are nftables DNAT rules in every node, as kube-proxy's iptables rules.
Every name carries the prefix; `down` deletes every namespace with it (and kills what runs inside), so it also
cleans up after a killed run. A datapath this kernel cannot build raises Unsupported with the kernel's reason.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import secrets
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from . import sh
from .catalog import CniMode
from .errors import EdgebenchError, NotRootError
from .substrate import Unsupported

LAN = ipaddress.ip_network("10.77.0.0/24")
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/16")
PODS_PER_NODE = 4  # pod 1 of node 1 is the client; the others host servers and DDS subscribers
STATE_DIR = Path(os.environ.get("EDGEBENCH_RUN_DIR", "/run/edgebench"))
SVC_TABLE = "edgebench_svc"


def default_prefix() -> str:
    return os.environ.get("EDGEBENCH_TESTBED_PREFIX", "eb")


def require_root() -> None:
    if os.geteuid() != 0:
        raise NotRootError(
            "the local testbed creates network namespaces and needs root: run as root (e.g. `sudo make sweep`)"
        )


@dataclass(frozen=True)
class Endpoint:
    """A testbed endpoint (substrate.Endpoint): a namespace and the address peers use to reach it."""

    ns: str
    ip: str
    node: int

    def cmd(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns, *argv]


def node_ip(i: int) -> str:
    return str(LAN.network_address + 10 + i)


def pod_cidr(i: int) -> ipaddress.IPv4Network:
    return ipaddress.ip_network(f"10.244.{i}.0/24")


def pod_ip(i: int, j: int) -> str:
    return str(pod_cidr(i).network_address + 10 + j)


def gateway_ip(i: int) -> str:
    return str(pod_cidr(i).network_address + 1)


def _mac(*octets: int) -> str:
    return ":".join(f"{b:02x}" for b in (0x02, 0xEB, *octets, 0, 0)[:6])


class Testbed:
    __test__ = False  # not a pytest class
    def __init__(self, prefix: str | None = None, nodes: int = 2, runner: Callable[..., str] = sh.run):
        self.prefix = prefix or default_prefix()
        if not self.prefix.replace("-", "").isalnum() or len(self.prefix) > 12:
            raise EdgebenchError(f"testbed prefix {self.prefix!r} must be short (<=12) letters/digits/'-'")
        self.nodes = nodes
        self._run = runner

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

    def _ns(self, ns: str, *argv: str, check: bool = True, input: str | None = None) -> str:
        return self._run(["ip", "netns", "exec", ns, *argv], check=check, input=input)

    def _ip(self, ns: str, *argv: str, check: bool = True) -> str:
        return self._run(["ip", "-n", ns, *argv], check=check)

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

    # lifecycle -----------------------------------------------------------------------------------
    def check(self, cm: CniMode) -> None:
        """Raise Unsupported if this kernel (or the testbed) cannot build the mode's datapath. No side effects
        outside a scratch namespace."""
        if cm.local.get("unsupported"):
            raise Unsupported(f"unsupported: {cm.local['unsupported']}")
        reason = self.probe(cm.local["transport"])
        if reason:
            raise Unsupported(f"unsupported: {reason}")

    def up(self, cm: CniMode, lan_mtu: int | None = None, pod_mtu: int | None = None) -> dict:
        """provision() + install_cni(): the whole testbed for one CNI mode."""
        require_root()
        self.check(cm)
        self.provision(lan_mtu)
        return self.install_cni(cm, pod_mtu)

    def provision(self, lan_mtu: int | None = None) -> None:
        """The 'cluster': the LAN and the node namespaces (replacing any testbed with the same prefix).
        `lan_mtu` sets the node uplinks' MTU (jumbo frames: an MTU tuning profile); default 1500."""
        require_root()
        self.down()
        try:
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
        self._host = cm.is_host
        try:
            self._build_datapath(cm)
        except BaseException:
            self.down()
            raise
        state = {"prefix": self.prefix, "nodes": self.nodes, "cni": cm.cni, "mode": cm.mode,
                 "datapath": cm.datapath, "mtu": self.read_mtu(self.client()), "pid": os.getpid()}
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(json.dumps(state, indent=2))
        return state

    def down(self) -> list[str]:
        """Remove every namespace carrying the prefix (killing processes inside first). Idempotent."""
        removed = []
        for ns in self.namespaces():
            pids = self._run(["ip", "netns", "pids", ns], check=False).split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            self._run(["ip", "netns", "del", ns], check=False)
            removed.append(ns)
        self.state_file.unlink(missing_ok=True)
        return removed

    def status(self) -> dict:
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else None
        spaces = {}
        for ns in self.namespaces():
            out = self._run(["ip", "-n", ns, "-br", "addr"], check=False)
            spaces[ns] = [" ".join(line.split()) for line in out.splitlines() if not line.startswith("lo ")]
        return {"prefix": self.prefix, "up": bool(spaces), "state": state, "namespaces": spaces}

    # endpoints -----------------------------------------------------------------------------------
    def _is_host(self) -> bool:
        if getattr(self, "_host", None) is not None:
            return self._host
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {}
        return state.get("datapath") == "host"

    def endpoint(self, node: int, pod: int, host: bool | None = None) -> Endpoint:
        """Pod `pod` of node `node`; with host networking every pod is its node's namespace."""
        host = self._is_host() if host is None else host
        if host:
            return Endpoint(self.node_ns(node), node_ip(node), node)
        return Endpoint(self.pod_ns(node, pod), pod_ip(node, pod), node)

    def client(self) -> Endpoint:
        return self.endpoint(1, 1)

    def server(self, placement: str) -> Endpoint:
        return self.endpoint(1, 2) if placement == "same-node" else self.endpoint(2, 1)

    def pods(self, node: int) -> list[Endpoint]:
        return [self.endpoint(node, j) for j in range(1, PODS_PER_NODE + 1)]

    def peers(self, placement: str) -> list[Endpoint]:
        """Where subscribers go: the other node's pods (cross-node) or node 1's pods after the client."""
        return self.pods(2) if placement == "cross-node" else self.pods(1)[1:]

    def multicast_reason(self, placement: str) -> str | None:
        """None if multicast from the client pod reaches the `placement` peers on this datapath, else why not.

        The testbed floods multicast only within one L2 segment: the LAN (host networking) and one node's pod
        bridge. It routes no multicast between nodes and its tunnels carry no BUM traffic."""
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {}
        datapath = state.get("datapath", "?")
        if self._is_host() or (placement == "same-node" and datapath.startswith("bridge-")):
            return None
        where = "between nodes" if placement == "cross-node" else "between pods without a shared bridge"
        return f"the {datapath} datapath carries no multicast {where} on the local testbed"

    def read_mtu(self, ep: Endpoint) -> int:
        dev = "eth0"
        info = json.loads(self._run(["ip", "-n", ep.ns, "-j", "link", "show", "dev", dev]))
        return int(info[0]["mtu"])

    def add_service(self, cluster_ip: str, port: int, backend: Endpoint) -> None:
        """ClusterIP -> backend for TCP and UDP, in every node (prerouting for pods, output for host pods)."""
        for i in range(1, self.nodes + 1):
            ns = self.node_ns(i)
            for proto in ("tcp", "udp"):
                for chain in ("prerouting", "output"):
                    self._ns(ns, "nft", "add", "rule", "ip", SVC_TABLE, chain, "ip", "daddr", cluster_ip, proto,
                             "dport", str(port), "dnat", "to", f"{backend.ip}:{port}")

    def flush_services(self) -> None:
        for i in range(1, self.nodes + 1):
            for chain in ("prerouting", "output"):
                self._ns(self.node_ns(i), "nft", "flush", "chain", "ip", SVC_TABLE, chain)

    # building ------------------------------------------------------------------------------------
    def _build_nodes(self, lan_mtu: int) -> None:
        self._run(["ip", "netns", "add", self.lan_ns])
        self._ip(self.lan_ns, "link", "add", "lan0", "type", "bridge")
        self._ip(self.lan_ns, "link", "set", "lan0", "up")
        for i in range(1, self.nodes + 1):
            ns = self.node_ns(i)
            self._run(["ip", "netns", "add", ns])
            self._ip(self.lan_ns, "link", "add", f"n{i}", "mtu", str(lan_mtu), "type", "veth", "peer", "name",
                     "eth0", "mtu", str(lan_mtu), "netns", ns)
            self._ip(self.lan_ns, "link", "set", f"n{i}", "master", "lan0", "up")
            self._ip(ns, "addr", "add", f"{node_ip(i)}/{LAN.prefixlen}", "dev", "eth0")
            self._ip(ns, "link", "set", "eth0", "up")
            self._ip(ns, "link", "set", "lo", "up")
            # nodes route the service CIDR to their uplink (a real node's default route) so that host-network
            # clients get past the routing decision to the output DNAT rule
            self._ip(ns, "route", "add", str(SERVICE_CIDR), "dev", "eth0")
            self._ip(ns, "route", "add", "224.0.0.0/4", "dev", "eth0")  # multicast (DDS discovery) on the LAN
            for key in ("net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0",
                        "net.ipv4.conf.default.rp_filter=0"):
                self._ns(ns, "sysctl", "-qw", key)
            self._services_table(ns)

    def _build_datapath(self, cm: CniMode) -> None:
        attach, transport, mtu = cm.local["attach"], cm.local["transport"], cm.mtu
        if attach == "host":
            return
        for i in range(1, self.nodes + 1):
            if attach == "bridge":
                bridge = cm.local.get("bridge", "cni0")
                self._bridge_pods(i, mtu, bridge)
                # hairpin: client and backend on the same bridge; kube-proxy masquerades this case too
                self._ns(self.node_ns(i), "nft", "add", "rule", "ip", SVC_TABLE, "postrouting", "iifname", bridge,
                         "oifname", bridge, "ct", "status", "dnat", "masquerade")
            else:
                self._ptp_pods(i, mtu)
        keys = _Keys()
        for i in range(1, self.nodes + 1):
            for j in range(1, self.nodes + 1):
                if i != j:
                    getattr(self, f"_transport_{transport}")(i, j, cm, keys)
        keys.cleanup()

    def _has_link(self, ns: str, dev: str) -> bool:
        out = self._run(["ip", "-n", ns, "-o", "link", "show"], check=False)
        return dev in {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}

    def _services_table(self, ns: str) -> None:
        rules = [
            f"add table ip {SVC_TABLE}",
            f"add chain ip {SVC_TABLE} prerouting {{ type nat hook prerouting priority dstnat; }}",
            f"add chain ip {SVC_TABLE} output {{ type nat hook output priority -100; }}",
            f"add chain ip {SVC_TABLE} postrouting {{ type nat hook postrouting priority srcnat; }}",
        ]
        self._ns(ns, "nft", "-f", "-", input="\n".join(rules) + "\n")

    def _veth_pod(self, i: int, j: int, host_if: str, mtu: int) -> str:
        ns, pns = self.node_ns(i), self.pod_ns(i, j)
        self._run(["ip", "netns", "add", pns])
        self._ip(ns, "link", "add", host_if, "mtu", str(mtu), "type", "veth", "peer", "name", "eth0",
                 "mtu", str(mtu), "netns", pns)
        self._ip(pns, "link", "set", "lo", "up")
        self._ip(pns, "link", "set", "eth0", "up")
        return pns

    def _bridge_pods(self, i: int, mtu: int, bridge: str) -> None:
        ns = self.node_ns(i)
        # no IGMP snooping: the bridge floods multicast to every pod, like a plain L2 segment
        self._ip(ns, "link", "add", bridge, "mtu", str(mtu), "type", "bridge", "mcast_snooping", "0")
        self._ip(ns, "addr", "add", f"{gateway_ip(i)}/24", "dev", bridge)
        self._ip(ns, "link", "set", bridge, "up")
        for j in range(1, PODS_PER_NODE + 1):
            pns = self._veth_pod(i, j, f"veth{j}", mtu)
            self._ip(ns, "link", "set", f"veth{j}", "master", bridge, "up")
            self._ip(pns, "addr", "add", f"{pod_ip(i, j)}/24", "dev", "eth0")
            self._ip(pns, "route", "add", "default", "via", gateway_ip(i))

    def _ptp_pods(self, i: int, mtu: int) -> None:
        """Calico style: /32 pod address, gateway 169.254.1.1 answered by the host veth, /32 route per pod."""
        ns = self.node_ns(i)
        for j in range(1, PODS_PER_NODE + 1):
            host_if = f"cali{i}{j}"
            pns = self._veth_pod(i, j, host_if, mtu)
            self._ip(ns, "link", "set", host_if, "address", _mac(0xCA, i, j), "up")
            self._ip(pns, "addr", "add", f"{pod_ip(i, j)}/32", "dev", "eth0")
            self._ip(pns, "route", "add", "169.254.1.1", "dev", "eth0", "scope", "link")
            self._ip(pns, "neigh", "add", "169.254.1.1", "lladdr", _mac(0xCA, i, j), "dev", "eth0", "nud", "permanent")
            self._ip(pns, "route", "add", "default", "via", "169.254.1.1", "dev", "eth0")
            self._ip(ns, "route", "add", f"{pod_ip(i, j)}/32", "dev", host_if)

    # transports: called once per ordered node pair (i -> j) ---------------------------------------
    def _transport_routed(self, i: int, j: int, cm: CniMode, keys: "_Keys") -> None:
        self._ip(self.node_ns(i), "route", "add", str(pod_cidr(j)), "via", node_ip(j), "dev", "eth0")

    def _transport_vxlan(self, i: int, j: int, cm: CniMode, keys: "_Keys") -> None:
        """Flannel's VXLAN layout: one device, /32 on it, onlink route + static ARP + FDB entry per peer."""
        ns, dev = self.node_ns(i), cm.local["device"]
        if not self._has_link(ns, dev):
            self._ip(ns, "link", "add", dev, "address", _mac(0x0B, i), "mtu", str(cm.mtu), "type", "vxlan",
                     "id", str(cm.local.get("vni", 1)), "local", node_ip(i), "dev", "eth0",
                     "dstport", str(cm.udp_port), "nolearning")
            self._ip(ns, "addr", "add", f"{pod_cidr(i).network_address}/32", "dev", dev)
            self._ip(ns, "link", "set", dev, "up")
        peer_gw = str(pod_cidr(j).network_address)
        self._ip(ns, "route", "add", str(pod_cidr(j)), "via", peer_gw, "dev", dev, "onlink")
        self._ip(ns, "neigh", "add", peer_gw, "lladdr", _mac(0x0B, j), "dev", dev, "nud", "permanent")
        self._run(["bridge", "-n", ns, "fdb", "append", _mac(0x0B, j), "dev", dev, "dst", node_ip(j)])

    def _transport_geneve(self, i: int, j: int, cm: CniMode, keys: "_Keys") -> None:
        """One point-to-point Geneve device per peer, onlink route + static ARP."""
        ns, dev = self.node_ns(i), f"{cm.local['device'][:12]}-{j}"
        self._ip(ns, "link", "add", dev, "address", _mac(0x6E, i, j), "mtu", str(cm.mtu), "type", "geneve",
                 "id", str(cm.local.get("vni", 1)), "remote", node_ip(j), "dstport", str(cm.udp_port))
        self._ip(ns, "link", "set", dev, "up")
        peer_gw = str(pod_cidr(j).network_address)
        self._ip(ns, "route", "add", str(pod_cidr(j)), "via", peer_gw, "dev", dev, "onlink")
        self._ip(ns, "neigh", "add", peer_gw, "lladdr", _mac(0x6E, j, i), "dev", dev, "nud", "permanent")

    def _transport_ipip(self, i: int, j: int, cm: CniMode, keys: "_Keys") -> None:
        """Calico/kube-router IPIP: one NBMA ipip device; the route's next hop is the outer destination."""
        ns, dev = self.node_ns(i), cm.local["device"]
        if not self._has_link(ns, dev):  # tunl0 may already exist as the namespace's fallback device
            self._ip(ns, "link", "add", dev, "type", "ipip", "local", node_ip(i))
        self._ip(ns, "link", "set", dev, "mtu", str(cm.mtu), "up")
        self._ip(ns, "route", "replace", str(pod_cidr(j)), "via", node_ip(j), "dev", dev, "onlink")

    def _transport_wireguard(self, i: int, j: int, cm: CniMode, keys: "_Keys") -> None:
        ns, dev, port = self.node_ns(i), cm.local["device"], str(cm.udp_port)
        if not self._has_link(ns, dev):
            self._ip(ns, "link", "add", dev, "type", "wireguard")
            self._ns(ns, "wg", "set", dev, "listen-port", port, "private-key", keys.private_file(i))
            self._ip(ns, "link", "set", dev, "mtu", str(cm.mtu), "up")
        self._ns(ns, "wg", "set", dev, "peer", keys.public(j), "endpoint", f"{node_ip(j)}:{port}",
                 "allowed-ips", str(pod_cidr(j)))
        self._ip(ns, "route", "add", str(pod_cidr(j)), "dev", dev)

    def _transport_ipsec(self, i: int, j: int, cm: CniMode, keys: "_Keys") -> None:
        """Routed pod CIDRs plus ESP tunnel-mode SAs/policies between the node addresses (as flannel ipsec)."""
        ns = self.node_ns(i)
        self._transport_routed(i, j, cm, keys)
        for src, dst, direction in ((i, j, ("out",)), (j, i, ("in", "fwd"))):
            spi = f"0x{0x1000 + src * 16 + dst:x}"
            self._ns(ns, "ip", "xfrm", "state", "add", "src", node_ip(src), "dst", node_ip(dst), "proto", "esp",
                     "spi", spi, "reqid", spi, "mode", "tunnel", "aead", "rfc4106(gcm(aes))",
                     "0x" + keys.esp_key(src, dst), "128")
            for d in direction:
                self._ns(ns, "ip", "xfrm", "policy", "add", "src", str(pod_cidr(src)), "dst", str(pod_cidr(dst)),
                         "dir", d, "tmpl", "src", node_ip(src), "dst", node_ip(dst), "proto", "esp",
                         "reqid", spi, "mode", "tunnel")



class _Keys:
    """Throwaway key material for encrypted transports, generated per testbed and never stored."""

    def __init__(self) -> None:
        self._dir: str | None = None
        self._wg: dict[int, tuple[str, str]] = {}
        self._esp: dict[tuple[int, int], str] = {}

    def _wg_pair(self, i: int) -> tuple[str, str]:
        if i not in self._wg:
            private = sh.run(["wg", "genkey"]).strip()
            self._wg[i] = (private, sh.run(["wg", "pubkey"], input=private + "\n").strip())
        return self._wg[i]

    def private_file(self, i: int) -> str:
        self._dir = self._dir or tempfile.mkdtemp(prefix="edgebench-keys-")
        path = Path(self._dir) / f"wg{i}.key"
        path.write_text(self._wg_pair(i)[0] + "\n")
        path.chmod(0o600)
        return str(path)

    def public(self, i: int) -> str:
        return self._wg_pair(i)[1]

    def esp_key(self, src: int, dst: int) -> str:
        return self._esp.setdefault((src, dst), secrets.token_hex(20))

    def cleanup(self) -> None:
        if self._dir:
            for p in Path(self._dir).iterdir():
                p.unlink()
            os.rmdir(self._dir)
