"""Resource sampling for every run: the `resources.json` samples of docs/results-layout.md.

A background thread samples every `interval_s`:
  - each workload process: CPU% from /proc/<pid>/stat utime+stime deltas (plus its threads, which the
    process's counters include) and RSS from /proc/<pid>/status VmRSS;
  - `system`: the whole machine's non-idle CPU from /proc/stat deltas and used memory (MemTotal - MemAvailable).

Every cpu_pct is PERCENT OF ONE CPU (the contract's unit, as `top` shows it): a process spinning on one core is
~100, the whole 2-core machine fully busy is ~200 for `system`. Softirq work of the kernel datapath shows up in
`system`, not in the processes.

Phases: samples start as `idle` (knb-style baseline before the workload starts); `mark_run()` switches to `run`.
A sampler given an `idle` baseline taken earlier (the sweep samples it once per cell) starts in `run`: its samples
follow copies of the baseline's, their t_s counting on from the baseline's last.
The first sample of each process is taken one interval after start (a delta needs two readings); a process
that exits simply stops producing samples.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable, Mapping

CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1

PidSource = Mapping[str, int] | Callable[[], Mapping[str, int]]


def _proc_cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    except (OSError, IndexError, ValueError):
        return None


def _proc_rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None  # kernel threads / zombies have no VmRSS


def _system_ticks() -> tuple[int, int]:
    """(busy, total) jiffies summed over all CPUs; idle = idle + iowait."""
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    vals = vals[:8]  # user nice system idle iowait irq softirq steal (guest time is already in user)
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    total = sum(vals)
    return total - idle, total


def _mem_used_mb() -> float | None:
    info = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                info[k] = int(v.split()[0])
        return (info["MemTotal"] - info["MemAvailable"]) / 1024
    except (OSError, KeyError, ValueError, IndexError):
        return None


class Sampler:
    """Sampler({"iperf3-client": 1234}, interval_s=0.5).start(); ...; mark_run(); ...; samples = stop().

    pids_by_name may be a callable returning the mapping; it is called at every sample, so processes started
    after start() (the workload itself) are picked up."""

    def __init__(self, pids_by_name: PidSource, interval_s: float = 0.5, component: str = "workload",
                 idle: list[dict] | None = None):
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self._source = pids_by_name
        self.interval_s = interval_s
        self.component = component
        self._phase = "idle" if idle is None else "run"
        self._samples: list[dict] = [dict(s) for s in idle or ()]
        self._t_offset = max((s["t_s"] for s in self._samples), default=0.0)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._t0 = 0.0

    def _pids(self) -> dict[str, int]:
        try:
            src = self._source() if callable(self._source) else self._source
            return {str(k): int(v) for k, v in dict(src).items() if v}
        except Exception:  # a pid source must never kill the sampler
            return {}

    def start(self) -> "Sampler":
        if self._thread:
            raise RuntimeError("sampler already started")
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="edgebench-resources", daemon=True)
        self._thread.start()
        return self

    def mark_run(self) -> None:
        with self._lock:
            self._phase = "run"

    def stop(self) -> list[dict]:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5 + self.interval_s)
        with self._lock:
            return list(self._samples)

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _loop(self) -> None:
        prev_sys = _system_ticks()
        prev_proc: dict[tuple[str, int], tuple[int, float]] = {}
        for name, pid in self._pids().items():
            ticks = _proc_cpu_ticks(pid)
            if ticks is not None:
                prev_proc[(name, pid)] = (ticks, time.monotonic())
        while not self._stop.wait(self.interval_s):
            now = time.monotonic()
            t_s = round(self._t_offset + now - self._t0, 3)
            with self._lock:
                phase = self._phase
            batch = []
            busy, total = _system_ticks()
            dbusy, dtotal = busy - prev_sys[0], total - prev_sys[1]
            prev_sys = (busy, total)
            cpu_sys = 100.0 * NCPU * dbusy / dtotal if dtotal > 0 else 0.0
            batch.append({"t_s": t_s, "phase": phase, "component": "system", "name": "system",
                          "cpu_pct": round(cpu_sys, 2), "rss_mb": _round(_mem_used_mb()), "cpus": NCPU})
            seen = {}
            for name, pid in self._pids().items():
                ticks = _proc_cpu_ticks(pid)
                if ticks is None:
                    continue
                seen[(name, pid)] = (ticks, now)
                if (name, pid) not in prev_proc:
                    continue  # first reading: a delta needs two
                pticks, pt = prev_proc[(name, pid)]
                dt = now - pt
                cpu = 100.0 * (ticks - pticks) / CLK_TCK / dt if dt > 0 else 0.0
                batch.append({"t_s": t_s, "phase": phase, "component": self.component, "name": name,
                              "cpu_pct": round(max(cpu, 0.0), 2), "rss_mb": _round(_proc_rss_mb(pid))})
            prev_proc = seen
            with self._lock:
                self._samples.extend(batch)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def summarize(samples: list[dict]) -> dict:
    """{phase: {component: {name: {"cpu_pct": mean, "rss_mb": mean or None, "samples": n}}}} for logs."""
    acc: dict[tuple[str, str, str], list[dict]] = {}
    for s in samples:
        acc.setdefault((s["phase"], s["component"], s["name"]), []).append(s)
    out: dict = {}
    for (phase, comp, name), group in sorted(acc.items()):
        rss = [g["rss_mb"] for g in group if g.get("rss_mb") is not None]
        out.setdefault(phase, {}).setdefault(comp, {})[name] = {
            "cpu_pct": round(sum(g["cpu_pct"] for g in group) / len(group), 2),
            "rss_mb": round(sum(rss) / len(rss), 2) if rss else None,
            "samples": len(group),
        }
    return out
