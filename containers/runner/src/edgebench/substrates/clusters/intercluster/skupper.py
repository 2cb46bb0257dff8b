"""Skupper 1.7.3 with its v1 CLI (docs/reference/intercluster.md#skupper): a site per cluster in the service's
namespace, cluster 1 reachable through a NodePort on its gateway node, cluster 2 linked with a cert token, the
Service exposed under a Skupper address; Skupper then creates a Service of that name in cluster 2."""

from __future__ import annotations

import re
from typing import Any, Mapping

from edgebench.plan.catalog import InterclusterTool
from edgebench.substrates.clusters.intercluster.base import (WD, InterclusterPlan, MemberCluster, Step, cli_path,
                                                             image_tag, install_cli, lines, q, rollout, until)

_VERSION_LINE = re.compile(r"^(client|transport|controller|config-sync|flow-collector) version\s+(.*)$")
_LINK = re.compile(r"^\s*Link (\S+) (is connected|not connected)")


def address(service: str, inst: dict[str, Any]) -> str:
    return (service + inst["address_suffix"])[:63].rstrip("-")


def render(p: InterclusterPlan, info: InterclusterTool, inst: dict[str, Any]) -> None:
    c1, c2 = p.members
    skupper = cli_path(inst)
    token = f"{WD}/skupper-token.yaml"
    link = inst["link_name"]
    addr = address(p.service, inst)

    def sk(m: MemberCluster, *argv: str) -> tuple[str, ...]:
        return (skupper, *argv, "--kubeconfig", m.kubeconfig, "--namespace", p.namespace, "--platform", "kubernetes")

    p.steps += install_cli(inst)
    # connect: a site per cluster (router pinned to the gateway node), token from cluster 1, link from cluster 2
    for m in p.members:
        ingress = (["--ingress", inst["ingress"], "--ingress-host", m.gateway_address] if m.index == 1
                   else ["--ingress", "none"])
        p.steps.append(Step("connect", m.index, sk(m, "init", "--site-name", m.name, *ingress, "--router-node-selector",
                                                   f"kubernetes.io/hostname={m.gateway_node}"),
                            timeout=420))
    for m in p.members:
        for dep in inst["deployments"]:
            p.steps += rollout(m, p.namespace, "deployment", dep)
    p.steps.append(Step("connect", 1, sk(c1, "token", "create", token, "--token-type", inst["token_type"]), 120))
    p.steps.append(Step("connect", 2, sk(c2, "link", "create", token, "--name", link), 120))
    status = " ".join(q(a) for a in sk(c2, "link", "status", link))
    p.steps.append(until(c2, f"{status} | grep -q 'is connected'", f"link {link} from {c2.name} to {c1.name}"))
    # export on cluster 1 under its own address; the Service `addr` appears in cluster 2
    p.steps.append(Step("export", 1, sk(c1, "expose", "service", p.service, "--address", addr, "--port", str(p.port),
                                        "--protocol", "tcp"), 120))
    p.steps.append(until(c2, f"kubectl --kubeconfig {q(c2.kubeconfig)} get -n {p.namespace} service/{addr}",
                         f"Service {p.namespace}/{addr} in cluster 2", 180, 2, phase="import"))
    p.address = f"{addr}.{p.namespace}.svc.cluster.local"
    # readback
    p.steps.append(Step("readback", 1, sk(c1, "version"), 120, capture="c1.version"))
    p.steps.append(Step("readback", 2, sk(c2, "link", "status", link), 120, capture="c2.link"))
    for m in p.members:
        p.steps.append(Step("readback", m.index, tuple(m.kubectl(
            "get", "pods", "-n", p.namespace, "-l", inst["router_selector"], "-o",
            "jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}")), 60, capture=f"c{m.index}.router_nodes"))
    # unexport (unexpose), then disconnect (idempotent): unlink, delete both sites
    p.steps.append(Step("unexport", 1, sk(c1, "unexpose", "service", p.service, "--address", addr), 120,
                        check=False))
    p.steps.append(Step("disconnect", 2, sk(c2, "link", "delete", link), 120, check=False))
    for m in (c2, c1):
        p.steps.append(Step("disconnect", m.index, sk(m, "delete"), 300, check=False))
    p.steps.append(Step("disconnect", None, ("rm", "-f", token), 30, check=False))


def parse(outputs: Mapping[str, str]) -> dict[str, Any]:
    """`skupper version` ("%-30s %s" lines), `skupper link status <name>` ("Link <name> is connected" /
    "Link <name> not connected (...)"), router pods' node names (one per line)."""
    versions = {}
    for line in lines(outputs.get("c1.version")):
        m = _VERSION_LINE.match(line)
        if m:
            versions[m.group(1)] = m.group(2).strip()
    version = image_tag(versions.get("controller", "")) or (versions.get("client") or None)
    links = [m.group(2) for m in map(_LINK.match, (outputs.get("c2.link") or "").splitlines()) if m]
    gateways = [n for key in ("c1.router_nodes", "c2.router_nodes") for n in lines(outputs.get(key))]
    return {"tool_version": version, "cable_driver": None, "gateway_nodes": gateways,
            "connected": bool(links) and all(s == "is connected" for s in links)}
