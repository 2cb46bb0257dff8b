"""Joining the testbed's two clusters the way an inter-cluster tool does (issue 13; catalog/intercluster.yaml).

The testbed (testbed.py, clusters=2) has cluster 1 = nodes 1..k (node 1 its gateway), cluster 2 = nodes k+1..n
(node k+1 its gateway). The client runs on a worker of cluster 2, the server on a worker of cluster 1.

Submariner (implementation `kernel`): its data path is kernel state, built here as its route agent and gateway
engine build it, without its control plane (no broker, no Lighthouse, no pluto/IKE):
  * every node has `vx-submariner` (VXLAN, VNI 100, UDP 4800, VTEP 240.<node IP's last three octets>/8); a worker
    routes the remote cluster's pod and service CIDRs via its gateway's VTEP;
  * the gateways are joined by the cable: `vxlan` (device vxlan-tunnel, VNI 1000, UDP 4500, VTEP 241.x/8, remote
    CIDRs in table 100 behind an ip rule), `wireguard` (device submariner, UDP 4500, the kernel's default MTU) or `libreswan` (ESP tunnel-mode SAs and policies between the gateway
    addresses for every local x remote CIDR pair, static keys in place of IKE). A cable the kernel cannot build is
    Unsupported with the kernel's reason, never replaced by another;
  * the exported service is the exporting cluster's ClusterIP (what Lighthouse resolves
    <svc>.<ns>.svc.clusterset.local to): DNAT happens in cluster 1, after the cable.

Skupper and ClusterLink (implementation `emulated`): their data planes cannot run here, so `edgebench-relay`
(containers/relay) models them on the gateways: an egress relay in cluster 1's gateway and, per exported port, an
ingress relay in cluster 2's gateway behind a cluster-2 ClusterIP (the router / dataplane pod's service). Every run
records the model (catalog `model`) in its manifest; nothing calls it the tool.

The relays run where the tools' routers run: in a POD on the gateway node (pod ROUTER_POD of its namespace set, on
the pod network), not in the node's own namespace. Cluster 1's gateway exposes the link port on its node IP (a
NodePort / LoadBalancer: DNAT to the egress pod) and cluster 2's gateway masquerades the ingress pod's link
connections to its node IP (the CNI's SNAT of pod traffic leaving the cluster); table RELAY_NFT_TABLE in each gateway.
This also keeps the relays' sockets out of the node namespace, whose uplink the userspace netem emulator shapes: a
packet it holds still belongs to a LOCAL socket there (sch_netem orphans it, NFQUEUE cannot), so TCP Small Queues
capped every connection of a relay in a node namespace at ~9 Mbit/s under edg10 (a socket may have only
max(2 x skb truesize, 1 ms at its pacing rate) not yet transmitted, and the emulator holds each packet ~5 ms).
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from edgebench import sh
from edgebench.errors import EdgebenchError
from edgebench.plan.catalog import InterclusterTool
from edgebench.substrates.base import Unsupported
from edgebench.substrates.local.datapath import PODS_PER_NODE, node_ip, pod_cidr, service_cidr, service_ip
from edgebench.substrates.local.testbed import STATE_DIR, Endpoint, Testbed

# Submariner's kernel constants (see docs/reference/intercluster.md)
VX_DEVICE, VX_VNI, VX_PORT, VX_PREFIX = "vx-submariner", 100, 4800, 240
CABLE_VXLAN_DEVICE, CABLE_VXLAN_VNI, CABLE_PORT, CABLE_VXLAN_PREFIX = "vxlan-tunnel", 1000, 4500, 241
CABLE_WG_DEVICE = "submariner"
CABLE_TABLE = 100  # the vxlan cable's routing table
WG_DEFAULT_MTU = 1420  # Submariner sets no MTU on its WireGuard device: the kernel's default applies
VXLAN_OVERHEAD = 50
NFT_TABLE = "submariner"  # the MSS clamping rules
RELAY = "edgebench-relay"
RELAY_READY_S = 10.0
ROUTER_POD = PODS_PER_NODE  # the gateway node's pod running the relay (router / dataplane pod); no workload uses it
RELAY_NFT_TABLE = "edgebench_relay"  # the link port's DNAT (cluster 1's gateway) and SNAT (cluster 2's gateway)


def _vtep(prefix: int, i: int) -> str:
    a = ipaddress.ip_address(node_ip(i)).packed
    return f"{prefix}.{a[1]}.{a[2]}.{a[3]}"


def _mac(kind: int, i: int) -> str:
    return f"02:eb:{kind:02x}:{i:02x}:00:00"


class Joiner:
    """Connects and disconnects the two clusters of a testbed for one tool; reads back what is in force."""

    def __init__(self, testbed: Testbed, tool: InterclusterTool, underlay_mtu: int = 1500):
        if testbed.clusters != 2:
            raise EdgebenchError("an inter-cluster cell needs a testbed of two clusters")
        self.tb, self.tool, self.mtu = testbed, tool, underlay_mtu - VXLAN_OVERHEAD
        self._procs: dict[str, subprocess.Popen] = {}
        self._certs: str | None = None

    # ---- names --------------------------------------------------------------------------------------------------
    def _remote(self, c: int) -> list[str]:
        """The CIDRs of the other cluster: its nodes' pod CIDRs and its service CIDR."""
        other = 3 - c
        return [str(pod_cidr(j)) for j in self.tb.cluster_nodes(other)] + [str(service_cidr(other))]

    def _local(self, c: int) -> list[str]:
        return [str(pod_cidr(j)) for j in self.tb.cluster_nodes(c)] + [str(service_cidr(c))]

    # ---- connect ------------------------------------------------------------------------------------------------
    def check(self) -> None:
        """Unsupported (no side effects outside a scratch namespace) if this kernel cannot build the tool here."""
        impl = self.tool.implementation
        if impl == "kernel":
            for transport in ("vxlan", self.tool.local["transport"]):
                reason = self.tb.probe(transport)
                if reason:
                    raise Unsupported(f"{self.tool.key} cable: {reason}")
        elif impl == "emulated":
            if not sh.which(RELAY):
                raise Unsupported(f"{RELAY} is not installed (make tools builds it) - needed to emulate {self.tool.tool}")
        else:
            raise Unsupported(f"{self.tool.key}: the local testbed has no {impl} implementation")

    def connect(self) -> dict[str, Any]:
        self.check()
        try:
            if self.tool.implementation == "kernel":
                self._submariner()
            else:
                self._relays_up()
            detail = self.readback()
            self._marker.write_text(json.dumps(detail))
        except BaseException:
            self.disconnect()
            raise
        return detail

    def _submariner(self) -> None:
        tb = self.tb
        for c in (1, 2):
            gw = tb.gateway(c)
            for i in tb.cluster_nodes(c):
                ns = tb.node_ns(i)
                tb._ip(ns, "link", "add", VX_DEVICE, "address", _mac(0x5B, i), "mtu", str(self.mtu), "type", "vxlan",
                       "id", str(VX_VNI), "local", node_ip(i), "dev", "eth0", "dstport", str(VX_PORT), "nolearning")
                tb._ip(ns, "addr", "add", f"{_vtep(VX_PREFIX, i)}/8", "dev", VX_DEVICE)
                tb._ip(ns, "link", "set", VX_DEVICE, "up")
                peers = [j for j in tb.cluster_nodes(c) if j != i]
                for j in peers:  # the route agent's FDB and neighbour entries for the cluster's other nodes
                    tb._run(["bridge", "-n", ns, "fdb", "append", _mac(0x5B, j), "dev", VX_DEVICE, "dst", node_ip(j)])
                    tb._ip(ns, "neigh", "add", _vtep(VX_PREFIX, j), "lladdr", _mac(0x5B, j), "dev", VX_DEVICE,
                           "nud", "permanent")
                if i != gw:  # workers send the remote cluster's traffic to their gateway
                    for cidr in self._remote(c):
                        tb._ip(ns, "route", "add", cidr, "via", _vtep(VX_PREFIX, gw), "dev", VX_DEVICE, "onlink")
                self._clamp_mss(ns, c)
            getattr(self, f"_cable_{self.tool.local['transport']}")(c, gw, tb.gateway(3 - c))

    def _clamp_mss(self, ns: str, c: int) -> None:
        """TCP MSS clamped to the route's MTU between local and remote CIDRs, as Submariner's SUBMARINER-POSTROUTING
        mangle chain does: a pod MTU above the tunnels' (a routed CNI's 1500) still gets TCP through."""
        local, remote = ", ".join(self._local(c)), ", ".join(self._remote(c))
        rules = [f"add table ip {NFT_TABLE}",
                 f"add chain ip {NFT_TABLE} postrouting {{ type filter hook postrouting priority mangle; }}"]
        for src, dst in ((local, remote), (remote, local)):
            rules.append(f"add rule ip {NFT_TABLE} postrouting ip saddr {{ {src} }} ip daddr {{ {dst} }} "
                         "tcp flags & (syn | rst) == syn tcp option maxseg size set rt mtu")
        self.tb._ns(ns, "nft", "-f", "-", input="\n".join(rules) + "\n")

    def _cable_vxlan(self, c: int, gw: int, remote_gw: int) -> None:
        tb, ns = self.tb, self.tb.node_ns(gw)
        tb._ip(ns, "link", "add", CABLE_VXLAN_DEVICE, "address", _mac(0x5C, gw), "mtu", str(self.mtu), "type", "vxlan",
               "id", str(CABLE_VXLAN_VNI), "local", node_ip(gw), "dev", "eth0", "dstport", str(CABLE_PORT), "nolearning")
        tb._ip(ns, "addr", "add", f"{_vtep(CABLE_VXLAN_PREFIX, gw)}/8", "dev", CABLE_VXLAN_DEVICE)
        tb._ip(ns, "link", "set", CABLE_VXLAN_DEVICE, "up")
        tb._run(["bridge", "-n", ns, "fdb", "append", _mac(0x5C, remote_gw), "dev", CABLE_VXLAN_DEVICE, "dst",
                 node_ip(remote_gw)])
        tb._ip(ns, "neigh", "add", _vtep(CABLE_VXLAN_PREFIX, remote_gw), "lladdr", _mac(0x5C, remote_gw), "dev",
               CABLE_VXLAN_DEVICE, "nud", "permanent")
        for cidr in self._remote(c):  # in Submariner's table 100, looked up by an ip rule, as its vxlan driver does
            tb._ip(ns, "route", "add", cidr, "via", _vtep(CABLE_VXLAN_PREFIX, remote_gw), "dev", CABLE_VXLAN_DEVICE,
                   "onlink", "table", str(CABLE_TABLE))
        tb._ip(ns, "rule", "add", "pref", str(CABLE_TABLE), "lookup", str(CABLE_TABLE))

    def _cable_wireguard(self, c: int, gw: int, remote_gw: int) -> None:
        tb, ns = self.tb, self.tb.node_ns(gw)
        keys = self._wg_keys()
        tb._ip(ns, "link", "add", CABLE_WG_DEVICE, "type", "wireguard")
        key_file = Path(self._scratch()) / f"wg{c}.key"
        key_file.write_text(keys[c][0] + "\n")
        key_file.chmod(0o600)
        tb._ns(ns, "wg", "set", CABLE_WG_DEVICE, "listen-port", str(CABLE_PORT), "private-key", str(key_file),
               "peer", keys[3 - c][1], "endpoint", f"{node_ip(remote_gw)}:{CABLE_PORT}",
               "allowed-ips", ",".join(self._remote(c)))
        tb._ip(ns, "link", "set", CABLE_WG_DEVICE, "up")
        for cidr in self._remote(c):
            tb._ip(ns, "route", "add", cidr, "dev", CABLE_WG_DEVICE)

    def _cable_ipsec(self, c: int, gw: int, remote_gw: int) -> None:
        """ESP tunnel mode between the gateways (what pluto installs after IKE; natt=false on a flat LAN)."""
        tb, ns = self.tb, self.tb.node_ns(gw)
        keys = self._esp_keys()
        for src, dst, dirs in ((gw, remote_gw, ("out",)), (remote_gw, gw, ("in", "fwd"))):
            spi = f"0x{0x5000 + src * 16 + dst:x}"
            tb._ns(ns, "ip", "xfrm", "state", "add", "src", node_ip(src), "dst", node_ip(dst), "proto", "esp", "spi",
                   spi, "reqid", spi, "mode", "tunnel", "aead", "rfc4106(gcm(aes))", "0x" + keys[(src, dst)], "128")
            cs = tb.cluster_of(src)
            for s_cidr in self._local(cs):
                for d_cidr in self._local(3 - cs):
                    for d in dirs:
                        tb._ns(ns, "ip", "xfrm", "policy", "add", "src", s_cidr, "dst", d_cidr, "dir", d, "tmpl",
                               "src", node_ip(src), "dst", node_ip(dst), "proto", "esp", "reqid", spi, "mode", "tunnel")
        for cidr in self._remote(c):
            tb._ip(ns, "route", "add", cidr, "via", node_ip(remote_gw), "dev", "eth0")

    def _scratch(self) -> str:
        """The join's state directory (relay certificates and logs, the `connected` marker): a fixed place per
        testbed, so that a phase run as its own process (Argo steps, `edgebench <phase>`) finds the join again."""
        d = STATE_DIR / f"intercluster-{self.tb.prefix}"
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._certs = str(d)
        return self._certs

    @property
    def _marker(self) -> Path:
        return Path(self._scratch()) / "connected.json"

    def connected(self) -> dict[str, Any] | None:
        """The readback recorded by `connect`, if this testbed's clusters are joined (by this or another process)."""
        try:
            return json.loads(self._marker.read_text())
        except (OSError, ValueError):
            return None

    def _wg_keys(self) -> dict[int, tuple[str, str]]:
        if not hasattr(self, "_wg"):
            self._wg = {}
            for c in (1, 2):
                private = sh.run(["wg", "genkey"]).strip()
                self._wg[c] = (private, sh.run(["wg", "pubkey"], input=private + "\n").strip())
        return self._wg

    def _esp_keys(self) -> dict[tuple[int, int], str]:
        if not hasattr(self, "_esp"):
            g1, g2 = self.tb.gateway(1), self.tb.gateway(2)
            self._esp = {(g1, g2): secrets.token_hex(20), (g2, g1): secrets.token_hex(20)}
        return self._esp

    # ---- the emulated L7 tools ----------------------------------------------------------------------------------
    @property
    def _mode(self) -> str:
        return self.tool.local["transport"]  # skupper | clusterlink

    @property
    def _link_port(self) -> int:
        return int(self.tool.info["tcp_port"])

    def _start(self, key: str, ns: str, argv: list[str]) -> None:
        log = Path(self._scratch()) / f"{key}.log"  # a file, not a pipe: a chatty relay never blocks on it
        with open(log, "ab") as err_file:
            # sh.popen runs the relay check() found (sh.which: PATH, then the tools directory), not `ip netns exec`'s
            # own PATH lookup of its name
            proc = sh.popen(["ip", "netns", "exec", ns, RELAY, *argv], stdout=subprocess.PIPE,
                            stderr=err_file, text=True, start_new_session=True)
        deadline = time.monotonic() + RELAY_READY_S
        line = ""
        while time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline() if proc.stdout else ""
            if line.startswith("ready"):
                self._procs[key] = proc
                return
        _stop(proc)
        err = log.read_text(errors="replace")[-500:]
        raise EdgebenchError(f"{RELAY} {argv[0]} did not become ready in {ns}: {(err or line).strip() or 'no output'}")

    def _router(self, c: int) -> Endpoint:
        """The pod on cluster c's gateway node that runs the relay (the router / dataplane pod)."""
        return self.tb.endpoint(self.tb.gateway(c), ROUTER_POD)

    def _relays_up(self) -> None:
        g1, g2 = self.tb.gateway(1), self.tb.gateway(2)
        certs = self._scratch()
        sh.run([RELAY, "certs", "-dir", certs, "-ip", f"{node_ip(g1)},{node_ip(g2)}"])
        r1, r2 = self._router(1), self._router(2)
        port = self._link_port
        if r1.ns != self.tb.node_ns(g1):  # the link port on the gateway's node IP (NodePort / LoadBalancer)
            self.tb._ns(self.tb.node_ns(g1), "nft", "-f", "-", input=(
                f"add table ip {RELAY_NFT_TABLE}\nflush table ip {RELAY_NFT_TABLE}\n"
                f"add chain ip {RELAY_NFT_TABLE} prerouting {{ type nat hook prerouting priority dstnat; }}\n"
                f"add rule ip {RELAY_NFT_TABLE} prerouting ip daddr {node_ip(g1)} tcp dport {port} "
                f"dnat to {r1.ip}:{port}\n"))
        if r2.ns != self.tb.node_ns(g2):  # the ingress pod's link connections leave the cluster as the node's IP
            self.tb._ns(self.tb.node_ns(g2), "nft", "-f", "-", input=(
                f"add table ip {RELAY_NFT_TABLE}\nflush table ip {RELAY_NFT_TABLE}\n"
                f"add chain ip {RELAY_NFT_TABLE} postrouting {{ type nat hook postrouting priority srcnat; }}\n"
                f"add rule ip {RELAY_NFT_TABLE} postrouting ip saddr {r2.ip} ip daddr {node_ip(g1)} tcp dport {port} "
                f"masquerade\n"))
        self._start("egress", r1.ns, [f"{self._mode}-egress", "-listen", f"{r1.ip}:{port}", "-certs", certs])

    def export(self, port: int, backend: Endpoint, path: str) -> str:
        """Export backend:port from cluster 1 and return the address a cluster-2 client dials."""
        tb = self.tb
        tb.add_service(service_ip(1), port, backend, cluster=1)  # the service in the exporting cluster
        if self.tool.implementation == "kernel":  # Submariner: L3, the remote ClusterIP or the pod IP itself
            return backend.ip if path == "pod-to-pod" else service_ip(1)
        g1 = tb.gateway(1)
        r2 = self._router(2)
        key = f"ingress-{port}"
        if key in self._procs:
            _stop(self._procs.pop(key))
        self._start(key, r2.ns, [f"{self._mode}-ingress", "-listen", f"{r2.ip}:{port}", "-peer",
                                 f"{node_ip(g1)}:{self._link_port}", "-target", f"{service_ip(1)}:{port}",
                                 "-certs", self._scratch()])
        # the router / dataplane pod's service in cluster 2: what the client dials
        tb.add_service(service_ip(2), port, r2, cluster=2)
        return service_ip(2)

    def unexport(self) -> None:
        for key in [k for k in self._procs if k.startswith("ingress-")]:
            _stop(self._procs.pop(key))
        self._kill_relays(self._router(2).ns)  # ingress relays another process started

    def _kill_relays(self, ns: str) -> None:
        """Stop every relay in a namespace, also those a previous phase process left running."""
        if ns not in self.tb.namespaces():
            return
        for pid in self.tb._run(["ip", "netns", "pids", ns], check=False).split():
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == RELAY[:15]:
                    os.kill(int(pid), signal.SIGTERM)
            except (OSError, ValueError):
                continue

    # ---- readback and disconnect --------------------------------------------------------------------------------
    def readback(self) -> dict[str, Any]:
        tb, t = self.tb, self.tool
        gateways = [tb.node_ns(tb.gateway(c)) for c in (1, 2)]
        detail: dict[str, Any] = {"tool": t.tool, "mode": t.mode, "version": t.version,
                                  "implementation": t.implementation, "model": t.local.get("model"),
                                  "tool_version": None,  # no tool software runs on the testbed
                                  "cable_driver": t.info.get("cable_driver"), "gateways": gateways}
        if t.implementation == "kernel":
            devices = {}
            for ns in gateways:
                out = tb._run(["ip", "-n", ns, "-d", "-j", "link", "show"], check=False)
                devices[ns] = sorted(d["ifname"] for d in json.loads(out or "[]")
                                     if d["ifname"] in (VX_DEVICE, CABLE_VXLAN_DEVICE, CABLE_WG_DEVICE))
            states = tb._run(["ip", "-n", gateways[0], "xfrm", "state", "count"], check=False).strip()
            detail["readback"] = {"devices": devices, "xfrm": states or None, "mtu": self.mtu}
        else:
            detail["readback"] = {"relay": sh.run([RELAY, "version"], check=False).strip(),
                                  "egress_pid": self._procs["egress"].pid if "egress" in self._procs else None,
                                  "relay_namespaces": [self._router(c).ns for c in (1, 2)]}
        return detail

    def disconnect(self) -> None:
        """Stop the relays, remove the tool's devices, routes and SAs; idempotent (the teardown removes the
        namespaces anyway, this leaves the clusters as they were before `connect`)."""
        for key in list(self._procs):
            _stop(self._procs.pop(key))
        tb = self.tb
        for c in (1, 2):
            self._kill_relays(self._router(c).ns)
            self._kill_relays(tb.node_ns(tb.gateway(c)))  # where relays ran before they moved to a pod
            if tb.node_ns(tb.gateway(c)) in tb.namespaces():
                sh.ok(["ip", "netns", "exec", tb.node_ns(tb.gateway(c)), "nft", "delete", "table", "ip",
                       RELAY_NFT_TABLE])
        for c in (1, 2):
            for i in tb.cluster_nodes(c):
                ns = tb.node_ns(i)
                if ns not in tb.namespaces():
                    continue
                for dev in (VX_DEVICE, CABLE_VXLAN_DEVICE, CABLE_WG_DEVICE):  # their routes go with them
                    sh.ok(["ip", "-n", ns, "link", "del", dev])
                sh.ok(["ip", "-n", ns, "rule", "del", "pref", str(CABLE_TABLE)])
                sh.ok(["ip", "netns", "exec", ns, "nft", "delete", "table", "ip", NFT_TABLE])
                sh.ok(["ip", "netns", "exec", ns, "ip", "xfrm", "state", "flush"])
                sh.ok(["ip", "netns", "exec", ns, "ip", "xfrm", "policy", "flush"])
                if i == tb.gateway(c):
                    for cidr in self._remote(c):
                        sh.ok(["ip", "-n", ns, "route", "del", cidr])
        shutil.rmtree(self._scratch(), ignore_errors=True)
        self._certs = None


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    for f in (proc.stdout, proc.stderr):
        if f:
            f.close()
