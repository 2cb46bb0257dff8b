"""The workload protocol: what one workload (iperf3, dds, http, ...) gives the rest of edgebench.

A workload module defines one `Workload` subclass instance named WORKLOAD; workloads/__init__.py finds the
modules. Its plan (order, variants, parameters, runs, label words) is its entry in plan/workload_plans.py, which the
spec parser and cells.py read; from the Workload phases.py takes the `run-<name>` phase, the CLI its progress lines
and tool checks, the manifest its tool versions, and the warehouse/portal the model and page names (tests check that
those files exist). A workload reads the cell through CellContext (a Protocol: sweep/phases.py's context is one).
See the README's "Adding a workload".
"""

from __future__ import annotations

from typing import Any, Protocol

from edgebench.plan.dimensions import Cell, Run
from edgebench.plan.params import Param
from edgebench.plan.workload_plans import PLANS, WorkloadPlan
from edgebench.substrates.base import Provider


class CellContext(Protocol):
    """What a workload reads of the cell it measures in (sweep/phases.py's CellContext is one): the substrate's
    provider, whose endpoints the runs use."""

    provider: Provider

# (raw files, metrics or None, error or None, params to record instead of the run's own or None). An error that
# starts with "unsupported:" records the run as unsupported, any other as failed.
Measurement = tuple[dict[str, bytes], "dict[str, Any] | None", "str | None", "dict[str, Any] | None"]

SERVICE_IP = "10.96.0.10"  # the ClusterIP the local testbed gives pod-to-service runs


class Workload:
    """The measuring side of a workload. Its plan (order, variants, parameters, the runs of a cell, the words of a
    run's label) is plan/workload_plans.py's entry of the same name."""

    name: str = ""
    tools: tuple[str, ...] = ()  # executables a local run needs (checked before anything starts)
    # the local testbed pins this workload's client and server to CPUs of their own (substrates/local/endpoints.py)
    pin_cpus: bool = False
    staging_model: str = ""  # dbt model that reads its raw files (analytics/models/staging/<name>.sql)
    mart: str = ""  # dbt mart the portal and CLI read (analytics/models/marts/<name>.sql + .yml)
    page: str = ""  # portal page (app/app_pages/<name>.py), also its URL path
    page_title: str = ""
    page_icon: str = ":material/monitoring:"

    @property
    def plan(self) -> WorkloadPlan:
        return PLANS[self.name]

    @property
    def order(self) -> int:
        """Position among the run-* phases (lower runs first)."""
        return self.plan.order

    @property
    def variants(self) -> tuple[str, ...]:
        """`workloads` entries are name or name:variant."""
        return self.plan.variants

    @property
    def params(self) -> tuple[Param, ...]:
        """Its sweep parameters (declared in its plan)."""
        return self.plan.params

    def expand(self, values: dict[str, Any], cell: Cell, repetition: int, variant: str) -> list[Run]:
        """The runs of one variant in one repetition of a cell; `values` are the parsed sweep parameters."""
        return self.plan.expand(values, cell, repetition, variant)

    def measure(self, ctx: CellContext, run: Run) -> Measurement:
        """Measure one run through the cell's endpoints (ctx.provider)."""
        raise NotImplementedError

    def versions(self) -> dict[str, str]:
        """{tool: version} of the tools that produce this workload's numbers, for the run's manifest."""
        return {}

    def headline(self, metrics: dict[str, Any]) -> str:
        """The one figure a progress line shows for an ok run."""
        return ""

    def judged(self, metrics: dict[str, Any]) -> tuple[str, float, bool] | None:
        """The figure an ok run is judged on against its baseline while a sweep runs (repetitions=auto):
        (metric family, value, higher is better); None when the workload has none."""
        return None

    def describe(self, run: Run) -> str:
        """Extra words for the run's progress label (after the variant)."""
        return self.plan.describe(run)


def endpoints(ctx: CellContext, run: Run, port: int, pin: bool = False):
    """Client, server and the address the client dials: the server's pod IP, or a ClusterIP (DNAT) for
    pod-to-service; in an inter-cluster cell the address the tool gives a cluster-2 client for the exported
    service (or, over a layer-3 tool, the pod IP)."""
    client, server = ctx.provider.client(run.placement), ctx.provider.server(run.placement)
    if pin and hasattr(ctx.provider, "pin"):  # the local testbed: client and server on CPUs of their own
        client, server = ctx.provider.pin(client, "client"), ctx.provider.pin(server, "server")
    ctx.provider.flush_services()
    if run.cell.intercluster != "none":  # the server's service exported from cluster 1, dialled from cluster 2
        return client, server, ctx.provider.export_service(port, server, run.path)
    if run.path == "pod-to-service":  # clusters choose the ClusterIP themselves and return it
        return client, server, ctx.provider.add_service(SERVICE_IP, port, server) or SERVICE_IP
    return client, server, server.ip
