"""Substrates (providers): create and destroy a cell's cluster, install the CNI mode, give endpoints.

`local` is the network-namespace testbed. `kind` and `ssh` need a real container engine or real nodes; their
providers are not part of this version, and asking for them fails with a clear message before anything runs.
"""

from __future__ import annotations

from typing import Protocol

from .catalog import CniMode
from .errors import EdgebenchError
from .testbed import Endpoint, Testbed, Unsupported


class Provider(Protocol):
    name: str

    def provision(self) -> None: ...
    def install_cni(self, cm: CniMode) -> dict: ...
    def client(self) -> Endpoint: ...
    def server(self, placement: str) -> Endpoint: ...
    def read_mtu(self, ep: Endpoint) -> int: ...
    def peers(self, placement: str) -> list[Endpoint]: ...
    def multicast_reason(self, placement: str) -> str | None: ...
    def add_service(self, cluster_ip: str, port: int, backend: Endpoint) -> None: ...
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

    def client(self) -> Endpoint:
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


def get(substrate: str, testbed: Testbed | None = None) -> Provider:
    if substrate == "local":
        return LocalProvider(testbed)
    raise EdgebenchError(
        f"the {substrate!r} provider (real clusters: kind, or k3s/k0s/MicroK8s/kubeadm over SSH) is not available in "
        "this version of edgebench; run the sweep on the local testbed with `edgebench sweep FILE --local`"
    )


__all__ = ["Provider", "LocalProvider", "Unsupported", "get"]
