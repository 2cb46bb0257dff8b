"""Selecting part of a sweep's grid (`-p select=[...]`): only the runs that match one of a list of conditions.

A condition is a JSON object {field: value or [values]}; a run matches it when each field's value is one of the
values given (compared as text, case-insensitively: 64 and "64", true and "true" are one value). A field is a
column the warehouse's marts name the same way: the cell's (cni, cni_mode, datapath, is_host_baseline, substrate,
distribution, tuning_profile, netem_scenario, intercluster, intercluster_tool, intercluster_mode, is_baseline,
service_proxy, cpu_class), the run's (workload, protocol, path, placement, length_bytes, duration_s) or one of its
workload's run parameters (dds_mode for DDS's mode, reliability, transport, subscribers, security, service, ...).
A run that does not hold a field (the DDS reliability of an iperf3 run) does not match a condition naming it.

`edgebench papers run` sets it from the claims a preset measures (sweep/papers_run.py): each claim's sides under
its filters, so that a preset measures only what the claims compare. The run and cell ids are the full grid's
(a run's id never depends on what else is selected), so a selection can grow or shrink under one sweep id and no
stored run is measured twice. [] selects every run. Pure: no side effect.
"""
from __future__ import annotations

import json
from typing import Any

from edgebench.errors import SpecError
from edgebench.plan import catalog
from edgebench.plan.params import short

# the cell's and the run's own fields (run_fields)
CELL_FIELDS = ("substrate", "distribution", "cni", "cni_mode", "datapath", "is_host_baseline", "tuning_profile",
               "netem_scenario", "intercluster", "intercluster_tool", "intercluster_mode", "is_baseline",
               "service_proxy", "cpu_class")
RUN_FIELDS = ("workload", "protocol", "path", "placement", "length_bytes", "duration_s")
# the workloads' run parameters (plan/workload_plans.py: Run.params; tests check the list holds every one), and the
# names the marts give some of them
RUN_PARAMS = ("mode", "reliability", "transport", "subscribers", "security", "rate", "batching", "ping_timeout_ms",
              "service", "requests", "connections", "bitrate", "probe", "load", "bulk_bitrate")
ALIASES = {"dds_mode": "mode"}
FIELDS = frozenset((*CELL_FIELDS, *RUN_FIELDS, *RUN_PARAMS, *ALIASES))


def text(value: Any) -> str:
    """A value as a condition compares it: true/false, 1024 for 1024.0, else str(), lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).lower()


def run_fields(run: Any) -> dict[str, Any]:
    """A planned run (plan/dimensions.Run) as the fields a condition may name."""
    cell = run.cell
    tool = catalog.resolve_intercluster(cell.intercluster)
    out: dict[str, Any] = {
        "substrate": cell.substrate, "distribution": cell.distribution, "cni": cell.cni, "cni_mode": cell.cni_mode,
        "datapath": cell.cni_info.datapath, "is_host_baseline": cell.cni == "host",
        "tuning_profile": cell.tuning_profile, "netem_scenario": cell.netem_scenario, "intercluster": tool.key,
        "intercluster_tool": tool.tool, "intercluster_mode": tool.mode, "is_baseline": tool.is_none,
        "service_proxy": cell.service_proxy, "cpu_class": cell.cpu_class,
        "workload": run.workload, "protocol": run.protocol, "path": run.path, "placement": run.placement,
        "length_bytes": run.length_bytes, "duration_s": run.duration_s,
    }
    for k, v in run.params.items():
        if k in RUN_PARAMS:
            out[k] = v
    for alias, key in ALIASES.items():
        if key in out:
            out[alias] = out[key]
    return out


def matches(fields: dict[str, Any], condition: dict[str, Any]) -> bool:
    """Does a run (its run_fields) match one condition?"""
    for key, want in condition.items():
        have = fields.get(key)
        if have is None or text(have) not in {text(w) for w in (want if isinstance(want, list) else [want])}:
            return False
    return True


def selected(run: Any, conditions: list[dict[str, Any]]) -> bool:
    """Is the run planned under `conditions` (the parsed select parameter; [] plans every run)?"""
    if not conditions:
        return True
    fields = run_fields(run)
    return any(matches(fields, c) for c in conditions)


def parse(name: str, value: str) -> list[dict[str, Any]]:
    """select: a JSON list of conditions {field: value or [values]} (FIELDS); [] selects every run."""
    example = '[{"cni": ["host", "flannel"], "dds_mode": "throughput", "length_bytes": [64, 1024]}]'
    try:
        data = json.loads(value or "[]")
    except ValueError:
        raise SpecError(f"parameter {name!r} must be a JSON list of conditions, e.g. {example}; got "
                        f"{short(value)}") from None
    if not isinstance(data, list):
        raise SpecError(f"parameter {name!r} must be a JSON list of conditions, e.g. {example}; got {short(value)}")
    scalar = (str, int, float, bool)
    for i, cond in enumerate(data):
        if not isinstance(cond, dict) or not cond:
            raise SpecError(f"parameter {name!r}: condition {i + 1} must be a non-empty object, e.g. {example}")
        unknown = sorted(set(cond) - FIELDS)
        if unknown:
            raise SpecError(f"parameter {name!r}: condition {i + 1} names unknown field(s) {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(FIELDS))}")
        for key, want in cond.items():
            values = want if isinstance(want, list) else [want]
            if not values or not all(isinstance(v, scalar) for v in values):
                raise SpecError(f"parameter {name!r}: condition {i + 1}: {key} must be a value or a non-empty list "
                                f"of values; got {json.dumps(want)}")
    return data
