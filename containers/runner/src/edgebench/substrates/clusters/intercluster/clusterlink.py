"""ClusterLink v0.4.0 with its CLI and CRs (docs/reference/intercluster.md#clusterlink): one fabric, a peer
certificate and a peer deployment (operator + cl-controlplane + cl-dataplane, NodePort ingress) per cluster, Peer
CRs both ways, allow-all AccessPolicies, an Export in cluster 1 and an Import in cluster 2 (which creates the
Service the client dials)."""

from __future__ import annotations

import json
from typing import Any, Mapping

from edgebench.plan.catalog import InterclusterTool
from edgebench.substrates.clusters.intercluster.base import (WD, InterclusterPlan, MemberCluster, Step, cli_path,
                                                             image_tag, install_cli, lines, namespace_manifest, rollout)

API = "clusterlink.net/v1alpha1"


def peer(name: str, host: str, port: int, ns: str) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "Peer", "metadata": {"name": name, "namespace": ns},
            "spec": {"gateways": [{"host": host, "port": port}]}}


def allow_all(name: str, ns: str) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "AccessPolicy", "metadata": {"name": name, "namespace": ns},
            "spec": {"action": "allow", "from": [{"workloadSelector": {}}], "to": [{"workloadSelector": {}}]}}


def export(name: str, ns: str, port: int) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "Export", "metadata": {"name": name, "namespace": ns}, "spec": {"port": port}}


def import_(name: str, ns: str, port: int, peer_name: str) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "Import", "metadata": {"name": name, "namespace": ns},
            "spec": {"port": port, "lbScheme": "round-robin",
                     "sources": [{"exportName": name, "exportNamespace": ns, "peer": peer_name}]}}


def render(p: InterclusterPlan, info: InterclusterTool, inst: dict[str, Any]) -> None:
    c1, c2 = p.members
    cl = cli_path(inst)
    certs = f"{WD}/clusterlink"
    clns = inst["namespace"]
    nodeport = inst["ingress_port"]

    def clk(m: MemberCluster, *argv: str) -> tuple[str, ...]:  # deploy/delete peer read the kubeconfig from the env
        return ("env", f"KUBECONFIG={m.kubeconfig}", cl, *argv)

    def apply(phase: str, m: MemberCluster, name: str, objs: list[dict[str, Any]]) -> None:
        p.manifests[name] = objs
        p.steps.append(Step(phase, m.index, tuple(m.kubectl("apply", "-f", f"{WD}/{name}")), 120))

    def wait(phase: str, m: MemberCluster, cond: str, obj: str, ns: str) -> None:
        p.steps.append(Step(phase, m.index, tuple(m.kubectl("wait", "-n", ns, f"--for=condition={cond}", obj,
                                                            "--timeout=300s")), 360))

    p.steps += install_cli(inst)
    # connect: certificates (one fabric CA signs both peers), a peer deployment per cluster, Peer CRs both ways
    p.steps.append(Step("connect", None, ("sh", "-c", f"rm -rf {certs} && mkdir -p {certs}"), 30))
    p.steps.append(Step("connect", None, (cl, "create", "fabric", "--path", certs), 60))
    for m in p.members:
        p.steps.append(Step("connect", None, (cl, "create", "peer-cert", "--name", m.name, "--path", certs), 60))
    for m in p.members:
        p.steps.append(Step("connect", m.index, clk(m, "deploy", "peer", "--name", m.name, "--path", certs,
                                                    "--ingress", inst["ingress"], "--ingress-port", str(nodeport),
                                                    "--tag", inst["image_tag"], "--dataplane", inst["dataplane"]),
                            300))
    for m in p.members:
        for dep in inst["deployments"]:
            p.steps += rollout(m, clns, "deployment", dep)
    for m, other in ((c1, c2), (c2, c1)):
        apply("connect", m, f"clusterlink-c{m.index}.yaml",
              [namespace_manifest(p.namespace), peer(other.name, other.gateway_address, nodeport, clns),
               allow_all(inst["policy_name"], p.namespace)])
    for m, other in ((c1, c2), (c2, c1)):
        wait("wait", m, "PeerReachable", f"peers.clusterlink.net/{other.name}", clns)
    # export on cluster 1, import on cluster 2 (the Import creates Service <service> there)
    apply("export", c1, "clusterlink-export.yaml", [export(p.service, p.namespace, p.port)])
    wait("export", c1, "ExportValid", f"exports.clusterlink.net/{p.service}", p.namespace)
    apply("import", c2, "clusterlink-import.yaml", [import_(p.service, p.namespace, p.port, c1.name)])
    for cond in ("ImportTargetPortValid", "ImportServiceValid"):
        wait("import", c2, cond, f"imports.clusterlink.net/{p.service}", p.namespace)
    p.address = f"{p.service}.{p.namespace}.svc.cluster.local"
    # readback
    p.steps.append(Step("readback", 1, tuple(c1.kubectl(
        "get", "-n", clns, "deployment/cl-controlplane", "-o", "jsonpath={.spec.template.spec.containers[0].image}")),
        60, capture="c1.controlplane_image"))
    for m in p.members:
        p.steps.append(Step("readback", m.index, tuple(m.kubectl("get", "-n", clns, "peers.clusterlink.net", "-o",
                                                                 "json")), 60, capture=f"c{m.index}.peers"))
        p.steps.append(Step("readback", m.index, tuple(m.kubectl(
            "get", "pods", "-n", clns, "-l", inst["dataplane_selector"], "-o",
            "jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}")), 60, capture=f"c{m.index}.dataplane_nodes"))
    # unexport (Import, Export), then disconnect (idempotent): the other CRs, the peer deployments (operator, CRDs,
    # secrets), then the namespaces
    p.steps.append(Step("unexport", 2, tuple(c2.kubectl("delete", "-n", p.namespace, "imports.clusterlink.net",
                                                          p.service, "--ignore-not-found")), 120, check=False))
    p.steps.append(Step("unexport", 1, tuple(c1.kubectl("delete", "-n", p.namespace, "exports.clusterlink.net",
                                                          p.service, "--ignore-not-found")), 120, check=False))
    for m, other in ((c2, c1), (c1, c2)):
        p.steps.append(Step("disconnect", m.index, tuple(m.kubectl(
            "delete", "-n", p.namespace, "accesspolicies.clusterlink.net", inst["policy_name"], "--ignore-not-found")),
            120, check=False))
        p.steps.append(Step("disconnect", m.index, tuple(m.kubectl(
            "delete", "-n", clns, "peers.clusterlink.net", other.name, "--ignore-not-found")), 120, check=False))
        p.steps.append(Step("disconnect", m.index, clk(m, "delete", "peer", "--name", m.name), 600, check=False))
        p.steps.append(Step("disconnect", m.index, tuple(m.kubectl(
            "delete", "namespace", clns, inst["operator_namespace"], "--ignore-not-found", "--timeout=300s")), 360,
            check=False))
    p.steps.append(Step("disconnect", None, ("rm", "-rf", certs), 30, check=False))


def parse(outputs: Mapping[str, str]) -> dict[str, Any]:
    """The cl-controlplane image (tag = version), Peer CRs as JSON (condition PeerReachable), dataplane pods'
    node names."""
    connected, seen = True, False
    for key in ("c1.peers", "c2.peers"):
        try:
            items = json.loads(outputs.get(key) or "{}").get("items", [])
        except (ValueError, AttributeError):
            items = []
        seen = seen or bool(items)
        connected = connected and bool(items) and all(
            any(c.get("type") == "PeerReachable" and c.get("status") == "True"
                for c in (it.get("status") or {}).get("conditions", [])) for it in items)
    gateways = [n for key in ("c1.dataplane_nodes", "c2.dataplane_nodes") for n in lines(outputs.get(key))]
    return {"tool_version": image_tag(outputs.get("c1.controlplane_image") or ""), "cable_driver": None,
            "gateway_nodes": gateways, "connected": bool(seen and connected)}
