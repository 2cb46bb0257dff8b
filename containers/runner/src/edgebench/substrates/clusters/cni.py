"""Render a CNI mode's install for one cluster: Helm values or manifest patches, the exact helm/kubectl
commands, the readiness waits, the uninstall, and the distribution settings the mode needs (flannel backend,
k0s network provider, kube-proxy off, ...). Nothing here runs anything."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from edgebench.substrates.clusters.matrix import cni_installs, compatibility, distributions, support


@dataclass(frozen=True)
class ClusterParams:
    """What a CNI install needs to know about the cluster."""

    distribution: str
    api_host: str
    api_port: int
    server_address: str
    kubeconfig: str
    pod_cidr: str | None = None
    service_cidr: str | None = None
    psk: str = "${PSK}"  # filled from a random secret at run time; kept symbolic in rendered files

    def resolved(self) -> "ClusterParams":
        d = distributions()[self.distribution]
        return ClusterParams(self.distribution, self.api_host, self.api_port, self.server_address, self.kubeconfig,
                             self.pod_cidr or d["pod_cidr"], self.service_cidr or d["service_cidr"], self.psk)


@dataclass
class CniPlan:
    cni: str
    mode: str
    distribution: str
    via: str  # builtin | helm | manifest | addon | none
    version: str | None
    dist_settings: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # work-dir file name -> content
    manifest_url: str | None = None
    patches: list[dict[str, Any]] = field(default_factory=list)
    commands: list[list[str]] = field(default_factory=list)  # runner-side, in order
    node_commands: list[str] = field(default_factory=list)  # shell snippets run on every node first (as root)
    server_commands: list[list[str]] = field(default_factory=list)  # run on the server node (MicroK8s addons)
    readiness: list[list[str]] = field(default_factory=list)
    uninstall: list[list[str]] = field(default_factory=list)
    kube_proxy_replacement: bool = False
    kernel: dict[str, Any] = field(default_factory=dict)
    leftovers: dict[str, Any] = field(default_factory=dict)
    warning: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def _subst(value: Any, env: dict[str, str]) -> Any:
    if isinstance(value, str):
        for k, v in env.items():
            value = value.replace("${" + k + "}", v)
        return value
    if isinstance(value, list):
        return [_subst(v, env) for v in value]
    if isinstance(value, dict):
        return {k: _subst(v, env) for k, v in value.items()}
    return value


def _merge(base: Any, over: Any) -> Any:
    """Deep merge; lists of mappings merge item by item (Calico's ipPools[0])."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base[k], v) if k in base else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(over, list) and all(isinstance(x, dict) for x in base + over):
        return [_merge(base[i], over[i]) if i < len(over) else base[i] for i in range(len(base))] + \
            copy.deepcopy(over[len(base):])
    return copy.deepcopy(over)


def _pod_gateway(cidr: str) -> str:
    import ipaddress
    return str(ipaddress.ip_network(cidr).network_address + 1)


def kubectl(p: ClusterParams, *argv: str) -> list[str]:
    return ["kubectl", "--kubeconfig", p.kubeconfig, *argv]


def helm(p: ClusterParams, *argv: str) -> list[str]:
    return ["helm", "--kubeconfig", p.kubeconfig, *argv]


def _effective_via(cni: str, mode: str, distribution: str) -> str:
    entry = support(distribution, cni)
    via = entry["via"]
    fallback = entry.get("helm_fallback") or {}
    if mode in fallback:
        return fallback[mode]
    if via == "builtin" and cni != "host":
        builtin = distributions()[distribution].get("builtin_cnis", {}).get(cni, {})
        if mode not in builtin:
            return cni_installs()[cni]["method"]
    return via


def dist_settings(distribution: str, cni: str, mode: str, via: str, kpr: bool) -> dict[str, Any]:
    """What the distribution installer must set for this CNI mode."""
    d = distributions()[distribution]
    builtin = d.get("builtin_cnis", {}).get(cni, {})
    s: dict[str, Any] = {"kube_proxy": not kpr}
    if distribution == "k3s":
        if cni == "host":
            s["flannel_backend"] = "vxlan"
        elif via == "builtin":
            s["flannel_backend"] = builtin[mode]
        else:
            s["flannel_backend"] = "none"
            s["disable_network_policy"] = True
    elif distribution == "k0s":
        if cni == "host":
            s["provider"] = "kuberouter"
        elif via == "builtin":
            s["provider"] = builtin[mode]
            if cni == "calico":
                s["calico"] = dict(support("k0s", "calico")["builtin_modes"][mode])
            if cni == "kube-router":
                extra = cni_installs()["kube-router"]["modes"][mode].get("k0s_extra_args")
                s["kuberouter"] = {"autoMTU": True, **({"extraArgs": extra} if extra else {})}
        else:
            s["provider"] = "custom"
    elif distribution == "microk8s":
        s["kube_proxy"] = True  # MicroK8s keeps kube-proxy; Cilium's addon runs alongside it
        s["disable_ha_cluster"] = cni == "flannel"
    elif distribution == "kubeadm":
        s["skip_kube_proxy"] = kpr
    elif distribution == "kind":
        s["disable_default_cni"] = cni != "host"
        s["kube_proxy_mode"] = "none" if kpr else "iptables"
    return s


def render(distribution: str, cni: str, mode: str, params: ClusterParams) -> CniPlan:
    """The install plan of `cni:mode` on `distribution`. Raises ValueError for an impossible cell."""
    reason = compatibility(distribution, cni, mode)
    if reason:
        raise ValueError(f"{distribution} x {cni}:{mode} is impossible: {reason}")
    p = params.resolved()
    info = cni_installs()[cni]
    minfo = info["modes"][mode] or {}
    via = _effective_via(cni, mode, distribution)
    if cni == "host" and distribution == "kubeadm":  # nodes need some CNI to become Ready
        inner = render("kubeadm", "flannel", "vxlan", params)
        inner.cni, inner.mode, inner.via, inner.version = "host", "host", "manifest", None
        inner.warning = "host baseline: flannel vxlan only makes the nodes Ready; workload pods use hostNetwork"
        return inner
    kpr = bool(minfo.get("kube_proxy_replacement", info.get("kube_proxy_replacement", False)))
    if via in ("builtin",) or distribution == "microk8s":
        kpr = False if distribution == "microk8s" else kpr
    env = {"POD_CIDR": p.pod_cidr, "SERVICE_CIDR": p.service_cidr, "API_HOST": p.api_host,
           "API_PORT": str(p.api_port), "SERVER_ADDRESS": p.server_address, "POD_GATEWAY": _pod_gateway(p.pod_cidr),
           "PSK": p.psk}
    plan = CniPlan(cni, mode, distribution, via, info.get("version"), warning=info.get("warning"),
                   kernel=dict(info.get("kernel") or {}, **(minfo.get("kernel") or {})),
                   leftovers=info.get("leftovers", {}), kube_proxy_replacement=kpr)
    plan.dist_settings = dist_settings(distribution, cni, mode, via, kpr)
    entry = support(distribution, cni)
    if via == "builtin":
        if distribution == "microk8s" and cni == "calico" and mode == "wireguard":
            plan.commands = [kubectl(p, *c) for c in minfo.get("post", [])]
        plan.readiness = [kubectl(p, "wait", "--for=condition=Ready", "nodes", "--all", "--timeout=600s")]
        return plan
    if via == "addon":
        plan.server_commands = [c.split() for c in entry["addon"]]
        if cni == "cilium":
            values = _subst(minfo.get("values", {}), env)
            plan.files["cni-values.yaml"] = yaml.safe_dump(values, sort_keys=True)
            plan.server_commands.append(["microk8s", "helm3", "upgrade", "cilium", "cilium/cilium", "-n", "kube-system",
                                         "--reuse-values", "-f", "/var/tmp/edgebench-cni-values.yaml", "--wait"])
        plan.readiness = [kubectl(p, *c) for c in info["readiness"]]
        plan.readiness.append(kubectl(p, "wait", "--for=condition=Ready", "nodes", "--all", "--timeout=600s"))
        return plan
    if via == "helm":
        h = info["helm"]
        values = _merge(_subst(info.get("common_values", {}), env), _subst(minfo.get("values", {}), env))
        if cni == "cilium" and not kpr:
            values["kubeProxyReplacement"] = False
        plan.files["cni-values.yaml"] = yaml.safe_dump(values, sort_keys=True)
        ns = h["namespace"]
        version = info["version"]
        plan.commands = [helm(p, "repo", "add", h["repo"], h["url"], "--force-update"),
                         helm(p, "repo", "update", h["repo"])]
        if cni == "kube-ovn":
            plan.commands.append(kubectl(p, "label", "node", "--overwrite", "-l",
                                         "node-role.kubernetes.io/control-plane", info["master_label"]))
        if cni == "calico" and minfo.get("services_endpoint"):
            se = minfo["services_endpoint"]
            plan.commands.append(kubectl(p, "create", "namespace", se["namespace"]))
            plan.files["services-endpoint.yaml"] = yaml.safe_dump(services_endpoint(p, se["namespace"], se["name"]),
                                                                  sort_keys=True)
            plan.commands.append(kubectl(p, "apply", "-f", "${WORKDIR}/services-endpoint.yaml"))
        install = helm(p, "upgrade", "--install", h["release"], h["chart"], "--version", version, "--namespace", ns,
                       "-f", "${WORKDIR}/cni-values.yaml", "--wait", "--timeout", "10m")
        if ns != "kube-system" and not (cni == "calico" and minfo.get("services_endpoint")):
            install.append("--create-namespace")
        plan.commands.append(install)
        plan.commands += [kubectl(p, *c) for c in minfo.get("post", [])]
        plan.uninstall = [helm(p, *c[1:]) if c[0] == "helm" else kubectl(p, *c) for c in info["uninstall"]]
    elif via == "manifest":
        plan.manifest_url = info["manifest"]
        plan.patches = manifest_patches(cni, mode, p, env)
        if cni == "flannel":
            plan.commands.append(kubectl(p, "create", "namespace", "kube-flannel"))
            plan.commands.append(kubectl(p, "label", "--overwrite", "namespace", "kube-flannel",
                                         "pod-security.kubernetes.io/enforce=privileged"))
        plan.commands.append(kubectl(p, "apply", "-f", "${WORKDIR}/cni-manifest.yaml"))
        plan.uninstall = [kubectl(p, *_subst(c, {"MANIFEST": "${WORKDIR}/cni-manifest.yaml"}))
                          for c in info["uninstall"]]
    if distribution == "kind" and entry.get("prerequisite") == "cni-plugins":
        url = distributions()["kind"]["cni_plugins"]
        plan.node_commands.append(f"curl -fsSL {url.replace('<arch>', '${ARCH}')} | tar -xz -C /opt/cni/bin "
                                  "./bridge ./portmap ./host-local ./loopback")
    plan.readiness = [kubectl(p, *c) for c in info["readiness"]]
    plan.readiness.append(kubectl(p, "wait", "--for=condition=Ready", "nodes", "--all", "--timeout=600s"))
    return plan


def services_endpoint(p: ClusterParams, namespace: str, name: str) -> dict[str, Any]:
    """Calico eBPF: where calico-node reaches the API server without kube-proxy (cal-ebpf)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"KUBERNETES_SERVICE_HOST": p.api_host, "KUBERNETES_SERVICE_PORT": str(p.api_port)}}


def manifest_patches(cni: str, mode: str, p: ClusterParams, env: dict[str, str]) -> list[dict[str, Any]]:
    info = cni_installs()[cni]
    m = info["modes"][mode]
    if cni == "flannel":
        net_conf = {"Network": p.pod_cidr, "EnableNFTables": False, "Backend": _subst(m["backend"], env)}
        return [{"op": "configmap", "namespace": "kube-flannel", "name": info["net_conf"]["configmap"],
                 "key": info["net_conf"]["key"], "value": json.dumps(net_conf, indent=2, sort_keys=True) + "\n"}]
    if cni == "kube-router":
        return [{"op": "image", "kind": "DaemonSet", "name": "kube-router", "container": "kube-router",
                 "image": info["image"]},
                {"op": "args", "kind": "DaemonSet", "name": "kube-router", "container": "kube-router",
                 "set": dict(m["args"])}]
    if cni == "weave":
        return [{"op": "env", "kind": "DaemonSet", "name": "weave-net", "container": "weave",
                 "env": _subst(dict(m["env"]), env)}]
    return []


def apply_patches(text: str, patches: list[dict[str, Any]]) -> str:
    """Apply manifest patches to a multi-document YAML manifest; every patch must hit something."""
    docs = [d for d in yaml.safe_load_all(text) if d]
    for patch in patches:
        hit = False
        for doc in docs:
            for obj in (doc.get("items") or [doc]) if doc.get("kind", "").endswith("List") else [doc]:
                md = obj.get("metadata") or {}
                if patch["op"] == "configmap":
                    if obj.get("kind") == "ConfigMap" and md.get("name") == patch["name"]:
                        obj.setdefault("data", {})[patch["key"]] = patch["value"]
                        hit = True
                    continue
                if obj.get("kind") != patch["kind"] or md.get("name") != patch["name"]:
                    continue
                for c in obj["spec"]["template"]["spec"].get("containers", []):
                    if c.get("name") != patch["container"]:
                        continue
                    hit = True
                    if patch["op"] == "image":
                        c["image"] = patch["image"]
                    elif patch["op"] == "env":
                        envs = [e for e in c.get("env", []) if e.get("name") not in patch["env"]]
                        c["env"] = envs + [{"name": k, "value": str(v)} for k, v in patch["env"].items()]
                    elif patch["op"] == "args":
                        keep = [a for a in c.get("args", []) if a.split("=", 1)[0] not in patch["set"]]
                        c["args"] = keep + [f"{k}={v}" for k, v in patch["set"].items()]
        if not hit:
            raise ValueError(f"manifest patch {patch['op']} {patch.get('kind', 'ConfigMap')}/{patch['name']} "
                             "matched nothing (upstream manifest changed?)")
    return yaml.safe_dump_all(docs, sort_keys=False)
