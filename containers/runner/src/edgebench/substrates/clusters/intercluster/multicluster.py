"""The two real clusters of one inter-cluster cell and the tool that joins them, as a Provider (substrates/base.py):
MultiCluster composes a ClusterProvider per member (cluster 2 on the CIDRs of intercluster.cidr_plan) and runs an
intercluster plan through the same injectable runner as provider.py (`local(argv, input=None, check=True) -> stdout`).
clusters.from_cell returns one for every cell whose `intercluster` is not `none` (substrates ssh and kind).

    mc = MultiCluster("ssh", "k3s", "flannel", "vxlan", workdir, inventory=inv, transport=t, tool="submariner")
    mc.provision(); mc.install_cni(cm)
    detail = mc.connect_clusters(catalog.resolve_intercluster("submariner:libreswan"))
    address = mc.export_service(8080, mc.server("cross-node"), "pod-to-service")   # what mc.client() dials
    mc.flush_services(); mc.disconnect_clusters(); mc.teardown()

Endpoints mirror the local testbed (local/intercluster.py): the client is a pod on a worker of cluster 2, the server
and the DDS peers pods on a worker of cluster 1 (a worker that is not the member's gateway when there is one, so that
traffic takes the worker -> gateway hop; else the gateway agent; else the server node), in the slots the
one-cluster provider uses. Tuning, link conditions and resource sampling are delegated to both members.

Every phase may run in a new process (Argo runs `edgebench <phase> --cell ...` per step with the cell's work dir
carried between steps): the members keep their kubeconfigs in <workdir>/c1 and <workdir>/c2, the connection its
plan parameters and exported services in <workdir>/intercluster/state.json (the plan is re-rendered from them) and
the tool that was connected in <workdir>/intercluster/connected.json (for the node cleanup at teardown, also after
a separate disconnect). The tool's CLI lives in <workdir>/intercluster/bin and is installed again if a later
phase finds it missing.

Errors in the spec (unsupported distribution, no cluster 2 in the inventory, overlapping CIDRs) raise SpecError and a
CNI mode the tool is not run over (catalog `cnis`) raises Unsupported, before anything runs. A failed provision or
CNI install removes both clusters; a failed connect disconnects what it started; disconnect is idempotent; teardown
always tries both clusters and raises the collected errors afterwards."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import yaml

from edgebench.errors import EdgebenchError, SpecError
from edgebench.plan import catalog
from edgebench.substrates.base import Provider, Unsupported
from edgebench.substrates.clusters.intercluster import render as ic
from edgebench.substrates.clusters.install import kind as kind_mod
from edgebench.substrates.clusters import placement as pl
from edgebench.substrates.clusters.inventory import Inventory, Node
from edgebench.plan.matrix import distributions
from edgebench.substrates.clusters.intercluster.state import PlanState
from edgebench.substrates.clusters.provider import (ClusterEndpoint, ClusterProvider, LocalRunner, default_fetch,
                                                    default_local)
from edgebench.substrates.clusters.transport import Transport

NOMINAL_SERVICE = "eb-ic"  # connect steps do not depend on the service; the plan is re-rendered at export
CLUSTERS = (1, 2)


class MultiCluster(PlanState, Provider):
    def __init__(self, substrate: str, distribution: str, cni: str, mode: str, workdir: Path,
                 inventory: Inventory | None = None, transport: Transport | None = None,
                 local: LocalRunner = default_local, fetch: Callable[[str], str] = default_fetch,
                 key_path: str | None = None, cell_id: str = "c-local", token: Callable[[int], str] | None = None,
                 kind_workers: int = 2, host_arch: str = "amd64", provider: type[ClusterProvider] = ClusterProvider,
                 tool: str | None = None, cni_version: str | None = None):
        if substrate == "ssh":
            if inventory is None:
                raise SpecError("the ssh substrate needs an inventory")
            inventory.require_two_clusters()
        d = distributions().get(distribution)
        if d is None:
            raise SpecError(f"unknown distribution {distribution!r} (known: {', '.join(distributions())})")
        info = catalog.resolve_intercluster(tool) if tool else None
        if info is not None and not info.is_none:
            ic.check_supported(info.tool, info.mode, distribution)
            reason = info.unsupported_cni(cni, mode, distribution)
            if reason:
                raise Unsupported(f"unsupported: {reason}")
        cidrs = (ic.cidr_plan(distribution) if d.get("cidrs_configurable", True)
                 else [(d["pod_cidr"], d["service_cidr"])] * 2)
        self.name = substrate
        self.substrate, self.distribution, self.cni, self.mode = substrate, distribution, cni, mode
        self.inventory, self.transport, self.local = inventory, transport, local
        self.cell_id = cell_id
        self.workdir = Path(workdir) / "intercluster"
        self.cidrs = {i: cidrs[i - 1] for i in CLUSTERS}
        # the members' names as the tools know them (Submariner cluster id, Skupper site, ClusterLink peer), and
        # their kind clusters: eb-<cell hash>-c1 / -c2
        self.names = {i: kind_mod.cluster_name(f"{cell_id}-c{i}") for i in CLUSTERS}
        self.providers = {i: provider(substrate, distribution, cni, mode, Path(workdir) / f"c{i}",
                                      inventory=inventory.member(i) if inventory else None, transport=transport,
                                      local=local, fetch=fetch, key_path=key_path, cell_id=f"{cell_id}-c{i}",
                                      token=token, kind_workers=kind_workers, host_arch=host_arch,
                                      pod_cidr=self.cidrs[i][0], service_cidr=self.cidrs[i][1],
                                      **({"cni_version": cni_version} if cni_version else {}))
                          for i in CLUSTERS}
        self.plan: ic.InterclusterPlan | None = None
        self.exported: dict[str, dict[str, Any]] = {}  # Service name -> {port, address}, for the current connection
        self.outputs: dict[str, str] = {}
        self.log: list[str] = []

    # -- clusters --------------------------------------------------------------------------------------------
    def provision(self) -> None:
        """Both members (each replaces a leftover cluster of its own); a connection left by an earlier attempt is
        forgotten after its kernel leftovers are cleaned. A failure removes both clusters before it propagates."""
        leftover = self._connected_tool()
        if leftover:
            self._node_cleanup(leftover)
            shutil.rmtree(self.workdir, ignore_errors=True)
        try:
            for p in self.providers.values():
                p.provision()
        except BaseException:
            self._remove_clusters(raise_errors=False)
            raise

    def install_cni(self, cm: Any = None) -> dict[str, Any]:
        """The CNI mode in both members; the readback of cluster 2 (the client's) with the MTU of the client pod,
        and each member's under `clusters`. Unsupported (e.g. a kernel too old on a node) propagates as is; any
        other failure removes both clusters."""
        try:
            states = {i: p.install_cni(cm) for i, p in self.providers.items()}
            client = self.client()
            mtu = states[2]["mtu"] if client == self.providers[2].client() else self.read_mtu(client)
        except Unsupported:
            raise
        except BaseException:
            self._remove_clusters(raise_errors=False)
            raise
        out = {**states[2], "mtu": mtu, "clusters": {str(i): s for i, s in states.items()}}
        invalid = [f"cluster {i}: {s['invalid_reason']}" for i, s in states.items() if s.get("invalid_reason")]
        if invalid:  # e.g. a triggered CNI version not in force in either member
            out["invalid_reason"] = "; ".join(invalid)
        return out

    def teardown(self) -> list[str]:
        """Disconnect (if connected), clean the tool's kernel leftovers off the nodes, remove both clusters (both
        are always tried; the errors are raised together afterwards)."""
        tool = self._connected_tool()
        try:
            self.disconnect_clusters()
        except Exception as exc:  # the clusters go away next anyway
            self.log.append(f"disconnect failed: {exc}")
        self._node_cleanup(tool)
        shutil.rmtree(self.workdir, ignore_errors=True)
        return self._remove_clusters(raise_errors=True)

    def _remove_clusters(self, raise_errors: bool) -> list[str]:
        removed: list[str] = []
        errors: list[str] = []
        for i, p in self.providers.items():
            try:
                removed += p.teardown()
            except Exception as exc:
                errors.append(f"cluster {i} ({self.names[i]}): {exc}")
                self.log.append(f"teardown of cluster {i} failed: {exc}")
        if errors and raise_errors:
            raise EdgebenchError("teardown failed for " + "; ".join(errors)
                                 + (f" (removed: {', '.join(removed)})" if removed else ""))
        return removed

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
                out.append(ic.MemberCluster(i, self.names[i], kc, self.distribution, *self.cidrs[i], node, addr,
                                            f"{p.kind_name}-control-plane", 6443))
            else:
                out.append(ic.member_from_inventory(self.inventory, i, self.names[i], kc, self.distribution,
                                                    self.cidrs[i]))
        return out[0], out[1]

    # -- endpoints and services --------------------------------------------------------------------------------
    def _gateway_name(self, i: int) -> str:
        p = self.providers[i]
        return f"{p.kind_name}-worker" if self.substrate == "kind" else self.inventory.gateway_node(i).name

    def workload_node(self, i: int) -> Node:
        """Where member i's endpoints run: a worker (agent) that is not the gateway, else the gateway agent, else the
        server; among the nodes the member deployed workload pods on."""
        inv = self.providers[i].inventory
        deployed = pl.workload_nodes(inv, pl.PLACEMENTS)
        gw = self._gateway_name(i)
        ranked = ([n for n in inv.agents if n.name != gw] + [n for n in inv.agents if n.name == gw] + [inv.server])
        return next((n for n in ranked if n in deployed), deployed[0] if deployed else inv.server)

    def client(self, placement: str = "cross-node") -> ClusterEndpoint:
        """A pod on a worker of cluster 2 (every inter-cluster run is cross-node: plan/intercluster.run_reason)."""
        return self.providers[2]._ep(self.workload_node(2), 1)

    def server(self, placement: str) -> ClusterEndpoint:
        """A pod on a worker of cluster 1."""
        return self.providers[1]._ep(self.workload_node(1), 1)

    def peers(self, placement: str) -> list[ClusterEndpoint]:
        """The pods of the server's node in cluster 1."""
        node = self.workload_node(1)
        return [self.providers[1]._ep(node, s) for s in range(1, pl.PEERS_PER_NODE + 1)]

    def read_mtu(self, ep: ClusterEndpoint) -> int:
        return self.providers[2].read_mtu(ep)  # kubectl exec with the endpoint's own kubeconfig

    def multicast_reason(self, placement: str) -> str | None:
        return "multicast does not cross clusters (no inter-cluster tool forwards it)"

    def add_service(self, cluster_ip: str, port: int, backend: ClusterEndpoint) -> str:
        """A ClusterIP Service in cluster 1 (the backend's); inter-cluster runs use export_service instead."""
        return self.providers[1].add_service(cluster_ip, port, backend)

    def flush_services(self) -> None:
        """Unexport what this connection exported (the tool's unexport steps per service), then delete the bench
        Services and stop leftover tools in both clusters."""
        plan = self._current_plan(strict=False)
        if plan is not None and self.exported:
            tool = catalog.resolve_intercluster(f"{plan.tool}:{plan.mode}")
            for name, e in sorted(self.exported.items()):
                p = self.render(tool, name, int(e["port"]))
                self._write_manifests(p)
                self._ensure_cli(p)
                self._run(p, "unexport")
            self.exported = {}
            self._save(plan)
        for p in self.providers.values():
            p.flush_services()

    # -- the tool --------------------------------------------------------------------------------------------
    def render(self, tool: catalog.InterclusterTool, service: str = NOMINAL_SERVICE, port: int = 8080
               ) -> ic.InterclusterPlan:
        c1, c2 = self.members()
        return ic.plan(tool.tool, tool.mode, c1, c2, service=service, namespace=pl.NAMESPACE, port=port)

    def connect_clusters(self, tool: catalog.InterclusterTool) -> dict[str, Any]:
        """Install the tool's CLI, join the clusters, wait until connected; the readback (the manifest's
        `intercluster_detail`, the keys of the local testbed's): tool/mode/version, implementation `installed`, no
        model, the version/cable driver/gateways the clusters report, and under `readback` everything parsed, the
        CLI's version and the members' names and CIDRs."""
        if tool.is_none:
            return {"tool": "none"}
        ic.check_supported(tool.tool, tool.mode, self.distribution)  # SpecError before anything runs
        plan = self.render(tool)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.exported, self.outputs = {}, {}
        self._save(plan)
        (self.workdir / "connected.json").write_text(json.dumps({"tool": plan.tool, "mode": plan.mode}))
        try:
            self._run(plan, "install")
            shutil.rmtree(self.workdir / "download", ignore_errors=True)  # the archives: the CLI is in bin/
            self._run(plan, "connect", "wait")
            self._run(plan, "readback")
        except BaseException:
            self.disconnect_clusters()
            raise
        parsed = ic.parse_readback(plan.tool, self.outputs)
        return {"tool": plan.tool, "mode": plan.mode, "version": plan.version, "implementation": "installed",
                "model": None, "tool_version": parsed["tool_version"],
                "cable_driver": parsed["cable_driver"] or tool.info.get("cable_driver"),
                "gateways": parsed["gateway_nodes"],
                "readback": {**parsed, "cli_version": self.outputs.get("cli_version", "").strip() or None,
                             "members": [{"index": m.index, "name": m.name, "pod_cidr": m.pod_cidr,
                                          "service_cidr": m.service_cidr, "gateway_node": m.gateway_node}
                                         for m in plan.members]}}

    def export_service(self, port: int, backend: ClusterEndpoint, path: str = "pod-to-service") -> str:
        """A Service for backend:port in cluster 1, exported with the connected tool; the address the client in
        cluster 2 dials (with `port`): the tool's DNS name, or for pod-to-pod over a layer-3 tool the pod's own IP
        (routed between the clusters, nothing to export)."""
        plan = self._current_plan(strict=True)
        if plan is None:
            raise SpecError("no inter-cluster tool is connected (run connect_clusters first)")
        tool = catalog.resolve_intercluster(f"{plan.tool}:{plan.mode}")
        if path == "pod-to-pod" and tool.layer == 3:
            return backend.ip
        name = f"eb-ic-{port}"
        slot = backend.pod.split("-")[1].removeprefix("w")
        svc = pl.service(name, None, port, {"edgebench.io/node": backend.node, "edgebench.io/slot": slot})
        c1 = self.providers[1]
        self.local(["kubectl", "--kubeconfig", c1.kubeconfig, "apply", "-f", "-"],
                   input=yaml.safe_dump(svc, sort_keys=False))
        if name in self.exported:  # already exported through this connection (the Service was re-applied)
            return self.exported[name]["address"]
        plan = self.render(tool, name, port)
        self._save(plan)
        self._ensure_cli(plan)
        self._run(plan, "export", "import")
        self.exported[name] = {"port": port, "address": plan.address}
        self._save(plan)
        return plan.address

    def disconnect_clusters(self) -> None:
        """Unexport and remove the tool from both clusters; a no-op when nothing is connected."""
        plan = self._current_plan(strict=False)
        if plan is None:
            return
        self._write_manifests(plan)
        try:
            self._ensure_cli(plan)
        except Exception as exc:  # the steps below fail on their own then (all check=False)
            self.log.append(f"reinstalling the CLI failed: {exc}")
        tool = catalog.resolve_intercluster(f"{plan.tool}:{plan.mode}")
        for name, e in sorted(self.exported.items()):  # services exported before the plan's own
            other = self._render_quiet(tool, name, int(e["port"])) if name != plan.service else None
            if other is not None:
                self._run(other, "unexport")
        self._run(plan, "unexport", "disconnect")
        (self.workdir / "state.json").unlink(missing_ok=True)
        self.plan = None
        self.exported = {}

    def _render_quiet(self, tool: catalog.InterclusterTool, service: str, port: int) -> ic.InterclusterPlan | None:
        try:
            c1, c2 = self.members(strict=False)
            return ic.plan(tool.tool, tool.mode, c1, c2, service=service, namespace=pl.NAMESPACE, port=port)
        except Exception as exc:
            self.log.append(f"cannot render the unexport of {service}: {exc}")
            return None

    # -- conditions: delegated to both members ------------------------------------------------------------------
    def _both(self, method: str, *args: Any) -> dict[int, Any]:
        return {i: getattr(p, method)(*args) for i, p in self.providers.items()}

    @staticmethod
    def _merge(objs: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """Cluster 1's object; where the members' readbacks differ, each value per cluster (so a check that
        compares it with the request sees the difference), and both objects under `clusters`."""
        if objs[1] == objs[2]:
            return objs[1]
        merged = dict(objs[1])
        rb1, rb2 = objs[1].get("readback"), objs[2].get("readback")
        if isinstance(rb1, dict) and isinstance(rb2, dict):
            merged["readback"] = {k: rb1.get(k) if rb1.get(k) == rb2.get(k)
                                  else f"cluster 1: {rb1.get(k)}; cluster 2: {rb2.get(k)}" for k in {**rb1, **rb2}}
        elif rb1 != rb2:
            merged["readback"] = f"cluster 1: {rb1}\ncluster 2: {rb2}"
        merged["clusters"] = {str(i): o for i, o in objs.items()}
        return merged

    def apply_tuning(self, profile: str) -> dict[str, Any]:
        return self._merge(self._both("apply_tuning", profile))

    def apply_netem(self, scenario: Any) -> dict[str, Any]:
        return self._merge(self._both("apply_netem", scenario))

    def netem_readback(self) -> str:
        texts = self._both("netem_readback")
        return "\n".join(f"cluster {i}:\n{t}" for i, t in texts.items() if t)

    def conditions_problem(self) -> str | None:
        problems = [f"cluster {i}: {p}" for i, p in self._both("conditions_problem").items() if p]
        return "; ".join(problems) or None

    def revert_conditions(self) -> None:
        errors = []
        for i, p in self.providers.items():
            try:
                p.revert_conditions()
            except Exception as exc:
                errors.append(f"cluster {i}: {exc}")
        if errors:
            raise EdgebenchError("revert of tuning/netem failed for " + "; ".join(errors))

    def workload_pids(self) -> dict[str, int]:
        return {f"c{i}/{name}": pid for i, pids in self._both("workload_pids").items() for name, pid in pids.items()}
