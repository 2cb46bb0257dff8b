"""Where a cell's tools run on the local testbed: an Endpoint (a namespace, its address, how to start a command in
it) and the Testbed's choice of endpoints for a run's client, server and DDS peers (Endpoints, mixed into Testbed).

CPU pinning, for the workloads that ask for it (Workload.pin_cpus: HTTP): on a machine with two CPUs or more, the
client's tools run on one CPU and the server's on another (`taskset`), whatever node they are on. Unpinned, the
scheduler put the two on one core in some runs and on two in others, and an HTTP run's p50 followed where they
landed: its spread from run to run was 15-21 % unpinned, 7.5-9 % pinned (8 runs each, twice, flannel vxlan, this
machine). Over whole default sweeps (one each) the HTTP pair SD was 12 points unpinned, 8.5 and 13.6 pinned: within
what a sweep's median moves. iperf3 is not pinned: pinned, its TCP throughput spread more (8.5 % against 6.4 %, 8 runs
each; pair SD 6.5 points pinned against 4.1 and 5.0 unpinned over default sweeps).
Nodes of a CPU class run in their own pinned cgroups (cpuclass.py): not pinned again. Tools in a runc container
are pinned inside it (`taskset` in the container, as a pod's tools are on clusters, substrates/clusters/workload_pods.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from edgebench.substrates.base import PIN_ENV, PinsEndpoints
from edgebench.substrates.local import container, cpuclass
from edgebench.substrates.local.datapath import PODS_PER_NODE, node_ip, pod_ip


@dataclass(frozen=True)
class Endpoint:
    """A testbed endpoint (substrate.Endpoint): a namespace and the address peers use to reach it."""

    ns: str
    ip: str
    node: int
    cgroups: tuple[str, ...] = ()  # the node's CPU-class cgroup directories (cpuclass.py); () = no CPU class
    container: str | None = None  # the testbed prefix when tools run in runc containers (container.py), else None
    cpu: int | None = None  # the CPU its tools are pinned to (module doc), else None
    hooks: str | None = None  # the node's socket load balancer cgroup (sock_lb.py) its tools start in, else None

    def cmd(self, argv: Sequence[str]) -> list[str]:
        pin = ["taskset", "-c", str(self.cpu)] if self.cpu is not None else []
        if self.container:  # runc joins the namespace itself (install_cni refuses a container with a CPU class);
            return container.wrap(self.ns, self.container, [*pin, *argv])  # pinned inside, as a pod's tools are
        argv = ["ip", "netns", "exec", self.ns, *pin, *argv]
        dirs = [*self.cgroups, *([self.hooks] if self.hooks else [])]
        if dirs:  # started inside the cgroups: the tool and its children are CPU-limited, and pass the hooks
            return cpuclass.wrap([Path(d) for d in dirs], argv)
        return argv


class Endpoints(PinsEndpoints):
    """The endpoint choices of the Testbed (it provides prefix, nodes, clusters, cpu_limit, state_file, node_ns,
    pod_ns)."""

    def _is_host(self) -> bool:
        if getattr(self, "_host", None) is not None:
            return self._host
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {}
        return state.get("datapath") == "host"

    def sock_lb_nodes(self) -> dict[int, dict]:
        """node -> its socket load balancer's record (sock_lb.attach) where the mode has one, else {}."""
        recs = getattr(self, "_sock_lb_recs", None)
        if recs:
            return recs
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {}
        return {int(k): v for k, v in (state.get("sock_lb") or {}).items()}

    def agent_pids(self) -> list[int]:
        """The processes the mode runs in its nodes as a CNI's agent would: the socket load balancer's monitors."""
        return [rec["monitor_pid"] for rec in self.sock_lb_nodes().values() if rec.get("monitor_pid")]

    def _runtime_of(self) -> str | None:
        if getattr(self, "_runtime", None) is not None or getattr(self, "_host", None) is not None:
            return getattr(self, "_runtime", None)
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {}
        return state.get("runtime")

    def endpoint(self, node: int, pod: int, host: bool | None = None) -> Endpoint:
        """Pod `pod` of node `node`; with host networking every pod is its node's namespace (its tools in a runc
        container where the mode has a runtime, container.py)."""
        host = self._is_host() if host is None else host
        cgroups = cpuclass.node_cgroups(self.prefix, node) if self.cpu_limit != cpuclass.NONE else ()
        if host:
            return Endpoint(self.node_ns(node), node_ip(node), node, cgroups,
                            self.prefix if self._runtime_of() else None)
        lb = self.sock_lb_nodes().get(node)
        return Endpoint(self.pod_ns(node, pod), pod_ip(node, pod), node, cgroups, hooks=lb["cgroup"] if lb else None)

    def _client_node(self) -> int:
        """Node 1; with two clusters the last node (a worker of cluster 2: the client runs in cluster 2)."""
        return 1 if self.clusters == 1 else self.nodes

    def pinning(self) -> dict[str, int] | None:
        """{"client_cpu", "server_cpu"}: the CPUs the client's and the server's tools run on (module doc); None when
        they are not pinned (one CPU, a CPU class, or EDGEBENCH_PIN_CPUS=0)."""
        if os.environ.get(PIN_ENV, "1") == "0" or self.cpu_limit != cpuclass.NONE:
            return None
        cpus = sorted(os.sched_getaffinity(0))
        return {"client_cpu": cpus[0], "server_cpu": cpus[1]} if len(cpus) >= 2 else None

    def client(self) -> Endpoint:
        return self.endpoint(self._client_node(), 1)

    def server(self, placement: str) -> Endpoint:
        """Cross-node: node 2 (with two clusters a worker of cluster 1); same-node: pod 2 of the client's node."""
        return self.endpoint(self._client_node(), 2) if placement == "same-node" else self.endpoint(2, 1)

    def pods(self, node: int) -> list[Endpoint]:
        return [self.endpoint(node, j) for j in range(1, PODS_PER_NODE + 1)]

    def peers(self, placement: str) -> list[Endpoint]:
        """Where subscribers go: node 2's pods (cross-node) or the client node's pods after the client."""
        return self.pods(2) if placement == "cross-node" else self.pods(self._client_node())[1:]

    def multicast_reason(self, placement: str) -> str | None:
        """None if multicast from the client pod reaches the `placement` peers on this datapath, else why not.

        The testbed floods multicast only within one L2 segment: the LAN (host networking) and one node's pod
        bridge, and between the nodes of a cluster where the mode floods it to every peer (Weave's
        `multicast_flood`). It routes no multicast between nodes and its other tunnels carry no BUM traffic."""
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {}
        datapath = state.get("datapath", "?")
        if self.clusters > 1 and placement == "cross-node":
            return "multicast does not cross clusters (no inter-cluster tool forwards it)"
        if self._is_host() or (datapath.startswith("bridge-") and (placement == "same-node"
                                                                   or state.get("multicast_flood"))):
            return None
        where = "between nodes" if placement == "cross-node" else "between pods without a shared bridge"
        return f"the {datapath} datapath carries no multicast {where} on the local testbed"

