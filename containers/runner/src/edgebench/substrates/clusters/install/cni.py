"""Render a CNI mode's install for one cluster: Helm values or manifest patches, the exact helm/kubectl
commands, the readiness waits, the uninstall, and the distribution settings the mode needs (flannel backend,
k0s network provider, kube-proxy off, ...). Nothing here runs anything."""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from edgebench.plan.matrix import cni_installs, compatibility, distributions, support
from edgebench.plan import versions
from edgebench.substrates.clusters.install.cni_manifests import manifest_patches, services_endpoint, substitute


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
    cni_version: str | None = None  # the version a triggered rerun asks for (its trigger's `new`); None = the pin

    def resolved(self) -> "ClusterParams":
        d = distributions()[self.distribution]
        return dataclasses.replace(self, pod_cidr=self.pod_cidr or d["pod_cidr"],
                                   service_cidr=self.service_cidr or d["service_cidr"])


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
    # a triggered rerun only (left out of to_json() otherwise, so plain renderings stay as they were):
    version_requested: str | None = None  # the version asked for (spelled as the pin is: see spelled_like)
    unsupported: str | None = None  # why that version cannot be installed here (install-cni raises Unsupported)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()
                if k not in ("version_requested", "unsupported") or v is not None}


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
        s["disable_default_cni"] = cni != "host" and via != "builtin"  # kindnet: the node image's own
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
        inner = render("kubeadm", "flannel", "vxlan", dataclasses.replace(params, cni_version=None))
        inner.cni, inner.mode, inner.via, inner.version = "host", "host", "manifest", None
        inner.warning = "host baseline: flannel vxlan only makes the nodes Ready; workload pods use hostNetwork"
        return inner
    requested = spelled_like(info.get("version"), p.cni_version) if p.cni_version and cni != "host" else None
    unsupported = None
    if requested:  # a triggered rerun: the requested version instead of the pin, where edgebench installs the CNI
        unsupported = pinned_reason(distribution, cni, mode, via, requested) or unversioned_reason(cni, info, requested)
        if unsupported is None:
            info = at_version(info, requested)
    kpr = bool(minfo.get("kube_proxy_replacement", info.get("kube_proxy_replacement", False)))
    if via in ("builtin",) or distribution == "microk8s":
        kpr = False if distribution == "microk8s" else kpr
    env = {"POD_CIDR": p.pod_cidr, "SERVICE_CIDR": p.service_cidr, "API_HOST": p.api_host,
           "API_PORT": str(p.api_port), "SERVER_ADDRESS": p.server_address, "POD_GATEWAY": _pod_gateway(p.pod_cidr),
           "PSK": p.psk}
    plan = CniPlan(cni, mode, distribution, via, info.get("version"), warning=info.get("warning"),
                   kernel=dict(info.get("kernel") or {}, **(minfo.get("kernel") or {})),
                   leftovers=info.get("leftovers", {}), kube_proxy_replacement=kpr)
    plan.version_requested, plan.unsupported = requested, unsupported
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
            values = substitute(minfo.get("values", {}), env)
            plan.files["cni-values.yaml"] = yaml.safe_dump(values, sort_keys=True)
            # --version: without it the upgrade moves cilium to the newest chart in the repository the addon added,
            # while the plan (and every manifest) reports the pin
            plan.server_commands.append(["microk8s", "helm3", "upgrade", "cilium", "cilium/cilium", "-n", "kube-system",
                                         "--version", str(plan.version), "--reuse-values",
                                         "-f", "/var/tmp/edgebench-cni-values.yaml", "--wait"])
        plan.readiness = [kubectl(p, *c) for c in info["readiness"]]
        plan.readiness.append(kubectl(p, "wait", "--for=condition=Ready", "nodes", "--all", "--timeout=600s"))
        return plan
    if via == "helm":
        h = info["helm"]
        values = _merge(substitute(info.get("common_values", {}), env), substitute(minfo.get("values", {}), env))
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
        plan.patches = manifest_patches(cni, mode, p, env, info)
        if cni == "flannel":
            plan.commands.append(kubectl(p, "create", "namespace", "kube-flannel"))
            plan.commands.append(kubectl(p, "label", "--overwrite", "namespace", "kube-flannel",
                                         "pod-security.kubernetes.io/enforce=privileged"))
        plan.commands.append(kubectl(p, "apply", "-f", "${WORKDIR}/cni-manifest.yaml"))
        plan.uninstall = [kubectl(p, *substitute(c, {"MANIFEST": "${WORKDIR}/cni-manifest.yaml"}))
                          for c in info["uninstall"]]
    if distribution == "kind" and entry.get("prerequisite") == "cni-plugins":
        url = distributions()["kind"]["cni_plugins"]
        plan.node_commands.append(f"curl -fsSL {url.replace('<arch>', '${ARCH}')} | tar -xz -C /opt/cni/bin "
                                  "./bridge ./portmap ./host-local ./loopback")
    plan.readiness = [kubectl(p, *c) for c in info["readiness"]]
    plan.readiness.append(kubectl(p, "wait", "--for=condition=Ready", "nodes", "--all", "--timeout=600s"))
    return plan


# ---------------------------------------------------------------------------------------------- requested versions
# A triggered rerun (sweep parameter `trigger`, for this cell's CNI) installs trigger.new instead of the catalog pin:
# Helm `--version`, and the release manifest URL and image where the catalog spells the pin (they name it
# literally, e.g. .../releases/download/v0.28.9/kube-flannel.yml). Where the distribution itself provides the CNI
# (k3s's flannel, k0s's calico/kube-router, MicroK8s's calico/flannel and its addons), the version is the
# distribution's and edgebench cannot change it: those cells are unsupported with the reason. The catalog's
# per-distribution entry decides which install a cell gets: a mode it already installs separately there
# (helm_fallback, e.g. k3s flannel:ipsec, k0s calico:ebpf; a mode outside the distribution's builtin_cnis) is
# installed at the new version; a mode it runs on the built-in CNI is NOT swapped for a separate install, because
# the pinned runs of that cell measured the distribution's own CNI (its configuration, its install path), and the
# rerun would then change two things at once and not be comparable with them.
VERSIONED_KEYS = ("manifest", "image")  # catalog strings that spell the pin: release manifest URL, image reference


def spelled_like(pin: str | None, version: str) -> str:
    """`version` with a leading `v` exactly where the pin has one (v0.28.9, 1.18.0): release URLs and image tags
    spell the version as upstream tags it, and a CI may send 3.31.8 for the tag v3.31.8 (Helm accepts either)."""
    version = version.strip()
    bare = version[1:] if version[:1] in ("v", "V") else version
    return f"v{bare}" if (pin or "").startswith("v") else bare


def pinned_reason(distribution: str, cni: str, mode: str, via: str, version: str) -> str | None:
    """Why `cni:mode` cannot be installed at `version` on `distribution` (its built-in CNI or addon), or None."""
    d = distributions()[distribution]
    if via == "builtin":
        return (f"{cni} is built into {distribution} {d['version']}; its version follows the distribution's, so "
                f"{cni}:{mode} cannot be installed at {version} there")
    if via == "addon":
        addon = " && ".join(support(distribution, cni).get("addon") or []) or "its addon"
        return (f"{cni} on {distribution} is installed by the distribution's addon ({addon}); its version follows "
                f"the distribution's ({distribution} {d['version']}), so {cni}:{mode} cannot be installed at "
                f"{version} there")
    return None


def unversioned_reason(cni: str, info: dict[str, Any], version: str) -> str | None:
    """Why the catalog entry cannot be pointed at `version` (a versioned string that does not spell the pin)."""
    pin = str(info.get("version"))
    bad = [k for k in VERSIONED_KEYS if isinstance(info.get(k), str) and pin not in info[k]]
    if bad:
        return (f"the catalog's {' and '.join(bad)} of {cni} do not name its pin {pin}, so edgebench cannot point "
                f"them at {version}")
    return None


def at_version(info: dict[str, Any], version: str) -> dict[str, Any]:
    """The catalog entry of a CNI at `version` instead of its pin: `version`, and the pin replaced in the release
    manifest URL and the image (kube-router's manifest is patched to the catalog image)."""
    pin = str(info["version"])
    out = dict(info, version=version)
    for key in VERSIONED_KEYS:
        if isinstance(info.get(key), str):
            out[key] = info[key].replace(pin, version)
    return out


def version_readback(plan: CniPlan, p: ClusterParams) -> list[str] | None:
    """The command that reads the installed CNI version back from the cluster: the Helm release (its chart version)
    or, for a release manifest, the CNI's DaemonSet (the image tag of the container named by the catalog's
    `version_readback`); None where the distribution installs the CNI (its version is the distribution's)."""
    info = cni_installs()[plan.cni]
    if plan.via == "helm":
        h = info["helm"]
        return helm(p, "list", "--namespace", h["namespace"], "--filter", f"^{h['release']}$", "--output", "json")
    if plan.via == "manifest" and info.get("version_readback"):
        return kubectl(p, "get", "daemonset", "-n", info["namespace"], info["version_readback"]["daemonset"],
                       "-o", "json")
    return None


def readback_source(plan: CniPlan) -> str:
    """Where version_readback() reads (for reasons)."""
    info = cni_installs()[plan.cni]
    if plan.via == "helm":
        return f"Helm release {info['helm']['release']} in {info['helm']['namespace']}"
    rb = info.get("version_readback") or {}
    return f"DaemonSet {info.get('namespace')}/{rb.get('daemonset')} container {rb.get('container')}"


def parse_version_readback(plan: CniPlan, text: str) -> str | None:
    """The installed version in version_readback()'s output: the chart version of the release (`helm list -o json`:
    chart "tigera-operator-v3.31.7" -> v3.31.7) or the container's image tag; None if it holds none."""
    info = cni_installs()[plan.cni]
    try:
        doc = json.loads(text or "null")
    except ValueError:
        return None
    if plan.via == "helm":
        h = info["helm"]
        prefix = h["chart"].split("/")[-1] + "-"
        for rel in doc if isinstance(doc, list) else []:
            chart = str(rel.get("chart") or "") if isinstance(rel, dict) else ""
            if chart.startswith(prefix) and len(chart) > len(prefix) and rel.get("name") == h["release"]:
                return chart[len(prefix):]
        return None
    rb = info.get("version_readback") or {}
    pod = {}
    if isinstance(doc, dict):
        pod = ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
    for c in pod.get("containers") or []:
        if isinstance(c, dict) and c.get("name") == rb.get("container"):
            _, sep, tag = str(c.get("image") or "").split("@", 1)[0].rpartition(":")
            return tag if sep and tag and "/" not in tag else None
    return None


def version_problem(plan: CniPlan, installed: str | None) -> str | None:
    """Why the installed version (read back) is not the requested one, or None if it is (v-prefix and build
    metadata aside: 2.8.1 is v2.8.1)."""

    requested = plan.version_requested
    if requested is None:
        return None
    where = readback_source(plan)
    if installed is None:
        return (f"CNI version not in force: {plan.cni} {requested} was requested, but the installed version could "
                f"not be read back ({where})")
    if not versions.is_version(installed) or versions.parse_version(installed) != versions.parse_version(requested):
        return f"CNI version not in force: {plan.cni} {requested} was requested, {installed} is installed ({where})"
    return None
