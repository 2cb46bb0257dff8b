"""ClusterProvider: the substrate interface (substrates/base.py) on a real cluster: `ssh` (k3s/k0s/MicroK8s/kubeadm on
the inventory's nodes) or `kind`. kubectl/helm/kind/k0sctl run on the runner against the cell's kubeconfig
(<workdir>/kubeconfig); node commands go through a Transport. Workloads run through `kubectl exec`, so the
drivers and parsers work unchanged.

Failure handling: a failed provision or CNI install tears everything down (distribution + CNI leftovers on
every node) before the error propagates; teardown() is idempotent and never raises for a missing cluster."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from edgebench import sh
from edgebench.errors import EdgebenchError
from edgebench.substrates.clusters.inventory import Inventory, Node
from edgebench.substrates.base import Provider, Unsupported
from edgebench.substrates.clusters import cni as cni_mod
from edgebench.substrates.clusters import distributions as dist_mod
from edgebench.substrates.clusters import kind as kind_mod
from edgebench.substrates.clusters import placement as pl
from edgebench.substrates.clusters import artifacts as artifacts_mod
from edgebench.substrates.clusters import preflight
from edgebench.substrates.clusters.resources import NodeSampler
from edgebench.substrates.clusters.artifacts import ENV_SOURCE, Source, mirror_images, open_source
from edgebench.substrates.clusters.matrix import cni_installs, compatibility, distributions
from edgebench.substrates.clusters.transport import Transport
from edgebench.plan.catalog import cnis
from edgebench.substrates.clusters import inventory as inv_mod
from edgebench.substrates.clusters.transport import SSHTransport

LocalRunner = Callable[..., str]  # (argv, input=None, check=True) -> stdout; raises sh.CommandError


def default_local(argv: Sequence[str], input: str | None = None, check: bool = True) -> str:
    return sh.run(argv, check=check, input=input, timeout=1800)


def default_fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 (pinned https URLs from the catalog)
        return r.read().decode()


@dataclass(frozen=True)
class ClusterEndpoint:
    """A workload pod: `.cmd(argv)` runs argv inside it with kubectl exec."""

    ns: str
    ip: str
    node: str
    pod: str
    kubeconfig: str

    def cmd(self, argv: Sequence[str]) -> list[str]:
        return ["kubectl", "--kubeconfig", self.kubeconfig, "exec", "-n", self.ns, self.pod, "--", *argv]


def rewrite_kubeconfig(text: str, host: str, port: int, name: str = "edgebench") -> str:
    """Point a fetched kubeconfig at the server address (k3s/kubeadm write 127.0.0.1 or an internal name)."""
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise EdgebenchError("the fetched kubeconfig has no clusters")
    h = f"[{host}]" if ":" in host else host
    for c in doc["clusters"]:
        c["cluster"]["server"] = f"https://{h}:{port}"
    return yaml.safe_dump(doc, sort_keys=False)


def _version_tuple(text: str) -> tuple[int, ...]:
    m = re.match(r"(\d+)\.(\d+)", text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


class ClusterProvider(Provider):
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
        if artifacts is not None and artifacts_mod.unavailable(cni):
            raise Unsupported(artifacts_mod.unavailable(cni))
        self.kind_workers = kind_workers
        self.secrets: dict[str, str] = {}
        self._pods: dict[str, ClusterEndpoint] | None = None
        self.log: list[str] = []

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
        return kind_mod.config(self.cni_plan(), self.kind_workers, self.pod_cidr, self.service_cidr)

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

    def _step(self, step: dist_mod.Step) -> None:
        cmd = self._fill(step.command)
        if step.where == "local":
            out = self.local(cmd, check=step.check)
            self.log.append("local: " + (" ".join(cmd) if isinstance(cmd, list) else cmd))
            if step.capture:
                self.secrets[step.capture] = out.strip()
            return
        for node in self._nodes(step.where):
            rc, out, err = self.transport.run(node, cmd, sudo=step.sudo, timeout=step.timeout)
            if rc != 0 and step.check:
                raise sh.CommandError([node.name, *(cmd if isinstance(cmd, list) else [cmd.splitlines()[0]])], rc,
                                      err or out)
            if step.capture:
                key = step.capture if step.where not in ("all", "agents") else f"{step.capture}.{node.name}"
                self.secrets[key] = out.strip()

    def _kubectl(self, *argv: str, check: bool = True, input: str | None = None) -> str:
        return self.local(["kubectl", "--kubeconfig", self.kubeconfig, *argv], input=input, check=check)

    # -- Provider protocol ------------------------------------------------------------------------------
    def provision(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.name == "ssh":  # unreachable node, refused key, missing artifact: SpecError, nothing installed
            lab = preflight.check(self.transport, self.inventory, self.distribution, self.cni, self.artifacts)
            self._write_state({"lab": lab})
        self.teardown()  # replace a leftover cluster of this cell
        unsupported = self.cni_plan().unsupported
        if unsupported:  # install-cni records it on the runs; no cluster is built only to be removed again
            self.log.append(f"not provisioned: {unsupported}")
            return
        try:
            if self.name == "kind":
                cfg = self.workdir / "kind-config.yaml"
                cfg.write_text(yaml.safe_dump(self.kind_config(), sort_keys=False))
                self.local(kind_mod.create_argv(self.kind_name, str(cfg), self.kubeconfig))
            else:
                plan = self.dist_plan()
                for name, text in plan.files.items():
                    (self.workdir / name).write_text(self._fill(text))
                for step in plan.install:
                    self._step(step)
                self._step(plan.kubeconfig)
                kc = rewrite_kubeconfig(self.secrets.pop("kubeconfig"), self.inventory.server.address, plan.api_port)
                path = Path(self.kubeconfig)
                path.write_text(kc)
                os.chmod(path, 0o600)
            self._write_state({"provisioned": True})
        except BaseException:
            self.teardown()
            raise

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
        plan = self.cni_plan()
        if plan.unsupported:  # a triggered version the distribution's own CNI cannot be changed to: nothing installed
            raise Unsupported(f"unsupported: {plan.unsupported}")
        self.check_kernel(plan)
        installed = None
        try:
            for name, text in plan.files.items():
                (self.workdir / name).write_text(self._fill(text))
            if plan.manifest_url and self.artifacts is not None:  # the mirror's copy, its images as imported
                upstream, art = self.artifacts.manifest("flannel" if self.cni == "host" else self.cni, self.fetch)
                text = cni_mod.apply_patches(upstream, self._fill_psk(mirror_images(plan.patches, self.artifacts)))
                plan.version = art["version"]
            elif plan.manifest_url:
                text = cni_mod.apply_patches(self.fetch(plan.manifest_url), self._fill_psk(plan.patches))
                (self.workdir / "cni-manifest.yaml").write_text(text)
            for script in plan.node_commands:
                self._on_nodes(script)
            for argv in plan.server_commands:
                if "/var/tmp/edgebench-cni-values.yaml" in argv:
                    self.transport.put_file(self.inventory.server, (self.workdir / "cni-values.yaml").read_text(),
                                            "/var/tmp/edgebench-cni-values.yaml", sudo=True)
                self._step(dist_mod.Step("server", argv))
            for argv in plan.commands:
                self.local(self._fill(argv))
            for argv in plan.readiness:
                self.local(self._fill(argv))
            self._deploy_workloads()
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

    def _deploy_workloads(self) -> None:
        docs = pl.workload_manifests(self.inventory, pl.PLACEMENTS, host_network=self.cni == "host")
        self._kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs, sort_keys=False))
        self._kubectl("wait", "-n", pl.NAMESPACE, "--for=condition=Ready", "pod", "-l", f"{pl.POD_LABEL}=true",
                      "--timeout=300s")
        self._pods = None

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
            self.local(ep.cmd(["pkill", "-x", "iperf3|ddsperf|fortio|hey"]), check=False)

    def resource_sampler(self, interval_s: float = 1.0, idle: list[dict] | None = None) -> NodeSampler:
        """CPU/RSS of the CNI agents, the workload tools and each node (substrates/clusters/resources.py)."""
        if self.name != "ssh" or not hasattr(self.transport, "ssh_argv"):
            raise Unsupported(f"resource sampling over SSH is not available on {self.name} with this transport")
        return NodeSampler(self.inventory, self.transport.ssh_argv, interval_s, idle)

    def teardown(self) -> list[str]:
        removed: list[str] = []
        kc = Path(self.kubeconfig)
        if self.name == "kind":
            self.local(kind_mod.delete_argv(self.kind_name), check=False)
            removed.append(f"kind cluster {self.kind_name}")
        else:
            if kc.exists():
                try:
                    for argv in self.cni_plan().uninstall:
                        self.local(self._fill(argv), check=False)
                except Exception as exc:  # an unreachable API must not stop the node cleanup
                    self.log.append(f"uninstall failed: {exc}")
            plan = self.dist_plan()
            for step in plan.teardown:
                try:
                    self._step(step)
                except Exception as exc:
                    self.log.append(f"teardown step failed: {exc}")
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


def from_cell(cell: Any, workdir: Path, *, inventory_path: str | None = None, ssh_key: str | None = None,
              known_hosts: str | None = None, cni_version: str | None = None, **kw: Any) -> Provider:
    """The provider of a cell (cells.Cell): what substrates.get() calls for substrates ssh and kind. A cell with an
    inter-cluster tool gets a multicluster.MultiCluster (two member clusters rebuilt from the same work dir in
    every phase); an inventory without a cluster 2 is a SpecError before anything connects. `cni_version`: the
    version a triggered rerun asks for (Sweep.cni_version_requested(cell.cni)); None installs the catalog pin."""
    if cni_version:
        kw["cni_version"] = cni_version

    tool = getattr(cell, "intercluster", "none")
    make: Callable[..., Provider] = ClusterProvider
    if tool != "none":
        from functools import partial

        from edgebench.substrates.clusters.multicluster import MultiCluster

        make = partial(MultiCluster, tool=tool)
    if cell.substrate == "kind":
        return make("kind", "kind", cell.cni, cell.cni_mode, workdir, cell_id=cell.cell_id, **kw)
    inv = inv_mod.load(inventory_path)
    if tool != "none":
        inv.require_two_clusters()
    key = inv_mod.ssh_key_path(ssh_key)
    transport = kw.pop("transport", None) or SSHTransport(key, inv_mod.known_hosts_path(known_hosts))
    if "artifacts" not in kw and os.environ.get(ENV_SOURCE):
        kw["artifacts"] = open_source(os.environ[ENV_SOURCE])
    return make("ssh", cell.distribution, cell.cni, cell.cni_mode, workdir, inventory=inv,
                transport=transport, key_path=str(key), cell_id=cell.cell_id, **kw)
