"""The local testbed as a substrate (substrates/base.py): LocalProvider.

`local` is the network-namespace testbed. `kind` (a kind cluster per cell, needs Docker) and `ssh` (k3s, k0s,
MicroK8s or kubeadm installed on an inventory of real nodes) are edgebench.substrates.clusters.ClusterProvider.
"""

from __future__ import annotations

from typing import Any

from edgebench.plan import tuning
from edgebench.plan.catalog import CniMode
from edgebench.substrates.base import Provider, Unsupported
from edgebench.substrates.local import netem as netem_local
from edgebench.substrates.local import cpuclass, processes, service_proxy
from edgebench.substrates.local import tuning as tuning_local
from edgebench.substrates.local.datapath import PODS_PER_NODE, node_ip, pod_cidr
from edgebench.substrates.local.intercluster import Joiner
from edgebench.substrates.local.testbed import Endpoint, Testbed, netns_pids


class LocalProvider(Provider):
    """The embedded default: real kernel datapaths in network namespaces on this machine."""

    name = "local"

    def __init__(self, testbed: Testbed | None = None, cell: Any = None):
        self.testbed = testbed or Testbed()
        if getattr(cell, "intercluster", "none") != "none":  # two clusters of two nodes: gateway + worker each
            self.testbed = Testbed(self.testbed.prefix, nodes=4, runner=self.testbed._runner, clusters=2)
        self.tuning_profile = getattr(cell, "tuning_profile", "default_settings")
        # the service proxy the cell models (dnat = the testbed's plain rule); built by install_cni
        self.service_proxy = cell.service_proxy_mode if cell is not None and hasattr(cell, "service_proxy") else "dnat"
        self._netem_on = False
        # the nodes' CPU class, set up by install_cni; later phase processes (Argo) find its cgroups by name
        self.testbed.cpu_limit = getattr(cell, cpuclass.FIELD, cpuclass.NONE) if cell is not None else cpuclass.NONE
        if self.service_proxy != "dnat":  # later phase processes (Argo) rebuild the provider from the cell
            self.testbed.service_proxy, self.testbed._cni_key = self.service_proxy, f"{cell.cni}:{cell.cni_mode}"
        self._tool = cell.intercluster_info if getattr(cell, "intercluster", "none") != "none" else None
        self._joiner = None

    @classmethod
    def build_key(cls, cell: Any) -> tuple | None:
        """One cluster, the CNI mode's datapath with the cell's service proxy and CPU class, and the MTUs of its
        tuning profile (built in at provision and install-cni): what a cell's testbed is. Two clusters are never
        shared (the inter-cluster tools' joins are per cell)."""

        if cell.intercluster != "none":
            return None
        cm = cell.cni_info
        return (cell.substrate, cm.key, cell.service_proxy_mode, getattr(cell, cpuclass.FIELD),
                tuning.lan_mtu_for(cell.tuning_profile), tuning.mtu_for(cell.tuning_profile, 1500 - cm.mtu))

    def fingerprint(self) -> dict[str, str]:
        return self.testbed.fingerprint(self._nodes())

    def reset(self, built: dict[str, str]) -> list[str]:
        self.disconnect_clusters()
        self.flush_services()
        netem_local.revert_local(self._nodes(), "eth0")
        problems = tuning_local.revert_and_verify(self._nodes(), self._pods())
        agents = self.testbed.agent_pids()
        left = self.testbed.kill_processes(spare=agents)
        if left:
            problems.append(f"{left} process(es) were still running in the testbed")
        gone = [pid for pid in agents if not processes.running(pid)]
        if gone:
            problems.append(f"{len(gone)} of the mode's agent process(es) (the socket load balancer's monitors) "
                            "are gone")
        self.testbed.forget_traffic()
        now = self.fingerprint()
        problems += [f"{ns} differs from the freshly built testbed" for ns in sorted(set(built) | set(now))
                     if built.get(ns) != now.get(ns)]
        self._netem_on = False
        return problems

    # the MTU profiles of tuning are built in: jumbo LAN at provision, pod MTU = LAN MTU - datapath overhead
    def provision(self) -> None:
        self.testbed.provision(tuning.lan_mtu_for(self.tuning_profile))

    def install_cni(self, cm: CniMode) -> dict:
        """The mode's datapath, then the cell's service proxy (what kube-proxy's mode, or none, puts in every node),
        then the nodes' CPU class. A service proxy the kernel lacks is Unsupported before anything is built; a CPU
        class this machine cannot emulate is Unsupported with the testbed torn down."""

        if self.service_proxy != "dnat":
            service_proxy.check(self.testbed, self.service_proxy, cm)
        state = self.testbed.install_cni(cm, tuning.mtu_for(self.tuning_profile, 1500 - cm.mtu))
        try:
            state["service_proxy"] = self.testbed.install_service_proxy(self.service_proxy, cm)
        except BaseException:
            self.testbed.down()
            raise
        state[cpuclass.FIELD] = cpuclass.install(self.testbed, self.testbed.cpu_limit)  # calibrated on the built nodes
        return state

    def _join(self, tool):
        if self.testbed.clusters != 2:
            raise Unsupported(f"{tool.key}: this testbed has one cluster (the cell was not provisioned as two)")
        return Joiner(self.testbed, tool, tuning.lan_mtu_for(self.tuning_profile) or 1500)

    def _joined(self):
        """The join of this cell's clusters, also when an earlier phase process connected them."""
        if self._joiner is None and self._tool is not None and self.testbed.clusters == 2:
            joiner = self._join(self._tool)
            if joiner.connected():
                self._joiner = joiner
        return self._joiner

    def connect_clusters(self, tool) -> dict:
        self._joiner = self._join(tool)
        return self._joiner.connect()

    def export_service(self, port: int, backend: Endpoint, path: str) -> str:
        if self._joined() is None:
            raise Unsupported("the clusters are not connected (connect-clusters did not run or failed)")
        return self._joiner.export(port, backend, path)

    def disconnect_clusters(self) -> None:
        if self._joined() is not None:
            self._joiner.disconnect()
            self._joiner = None

    def _nodes(self) -> list[str]:
        return [self.testbed.node_ns(i) for i in range(1, self.testbed.nodes + 1)]

    def _pods(self) -> list[str]:
        wanted = {self.testbed.pod_ns(i, j) for i in range(1, self.testbed.nodes + 1) for j in range(1, PODS_PER_NODE + 1)}
        return [ns for ns in self.testbed.namespaces() if ns in wanted]  # none with host networking

    def apply_tuning(self, profile: str) -> dict:
        return tuning_local.apply_local(self._nodes(), self._pods(), profile)

    def apply_netem(self, scenario) -> dict:
        peers = None
        if scenario.scope == "inter-group":  # groups: the clusters (two), else the nodes: shape only between them

            tb, n = self.testbed, self.testbed.nodes

            def other(i: int, j: int) -> bool:
                return tb.cluster_of(i) != tb.cluster_of(j) if tb.clusters > 1 else i != j

            peers = {tb.node_ns(i): [x for j in range(1, n + 1) if other(i, j) for x in (node_ip(j), str(pod_cidr(j)))]
                     for i in range(1, n + 1)}
        obj = netem_local.apply_local(self._nodes(), "eth0", scenario, scope_peers=peers)
        self._netem_on = obj.get("mechanism") != "none" or scenario.rate_mbit is not None
        return obj

    def netem_readback(self) -> str:
        return netem_local.readback_local(self._nodes(), "eth0")

    def conditions_problem(self) -> str | None:
        """Why the applied link condition is no longer in force (e.g. the emulator died), or None."""

        return netem_local.check_local(self._nodes(), "eth0") if self._netem_on else None

    def revert_conditions(self) -> None:
        if self.testbed.namespaces():
            netem_local.revert_local(self._nodes(), "eth0")
            tuning_local.revert_local(self._nodes(), self._pods())

    def workload_pids(self) -> dict[str, int]:
        """Every process running in the testbed's namespaces (the workload tools), named comm@namespace; the netem
        emulator is part of the link, not of the workload. Reads /proc directly (no subprocess per sample), so the
        sampling itself costs the measured machine next to nothing."""
        import os


        try:
            names = [n for n in os.listdir("/run/netns") if n.startswith(self.testbed.prefix + "-")]
        except OSError:
            names = []
        out = {}
        for ns, pids in netns_pids(names).items():
            for pid in pids:
                try:
                    comm = open(f"/proc/{pid}/comm").read().strip()
                except OSError:
                    continue
                if not comm.startswith("edgebench-netem"):
                    out[f"{comm}@{ns}"] = pid
        return out

    def pinning(self) -> dict[str, int] | None:
        """The CPUs a pinned workload's client and server run on (endpoints.py), recorded in its runs' environment."""
        return self.testbed.pinning()

    def pin(self, ep: Endpoint, role: str) -> Endpoint:
        return self.testbed.pin(ep, role)

    def client(self, placement: str = "cross-node") -> Endpoint:
        return self.testbed.client()

    def server(self, placement: str) -> Endpoint:
        return self.testbed.server(placement)

    def read_mtu(self, ep: Endpoint) -> int:
        return self.testbed.read_mtu(ep)

    def peers(self, placement: str) -> list[Endpoint]:
        return self.testbed.peers(placement)

    def multicast_reason(self, placement: str) -> str | None:
        return self.testbed.multicast_reason(placement)

    def add_service(self, cluster_ip: str, port: int, backend: Endpoint) -> None:
        self.testbed.add_service(cluster_ip, port, backend)
        return None

    def flush_services(self) -> None:
        if self._joined() is not None:
            self._joiner.unexport()
        self.testbed.flush_services()

    def teardown(self) -> list[str]:
        self.disconnect_clusters()
        return self.testbed.down()
