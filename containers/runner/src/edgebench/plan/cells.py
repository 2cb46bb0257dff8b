"""Matrix expansion: a sweep -> cells (one installed environment each) -> runs (one tool invocation each).

Cell, Run and the cell dimensions are in plan/dimensions.py; the workloads' runs in plan/workload_plans.py. Ids are
hashes of the parameters, so the same cell or run always gets the same id and the same object keys.
"""

from __future__ import annotations

import json
from typing import Any

from edgebench.errors import SpecError
from edgebench.plan.dimensions import Cell, Run, cell_fields, cells
from edgebench.plan.matrix import compatibility
from edgebench.plan.selection import selected
from edgebench.plan.spec import Sweep, from_parameters
from edgebench.plan.workload_plans import PLANS

__all__ = ["Cell", "Run", "by_id", "cell_item", "cell_json", "expand", "expand_checked", "from_json", "runs_for"]


def cell_json(sweep: Sweep, cell: Cell) -> dict[str, Any]:
    """A cell as the Argo DAG passes it to every phase: its identity plus the sweep parameters it runs with."""
    return {**cell.to_json(), "parameters": {k: v for k, v in sweep.raw.items() if k != "cnis"}}


def cell_item(cell: Cell) -> dict[str, str]:
    """A cell as the Argo DAG fans out over it: its id and its progress label, nothing else. Argo names every
    fanned-out node after its item (`cell-local(0:cell:c-e07f14ed83,label:flannel:vxlan)`); each cell step finds
    the cell's definition by id (by_id) in the sweep its parameters give."""
    return {"cell": cell.cell_id, "label": cell.label}


def by_id(sweep: Sweep, cell_id: str) -> Cell:
    """The sweep's cell with this id (every cell of expand(), skipped ones included); SpecError if none."""
    for c in expand(sweep):
        if c.cell_id == cell_id:
            return c
    raise SpecError(f"sweep {sweep.sweep_id} has no cell {cell_id!r} (`edgebench cells` lists its cells)")


def from_json(doc: dict[str, Any] | str) -> tuple[Sweep, Cell]:
    """Inverse of cell_json(); re-validates everything and checks the cell id."""
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except json.JSONDecodeError as exc:
            raise SpecError(f"--cell must be the JSON of a cell (from `edgebench cells`): {exc.msg}") from None
    if not isinstance(doc, dict) or not {"cni", "cni_mode", "sweep_id", "parameters"} <= set(doc):
        raise SpecError("--cell must be a cell object from `edgebench cells` (cni, cni_mode, sweep_id, parameters)")
    wanted = Cell(doc["sweep_id"], "", "", doc["cni"], doc["cni_mode"], **cell_fields(doc))
    sweep = from_parameters({**doc["parameters"], **wanted.parameters(), "sweep-id": doc["sweep_id"]}, source="cell")
    cell = expand(sweep)[0]
    if doc.get("cell_id") and doc["cell_id"] != cell.cell_id:
        raise SpecError(f"cell id {doc['cell_id']} does not match its parameters (expected {cell.cell_id})")
    return sweep, cell


def expand(sweep: Sweep) -> list[Cell]:
    v = sweep.values
    return cells(sweep.sweep_id, v["substrate"], "none" if v["substrate"] == "local" else v["distribution"], v)


def expand_checked(sweep: Sweep, arches: frozenset[str] | None = None, inventory: Any = None
                   ) -> tuple[list[Cell], list[tuple[Cell, str]]]:
    """expand(), minus the cells that cannot exist on the sweep's distribution (and node architectures), which are
    returned with the reason so they can be reported as skipped before anything is installed (so is a cell none of
    whose runs the sweep's `select` keeps: it would be installed for nothing). On real clusters an
    inter-cluster tool that is not run over the cell's CNI mode (catalog `cnis`) skips the cell too, and an ssh
    `inventory` (clusters.inventory.Inventory, when known) without a cluster 2 is a SpecError if any cell needs two."""
    ok, skipped = [], []
    chosen = sweep.values.get("select") or []
    for c in expand(sweep):
        reason = None
        if chosen and not runs_for(sweep, c):
            reason = "none of its runs is selected (select)"
        elif c.intercluster != "none" and c.cni_info.host_network:
            reason = (f"{c.intercluster} joins the pod networks of two clusters; the host-network baseline has none "
                      "(inter-cluster cells need a pod-network CNI)")
        elif sweep.values["substrate"] != "local":
            reason = (compatibility(c.distribution, c.cni, c.cni_mode, arches or frozenset())
                      or c.intercluster_info.unsupported_cni(c.cni, c.cni_mode, c.distribution))
        (skipped.append((c, reason)) if reason else ok.append(c))
    if inventory is not None and sweep.values["substrate"] == "ssh" and any(c.intercluster != "none" for c in ok):
        inventory.require_two_clusters()
    return ok, skipped


def runs_for(sweep: Sweep, cell: Cell) -> list[Run]:
    """The runs of one cell, repetitions outermost so that slow drift spreads over all variants; each workload
    expands its own variants (plan/workload_plans.py); with `select`, only the runs it selects (plan/selection.py)."""
    v = sweep.values
    chosen = v.get("select") or []
    return [run for rep in range(1, v["repetitions"] + 1) for tool, variant in v["workloads"]
            for run in PLANS[tool].expand(v, cell, rep, variant) if selected(run, chosen)]
