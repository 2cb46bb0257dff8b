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
    """One sampler for the members of a duet window measured together (sweep/duet.py together): one /proc pass per
    interval over every member's processes, not one sampler per member. stop() gives each member its own
    `resources.json`: its idle baseline, then the window's system rows (the one machine every member shares) and
    its own processes' rows, t_s counting on from its baseline."""

    def __init__(self, ctxs: Sequence[Any]):
        self._ctxs = list(ctxs)
        self._owner: dict[str, int] = {}
        self._sampler = resources.Sampler(self._pids, interval_s=SAMPLE_INTERVAL_S, idle=[])

    def _pids(self) -> dict[str, int]:
        prefixes = [getattr(getattr(ctx.provider, "testbed", None), "prefix", None) for ctx in self._ctxs]
        if all(isinstance(p, str) for p in prefixes):  # testbed members: one pass over /proc for all of them
            from edgebench.substrates.local.provider import pids_under

            out = pids_under(prefixes)
            for name in out:
                ns = name.partition("@")[2]  # a member's names start with its prefix, never with another's
                self._owner[name] = next((k for k, p in enumerate(prefixes) if ns.startswith(p + "-")), -1)
            return out
        out = {}
        for k, ctx in enumerate(self._ctxs):
            for name, pid in ctx.provider.workload_pids().items():
                out[name] = pid
                self._owner[name] = k
        return out

    def start(self) -> "Joint":
        self._sampler.start()
        return self

    def stop(self) -> list[list[dict]]:
        rows = self._sampler.stop()
        out = []
        for k, ctx in enumerate(self._ctxs):
            idle = [dict(s) for s in ctx.state.get("idle_baseline") or ()]
            offset = max((s["t_s"] for s in idle), default=0.0)
            own = [{**r, "t_s": round(r["t_s"] + offset, 3)} for r in rows
                   if r["component"] == "system" or self._owner.get(r["name"]) == k]
            out.append(idle + own)
        return out


def joint(ctxs: Sequence[Any]) -> Joint | None:
    """Start one sampler for members measured in one window, each member's idle baseline sampled first where it has
    none yet (as sampler() does); None where a member cannot be sampled from this machine's /proc (a real cluster's
    nodes are sampled over SSH, one run at a time)."""
    if any(getattr(ctx.provider, "resource_sampler", None) is not None for ctx in ctxs):
        return None
    for ctx in ctxs:
        if ctx.state.get("idle_baseline") is None:
            first = sampler(ctx)
            if first is None:
                return None
            first.stop()
    return Joint(ctxs).start()
