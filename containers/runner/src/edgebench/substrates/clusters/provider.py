"""ClusterProvider: the substrate interface (substrates/base.py) on a real cluster: `ssh` (k3s/k0s/MicroK8s/kubeadm on
the inventory's nodes) or `kind`. kubectl/helm/kind/k0sctl run on the runner against the cell's kubeconfig
(<workdir>/kubeconfig); node commands go through a Transport. Workloads run through `kubectl exec`, so the
drivers and parsers work unchanged.

Failure handling: a failed provision or CNI install tears everything down (distribution + CNI leftovers on
every node) before the error propagates; teardown() is idempotent and never raises for a missing cluster."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from edgebench import sh
from edgebench.errors import EdgebenchError
from edgebench.substrates.clusters.inventory import Inventory, Node
from edgebench.substrates.base import Provider, Unsupported
from edgebench.substrates.clusters.install import (artifacts as artifacts_mod, cni as cni_mod, distributions as dist_mod,
                                                   kind as kind_mod, node_steps, preflight)
from edgebench.substrates.clusters.install.artifacts import Source, mirror_images
from edgebench.substrates.clusters.install.cni_manifests import apply_patches
from edgebench.substrates.clusters.workload_pods import ClusterEndpoint, WorkloadPods
from edgebench.plan.matrix import cni_installs, compatibility, distributions
from edgebench.substrates.clusters import link, node_tuning
from edgebench.substrates.clusters.transport import Transport

LocalRunner = Callable[..., str]  # (argv, input=None, check=True) -> stdout; raises sh.CommandError


def default_local(argv: Sequence[str], input: str | None = None, check: bool = True) -> str:
    return sh.run(argv, check=check, input=input, timeout=3600)  # a ceiling: the waits below say their own


def default_fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 (pinned https URLs from the catalog)
        return r.read().decode()


def rewrite_kubeconfig(text: str, host: str, port: int, name: str = "edgebench") -> str:
    """Point a fetched kubeconfig at the server address (k3s/kubeadm write 127.0.0.1 or an internal name)."""
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise EdgebenchError("the fetched kubeconfig has no clusters")
    h = f"[{host}]" if ":" in host else host
    for c in doc["clusters"]:
        c["cluster"]["server"] = f"https://{h}:{port}"
    return yaml.safe_dump(doc, sort_keys=False)


# A node whose CPU is emulated (the inventory's `cpu: emulated`, a qemu TCG guest) is 10-50x slower: the readiness
# waits (the CNI's `--timeout=` and the workload pods' 300 s) are this many times longer on a cluster with one. Measured:
# cilium's agent compiles each endpoint's programs with clang on the guest, and six workload pods were not Ready
# within 300 s on two x86 TCG guests (2026-11-29, docs/lab-vm.md).
EMULATED_WAIT_FACTOR = 4


def scaled_waits(argv: Sequence[str], factor: int) -> list[str]:
    """argv with each `--timeout=Ns` (or Nm) multiplied by factor (1: unchanged)."""
    def one(a: str) -> str:
        m = re.fullmatch(r"--timeout=(\d+)([sm])", a)
        return f"--timeout={int(m.group(1)) * factor}{m.group(2)}" if m and factor != 1 else a
    return [one(a) if isinstance(a, str) else a for a in argv]


def _version_tuple(text: str) -> tuple[int, ...]:
    m = re.match(r"(\d+)\.(\d+)", text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


class ClusterProvider(WorkloadPods, Provider):
    def __init__(self, substrate: str, distribution: str, cni: str, mode: str, workdir: Path,
                 inventory: Inventory | None = None, transport: Transport | None = None,
                 local: LocalRunner = default_local, fetch: Callable[[str], str] = default_fetch,
                 key_path: str | None = None, cell_id: str = "c-local", token: Callable[[int], str] | None = None,
                 kind_workers: int = 2, host_arch: str = "amd64", pod_cidr: str | None = None,
                 service_cidr: str | None = None, cni_version: str | None = None, artifacts: Source | None = None):
        """cni_version: the version a triggered rerun asks for (trigger.new of the cell's CNI); None = the pin.
        artifacts: the air-gapped artifact source (binaries, images, manifests from a local mirror)."""
        if substrate not in ("ssh", "kind"):
            raise EdgebenchError(f"ClusterProvider serves substrates ssh and kind, not {substrate!r}")
        if (substrate == "kind") != (distribution == "kind"):
            raise EdgebenchError(f"substrate {substrate} cannot run distribution {distribution} "
                                 "(kind runs on substrate kind; k3s/k0s/microk8s/kubeadm on ssh)")
        if substrate == "ssh" and (inventory is None or transport is None):
            raise EdgebenchError("the ssh substrate needs an inventory and a transport")
        if inventory is not None and len(inventory.clusters) > 1:
            inventory = inventory.member(1)  # a one-cluster cell on a two-cluster inventory uses cluster 1
        self.name = substrate
        self.distribution, self.cni, self.mode = distribution, cni, mode
        self.cni_version = cni_version
        self.artifacts = artifacts
        self.workdir = Path(workdir)
        self.local, self.fetch, self.transport = local, fetch, transport
        self.key_path = key_path or "${SSH_KEY}"
        self.cell_id = cell_id
        self._token = token or (lambda n: secrets.token_hex(n // 2))
        self.kind_name = kind_mod.cluster_name(cell_id)
        if substrate == "kind":
            names = kind_mod.node_names(self.kind_name, kind_workers)
            inventory = Inventory("kind", tuple(Node(n, n, host_arch, "server" if i == 0 else "agent", "root")
                                                for i, n in enumerate(names)), "kind")
            self.pod_cidr, self.service_cidr = kind_mod.subnets(cell_id)
        else:
            d = dist_mod.with_cidrs(distribution, pod_cidr, service_cidr)
            self.pod_cidr, self.service_cidr = d["pod_cidr"], d["service_cidr"]
        if substrate == "kind" and (pod_cidr or service_cidr):  # inter-cluster members: planned CIDRs
            self.pod_cidr, self.service_cidr = pod_cidr or self.pod_cidr, service_cidr or self.service_cidr
        self.inventory = inventory
        reason = compatibility(distribution, cni, mode, inventory.arches)
        if reason:
            raise Unsupported(f"unsupported: {distribution} x {cni}:{mode}: {reason}")
        # a CNI the artifact source cannot carry: nothing is installed, its runs are recorded unsupported (install_cni)
        self.unavailable = artifacts_mod.unavailable(cni) if artifacts is not None else None
        self.kind_workers = kind_workers
        self.secrets: dict[str, str] = {}
        self._pods: dict[str, ClusterEndpoint] | None = None
        self.log: list[str] = []
        self.timings = node_steps.Timings()  # seconds per step, what the phases report (node_steps)

    @property
    def wait_factor(self) -> int:
        """EMULATED_WAIT_FACTOR when a node's CPU is emulated, else 1."""
        return EMULATED_WAIT_FACTOR if any(n.cpu == "emulated" for n in self.inventory.nodes) else 1

    # -- paths and plans ------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> str:
        return str(self.workdir / "kubeconfig")

    def params(self) -> cni_mod.ClusterParams:
        d = distributions()[self.distribution]
        srv = self.inventory.server
        api_host = srv.address if self.name == "ssh" else f"{self.kind_name}-control-plane"
        return cni_mod.ClusterParams(self.distribution, api_host, d["api_port"], srv.address, self.kubeconfig,
                                     self.pod_cidr, self.service_cidr, cni_version=self.cni_version)

    def cni_plan(self) -> cni_mod.CniPlan:
        return cni_mod.render(self.distribution, self.cni, self.mode, self.params())

    def dist_plan(self) -> dist_mod.DistributionPlan:
        return dist_mod.render(self.distribution, self.inventory, self.cni_plan(), str(self.workdir), self.key_path,
                               self.pod_cidr, self.service_cidr, artifacts=self.artifacts)

    def kind_config(self) -> dict[str, Any]:
        return kind_mod.config(self.cni_plan(), self.kind_workers, self.pod_cidr, self.service_cidr,
                               kind_mod.node_image(offline=self.artifacts is not None))

    # -- running ------------------------------------------------------------------------------------
    def _fill(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._fill(v) for v in value]
        if not isinstance(value, str):
            return value
        value = value.replace("${WORKDIR}", str(self.workdir)).replace("${SSH_KEY}", self.key_path)

        def repl(m: re.Match) -> str:
            key = m.group(1)
            if key not in self.secrets:
                if key == "cluster_token" or key.startswith("join_token_"):
                    self.secrets[key] = self._token(32)
                else:
                    raise EdgebenchError(f"no value for <<{key}>> (an earlier step did not capture it)")
            return self.secrets[key]
        return re.sub(r"<<([a-z0-9_.-]+)>>", repl, value)

    def _nodes(self, where: str) -> list[Node]:
        if where == "all":
            return list(self.inventory.nodes)
        if where == "server":
            return [self.inventory.server]
        if where == "agents":
            return self.inventory.agents
        return [self.inventory.node(where)]

    def _step(self, step: dist_mod.Step, timed: bool = True) -> None:
        """One step, timed (unless its batch is); on several nodes at once (node_steps)."""
        cmd = self._fill(step.command)
        t0 = time.monotonic()
        try:
            if step.where == "local":
                out = self.local(cmd, check=step.check)
                self.log.append("local: " + (" ".join(cmd) if isinstance(cmd, list) else cmd))
                if step.capture:
                    self.secrets[step.capture] = out.strip()
                return
            nodes = self._nodes(step.where)
            results = node_steps.at_once(
                lambda node: self.transport.run(node, cmd, sudo=step.sudo, timeout=step.timeout), nodes)
            for node, result in zip(nodes, results):
                if isinstance(result, BaseException):
                    raise result
                rc, out, err = result
                if rc != 0 and step.check:
                    raise sh.CommandError([node.name, *(cmd if isinstance(cmd, list) else [cmd.splitlines()[0]])], rc,
                                          err or out)
                if step.capture:
                    key = step.capture if step.where not in ("all", "agents") else f"{step.capture}.{node.name}"
                    self.secrets[key] = out.strip()
        finally:
            if timed:
                self.timings.add(node_steps.label(step), step.where, time.monotonic() - t0)

    def _steps(self, steps: list[dist_mod.Step], keep_going: bool = False) -> None:
        """Steps in order, consecutive single-node steps on distinct nodes at once (node_steps.batches). With
        keep_going (teardown) a failed step is logged and the rest still run."""
        for batch in node_steps.batches(steps):
            t0 = time.monotonic()
            results = node_steps.at_once(lambda s: self._step(s, timed=len(batch) == 1), batch)
            if len(batch) > 1:  # one stage: the batch's wall time, its nodes
                self.timings.add(node_steps.label(batch[0]), ",".join(s.where for s in batch), time.monotonic() - t0)
            for result in results:
                if isinstance(result, BaseException):
                    if not keep_going or not isinstance(result, Exception):
                        raise result
                    self.log.append(f"teardown step failed: {result}")

    def _kubectl(self, *argv: str, check: bool = True, input: str | None = None) -> str:
        return self.local(["kubectl", "--kubeconfig", self.kubeconfig, *argv], input=input, check=check)

    # -- Provider protocol ------------------------------------------------------------------------------
    def provision(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.unavailable:
            self.log.append(f"not provisioned: {self.unavailable}")
            return
        if self.name == "ssh":  # unreachable node, refused key, missing artifact: SpecError, nothing installed
            lab = preflight.check(self.transport, self.inventory, self.distribution, self.cni, self.artifacts,
                                  self.cni_plan().version_requested)
            self._lab = lab
        if self.name == "kind" and self.artifacts is not None:  # offline: kind would try to pull the image
            kind_mod.check_node_image(self.local, kind_mod.node_image(offline=True))
        self.teardown()  # replace a leftover cluster of this cell (its state file goes with it)
        if self.name == "ssh":  # what the runs record of the lab: written after the teardown, which removes state
            self._write_state({"lab": lab})
        unsupported = self.cni_plan().unsupported
        if unsupported:  # install-cni records it on the runs; no cluster is built only to be removed again
            self.log.append(f"not provisioned: {unsupported}")
            return
        try:
            if self.name == "kind":
                cfg = self.workdir / "kind-config.yaml"
                cfg.write_text(yaml.safe_dump(self.kind_config(), sort_keys=False))
                self.local(kind_mod.create_argv(self.kind_name, str(cfg), self.kubeconfig))
                if self.artifacts is not None:  # the CNI's and the workloads' images, from the source into the nodes
                    kind_mod.load_images(self.local, self.kind_name, self.artifacts, self.cni,
                                         self.cni_plan().version_requested, self.inventory.server.arch, self.timings)
            else:
                plan = self.dist_plan()
                for name, text in plan.files.items():
                    (self.workdir / name).write_text(self._fill(text))
                self._steps(plan.install)
                self._step(plan.kubeconfig)
                kc = rewrite_kubeconfig(self.secrets.pop("kubeconfig"), self.inventory.server.address, plan.api_port)
                path = Path(self.kubeconfig)
                path.write_text(kc)
                os.chmod(path, 0o600)
            self._write_state({"provisioned": True})
        except BaseException:
            self.teardown()
            raise

    def lab_record(self) -> dict | None:
        """What the preflight recorded of the lab and the cell's nodes (their kind, arch, cpu, kernel), also when the
        cell then failed or was unsupported: the phases put it on every run of the cell (None: not probed)."""
        return dict(self._read_state().get("lab") or getattr(self, "_lab", None) or {}) or None

    def check_kernel(self, plan: cni_mod.CniPlan) -> None:
        """Unsupported if a node's kernel is older than the mode needs (from the preflight `uname -r`)."""
        need = plan.kernel.get("min")
        if not need or self.name == "kind":
            return
        for n in self.inventory.nodes:
            pre = self.secrets.get(f"preflight.{n.name}", "")
            release = pre.splitlines()[0] if pre else ""
            if release and _version_tuple(release) < _version_tuple(need):
                raise Unsupported(f"unsupported: {self.cni}:{self.mode} needs kernel >= {need}; node {n.name} "
                                  f"runs {release}")

    def install_cni(self, cm: Any = None) -> dict:
        if cm is not None and (cm.cni, cm.mode) != (self.cni, self.mode):
            raise EdgebenchError(f"this provider was built for {self.cni}:{self.mode}, not {cm.cni}:{cm.mode}")
        if self.unavailable:
            raise Unsupported(self.unavailable)
        plan = self.cni_plan()
        if plan.unsupported:  # a triggered version the distribution's own CNI cannot be changed to: nothing installed
            raise Unsupported(f"unsupported: {plan.unsupported}")
        if plan.via == "helm" and self.artifacts is not None:  # the mirror's chart repository, its images as imported
            plan = artifacts_mod.mirror_helm(plan, self.artifacts)
        self.check_kernel(plan)
        installed = None
        try:
            for name, text in plan.files.items():
                (self.workdir / name).write_text(self._fill(text))
            if plan.manifest_url and self.artifacts is not None:  # the mirror's copy, its images as imported
                upstream, art = self.artifacts.manifest("flannel" if self.cni == "host" else self.cni, self.fetch,
                                                        None if self.cni == "host" else plan.version_requested)
                text = apply_patches(upstream, self._fill_psk(mirror_images(plan.patches, self.artifacts)))
                plan.version = art["version"]
            elif plan.manifest_url:
                text = apply_patches(self.fetch(plan.manifest_url), self._fill_psk(plan.patches))
            if plan.manifest_url:
                (self.workdir / "cni-manifest.yaml").write_text(text)
            if self.name == "kind" and self.artifacts is not None:
                plan.node_commands = []  # the node image carries the mirror's CNI plugins (no download from GitHub)
            for script in plan.node_commands:
                self.timings.timed("CNI node commands", "all", lambda: self._on_nodes(script))
            for argv in plan.server_commands:
                if "/var/tmp/edgebench-cni-values.yaml" in argv:
                    self.transport.put_file(self.inventory.server, (self.workdir / "cni-values.yaml").read_text(),
                                            "/var/tmp/edgebench-cni-values.yaml", sudo=True)
                self._step(dist_mod.Step("server", argv))
            for argv in plan.commands:
                self.timings.timed(node_steps.argv_label(argv), "local", lambda: self.local(self._fill(argv)))
            for argv in plan.readiness:
                self.timings.timed(node_steps.argv_label(argv), "local",
                                   lambda: self.local(self._fill(scaled_waits(argv, self.wait_factor))))
            self.timings.timed("workload pods ready", "local", self._deploy_workloads)
            mtu = self.read_mtu(self.client())
            if plan.version_requested or (self.name == "ssh" and self.cni != "host"):
                installed = self.read_cni_version(plan)
        except Unsupported:
            raise
        except BaseException:
            self.teardown()
            raise
        state = {"cni": self.cni, "mode": self.mode, "cni_version": plan.version, "via": plan.via,
                 "distribution": self.distribution, "distribution_version": distributions()[self.distribution]["version"],
                 "mtu": mtu, "kube_proxy_replacement": plan.kube_proxy_replacement}
        if plan.version_requested:  # a triggered rerun: what the cluster reports, checked against what was asked
            state.update(cni_version=installed, cni_version_requested=plan.version_requested)
            problem = cni_mod.version_problem(plan, installed)
            if problem:  # the runs are kept but invalid (phases.install_cni), as a tuning readback mismatch is
                state["invalid_reason"] = problem
                self.log.append(problem)
        elif installed:  # what the running DaemonSet / release says
            state["cni_version"] = installed
        cluster = dict(self._read_state().get("lab") or {})
        if self.name == "kind":  # containers of this machine's kernel: never pooled with a lab's own nodes
            cluster.update(nodes=len(self.inventory.nodes), shared_kernel=True,
                           node_image=kind_mod.node_image(offline=self.artifacts is not None),
                           kernel_boot_id=kind_mod.boot_id(self.local, self.inventory.server.name))
        if self.artifacts is not None:
            pin = cni_installs()[self.cni]["version"] if self.cni != "host" else None
            cluster["artifact_source"] = self.artifacts.url
            state["distribution_version"] = self.artifacts.index["kubernetes_version"]
            if pin and state["cni_version"] != pin:
                cluster["cni_version_pinned"] = pin
        if cluster:
            state["cluster"] = cluster
        if plan.warning:
            state["warning"] = plan.warning
        self._write_state(state)
        return state

    def read_cni_version(self, plan: cni_mod.CniPlan) -> str | None:
        """The CNI version installed in the cluster (cni.version_readback: Helm release chart version or DaemonSet
        image tag); None where it cannot be read. Read-only; a failure to read is reported, not raised."""
        argv = cni_mod.version_readback(plan, self.params())
        if argv is None:
            return None
        try:
            out = self.local(self._fill(argv), check=False)
        except Exception as exc:  # e.g. a timeout: the version is unknown, which version_problem reports
            self.log.append(f"CNI version readback failed: {exc}")
            return None
        return cni_mod.parse_version_readback(plan, out)

    def _fill_psk(self, patches: list[dict]) -> list[dict]:
        if "psk" not in self.secrets:
            self.secrets["psk"] = secrets.token_hex(64)  # 128 hex chars: flannel IPsec wants >= 96
        return json.loads(json.dumps(patches).replace("${PSK}", self.secrets["psk"]))

    def _on_nodes(self, script: str) -> None:
        for n in self.inventory.nodes:
            s = script.replace("${ARCH}", n.arch)
            if self.name == "kind":
                self.local(kind_mod.node_exec(n.name, s))
            else:
                rc, out, err = self.transport.run(n, s, sudo=True)
                if rc != 0:
                    raise sh.CommandError([n.name, s], rc, err or out)

    # -- link conditions (ssh: every node's uplink, link.py) --------------------------------------------------
    def _netem_state(self) -> dict:
        return self._read_state().get("netem") or {}

    def apply_netem(self, scenario: Any) -> dict[str, Any]:
        if self.name != "ssh":
            return super().apply_netem(scenario)
        state = {"scenario": dataclasses.asdict(scenario), "applied": {}}

        def remember(applied: dict[str, str]) -> None:
            self._write_state({"netem": {**state, "applied": applied}})

        return link.apply(self.transport, self.inventory.nodes, scenario, remember)

    def netem_readback(self) -> str:
        applied = self._netem_state().get("applied") or {}
        return link.readback(self.transport, self.inventory.nodes, applied) if applied else ""

    def conditions_problem(self) -> str | None:
        st = self._netem_state()
        if not st.get("applied"):
            return None
        return link.problem(self.transport, self.inventory.nodes, st["applied"], st.get("scenario") or {})

    def _revert_netem(self) -> list[str]:
        """Take off the link condition the cell's state says is applied (ssh); what was removed."""
        applied = self._netem_state().get("applied") or {}
        if not applied or self.transport is None:
            return []
        removed = link.revert(self.transport, self.inventory.nodes, applied)
        self._write_state({"netem": {}})
        return removed

    def revert_conditions(self) -> None:
        self.log += self._revert_tuning()
        self.log += self._revert_netem()

    # -- node tuning (ssh: every node, node_tuning.py) ---------------------------------------------------------
    def apply_tuning(self, profile: str) -> dict[str, Any]:
        if self.name != "ssh":
            return super().apply_tuning(profile)
        return node_tuning.apply(self.transport, self.inventory.nodes, profile,
                                 lambda state: self._write_state({"tuning": state}))

    def _revert_tuning(self) -> list[str]:
        """Restore what the cell's state says a tuning profile changed (ssh); what was restored. A setting that does
        not read back as before is said in the provider's log."""
        state = self._read_state().get("tuning") or {}
        if not state.get("nodes") or self.transport is None:
            return []
        restored = node_tuning.revert(self.transport, self.inventory.nodes, state)
        self.log += [f"tuning not restored: {p}" for p in node_tuning.problem(self.transport, self.inventory.nodes,
                                                                               state)]
        self._write_state({"tuning": {}})
        return restored

    def teardown(self) -> list[str]:
        removed: list[str] = []
        if self.unavailable:  # nothing was installed for this cell
            return removed
        if self.name == "ssh":  # a run that died before its revert_conditions
            for what, revert in (("tuning", self._revert_tuning), ("link condition", self._revert_netem)):
                try:
                    removed += revert()
                except Exception as exc:  # an unreachable node must not stop the rest of the cleanup
                    self.log.append(f"{what} revert failed: {exc}")
        kc = Path(self.kubeconfig)
        if self.name == "kind":
            self.local(kind_mod.delete_argv(self.kind_name), check=False)
            removed.append(f"kind cluster {self.kind_name}")
        else:
            if kc.exists():
                try:
                    for argv in self.cni_plan().uninstall:
                        self.timings.timed("CNI uninstall", "local", lambda: self.local(self._fill(argv), check=False))
                except Exception as exc:  # an unreachable API must not stop the node cleanup
                    self.log.append(f"uninstall failed: {exc}")
            self._steps(self.dist_plan().teardown, keep_going=True)
            removed += [f"{self.distribution} on {n.name}" for n in self.inventory.nodes]
        for f in ("kubeconfig", "cni-manifest.yaml", "cni-values.yaml", "cluster.json"):
            p = self.workdir / f
            if p.exists():
                p.unlink()
                removed.append(str(p))
        self._pods = None
        return removed

    def _read_state(self) -> dict:
        p = self.workdir / "cluster.json"
        return json.loads(p.read_text()) if p.exists() else {}

    def _write_state(self, update: dict) -> None:
        p = self.workdir / "cluster.json"
        state = json.loads(p.read_text()) if p.exists() else {}
        state.update(update)
        p.write_text(json.dumps(state, indent=2, sort_keys=True))
