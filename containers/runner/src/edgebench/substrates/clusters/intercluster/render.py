"""Join two real clusters with an inter-cluster tool (seed 001: Submariner, Skupper, ClusterLink): pure rendering of
the pinned CLI install, connect, export/import, readiness waits, readback and disconnect steps, from
catalog/intercluster.yaml + catalog/intercluster_installs.yaml. Nothing here runs anything (multicluster.py does).

Steps run on the runner (kubectl and the tool's CLI against each member's kubeconfig). Paths under the plan's work
directory are written `${WORKDIR}`; the runner fills it in. Rendered text is deterministic (golden-tested)."""
from __future__ import annotations

import ipaddress
from typing import Any, Callable, Mapping

from edgebench.errors import SpecError
from edgebench.plan import catalog
from edgebench.plan.catalog import InterclusterTool
from edgebench.substrates.clusters.intercluster import clusterlink as cl
from edgebench.substrates.clusters.intercluster import skupper as sk
from edgebench.substrates.clusters.intercluster import submariner as sub
from edgebench.substrates.clusters.intercluster.base import (  # noqa: F401 (the tools' shared pieces, re-exported)
    DNS_LABEL, PHASES, WD, InterclusterPlan, MemberCluster, Step, cli_path, image_tag, install_cli, installs, lines,
    member_from_inventory, namespace_manifest, q, rollout, sh, table_rows, until)
from edgebench.plan.matrix import distributions


# ---------------------------------------------------------------------------------------------- checks
def check_supported(tool: str, mode: str | None, distribution: str) -> InterclusterTool:
    """The catalog entry of tool:mode, or one SpecError: unknown tool/mode (naming the choices), unknown
    distribution, or a distribution the tool does not run on (with the catalog's reason)."""
    info = catalog.resolve_intercluster(f"{tool}:{mode}" if mode else tool)
    dists = distributions()
    if distribution not in dists:
        raise SpecError(f"unknown distribution {distribution!r} (known: {', '.join(dists)})")
    reason = info.unsupported_distribution(distribution)
    if reason:
        raise SpecError(f"{info.key} does not run on {distribution}: {reason}")
    return info


def _nets(m: MemberCluster | tuple[str, str]) -> list[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network]]:
    pod, svc = (m.pod_cidr, m.service_cidr) if isinstance(m, MemberCluster) else m
    try:
        return [("pod", ipaddress.ip_network(pod)), ("service", ipaddress.ip_network(svc))]
    except ValueError as exc:
        raise SpecError(f"invalid CIDR: {exc}") from None


def check_cidrs(a: MemberCluster | tuple[str, str], b: MemberCluster | tuple[str, str], tool: str) -> None:
    """SpecError naming both CIDRs when a pod/service CIDR of cluster 1 overlaps one of cluster 2 and the tool
    routes pod and service addresses between the clusters (cidrs_must_not_overlap)."""
    info = catalog.intercluster_tools().get(tool)
    if info is None:
        catalog.resolve_intercluster(tool)  # raises naming the known tools
    if not info.get("cidrs_must_not_overlap"):
        return
    for ka, na in _nets(a):
        for kb, nb in _nets(b):
            if na.overlaps(nb):
                raise SpecError(f"{tool} routes pod and service addresses between the clusters, so their CIDRs must "
                                f"not overlap (no Globalnet): cluster 1 {ka} CIDR {na} overlaps cluster 2 {kb} CIDR "
                                f"{nb}; use cidr_plan() for cluster 2")


def cidr_plan(distribution: str, n: int = 2) -> list[tuple[str, str]]:
    """(pod CIDR, service CIDR) per member: member 1 keeps the distribution's defaults (catalog/distributions.yaml);
    each further member shifts both by the smallest whole number of their own sizes that overlaps nothing
    allotted so far (k3s 10.42/16 + 10.43/16 -> 10.44/16 + 10.45/16)."""
    dists = distributions()
    if distribution not in dists:
        raise SpecError(f"unknown distribution {distribution!r} (known: {', '.join(dists)})")
    d = dists[distribution]
    pod, svc = ipaddress.ip_network(d["pod_cidr"]), ipaddress.ip_network(d["service_cidr"])
    taken = [pod, svc]
    out = [(str(pod), str(svc))]
    for _ in range(1, n):
        for shift in range(1, 256):
            cand = [ipaddress.ip_network((int(net.network_address) + shift * net.num_addresses, net.prefixlen))
                    for net in (pod, svc)]
            if not cand[0].overlaps(cand[1]) and not any(c.overlaps(t) for c in cand for t in taken) \
                    and all(c.is_private for c in cand):
                break
        else:  # pragma: no cover - the private ranges are far larger than any default
            raise SpecError(f"no free pod/service CIDRs next to {distribution}'s defaults")
        taken += cand
        out.append((str(cand[0]), str(cand[1])))
    return out


def _check_names(c1: MemberCluster, c2: MemberCluster, service: str, namespace: str, port: int) -> None:
    if (c1.index, c2.index) != (1, 2):
        raise SpecError(f"members must be cluster 1 (server side) then cluster 2 (client side), got "
                        f"{c1.index} and {c2.index}")
    for what, value in (("cluster name", c1.name), ("cluster name", c2.name), ("service", service),
                        ("namespace", namespace), ("gateway node", c1.gateway_node), ("gateway node", c2.gateway_node)):
        if not isinstance(value, str) or not DNS_LABEL.match(value):
            raise SpecError(f"{what} {value!r} must be a DNS label (lowercase letters, digits, '-', at most 63)")
    if c1.name == c2.name:
        raise SpecError(f"both clusters are named {c1.name!r}; the tools identify clusters by name")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise SpecError(f"service port {port!r} must be an integer between 1 and 65535")


# ---------------------------------------------------------------------------------------------- rendering
def plan(tool: str, mode: str | None, c1: MemberCluster, c2: MemberCluster, *, service: str, namespace: str,
         port: int) -> InterclusterPlan:
    """The whole life of one inter-cluster connection, in order. SpecError (nothing rendered) for an unknown
    tool/mode, an unsupported distribution, overlapping CIDRs or bad names."""
    info = check_supported(tool, mode, c1.distribution)
    if info.is_none:
        raise SpecError("intercluster `none` is the one-cluster baseline: there is nothing to connect")
    if c2.distribution != c1.distribution:
        check_supported(tool, mode, c2.distribution)
    _check_names(c1, c2, service, namespace, port)
    check_cidrs(c1, c2, info.tool)
    p = InterclusterPlan(info.tool, info.mode, str(info.version), (c1, c2), service, namespace, port)
    _renderers()[info.tool][0](p, info, installs()[info.tool])
    return p


def parse_readback(tool: str, outputs: Mapping[str, str]) -> dict[str, Any]:
    """The readback steps' captured stdout (capture key -> text) -> {tool_version, cable_driver, gateway_nodes,
    connected}. Pure; missing or unrecognised output gives None / [] / False rather than an exception."""
    if tool not in _renderers():
        catalog.resolve_intercluster(tool)
        raise SpecError(f"inter-cluster tool {tool!r} has no readback")
    return _renderers()[tool][1](outputs)


def node_cleanup(tool: str) -> str:
    """Shell script (run as root on every node at teardown) removing what the tool leaves in the kernel when its
    pods die without uninstalling; empty for the layer-7 tools (nothing outside their pods)."""
    return sub.node_cleanup() if tool == "submariner" else ""


def _renderers() -> dict[str, tuple[Callable, Callable]]:
    return {"submariner": (sub.render, sub.parse), "skupper": (sk.render, sk.parse),
            "clusterlink": (cl.render, cl.parse)}
