"""The workload registry: every module of this package that defines WORKLOAD (a base.Workload, the workload's one
declaration), found by discovery, in the order of their plan's `order` (the order of the run-* phases), and the
tool registry built from them: every tool format a workload declares, which `edgebench parse` and `edgebench
import` read. Adding a workload = its plan in plan/workload_plans.py and a module here, plus its staging SQL, its
mart SQL + yml and its portal page; see docs/workloads.md "Adding a workload". A plan without a module, a module
without a plan, or a tool format two workloads declare fails at import."""

from __future__ import annotations

import importlib
import pkgutil

from edgebench.drivers.protocol import ToolFormat
from edgebench.errors import SpecError
from edgebench.plan.params import Param
from edgebench.plan.workload_plans import PLANS
from edgebench.workloads.base import Measurement, Workload, endpoints


def _discover() -> dict[str, Workload]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        workload = getattr(module, "WORKLOAD", None)
        if isinstance(workload, Workload):
            found.append(workload)
    names = {w.name for w in found}
    unplanned = sorted(w.name for w in found if PLANS.get(w.name) is not w.plan)
    if names != set(PLANS) or unplanned:
        raise RuntimeError(f"workloads without a plan in plan/workload_plans.py: {unplanned}; "
                           f"plans without a workload module here: {sorted(set(PLANS) - names)}")
    return {w.name: w for w in sorted(found, key=lambda w: (w.order, w.name))}


REGISTRY: dict[str, Workload] = _discover()


def _tools() -> tuple[dict[str, ToolFormat], dict[str, Workload]]:
    formats: dict[str, ToolFormat] = {}
    owners: dict[str, Workload] = {}
    for w in REGISTRY.values():
        for f in w.formats:
            if f.tool in formats:
                raise RuntimeError(f"tool format {f.tool!r} is declared by two workloads: "
                                   f"{owners[f.tool].name} and {w.name}")
            formats[f.tool], owners[f.tool] = f, w
    return formats, owners


# tool -> its output format, in registry order: the one tool registry (`edgebench parse`, `edgebench import`)
TOOLS, _OWNERS = _tools()


def get(name: str) -> Workload:
    if name not in REGISTRY:
        raise SpecError(f"unknown workload {name!r}; known workloads: {', '.join(REGISTRY)}")
    return REGISTRY[name]


def tool_format(tool: str) -> ToolFormat:
    if tool not in TOOLS:
        raise SpecError(f"unknown tool {tool!r}; known: {', '.join(TOOLS)}")
    return TOOLS[tool]


def for_tool(tool: str) -> Workload:
    """The workload whose warehouse tables a tool's outputs feed."""
    tool_format(tool)
    return _OWNERS[tool]


def params() -> list[Param]:
    """Every workload's parameters, in registry order."""
    return [p for w in REGISTRY.values() for p in w.params]


__all__ = ["Measurement", "REGISTRY", "TOOLS", "Workload", "endpoints", "for_tool", "get", "params", "tool_format"]
