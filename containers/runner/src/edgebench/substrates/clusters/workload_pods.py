"""The workload side of a real cluster's provider (a mixin of ClusterProvider): the runner-image pods the drivers
exec into (placement.py decides where), their endpoints, ClusterIP Services, the MTU read back in a pod, and
resource sampling on the nodes over SSH."""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import dataclass
from typing import Sequence

import yaml

from edgebench import sh
from edgebench.errors import EdgebenchError
from edgebench.plan.catalog import cnis
from edgebench.substrates.base import PIN_ENV, PinsEndpoints, Unsupported
from edgebench.substrates.clusters import placement as pl
from edgebench.substrates.clusters.inventory import Node
from edgebench.substrates.clusters.resources import NodeSampler
from edgebench.substrates.local import resources as local_resources


@dataclass(frozen=True)
class ClusterEndpoint:
    """A workload pod: `.cmd(argv)` runs argv inside it with kubectl exec."""

    ns: str
    ip: str
    node: str
    pod: str
    kubeconfig: str
    cpu: int | None = None  # the CPU of its node its tools are pinned to (WorkloadPods.pinning), else None

    def cmd(self, argv: Sequence[str]) -> list[str]:
        """argv in the pod. A program the runner resolved to its own path (sh.exe: PATH or its tools directory) is
        named by its name (sh.in_image): the pod's image has it on its PATH, not at the runner's path."""
        pin = ["taskset", "-c", str(self.cpu)] if self.cpu is not None else []
        return ["kubectl", "--kubeconfig", self.kubeconfig, "exec", "-n", self.ns, self.pod, "--", *pin,
                *sh.in_image(argv)]


def cpu_list(text: str) -> list[int]:
    """The CPUs of a Linux CPU list ("0-3,6"), sorted."""
    out: set[int] = set()
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


class WorkloadPods(PinsEndpoints):
    """Needs of the host class: inventory, cni, mode, name, transport, kubeconfig, service_cidr, local, _kubectl,
    _pods, wait_factor, log."""

    def _deploy_workloads(self) -> None:
        docs = pl.workload_manifests(self.inventory, pl.PLACEMENTS, host_network=self.cni == "host")
        self._kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs, sort_keys=False))
        self._kubectl("wait", "-n", pl.NAMESPACE, "--for=condition=Ready", "pod", "-l", f"{pl.POD_LABEL}=true",
                      f"--timeout={300 * self.wait_factor}s")
        self._pods = None
        self._pinned = None  # new pods: their CPUs are read again (pinning)

    def _pod_map(self) -> dict[str, ClusterEndpoint]:
        if self._pods is None:
            out = self._kubectl("get", "pods", "-n", pl.NAMESPACE, "-l", f"{pl.POD_LABEL}=true", "-o", "json")
            pods = {}
            for item in json.loads(out or '{"items": []}').get("items", []):
                name = item["metadata"]["name"]
                pods[name] = ClusterEndpoint(pl.NAMESPACE, item["status"].get("podIP", ""),
                                             item["spec"].get("nodeName", ""), name, self.kubeconfig)
            self._pods = pods
        return self._pods

    def _ep(self, node: Node, slot: int) -> ClusterEndpoint:
        name = pl.pod_name(node, slot)
        ep = self._pod_map().get(name)
        if ep is None or not ep.ip:
            raise EdgebenchError(f"workload pod {pl.NAMESPACE}/{name} is not running (run install-cni first)")
        return ep

    def client(self, placement: str = "cross-node") -> ClusterEndpoint:
        c, _ = pl.choose(self.inventory, placement if placement in ("pi-to-x86", "x86-to-pi") else "cross-node"
                         if len(self.inventory.nodes) > 1 else "same-node")
        return self._ep(c, 1)

    def server(self, placement: str) -> ClusterEndpoint:
        c, s = pl.choose(self.inventory, placement)
        return self._ep(s, 2 if s == c else 1)

    def peers(self, placement: str) -> list[ClusterEndpoint]:
        c, s = pl.choose(self.inventory, placement)
        slots = range(2, pl.PEERS_PER_NODE + 1) if s == c else range(1, pl.PEERS_PER_NODE + 1)
        return [self._ep(s, i) for i in slots]

    def pinning(self) -> dict[str, int] | None:
        """{"client_cpu", "server_cpu"}: the CPUs the tools of a workload that pins (HTTP) run on, each on its own
        node, as the testbed pins them (substrates/local/endpoints.py: unpinned, a run's p50 follows whether the
        scheduler put client and server on one core or two): the client on the first CPU its pod may use, the server
        on the second of its pod's (`taskset` in the pod; no privilege needed). None with EDGEBENCH_PIN_CPUS=0, or
        when a pod may use fewer than two CPUs or cannot be asked. Read once per provider (a cell's phase)."""
        if os.environ.get(PIN_ENV, "1") == "0":
            return None
        if getattr(self, "_pinned", None) is None:
            try:
                allowed = [cpu_list(self.local(ep.cmd(["sed", "-n", "s/^Cpus_allowed_list:[[:space:]]*//p",
                                                       "/proc/self/status"])))
                           for ep in (self.client(), self.server("cross-node"))]
            except Exception as exc:  # noqa: BLE001 - unpinned then, and said so in the log
                self.log.append(f"CPU pinning not read: {exc}")
                allowed = []
            ok = len(allowed) == 2 and all(len(a) >= 2 for a in allowed)
            self._pinned = {"client_cpu": allowed[0][0], "server_cpu": allowed[1][1]} if ok else {}
        return self._pinned or None

    def multicast_reason(self, placement: str) -> str | None:
        m = str(cnis()[self.cni]["modes"][self.mode]["multicast"])
        if m.lower().startswith("yes"):
            return None
        return f"{self.cni}:{self.mode} carries no pod multicast as installed (catalog: {m})"

    def read_mtu(self, ep: ClusterEndpoint) -> int:
        """MTU of the interface holding the pod's address (eth0 in a pod; the uplink for hostNetwork)."""
        out = self.local(ep.cmd(["ip", "-j", "addr", "show"]))
        for link in json.loads(out):
            if any(a.get("local") == ep.ip for a in link.get("addr_info", [])):
                return int(link["mtu"])
        raise EdgebenchError(f"no interface of pod {ep.pod} holds {ep.ip}")

    def service_ip(self, wanted: str | None = None) -> str:
        """`wanted` if it is inside the cluster's service CIDR and not the DNS address, else the CIDR's .200."""
        net = ipaddress.ip_network(self.service_cidr)
        dns = str(net.network_address + 10)
        if wanted and ipaddress.ip_address(wanted) in net and wanted != dns:
            return wanted
        return str(net.network_address + 200)

    def add_service(self, cluster_ip: str, port: int, backend: ClusterEndpoint) -> str:
        """A ClusterIP Service to `backend`; returns the ClusterIP actually used (see service_ip)."""
        ip = self.service_ip(cluster_ip)
        slot = backend.pod.split("-")[1].removeprefix("w")
        svc = pl.service(f"eb-svc-{port}", ip, port, {"edgebench.io/node": backend.node, "edgebench.io/slot": slot})
        self._kubectl("apply", "-f", "-", input=yaml.safe_dump(svc, sort_keys=False))
        return ip

    def flush_services(self) -> None:
        """Delete the bench Services and stop tools a previous run left in the pods (killing `kubectl exec`
        does not kill the remote process)."""
        self._kubectl("delete", "service", "-n", pl.NAMESPACE, "-l", f"{pl.SERVICE_LABEL}=true",
                      "--ignore-not-found", "--wait=true", check=False)
        for ep in self._pod_map().values():
            self.local(ep.cmd(["pkill", "-x", "iperf3|sockperf|ddsperf|edgebench-ddsrr|fortio|hey"]), check=False)

    def resource_sampler(self, interval_s: float = 1.0, idle: list[dict] | None = None
                         ) -> NodeSampler | local_resources.Sampler:
        """CPU/RSS of the CNI agents, the workload tools and each node (substrates/clusters/resources.py). kind:
        its nodes are containers of the kernel of the engine the runner talks to; where that engine is local, the
        runner's /proc/stat is the machine's, and the machine's CPU (the system row, for the CPU-headroom gate) is
        sampled here. The agents' and tools' own rows are not: the host's /proc cannot tell one cluster's from
        another's (the management cluster's flanneld)."""
        if self.name == "kind":
            if not os.environ.get("DOCKER_HOST", "unix://").startswith("unix://"):
                raise Unsupported("a remote Docker engine: its kernel's CPU cannot be read from here")
            return local_resources.Sampler(dict, interval_s=interval_s, idle=idle)
        if self.name != "ssh" or not hasattr(self.transport, "ssh_argv"):
            raise Unsupported(f"resource sampling over SSH is not available on {self.name} with this transport")
        return NodeSampler(self.inventory, self.transport.ssh_argv, interval_s, idle)
