"""Where workload pods go, and their manifests.

Workload pods run the runner image (iperf3, ddsperf, fortio, hey) idle (`sleep infinity`); the drivers start
the tools through `kubectl exec`. `host` baseline pods use hostNetwork. Pods are pinned with nodeName-free
nodeSelector kubernetes.io/hostname so the scheduler still checks resources.

Placements (from the inventory's arch labels):
  same-node   client and server on one node
  cross-node  client and server on two nodes (of the same arch when the inventory has two)
  pi-to-x86   client on an arm64 node, server on an amd64 node
  x86-to-pi   client on an amd64 node, server on an arm64 node
"""

from __future__ import annotations

from typing import Any

from edgebench.substrates.clusters.inventory import Inventory, Node
from edgebench.substrates.base import Unsupported

RUNNER_IMAGE = "ghcr.io/edgebench/edgebench-runner:0.1.0"
HTTP_IMAGE = "ghcr.io/edgebench/edgebench-http:0.1.0"
NAMESPACE = "edgebench-bench"
PLACEMENTS = ("same-node", "cross-node", "pi-to-x86", "x86-to-pi")
POD_LABEL = "edgebench.io/workload"
SERVICE_LABEL = "edgebench.io/bench-service"
PEERS_PER_NODE = 3


def _order(nodes: list[Node]) -> list[Node]:
    """Agents first (the paper's client/server are workers), then the server."""
    return [n for n in nodes if not n.is_server] + [n for n in nodes if n.is_server]


def client_node(inv: Inventory, placement: str = "cross-node") -> Node:
    return choose(inv, placement)[0]


def choose(inv: Inventory, placement: str) -> tuple[Node, Node]:
    """(client node, server node) for a placement; Unsupported if the inventory cannot provide it."""
    nodes = _order(list(inv.nodes))
    if placement == "same-node":
        base = choose(inv, "cross-node")[0] if len(nodes) > 1 else nodes[0]
        return base, base
    if placement == "cross-node":
        if len(nodes) < 2:
            raise Unsupported("unsupported: cross-node placement needs two nodes; the inventory has one")
        for arch in ("amd64", "arm64"):  # prefer a same-arch pair: only the network differs
            same = [n for n in nodes if n.arch == arch]
            if len(same) >= 2:
                return same[0], same[1]
        return nodes[0], nodes[1]
    if placement in ("pi-to-x86", "x86-to-pi"):
        src, dst = ("arm64", "amd64") if placement == "pi-to-x86" else ("amd64", "arm64")
        a = [n for n in nodes if n.arch == src]
        b = [n for n in nodes if n.arch == dst]
        if not a or not b:
            raise Unsupported(f"unsupported: {placement} needs an {src} and an {dst} node; "
                              f"the inventory has {', '.join(sorted(inv.arches))}")
        return a[0], b[0]
    raise Unsupported(f"unsupported: unknown placement {placement!r} (known: {', '.join(PLACEMENTS)})")


def pod_name(node: Node, index: int) -> str:
    return f"eb-w{index}-{node.name}"[:63]


def namespace_manifest() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "privileged",
                                                       "app.kubernetes.io/part-of": "edgebench"}}}


def workload_pod(node: Node, index: int, host_network: bool = False) -> dict[str, Any]:
    """An idle runner pod pinned to `node`; the drivers exec iperf3/ddsperf/fortio/hey in it."""
    spec: dict[str, Any] = {
        "nodeSelector": {"kubernetes.io/hostname": node.name},
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
        "tolerations": [{"operator": "Exists"}],
        "containers": [{
            "name": "workload",
            "image": RUNNER_IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "command": ["sleep", "infinity"],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }],
    }
    if host_network:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name(node, index), "namespace": NAMESPACE,
                         "labels": {POD_LABEL: "true", "edgebench.io/node": node.name,
                                    "edgebench.io/slot": str(index)}},
            "spec": spec}


def http_server_pod(node: Node, host_network: bool = False, port: int = 8080) -> dict[str, Any]:
    """The edgebench-http image (fortio server, its own entrypoint) pinned to `node`."""
    spec: dict[str, Any] = {
        "nodeSelector": {"kubernetes.io/hostname": node.name},
        "tolerations": [{"operator": "Exists"}],
        "containers": [{
            "name": "http",
            "image": HTTP_IMAGE,
            "ports": [{"containerPort": port, "name": "http", "protocol": "TCP"}],
            "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 2},
            "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]}},
        }],
    }
    if host_network:
        spec["hostNetwork"] = True
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"eb-http-{node.name}"[:63], "namespace": NAMESPACE,
                         "labels": {"edgebench.io/http-server": node.name}},
            "spec": spec}


def service(name: str, cluster_ip: str | None, port: int, selector: dict[str, str]) -> dict[str, Any]:
    """A ClusterIP Service (TCP + UDP on `port`) for pod-to-service runs."""
    spec: dict[str, Any] = {"type": "ClusterIP", "selector": selector,
                            "ports": [{"name": "tcp", "protocol": "TCP", "port": port, "targetPort": port},
                                      {"name": "udp", "protocol": "UDP", "port": port, "targetPort": port}]}
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {SERVICE_LABEL: "true"}},
            "spec": spec}


def workload_nodes(inv: Inventory, placements: tuple[str, ...] = ("same-node", "cross-node")) -> list[Node]:
    """The nodes the placements involve (those that get workload pods), in first-use order."""
    nodes: list[Node] = []
    for p in placements:
        try:
            for n in choose(inv, p):
                if n not in nodes:
                    nodes.append(n)
        except Unsupported:
            continue
    return nodes


def workload_manifests(inv: Inventory, placements: tuple[str, ...] = ("same-node", "cross-node"),
                       host_network: bool = False) -> list[dict[str, Any]]:
    """Namespace + the pods every placement needs: slots 1..PEERS_PER_NODE on the nodes involved."""
    pods = [workload_pod(n, i, host_network) for n in workload_nodes(inv, placements)
            for i in range(1, PEERS_PER_NODE + 1)]
    return [namespace_manifest(), *pods]
