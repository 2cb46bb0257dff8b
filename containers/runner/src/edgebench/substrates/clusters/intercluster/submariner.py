"""Submariner 0.18 with subctl (docs/reference/intercluster.md#submariner): a broker on cluster 1, both clusters
joined with the cable driver of the mode, the service exported with a ServiceExport (Lighthouse answers
<svc>.<ns>.svc.clusterset.local in cluster 2)."""

from __future__ import annotations

from typing import Any, Mapping

from edgebench.plan.catalog import InterclusterTool
from edgebench.substrates.clusters.intercluster.base import (WD, InterclusterPlan, Step, cli_path, install_cli,
                                                             namespace_manifest, q, rollout, sh, table_rows, until)

CONNECTIONS = ["GATEWAY", "CLUSTER", "REMOTE IP", "NAT", "CABLE DRIVER", "SUBNETS", "STATUS", "RTT avg."]
GATEWAYS = ["NODE", "HA STATUS", "SUMMARY"]
VERSIONS = ["COMPONENT", "REPOSITORY", "CONFIGURED", "RUNNING", "ARCH"]


def render(p: InterclusterPlan, info: InterclusterTool, inst: dict[str, Any]) -> None:
    c1, c2 = p.members
    subctl = cli_path(inst)
    ops, brokerns = inst["operator_namespace"], inst["broker_namespace"]
    label = inst["gateway_label"]
    p.steps += install_cli(inst)
    # connect: label the gateways ourselves (join would otherwise prompt), broker on cluster 1, join both
    for m in p.members:
        p.steps.append(Step("connect", m.index, tuple(m.kubectl("label", "node", m.gateway_node, f"{label}=true",
                                                               "--overwrite")), timeout=60))
    broker = f"{WD}/{inst['broker_file']}"
    p.steps.append(Step("connect", 1, sh(
        f"cd {WD} && rm -f {inst['broker_file']} && {subctl} deploy-broker --kubeconfig {q(c1.kubeconfig)} "
        f"--version {inst['image_version']} --broker-url https://{c1.api_address}:{c1.api_port}"), timeout=600,
        note=f"writes {broker}"))
    for m in p.members:
        p.steps.append(Step("connect", m.index, (
            subctl, "join", broker, "--kubeconfig", m.kubeconfig, "--clusterid", m.name, "--clustercidr", m.pod_cidr,
            "--servicecidr", m.service_cidr, "--cable-driver", info.info["cable_driver"],
            f"--natt={str(inst['natt']).lower()}", "--label-gateway=false", "--version", inst["image_version"]),
            timeout=900))
    # wait: every component rolled out, then the cable connected as cluster 2 sees it
    for m in p.members:
        for ds in inst["daemonsets"]:
            p.steps += rollout(m, ops, "daemonset", ds)
        for dep in inst["deployments"]:
            p.steps += rollout(m, ops, "deployment", dep)
    p.steps.append(until(c2, f"{subctl} show connections --kubeconfig {q(c2.kubeconfig)} | grep -qw connected",
                         f"a connected {info.info['cable_driver']} cable to {c1.name}"))
    # export on cluster 1; the namespace must exist in cluster 2 for the ServiceImport (MCS)
    p.manifests["submariner-namespace.yaml"] = [namespace_manifest(p.namespace)]
    p.steps.append(Step("export", 2, tuple(c2.kubectl("apply", "-f", f"{WD}/submariner-namespace.yaml")), timeout=60))
    p.steps.append(Step("export", 1, (subctl, "export", "service", "--kubeconfig", c1.kubeconfig, "--namespace",
                                      p.namespace, p.service), timeout=120))
    se = f"serviceexports.multicluster.x-k8s.io/{p.service}"
    for cond in ("Valid", "Ready"):
        p.steps.append(Step("export", 1, tuple(c1.kubectl("wait", "-n", p.namespace, f"--for=condition={cond}", se,
                                                          "--timeout=180s")), timeout=240))
    p.steps.append(until(c2, f"kubectl --kubeconfig {q(c2.kubeconfig)} get -n {p.namespace} "
                             f"serviceimports.multicluster.x-k8s.io/{p.service}",
                         f"ServiceImport {p.namespace}/{p.service} in cluster 2", 180, 2, phase="import"))
    p.address = f"{p.service}.{p.namespace}.{inst['dns_domain']}"
    # readback
    p.steps.append(Step("readback", 1, (subctl, "show", "versions", "--kubeconfig", c1.kubeconfig), 120,
                        capture="c1.versions"))
    for m in p.members:
        for what in ("connections", "gateways"):
            p.steps.append(Step("readback", m.index, (subctl, "show", what, "--kubeconfig", m.kubeconfig), 120,
                                capture=f"c{m.index}.{what}"))
    # unexport, then disconnect (idempotent): uninstall cluster 2 then cluster 1 (whose broker is then unused)
    p.steps.append(Step("unexport", 1, (subctl, "unexport", "service", "--kubeconfig", c1.kubeconfig,
                                          "--namespace", p.namespace, p.service), 120, check=False))
    for m in (c2, c1):
        p.steps.append(Step("disconnect", m.index, (subctl, "uninstall", "--yes", "--kubeconfig", m.kubeconfig),
                            900, check=False))
        p.steps.append(Step("disconnect", m.index, tuple(m.kubectl(
            "delete", "namespace", ops, brokerns, "--ignore-not-found", "--timeout=300s")), 360, check=False))
        p.steps.append(Step("disconnect", m.index, tuple(m.kubectl("label", "node", "--all", f"{label}-")), 60,
                            check=False))
    p.steps.append(Step("disconnect", None, ("rm", "-f", broker), 30, check=False))
    p.node_cleanup = node_cleanup()


def node_cleanup() -> str:
    """What a Submariner gateway / route agent leaves on a node when its pods die without uninstalling
    (submariner v0.18.0: vx-submariner, vxlan-tunnel, the WireGuard device `submariner`, xfrm state of the
    libreswan cable, ip rules to tables 100/149/150, SUBMARINER-* chains and ipsets)."""
    return "\n".join([
        "# edgebench cleanup: submariner",
        "set +e",
        "for dev in vx-submariner vxlan-tunnel submariner; do ip link delete \"$dev\" 2>/dev/null; done",
        "for t in 100 149 150; do",
        "  while ip rule del table $t 2>/dev/null; do :; done",
        "  ip route flush table $t 2>/dev/null",
        "done",
        "ip xfrm policy flush; ip xfrm state flush",
        "for t in iptables ip6tables; do",
        "  command -v $t-save >/dev/null || continue",
        "  $t-save | grep -v SUBMARINER | $t-restore",
        "done",
        "command -v ipset >/dev/null && for s in $(ipset list -n 2>/dev/null | grep '^SUBMARINER'); do "
        "ipset destroy \"$s\"; done",
        "exit 0",
    ]) + "\n"


def parse(outputs: Mapping[str, str]) -> dict[str, Any]:
    """subctl show versions / connections / gateways (tables of internal/show/table in subctl v0.18.0)."""
    version = None
    for row in table_rows(outputs.get("c1.versions", ""), VERSIONS):
        if row["COMPONENT"] == "submariner-gateway":
            version = (row["CONFIGURED"] or row["RUNNING"]).lstrip("v") or None
    drivers: list[str] = []
    connected = True
    seen = False
    for key in ("c1.connections", "c2.connections"):
        rows = table_rows(outputs.get(key, ""), CONNECTIONS)
        seen = seen or bool(rows)
        connected = connected and bool(rows) and all(r["STATUS"] == "connected" for r in rows)
        drivers += [r["CABLE DRIVER"] for r in rows if r["CABLE DRIVER"] and r["CABLE DRIVER"] not in drivers]
    gateways = [r["NODE"] for key in ("c1.gateways", "c2.gateways")
                for r in table_rows(outputs.get(key, ""), GATEWAYS) if r["HA STATUS"] == "active"]
    return {"tool_version": version, "cable_driver": ",".join(drivers) or None, "gateway_nodes": gateways,
            "connected": bool(seen and connected)}
