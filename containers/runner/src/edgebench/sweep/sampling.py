"""CPU/memory sampling of a cell's runs (the `resources.json` of every run): the local testbed's processes from /proc
(substrates/local/resources.py), or a real cluster's nodes over SSH (substrates/clusters/resources.py)."""

from __future__ import annotations

import time
from typing import Any, Sequence

from edgebench.substrates.base import Unsupported
from edgebench.substrates.local import resources

IDLE_S = 0.5  # idle baseline, sampled once per cell before its first run (knb style)
SAMPLE_INTERVAL_S = 0.25
REMOTE_INTERVAL_S = 1.0  # a real cluster: one /proc pass per node and second, over SSH
REMOTE_IDLE_S = 10.0  # the idle baseline of a real cluster (agents idle, no workload), once per cell


def sampler(ctx: Any):
    """Start CPU/memory sampling of the workload processes and the system for one run. The idle phase is sampled
    once per cell, before its first run, and kept in the cell's state: every run of the cell carries a copy of it
    (its samples first, then the run's, t_s counting on from the baseline). The cell's datapath, tuning and link
    condition do not change between its runs, so one baseline serves them all; sampling it again before every run
    cost IDLE_S of every run (a third of the sweep's overhead)."""

    remote = getattr(ctx.provider, "resource_sampler", None)  # a real cluster's nodes, sampled over SSH
    try:
        if remote is not None:
            make = lambda idle=None: remote(interval_s=REMOTE_INTERVAL_S, idle=idle)  # noqa: E731
            make(None)  # Unsupported where the provider cannot sample (kind, a fake transport)
        else:
            ctx.provider.workload_pids()
            make = lambda idle=None: resources.Sampler(ctx.provider.workload_pids,  # noqa: E731
                                                       interval_s=SAMPLE_INTERVAL_S, idle=idle)
    except Unsupported:
        return None
    idle = ctx.state.get("idle_baseline")
    if idle is None:
        baseline = make().start()
        time.sleep(IDLE_S if remote is None else REMOTE_IDLE_S)
        idle = [s for s in baseline.stop() if s["phase"] == "idle"]
        ctx.state["idle_baseline"] = idle
        ctx.save()
    return make(idle).start()


class Joint:
    """The machine's CPU and memory during a duet window measured together (sweep/duet.py together): one client
    serves every member, so no member's own CPU can be told apart; each member's `resources.json` holds the
    window's `system` rows alone, phase `window`, which the CPU-headroom gate reads (int_runs__cpu_headroom) and
    the resource marts, reading phases `idle` and `run`, do not."""

    def __init__(self) -> None:
        self._sampler = resources.Sampler(dict, interval_s=SAMPLE_INTERVAL_S, idle=[])

    def start(self) -> "Joint":
        self._sampler.start()
        return self

    def stop(self) -> list[dict]:
        return [{**r, "phase": "window"} for r in self._sampler.stop() if r["component"] == "system"]


def joint(ctxs: Sequence[Any]) -> Joint | None:
    """Start the window's sampler; None where the members are not on this machine (a real cluster's nodes are
    sampled over SSH, one run at a time)."""
    if any(getattr(ctx.provider, "resource_sampler", None) is not None for ctx in ctxs):
        return None
    return Joint().start()
