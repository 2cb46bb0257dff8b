"""Which distribution x CNI mode cells can exist (catalog/distributions.yaml + catalog/cni_installs.yaml)."""

from __future__ import annotations

from typing import Any

from edgebench.plan import catalog


def distributions() -> dict[str, Any]:
    return catalog.load("distributions.yaml")["distributions"]


def cni_installs() -> dict[str, Any]:
    return catalog.load("cni_installs.yaml")["cnis"]


def support(distribution: str, cni: str) -> dict[str, Any]:
    return cni_installs()[cni]["distributions"][distribution]


def compatibility(distribution: str, cni: str, mode: str, arches: set[str] | frozenset[str] = frozenset()) -> str | None:
    """None if `cni:mode` can run on `distribution` with nodes of `arches`, else why the cell is impossible
    (report it as skipped when the sweep is expanded, before anything is installed). Kernel features (WireGuard,
    IPsec, eBPF >= 5.10) depend on the nodes and are checked at install-cni (Unsupported)."""
    dists, installs = distributions(), cni_installs()
    if distribution not in dists:
        return f"unknown distribution {distribution!r} (known: {', '.join(dists)})"
    if cni not in installs:
        return f"unknown CNI {cni!r} (known: {', '.join(installs)})"
    info = installs[cni]
    if mode not in info["modes"]:
        return f"unknown mode {mode!r} of {cni} (modes: {', '.join(info['modes'])})"
    dist = dists[distribution]
    bad = sorted(set(arches) - set(dist.get("arch", [])))
    if bad:
        return f"{distribution} does not run on {', '.join(bad)}"
    bad = sorted(set(arches) - set(info.get("arch", [])))
    if bad:
        return f"{cni} publishes no images for {', '.join(bad)}"
    entry = info["distributions"].get(distribution)
    if entry is None:
        return f"{cni} has no install recipe for {distribution}"
    impossible = entry.get("impossible") or {}
    return impossible.get(mode) or impossible.get("*")


def matrix(arches: set[str] | frozenset[str] = frozenset()) -> dict[tuple[str, str, str], str | None]:
    """(distribution, cni, mode) -> None (possible) or the reason, for every combination in the catalogs."""
    out = {}
    for d in distributions():
        for cni, info in cni_installs().items():
            for mode in info["modes"]:
                out[(d, cni, mode)] = compatibility(d, cni, mode, arches)
    return out
