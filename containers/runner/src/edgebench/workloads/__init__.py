"""The workload registry: every module of this package that defines WORKLOAD (a base.Workload), found by
discovery, in the order of their plan's `order` (the order of the run-* phases). Adding a workload = its plan in
plan/workload_plans.py and a module here, plus its staging SQL, its mart SQL + yml and its portal page; see the
README's "Adding a workload". A plan without a module, or a module without a plan, fails at import."""

from __future__ import annotations

import importlib
import pkgutil

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
    if names != set(PLANS):
        raise RuntimeError(f"workloads without a plan in plan/workload_plans.py: {sorted(names - set(PLANS))}; "
                           f"plans without a workload module here: {sorted(set(PLANS) - names)}")
    return {w.name: w for w in sorted(found, key=lambda w: (w.order, w.name))}


REGISTRY: dict[str, Workload] = _discover()


def get(name: str) -> Workload:
    if name not in REGISTRY:
        raise SpecError(f"unknown workload {name!r}; known workloads: {', '.join(REGISTRY)}")
    return REGISTRY[name]


def params() -> list[Param]:
    """Every workload's parameters, in registry order."""
    return [p for w in REGISTRY.values() for p in w.params]


__all__ = ["Measurement", "REGISTRY", "Workload", "endpoints", "get", "params"]
