"""The catalog: CNIs and their modes, workload grids. Code reads these data files; it does not hard-code CNI facts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from edgebench.errors import SpecError


@lru_cache(maxsize=None)
def _load(name: str) -> dict[str, Any]:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return yaml.safe_load(text)


def load(name: str) -> dict[str, Any]:
    """A catalog file by name (e.g. "distributions.yaml"), parsed once: for the modules that own its meaning."""
    return _load(name)


def cnis() -> dict[str, Any]:
    return _load("cnis.yaml")["cnis"]


def workloads() -> dict[str, Any]:
    return _load("workloads.yaml")


def sources() -> dict[str, str]:
    return _load("sources.yaml")


@dataclass(frozen=True)
class CniMode:
    """One CNI in one mode, with what the local testbed needs to build its datapath."""

    cni: str
    mode: str
    datapath: str
    encapsulation: str
    udp_port: int | None
    mtu: int
    multicast: str
    encryption: str
    version: str | None
    local: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.cni}:{self.mode}"

    @property
    def is_host(self) -> bool:
        """The host-network baseline every CNI mode is compared against."""
        return self.cni == "host"

    @property
    def host_network(self) -> bool:
        """Pods use their node's network (the baseline, and the baseline inside a container): no pod network, no
        CNI software, no version."""
        return self.local.get("attach") == "host"

    @property
    def runtime(self) -> str | None:
        """The container runtime the testbed starts the tools in (None: plain processes)."""
        return self.local.get("runtime")


def resolve_cni(entry: str) -> CniMode:
    """`name` or `name:mode` -> CniMode; an unknown CNI or mode raises SpecError naming the choices."""
    name, _, mode = entry.partition(":")
    name, mode = name.strip(), mode.strip()
    table = cnis()
    if name not in table:
        raise SpecError(f"unknown CNI {name!r} in {entry!r}; known CNIs: {', '.join(sorted(table))}")
    info = table[name]
    mode = mode or info["default_mode"]
    if mode not in info["modes"]:
        raise SpecError(
            f"unknown mode {mode!r} for CNI {name!r}; modes of {name}: {', '.join(info['modes'])}"
        )
    m = info["modes"][mode]
    return CniMode(
        cni=name,
        mode=mode,
        datapath=m["datapath"],
        encapsulation=str(m["encapsulation"]),
        udp_port=m.get("udp_port"),
        mtu=int(m["mtu"]),
        multicast=str(m["multicast"]),
        encryption=str(m["encryption"]),
        version=(_load("cni_installs.yaml")["cnis"].get(name) or {}).get("version"),
        local=dict(m.get("local") or {}),
    )


def leaves_out(entry: str) -> list[str]:
    """What the testbed does not build of a real cluster running this CNI mode (cnis.yaml `testbed_leaves_out`:
    every mode's, the CNI's, the mode's); [] for the host baseline, which runs no CNI."""
    cm = resolve_cni(entry)
    if cm.host_network:
        return []
    info = cnis()[cm.cni]
    return [*_load("cnis.yaml").get("testbed_leaves_out", []), *(info.get("testbed_leaves_out") or []),
            *(info["modes"][cm.mode].get("testbed_leaves_out") or [])]


def disagreement(workload: str, config: str) -> dict[str, str] | None:
    """The traced cause of a testbed / real-lab disagreement on this comparison (cnis.yaml
    `testbed_disagreements`: workload, config pattern, cause, explanation), or None when none is known."""
    for entry in _load("cnis.yaml").get("testbed_disagreements") or []:
        if entry["workload"] == workload and re.search(entry["config"], config):
            return entry
    return None


def shortfall(workload: str, metric: str) -> dict[str, str] | None:
    """Why the testbed's answer on this metric misses a bar of the comparison with a real lab where its verdicts
    agree (cnis.yaml `testbed_shortfalls`: workload, metric, bar, cause, explanation), or None when none is known."""
    for entry in _load("cnis.yaml").get("testbed_shortfalls") or []:
        if entry["workload"] == workload and entry["metric"] == metric:
            return entry
    return None


def rows() -> list[dict[str, Any]]:
    """The catalog flattened to one row per CNI mode (for `edgebench catalog`)."""
    out = []
    for name, info in cnis().items():
        for mode in info["modes"]:
            cm = resolve_cni(f"{name}:{mode}")
            m = info["modes"][mode]
            out.append(
                {
                    "cni": name,
                    "mode": mode,
                    "default": mode == info["default_mode"],
                    "version": cm.version,
                    "datapath": cm.datapath,
                    "encapsulation": cm.encapsulation,
                    "udp_port": cm.udp_port,
                    "mtu": cm.mtu,
                    "multicast": cm.multicast,
                    "encryption": cm.encryption,
                    "arch": info.get("arch", []),
                    "archived": bool(info.get("archived", False)),
                    "local_testbed": cm.local.get("unsupported") and f"unsupported: {cm.local['unsupported']}"
                    or " + ".join(str(cm.local[k]) for k in ("attach", "transport", "forward") if cm.local.get(k)),
                    "notes": m.get("notes", ""),
                    "sources": info.get("sources", []) + [
                        t for t in (_load("cni_installs.yaml")["cnis"].get(name) or {}).get("sources", [])
                        if t not in info.get("sources", [])],
                }
            )
    return out


def intercluster_tools() -> dict[str, Any]:
    return _load("intercluster.yaml")["tools"]


@dataclass(frozen=True)
class InterclusterTool:
    """One inter-cluster tool in one mode (catalog/intercluster.yaml); `none` is the one-cluster baseline."""

    tool: str
    mode: str
    version: str | None
    layer: int
    encryption: str
    protocols: tuple[str, ...]
    local: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)  # the mode's catalog entry as written

    @property
    def key(self) -> str:
        return "none" if self.is_none else f"{self.tool}:{self.mode}"

    @property
    def is_none(self) -> bool:
        return self.tool == "none"

    @property
    def implementation(self) -> str:
        """baseline, kernel (the tool's data path as kernel state) or emulated (a model of its data plane)."""
        return str(self.local.get("implementation", "baseline"))

    def unsupported_distribution(self, distribution: str) -> str | None:
        """Why the tool does not run on the distribution, or None."""
        table = intercluster_tools()[self.tool].get("distributions")
        if table is None or distribution == "none":
            return None
        if distribution not in table:
            return f"{self.tool} is not known to run on {distribution} (supported: {', '.join(sorted(table))})"
        return table[distribution]

    def unsupported_cni(self, cni: str, mode: str, distribution: str | None = None) -> str | None:
        """Why the tool is not run over the CNI mode (on the distribution) on real clusters, or None. Catalog `cnis`:
        a reason for every mode of the CNI, or per mode a reason or distribution -> reason. The local testbed does
        not ask: it builds the tool's data path over any pod network."""
        if self.is_none:
            return None
        entry = (intercluster_tools()[self.tool].get("cnis") or {}).get(cni)
        reason = entry.get(mode) if isinstance(entry, dict) else entry
        if isinstance(reason, dict):
            reason = reason.get(distribution) if distribution else None
            return f"{self.tool} over {cni}:{mode} on {distribution}: {reason}" if reason else None
        return f"{self.tool} over {cni}:{mode}: {reason}" if reason else None


def resolve_intercluster(entry: str) -> InterclusterTool:
    """`tool` or `tool:mode` (or `none`) -> InterclusterTool; unknown names raise SpecError naming the choices."""
    name, _, mode = str(entry).partition(":")
    name, mode = name.strip(), mode.strip()
    table = intercluster_tools()
    if name not in table:
        raise SpecError(f"unknown inter-cluster tool {name!r} in {entry!r}; known tools: {', '.join(table)}")
    info = table[name]
    mode = mode or info["default_mode"]
    if mode not in info["modes"]:
        what = "cable driver" if name == "submariner" else "mode"
        raise SpecError(f"unknown {what} {mode!r} for {name}; choices: {', '.join(info['modes'])}")
    m = info["modes"][mode]
    return InterclusterTool(tool=name, mode=mode, version=info.get("version"), layer=int(m["layer"]),
                            encryption=str(m["encryption"]), protocols=tuple(m["protocols"]),
                            local=dict(m.get("local") or {}), info=dict(m))


# ---- service proxies (service_proxies.yaml) ----------------------------------------------------------------------
SERVICE_PROXY_ENTRIES = ("default", "iptables", "nftables", "ipvs", "none")  # the `service-proxy` parameter's values


def service_proxies() -> dict[str, Any]:
    """{"modes": {mode: {...}}, "distributions": {distribution: {"default": mode, ...}}}."""
    return _load("service_proxies.yaml")


def replaces_kube_proxy(cni: str, mode: str, distribution: str | None = None) -> bool:
    """Whether the CNI mode replaces kube-proxy with its own service load balancer (cni_installs.yaml
    kube_proxy_replacement; MicroK8s keeps kube-proxy whatever the CNI, as substrates/clusters/install/cni.py
    renders it)."""
    info = _load("cni_installs.yaml")["cnis"].get(cni) or {}
    minfo = (info.get("modes") or {}).get(mode) or {}
    if distribution == "microk8s":
        return False
    return bool(minfo.get("kube_proxy_replacement", info.get("kube_proxy_replacement", False)))


def service_proxy_mode(substrate: str, distribution: str, cni: str, mode: str, entry: str = "default") -> str | None:
    """The service proxy a cell runs (service_proxies.yaml modes): on the local testbed the `service-proxy` entry it
    builds (`default` = dnat, edgebench's plain DNAT rule); on clusters what the distribution and CNI mode run
    (`none` where the mode replaces kube-proxy, else the distribution's default kube-proxy mode; None if unknown)."""
    if substrate == "local":
        return "dnat" if entry == "default" else entry
    if entry != "default":
        return entry
    if replaces_kube_proxy(cni, mode, distribution):
        return "none"
    return (service_proxies()["distributions"].get(distribution) or {}).get("default")
