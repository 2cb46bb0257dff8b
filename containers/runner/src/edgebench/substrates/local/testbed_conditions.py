"""What the local testbed (testbed.py) builds in its nodes besides the datapath: the service proxy with its
ClusterIP services (service_proxy.py; plain nftables DNAT by default), and in a mode with the socket load balancer
(sock_lb.py: Cilium's) its service maps too. The nodes' CPU limit is cpuclass.py's."""

from __future__ import annotations

from typing import Any

from edgebench.plan.catalog import CniMode
from edgebench.substrates.local import service_proxy, sock_lb
from edgebench.substrates.local.datapath import SVC_TABLE


class NodeConditions:
    """Mixed into Testbed, whose attributes it uses: prefix, nodes, service_proxy, down, _ns, node_ns,
    cluster_nodes, sock_lb_nodes."""

    def install_service_proxy(self, mode: str, cm: CniMode) -> dict:
        """Build the service proxy `mode` (service_proxy.py) in every node; {"mode", "readback"}. Unsupported (nothing
        built) where the kernel or a tool lacks it. `dnat` is the plain rule every testbed has (nothing to add)."""

        obj = service_proxy.install(self, mode, cm) if mode != "dnat" else {"mode": "dnat", "readback": ""}
        self.service_proxy, self._cni_key = mode, cm.key
        return obj

    def add_service(self, cluster_ip: str, port: int, backend: Any, cluster: int | None = None) -> None:
        """ClusterIP -> backend for TCP and UDP, in every node of `cluster` (default: all; prerouting for pods,
        output for host pods), in the shape of the testbed's service proxy (plain nftables DNAT by default). Where the
        mode has the socket load balancer, also in each node's service map: its pods reach the backend by it, and
        with service proxy `none` (kube-proxy replaced, as Cilium's) by it alone."""
        nodes = self.cluster_nodes(cluster) if cluster else range(1, self.nodes + 1)
        lb = self.sock_lb_nodes()
        for i in nodes:
            if i in lb:
                sock_lb.add_service(lb[i], cluster_ip, port, backend.ip, port)
        if lb and self.service_proxy == "none":
            return None
        if self.service_proxy != "dnat":
            return service_proxy.add_service(self, self.service_proxy, cluster_ip, port, [backend],
                                             getattr(self, "_cni_key", ""), cluster)
        rules = "".join(f"add rule ip {SVC_TABLE} {chain} ip daddr {cluster_ip} {proto} dport {port} "
                        f"dnat to {backend.ip}:{port}\n" for proto in ("tcp", "udp") for chain in ("prerouting", "output"))
        for i in nodes:
            self._ns(self.node_ns(i), "nft", "-f", "-", input=rules)  # one transaction per node

    def flush_services(self) -> None:
        flush = "".join(f"flush chain ip {SVC_TABLE} {chain}\n" for chain in ("prerouting", "output"))
        for i in range(1, self.nodes + 1):
            self._ns(self.node_ns(i), "nft", "-f", "-", input=flush)
        if self.service_proxy not in ("dnat", "none"):
            service_proxy.flush(self, self.service_proxy)
        for rec in self.sock_lb_nodes().values():
            sock_lb.flush(rec)
