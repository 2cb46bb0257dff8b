"""The state and step running of a MultiCluster's inter-cluster connection (multicluster.py): its plan, re-rendered
in every new process from <workdir>/state.json, the rendered files, the tool's CLI and the node cleanup."""

from __future__ import annotations

import json
import shutil

from edgebench.substrates.clusters.intercluster import render as ic


class PlanState:
    """Mixed into MultiCluster, whose attributes it uses: workdir, plan, exported, outputs, log, local, members,
    substrate, transport, inventory."""

    def _current_plan(self, strict: bool) -> ic.InterclusterPlan | None:
        """The connection's plan: this object's, else re-rendered from <workdir>/intercluster/state.json (a new
        process: the next Argo step); None if nothing is connected."""
        if self.plan is not None:
            return self.plan
        state = self.workdir / "state.json"
        if not state.exists():
            return None
        s = json.loads(state.read_text())
        c1, c2 = self.members(strict=strict)
        self.plan = ic.plan(s["tool"], s["mode"], c1, c2, service=s["service"], namespace=s["namespace"],
                            port=s["port"])
        self.exported = dict(s.get("exported") or {})
        return self.plan

    def _save(self, plan: ic.InterclusterPlan) -> None:
        self.plan = plan
        self._write_manifests(plan)
        (self.workdir / "state.json").write_text(json.dumps(
            {"tool": plan.tool, "mode": plan.mode, "service": plan.service, "namespace": plan.namespace,
             "port": plan.port, "exported": self.exported}, sort_keys=True))
        (self.workdir / "plan.yaml").write_text(plan.text())

    def _write_manifests(self, plan: ic.InterclusterPlan) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name in plan.manifests:
            (self.workdir / name).write_text(plan.manifest_text(name))

    def _ensure_cli(self, plan: ic.InterclusterPlan) -> None:
        """Install the tool's CLI again if this work dir lost it (the install steps are idempotent)."""
        if not (self.workdir / "bin" / ic.installs()[plan.tool]["cli"]["name"]).exists():
            self._run(plan, "install")
            shutil.rmtree(self.workdir / "download", ignore_errors=True)

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
        """The tool connected in this work dir since provision (kept after disconnect, for the node cleanup)."""
        f = self.workdir / "connected.json"
        return self.plan.tool if self.plan else (json.loads(f.read_text())["tool"] if f.exists() else None)

    def _node_cleanup(self, tool: str | None) -> None:
        """Kernel leftovers of a layer-3 tool (interfaces, xfrm, rules, chains) on every node (ssh only)."""
        script = ic.node_cleanup(tool) if tool else ""
        if not script or self.substrate != "ssh" or self.transport is None:
            return
        for node in self.inventory.nodes:
            rc, out, err = self.transport.run(node, script, sudo=True)
            if rc != 0:
                self.log.append(f"node cleanup on {node.name} failed: {err or out}")
