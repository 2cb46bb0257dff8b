"""Substrates (providers): create and destroy a cell's cluster, install the CNI mode, give endpoints.

`local` is the network-namespace testbed. `kind` (a kind cluster per cell, needs Docker) and `ssh` (k3s, k0s,
MicroK8s or kubeadm installed on an inventory of real nodes) are edgebench.clusters.ClusterProvider.
"""

from __future__ import annotations

from typing import Protocol

from pathlib import Path
from typing import Any

from .catalog import CniMode
from .testbed import Endpoint, Testbed, Unsupported


class Provider(Protocol):
    name: str

    def provision(self) -> None: ...
    def install_cni(self, cm: CniMode) -> dict: ...
    def client(self, placement: str = "cross-node") -> Endpoint: ...
    def server(self, placement: str) -> Endpoint: ...
    def read_mtu(self, ep: Endpoint) -> int: ...
    def peers(self, placement: str) -> list[Endpoint]: ...
    def multicast_reason(self, placement: str) -> str | None: ...
    def add_service(self, cluster_ip: str, port: int, backend: Endpoint) -> str | None: ...
    def flush_services(self) -> None: ...
    def teardown(self) -> list[str]: ...


class LocalProvider:
    """The embedded default: real kernel datapaths in network namespaces on this machine."""

    name = "local"

    def __init__(self, testbed: Testbed | None = None):
        self.testbed = testbed or Testbed()

    def provision(self) -> None:
        self.testbed.provision()

    def install_cni(self, cm: CniMode) -> dict:
        return self.testbed.install_cni(cm)

    def client(self, placement: str = "cross-node") -> Endpoint:
        return self.testbed.client()

    def server(self, placement: str) -> Endpoint:
        return self.testbed.server(placement)

    def read_mtu(self, ep: Endpoint) -> int:
        return self.testbed.read_mtu(ep)

    def peers(self, placement: str) -> list[Endpoint]:
        return self.testbed.peers(placement)

    def multicast_reason(self, placement: str) -> str | None:
        return self.testbed.multicast_reason(placement)

    def add_service(self, cluster_ip: str, port: int, backend: Endpoint) -> None:
        self.testbed.add_service(cluster_ip, port, backend)

    def flush_services(self) -> None:
        self.testbed.flush_services()

    def teardown(self) -> list[str]:
        return self.testbed.down()


def get(substrate: str, testbed: Testbed | None = None, *, cell: Any = None, workdir: Path | None = None,
        inventory: str | None = None, ssh_key: str | None = None, known_hosts: str | None = None) -> Provider:
    """The provider of a cell. ssh/kind need the cell and its work dir (the kubeconfig lives there); ssh also the
    node inventory and the SSH key (defaults: $EDGEBENCH_INVENTORY / $EDGEBENCH_SSH_KEY or the Argo mounts)."""
    if substrate == "local":
        return LocalProvider(testbed)
    from . import clusters

    return clusters.from_cell(cell, workdir, inventory_path=inventory, ssh_key=ssh_key, known_hosts=known_hosts)


__all__ = ["Provider", "LocalProvider", "Unsupported", "get"]
