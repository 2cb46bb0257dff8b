"""The workload protocol: what one workload (iperf3, dds, http, ...) gives the rest of edgebench.

A workload module defines one `Workload` subclass instance named WORKLOAD, its one declaration: its plan (an instance
from plan/workload_plans.py, which the spec parser and cells.py read: name, order, variants, parameters, runs,
label words), the drivers it measures with, the tool formats `edgebench parse` / `import` read for it (workloads.TOOLS
collects them), and the names of its warehouse model, mart and portal page (tests check that those files exist).
workloads/__init__.py finds the modules; phases.py takes the `run-<name>` phase from them, the CLI its progress lines
and tool checks, the manifest its tool versions. A workload reads the cell through CellContext (a Protocol:
sweep/phases.py's context is one). See docs/workloads.md "Adding a workload".
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from edgebench.drivers.protocol import Record, ToolFormat
from edgebench.plan.dimensions import Cell, Run
from edgebench.plan.params import Param
from edgebench.plan.workload_plans import WorkloadPlan
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
    """A workload's declaration: its plan (order, variants, parameters, the runs of a cell, the words of a run's
    label; its name is the plan's), how a run is measured, the tool formats it imports, its tables and page."""

    plan: WorkloadPlan  # its entry of plan/workload_plans.py
    tools: tuple[str, ...] = ()  # executables a local run needs (checked before anything starts)
    # the local testbed pins this workload's client and server to CPUs of their own (substrates/local/endpoints.py)
    pin_cpus: bool = False
    # a duet round may measure its members' runs of one variant in one window (measure_together; sweep/duet.py)
    measures_together: bool = False
    staging_model: str = ""  # dbt model that reads its raw files (analytics/models/staging/<name>.sql)
    mart: str = ""  # dbt mart the portal and CLI read (analytics/models/marts/<name>.sql + .yml)
    page: str = ""  # portal page (app/app_pages/<name>.py), also its URL path
    page_title: str = ""
    page_icon: str = ":material/monitoring:"
    # the tool outputs `edgebench parse` and `edgebench import` read as this workload's runs (drivers' FORMAT(S))
    formats: tuple[ToolFormat, ...] = ()
    import_labels: tuple[str, ...] = ()  # labels an import needs: what the warehouse compares on, unless stated
    import_params: tuple[str, ...] = ()  # labels an import keeps as the run's params

    @property
    def name(self) -> str:
        return self.plan.name

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

    def measure_together(self, members: Sequence[tuple[CellContext, Run]]) -> dict[str, Measurement] | str:
        """The runs of one variant on several duet members (sweep/duet.py), measured in one time window: {run id:
        Measurement}; or why they cannot be (the duet then measures them one after another)."""
        return f"{self.name} measures one run at a time"

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

    def stated(self, text: str, record: Record) -> dict[str, Any]:
        """The run fields (protocol, path, length_bytes, ...) an imported output states itself."""
        return {"protocol": "tcp"}

    def imported_params(self, params: dict[str, Any], stated: dict[str, Any],
                        metrics: dict[str, Any]) -> dict[str, Any]:
        """An imported run's params, from those its labels give (import_params)."""
        return params


def endpoints(ctx: CellContext, run: Run, port: int, pin: bool = False):
    """Client, server and the address the client dials: the server's pod IP, or a ClusterIP (DNAT) for
    pod-to-service; in an inter-cluster cell the address the tool gives a cluster-2 client for the exported
    service (or, over a layer-3 tool, the pod IP)."""
    client, server = ctx.provider.client(run.placement), ctx.provider.server(run.placement)
    if pin and hasattr(ctx.provider, "pin"):  # client and server on CPUs of their own (testbed and clusters)
        client, server = ctx.provider.pin(client, "client"), ctx.provider.pin(server, "server")
    ctx.provider.flush_services()
    if run.cell.intercluster != "none":  # the server's service exported from cluster 1, dialled from cluster 2
        return client, server, ctx.provider.export_service(port, server, run.path)
    if run.path == "pod-to-service":  # clusters choose the ClusterIP themselves and return it
        return client, server, ctx.provider.add_service(SERVICE_IP, port, server) or SERVICE_IP
    return client, server, server.ip
