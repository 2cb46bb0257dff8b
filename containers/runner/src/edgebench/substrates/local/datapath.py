"""How the local testbed builds a CNI mode's datapath: node namespaces on the LAN, pods attached the way the mode
attaches them (bridge or ptp), and the inter-node transport (routes, VXLAN, Geneve, IPIP, WireGuard, IPsec).
The Testbed class (testbed.py) inherits these builders; they use its naming and command helpers."""

from __future__ import annotations

import ipaddress
import os
import secrets
import tempfile
from pathlib import Path

from edgebench import sh
from edgebench.plan.catalog import CniMode
from edgebench.substrates.local import ebpf, sock_lb

# the address plan
LAN = ipaddress.ip_network("10.77.0.0/24")
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/16")  # cluster 1; cluster c gets 10.(95+c).0.0/16 (no overlap)
PODS_PER_NODE = 4  # pod 1 of node 1 is the client; the others host servers and DDS subscribers
SVC_TABLE = "edgebench_svc"


def service_cidr(cluster: int = 1) -> ipaddress.IPv4Network:
    return ipaddress.ip_network(f"10.{95 + cluster}.0.0/16")


def service_ip(cluster: int = 1) -> str:
    """The ClusterIP pod-to-service runs use in a cluster (10.96.0.10 in cluster 1)."""
    return str(service_cidr(cluster).network_address + 10)


def node_ip(i: int) -> str:
    return str(LAN.network_address + 10 + i)


def pod_cidr(i: int) -> ipaddress.IPv4Network:
    return ipaddress.ip_network(f"10.244.{i}.0/24")


def pod_ip(i: int, j: int) -> str:
    return str(pod_cidr(i).network_address + 10 + j)


def gateway_ip(i: int) -> str:
    return str(pod_cidr(i).network_address + 1)


def ptp_veth(i: int, j: int) -> str:
    """The host-side veth of pod j on node i in the ptp attachment."""
    return f"cali{i}{j}"


def _mac(*octets: int) -> str:
    return ":".join(f"{b:02x}" for b in (0x02, 0xEB, *octets, 0, 0)[:6])


class Datapath:
    """Builders mixed into Testbed (self.node_ns, self.pod_ns, self._ns, self._ip, self.nodes come from there)."""

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
            self._ip(ns, "route", "add", str(service_cidr(self.cluster_of(i))), "dev", "eth0")
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
            rule = cm.local.get("pod_rule")
            if rule:  # the CNI's policy-routing rule for its pods: their route lookups go through the rules
                self._ip(self.node_ns(i), "rule", "add", "pref", str(rule["pref"]), "from", str(pod_cidr(i)),
                         "lookup", str(rule["table"]))
        ebpf_tunnel = cm.local.get("forward") == "ebpf" and transport in ("vxlan", "geneve")
        keys = _Keys()
        for i in range(1, self.nodes + 1):
            for j in self.cluster_nodes(self.cluster_of(i)):  # a CNI connects the nodes of its own cluster only
                if i != j:
                    if ebpf_tunnel:
                        self._transport_ebpf_tunnel(i, j, cm)
                    else:
                        getattr(self, f"_transport_{transport}")(i, j, cm, keys)
        keys.cleanup()
        if cm.local.get("forward") == "ebpf":
            self._attach_ebpf(cm, tunnel=ebpf_tunnel)
            self._attach_sock_lb()
        if cm.local.get("multicast_flood"):
            for i in range(1, self.nodes + 1):
                self._multicast_flood(i, cm)

    def _multicast_flood(self, i: int, cm: CniMode) -> None:
        """Weave's multicast: IPv4 multicast frames on the pod bridge are flooded to every peer node of the cluster
        (head-end replication, one VXLAN copy per peer), as Weave's router floods multicast to all peers. A second
        VXLAN port on the bridge, next VNI, that carries nothing else: no learning, no unknown-unicast or broadcast
        flooding, so unicast stays on the mode's own transport. No IGMP snooping on either side: every pod of every
        node of the cluster receives every group, as on one plain L2 segment."""
        ns, dev = self.node_ns(i), cm.local["multicast_flood"]
        bridge = cm.local.get("bridge", "cni0")
        self._ip(ns, "link", "add", dev, "address", _mac(0x0C, i), "mtu", str(cm.mtu), "type", "vxlan",
                 "id", str(int(cm.local.get("vni", 1)) + 1), "local", node_ip(i), "dev", "eth0",
                 "dstport", str(cm.udp_port), "nolearning")
        self._ip(ns, "link", "set", dev, "master", bridge, "up")
        self._run(["bridge", "-n", ns, "link", "set", "dev", dev, "learning", "off", "flood", "off",
                   "bcast_flood", "off", "mcast_flood", "on"])
        for j in self.cluster_nodes(self.cluster_of(i)):
            if j != i:
                self._run(["bridge", "-n", ns, "fdb", "append", "00:00:00:00:00:00", "dev", dev, "dst", node_ip(j)])

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
            host_if = ptp_veth(i, j)
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

    def _transport_ebpf_tunnel(self, i: int, j: int, cm: CniMode) -> None:
        """Cilium's tunnel: one collect-metadata (`external`) VXLAN or Geneve device per node, at the same interface
        index in every node (ebpf.TUNNEL_IFINDEX), whose programs pick the peer per packet (ebpf.py); the route and
        static neighbour per peer carry what the stack routes there (a host-network client, a service's DNAT)."""
        ns, dev = self.node_ns(i), cm.local["device"]
        if not self._has_link(ns, dev):
            self._ip(ns, "link", "add", dev, "index", str(ebpf.TUNNEL_IFINDEX), "address", _mac(0x0B, i),
                     "mtu", str(cm.mtu), "type", cm.local["transport"], "external", "dstport", str(cm.udp_port))
            self._ip(ns, "addr", "add", f"{pod_cidr(i).network_address}/32", "dev", dev)
            self._ip(ns, "link", "set", dev, "up")
        peer_gw = str(pod_cidr(j).network_address)
        self._ip(ns, "route", "add", str(pod_cidr(j)), "via", peer_gw, "dev", dev, "onlink")
        self._ip(ns, "neigh", "add", peer_gw, "lladdr", _mac(0x0B, j), "dev", dev, "nud", "permanent")

    def _attach_ebpf(self, cm: CniMode, tunnel: bool) -> None:
        """The eBPF forwarding's programs (ebpf.py): on every pod's host-side veth (from_pod, or from_pod_routed
        where the stack forwards), and on the device packets from other nodes arrive on (the tunnel device, else
        the node's uplink or its encrypting device)."""
        obj = ebpf.build(int(cm.local.get("vni", 0)))
        arrive = cm.local["device"] if cm.local["transport"] != "routed" else "eth0"
        leaving = [("ingress", "from_pod" if tunnel else "from_pod_routed")]
        arriving = [("ingress", "from_overlay")] + ([("egress", "to_overlay")] if tunnel else [])
        for i in range(1, self.nodes + 1):
            lines = [line for j in range(1, PODS_PER_NODE + 1) for line in ebpf.tc_lines(ptp_veth(i, j), obj, leaving)]
            lines += ebpf.tc_lines(arrive, obj, arriving)
            self._ns(self.node_ns(i), "tc", "-batch", "-", input="\n".join(lines) + "\n")

    def _attach_sock_lb(self) -> None:
        """The socket load balancer's cgroup programs (sock_lb.py), one cgroup per node; its pods' processes start
        in it (Endpoints.endpoint); and each node's monitor of their events, in the node's namespace. Recorded in the
        testbed's state ("sock_lb")."""
        self._sock_lb_recs = {i: sock_lb.attach(self.prefix, i) for i in range(1, self.nodes + 1)}
        for i, rec in self._sock_lb_recs.items():  # the agent's reader of the hooks' events, one per node
            rec["monitor_pid"] = sock_lb.start_monitor(rec, self.node_ns(i)).pid

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
