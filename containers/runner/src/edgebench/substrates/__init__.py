"""Substrates: where a cell's cluster is built. The interface (base.py: Provider, Endpoint, Unsupported), the
local network-namespace testbed (local/) and real clusters, kind or k3s/k0s/MicroK8s/kubeadm over SSH
(clusters/), side by side. get() gives a cell its provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.substrates.base import Provider
from edgebench.substrates.local.provider import LocalProvider
from edgebench.substrates import clusters


def build_key(cell: Any) -> tuple | None:
    """What the cell's substrate builds for it (Provider.build_key): consecutive cells with equal keys may share a
    cluster. None: not shared (kind and ssh clusters are provisioned per cell)."""
    if cell.substrate == "local":
        return LocalProvider.build_key(cell)
    return None


def get(substrate: str, testbed: Any = None, *, cell: Any = None, workdir: Path | None = None,
        inventory: str | None = None, ssh_key: str | None = None, known_hosts: str | None = None,
        cni_version: str | None = None) -> Provider:
    """The provider of a cell. ssh/kind need the cell and its work dir (the kubeconfig lives there); ssh also the
    node inventory and the SSH key (defaults: $EDGEBENCH_INVENTORY / $EDGEBENCH_SSH_KEY or the Argo mounts).
    cni_version: the version a triggered rerun asks for (Sweep.cni_version_requested(cell.cni)): ssh/kind install
    it instead of the catalog pin; the local testbed runs no CNI software (its manifests carry the request only)."""
    if substrate == "local":
        return LocalProvider(testbed, cell)

    return clusters.from_cell(cell, workdir, inventory_path=inventory, ssh_key=ssh_key, known_hosts=known_hosts,
                              cni_version=cni_version)
