"""Two real clusters of one inter-cluster cell and the tool that joins them: MultiCluster composes a ClusterProvider
per member (cluster 2 on the CIDRs of intercluster.cidr_plan) and runs an intercluster plan through the same
injectable runner as provider.py (`local(argv, input=None, check=True) -> stdout`).

    mc = MultiCluster("ssh", "k3s", "flannel", "vxlan", workdir, inventory=inv, transport=t)
    mc.provision(); mc.install_cni()
    detail = mc.connect_clusters(catalog.resolve_intercluster("submariner:libreswan"))
    address = mc.export_service(8080, server_endpoint_in_cluster_1)   # what the client in cluster 2 dials
    mc.disconnect_clusters(); mc.teardown()

Errors in the spec (unsupported distribution, no cluster 2 in the inventory, overlapping CIDRs) raise SpecError
before anything runs. A failed connect disconnects what it started before the error propagates; disconnect is
idempotent (the plan of the last connect is kept in <workdir>/intercluster/state.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import yaml

from edgebench.errors import SpecError
from edgebench.plan import catalog
from edgebench.substrates.clusters import intercluster as ic
from edgebench.substrates.clusters import placement as pl
from edgebench.substrates.clusters.inventory import Inventory
from edgebench.substrates.clusters.matrix import distributions
from edgebench.substrates.clusters.provider import (ClusterEndpoint, ClusterProvider, LocalRunner, default_fetch,
                                                    default_local)
from edgebench.substrates.clusters.transport import Transport

NOMINAL_SERVICE = "eb-ic"  # connect steps do not depend on the service; the plan is re-rendered at export


class MultiCluster:
    def __init__(self, substrate: str, distribution: str, cni: str, mode: str, workdir: Path,
                 inventory: Inventory | None = None, transport: Transport | None = None,
                 local: LocalRunner = default_local, fetch: Callable[[str], str] = default_fetch,
                 key_path: str | None = None, cell_id: str = "c-local", token: Callable[[int], str] | None = None,
                 kind_workers: int = 2, host_arch: str = "amd64", provider: type[ClusterProvider] = ClusterProvider):
        if substrate == "ssh":
            if inventory is None:
                raise SpecError("the ssh substrate needs an inventory")
            inventory.require_two_clusters()
        d = distributions().get(distribution)
        if d is None:
            raise SpecError(f"unknown distribution {distribution!r} (known: {', '.join(distributions())})")
        cidrs = (ic.cidr_plan(distribution) if d.get("cidrs_configurable", True)
                 else [(d["pod_cidr"], d["service_cidr"])] * 2)
        self.substrate, self.distribution = substrate, distribution
        self.inventory, self.transport, self.local = inventory, transport, local
        self.workdir = Path(workdir) / "intercluster"
        self.cidrs = {i: cidrs[i - 1] for i in (1, 2)}
        self.providers = {i: provider(substrate, distribution, cni, mode, Path(workdir) / f"c{i}",
                                      inventory=inventory.member(i) if inventory else None, transport=transport,
                                      local=local, fetch=fetch, key_path=key_path, cell_id=f"{cell_id}-c{i}",
                                      token=token, kind_workers=kind_workers, host_arch=host_arch,
                                      pod_cidr=self.cidrs[i][0], service_cidr=self.cidrs[i][1])
                          for i in (1, 2)}
        self.plan: ic.InterclusterPlan | None = None
        self.exported: dict[str, str] = {}  # Service name -> address, for the current connection
        self.outputs: dict[str, str] = {}
        self.log: list[str] = []

    # -- clusters --------------------------------------------------------------------------------------------
    def provision(self) -> None:
        for p in self.providers.values():
            p.provision()

    def install_cni(self) -> dict[int, dict]:
        return {i: p.install_cni() for i, p in self.providers.items()}

    def teardown(self) -> list[str]:
        """Disconnect (if connected), clean the tool's kernel leftovers off the nodes, remove both clusters."""
        tool = self._connected_tool()
        try:
            self.disconnect_clusters()
        except Exception as exc:  # the clusters go away next anyway
            self.log.append(f"disconnect failed: {exc}")
        self._node_cleanup(tool)
        return [r for p in self.providers.values() for r in p.teardown()]

    def members(self, strict: bool = True) -> tuple[ic.MemberCluster, ic.MemberCluster]:
        """The two members as the plans need them; kind gateway addresses are read with `docker inspect`
        (strict=False: an unreadable one, e.g. of a deleted cluster, becomes 0.0.0.0)."""
        out = []
        for i, p in self.providers.items():
            kc = p.kubeconfig
            if self.substrate == "kind":
                node = f"{p.kind_name}-worker"
                addr = (self.local(["docker", "inspect", "-f",
                                    "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", node],
                                   check=strict) or "").strip() or "0.0.0.0"
                out.append(ic.MemberCluster(i, f"eb-c{i}", kc, self.distribution, *self.cidrs[i], node, addr,
                                            f"{p.kind_name}-control-plane", 6443))
            else:
                out.append(ic.member_from_inventory(self.inventory, i, f"eb-c{i}", kc, self.distribution,
                                                    self.cidrs[i]))
        return out[0], out[1]

    # -- the tool --------------------------------------------------------------------------------------------
    def render(self, tool: catalog.InterclusterTool, service: str = NOMINAL_SERVICE, port: int = 8080
               ) -> ic.InterclusterPlan:
        c1, c2 = self.members()
        return ic.plan(tool.tool, tool.mode, c1, c2, service=service, namespace=pl.NAMESPACE, port=port)

    def connect_clusters(self, tool: catalog.InterclusterTool) -> dict[str, Any]:
        """Install the tool's CLI, join the clusters, wait until connected; the readback (manifest's
        `intercluster_detail`): tool/mode/version, what the clusters report, the members' CIDRs."""
        if tool.is_none:
            return {"tool": "none"}
        ic.check_supported(tool.tool, tool.mode, self.distribution)  # SpecError before anything runs
        plan = self.render(tool)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._save(plan)
        try:
            self._run(plan, "install", "connect", "wait")
            self._run(plan, "readback")
        except BaseException:
            self.disconnect_clusters()
            raise
        detail = ic.parse_readback(plan.tool, self.outputs)
        return {"tool": plan.tool, "mode": plan.mode, "version": plan.version,
                "cli_version": self.outputs.get("cli_version", "").strip() or None, **detail,
                "members": [{"index": m.index, "name": m.name, "pod_cidr": m.pod_cidr, "service_cidr": m.service_cidr,
                             "gateway_node": m.gateway_node} for m in plan.members]}

    def export_service(self, port: int, backend: ClusterEndpoint, path: str = "pod-to-service") -> str:
        """A Service for backend:port in cluster 1, exported with the connected tool; the DNS name the client in
        cluster 2 dials (with `port`)."""
        if self.plan is None:
            raise SpecError("no inter-cluster tool is connected (run connect_clusters first)")
        name = f"eb-ic-{port}"
        slot = backend.pod.split("-")[1].removeprefix("w")
        svc = pl.service(name, None, port, {"edgebench.io/node": backend.node, "edgebench.io/slot": slot})
        c1 = self.providers[1]
        self.local(["kubectl", "--kubeconfig", c1.kubeconfig, "apply", "-f", "-"],
                   input=yaml.safe_dump(svc, sort_keys=False))
        if name in self.exported:  # already exported through this connection (the Service was re-applied)
            return self.exported[name]
        plan = self.render(catalog.resolve_intercluster(f"{self.plan.tool}:{self.plan.mode}"), name, port)
        self._save(plan)
        self._run(plan, "export", "import")
        self.exported[name] = plan.address
        return plan.address

    def disconnect_clusters(self) -> None:
        """Unexport and remove the tool from both clusters; a no-op when nothing is connected."""
        plan = self.plan
        state = self.workdir / "state.json"
        if plan is None and state.exists():
            s = json.loads(state.read_text())
            c1, c2 = self.members(strict=False)
            plan = ic.plan(s["tool"], s["mode"], c1, c2, service=s["service"], namespace=s["namespace"],
                           port=s["port"])
        if plan is None:
            return
        self._write_manifests(plan)
        self._run(plan, "disconnect")
        state.unlink(missing_ok=True)
        self.plan = None
        self.exported = {}

    # -- running ---------------------------------------------------------------------------------------------
    def _save(self, plan: ic.InterclusterPlan) -> None:
        self.plan = plan
        self._write_manifests(plan)
        (self.workdir / "state.json").write_text(json.dumps(
            {"tool": plan.tool, "mode": plan.mode, "service": plan.service, "namespace": plan.namespace,
             "port": plan.port}, sort_keys=True))
        (self.workdir / "plan.yaml").write_text(plan.text())

    def _write_manifests(self, plan: ic.InterclusterPlan) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name in plan.manifests:
            (self.workdir / name).write_text(plan.manifest_text(name))

    def _run(self, plan: ic.InterclusterPlan, *phases: str) -> None:
        for step in plan.phase(*phases):
            argv = [a.replace(ic.WD, str(self.workdir)) for a in step.argv]
            self.log.append(("" if step.check else "(may fail) ") + " ".join(argv))
            try:
                out = self.local(argv, check=step.check)
            except Exception as exc:
                if step.check:
                    raise
                self.log.append(f"ignored: {exc}")
                continue
            if step.capture:
                self.outputs[step.capture] = out or ""

    def _connected_tool(self) -> str | None:
        state = self.workdir / "state.json"
        return self.plan.tool if self.plan else (json.loads(state.read_text())["tool"] if state.exists() else None)

    def _node_cleanup(self, tool: str | None) -> None:
        """Kernel leftovers of a layer-3 tool (interfaces, xfrm, rules, chains) on every node (ssh only)."""
        script = ic.node_cleanup(tool) if tool else ""
        if not script or self.substrate != "ssh" or self.transport is None:
            return
        for node in self.inventory.nodes:
            rc, out, err = self.transport.run(node, script, sudo=True)
            if rc != 0:
                self.log.append(f"node cleanup on {node.name} failed: {err or out}")
