"""The substrate interface, declared once: what a cell's phases and the workloads may ask of a substrate.

A substrate builds a cell's cluster, installs a CNI mode, gives endpoints (where a workload process runs and the
address peers use) and optionally shapes the link and tunes the nodes. `local` (the network-namespace testbed,
local/provider.py: LocalProvider) and real clusters (`kind`, `ssh`: clusters.ClusterProvider) implement it side by side.
Every capability is a real method; one a substrate lacks raises Unsupported with the reason, which the phases
record on the cell's runs (never replaced by something else).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import Any, Protocol, Sequence

from edgebench.plan.catalog import CniMode
from edgebench.errors import EdgebenchError


class Unsupported(EdgebenchError):
    """The substrate cannot do this here (a datapath the kernel lacks, a capability not implemented); str() is
    the reason."""


class Endpoint(Protocol):
    """Where a workload process runs and the address peers use to reach it."""

    ip: str

    def cmd(self, argv: Sequence[str]) -> list[str]:
        """argv wrapped to run at the endpoint (ip netns exec, kubectl exec, ...)."""
        ...


PIN_ENV = "EDGEBENCH_PIN_CPUS"  # 0: never pin the client and server to CPUs of their own


class PinsEndpoints:
    """Pinning a workload's client and server tools to CPUs of their own (each substrate says which in `pinning`,
    local/endpoints.py and clusters/workload_pods.py); `pin` is the same on every substrate."""

    def pinning(self) -> dict[str, int] | None:
        """{"client_cpu", "server_cpu"}, or None where the tools are not pinned."""
        raise NotImplementedError

    def pin(self, ep, role: str):
        """The endpoint (a dataclass with a `cpu` field) with its tools pinned to the `role`'s CPU (client or server),
        where pinning() pins."""
        pin = self.pinning()
        return dataclasses.replace(ep, cpu=pin[f"{role}_cpu"]) if pin else ep


class Provider(ABC):
    name: str = ""

    # ---- the cell's cluster ----------------------------------------------------------------------------------
    @abstractmethod
    def provision(self) -> None:
        """Create the cell's cluster, replacing a leftover one."""

    @abstractmethod
    def install_cni(self, cm: CniMode) -> dict[str, Any]:
        """Install the CNI mode; {"mtu", "cni_version", "distribution_version"} read back, plus "invalid_reason"
        when what is in force is not what was asked (a triggered rerun's CNI version). Unsupported if the datapath
        cannot be built here."""

    @abstractmethod
    def teardown(self) -> list[str]:
        """Remove the cluster and everything the CNI left behind; idempotent. Returns what was removed."""

    # ---- one cluster for consecutive cells of the same build (the local runner) -------------------------------
    @classmethod
    def build_key(cls, cell: Any) -> tuple | None:
        """What provision + install-cni build for `cell`: consecutive cells with equal keys may share one cluster,
        reset between them (reset()). None: never shared."""
        return None

    def fingerprint(self) -> dict[str, str]:
        """What a cell's link conditions and services change in the built cluster (no counters), taken right after
        install-cni, for reset() to compare with."""
        return {}

    def reset(self, built: dict[str, str]) -> list[str]:
        """Instead of teardown, for the next cell of the same build: undo the cell's link condition, tuning and
        services, stop every process left in the cluster, forget cached traffic state, then check that the cluster
        reads as it did when built (`built` = fingerprint()) and every tuned setting as before the profile. Returns
        what differs: [] = ready for the next cell; anything else and the caller tears the cluster down."""
        return [f"{self.name} clusters are not reused between cells"]

    # ---- endpoints and services ------------------------------------------------------------------------------
    @abstractmethod
    def client(self, placement: str = "cross-node") -> Endpoint: ...

    @abstractmethod
    def server(self, placement: str) -> Endpoint: ...

    @abstractmethod
    def peers(self, placement: str) -> list[Endpoint]:
        """Endpoints for DDS subscribers (as many as the substrate has for the placement)."""

    @abstractmethod
    def read_mtu(self, ep: Endpoint) -> int: ...

    @abstractmethod
    def multicast_reason(self, placement: str) -> str | None:
        """Why multicast does not reach the placement's peers, or None if it does."""

    @abstractmethod
    def add_service(self, cluster_ip: str, port: int, backend: Endpoint) -> str | None:
        """A ClusterIP service to backend:port; returns the ClusterIP if the substrate chose it."""

    @abstractmethod
    def flush_services(self) -> None: ...

    # ---- inter-cluster tools: optional capabilities ----------------------------------------------------------
    def connect_clusters(self, tool: Any) -> dict[str, Any]:
        """Join the cell's two clusters with the tool (catalog.InterclusterTool); the manifest's
        `intercluster_detail` read back. Unsupported where the substrate or kernel cannot."""
        raise Unsupported(f"inter-cluster tool {tool.key} is not available on {self.name} substrates in this version "
                          "of edgebench")

    def export_service(self, port: int, backend: Any, path: str) -> str:
        """Export backend:port from cluster 1; the address a client in cluster 2 dials."""
        raise Unsupported(f"no inter-cluster tool is connected on {self.name}")

    def disconnect_clusters(self) -> None:
        """Undo connect_clusters; idempotent (a no-op when nothing is connected)."""

    # ---- conditions: optional capabilities -------------------------------------------------------------------
    def apply_tuning(self, profile: str) -> dict[str, Any]:
        """Apply a tuning profile; the manifest's `tuning` object (requested, readback, unsupported, mtu)."""
        raise Unsupported(f"tuning profile {profile!r} is not applied on {self.name} substrates by this version "
                          "of edgebench")

    def apply_netem(self, scenario: Any) -> dict[str, Any]:
        """Apply a link condition (netem.Scenario); the manifest's `netem` object."""
        raise Unsupported(f"link condition {scenario.name!r} is not applied on {self.name} substrates by this "
                          "version of edgebench")

    def netem_readback(self) -> str:
        """What the link shaping in force reads back as (tc qdisc show ...); empty if nothing is shaped."""
        return ""

    def conditions_problem(self) -> str | None:
        """Why the applied link condition is no longer in force, or None."""
        return None

    def revert_conditions(self) -> None:
        """Undo tuning and link conditions (before teardown)."""

    def workload_pids(self) -> dict[str, int]:
        """{name: pid} of the workload processes, for CPU/memory sampling."""
        raise Unsupported(f"resource sampling of workload processes is not available on {self.name} substrates")
