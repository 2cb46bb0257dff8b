"""from_cell: the provider of a cell on a real cluster (substrates ssh and kind): a ClusterProvider, or for a cell
with an inter-cluster tool a MultiCluster (two member clusters). The ssh substrate's inventory, key and transport,
and the air-gapped artifact source ($EDGEBENCH_ARTIFACT_SOURCE, else the inventory's `artifact_source`), are resolved
here."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any, Callable

from edgebench.substrates.base import Provider
from edgebench.substrates.clusters import inventory as inv_mod
from edgebench.substrates.clusters.install.artifacts import ENV_SOURCE, open_source
from edgebench.substrates.clusters.intercluster.multicluster import MultiCluster
from edgebench.substrates.clusters.provider import ClusterProvider
from edgebench.substrates.clusters.transport import SSHTransport


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
        make = partial(MultiCluster, tool=tool)
    if cell.substrate == "kind":
        mirror = os.environ.get(ENV_SOURCE)  # offline: the node image built here, images loaded from the source
        if "artifacts" not in kw and mirror:
            kw["artifacts"] = open_source(mirror)
        return make("kind", "kind", cell.cni, cell.cni_mode, workdir, cell_id=cell.cell_id, **kw)
    inv = inv_mod.load(inventory_path)
    if tool != "none":
        inv.require_two_clusters()
    key = inv_mod.ssh_key_path(ssh_key)
    transport = kw.pop("transport", None) or SSHTransport(key, inv_mod.known_hosts_path(known_hosts))
    mirror = os.environ.get(ENV_SOURCE) or inv.artifact_source  # --artifact-source sets the env; else the lab's own
    if "artifacts" not in kw and mirror:
        kw["artifacts"] = open_source(mirror)
    return make("ssh", cell.distribution, cell.cni, cell.cni_mode, workdir, inventory=inv,
                transport=transport, key_path=str(key), cell_id=cell.cell_id, **kw)
