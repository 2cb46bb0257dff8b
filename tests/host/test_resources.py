"""Resource sampling: per-process CPU%/RSS from /proc, system CPU% (percent of one CPU) and memory, phases."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from edgebench.substrates.local import resources


@pytest.fixture
def procs():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"])
    yield busy, idle
    for p in (busy, idle):
        p.kill()
        p.wait()


def test_busy_vs_idle_and_phases(procs):
    """Plausible numbers even on a loaded 2-core machine: the busy process's sampled CPU% agrees with the CPU
    time the kernel accounts to it over its life (wait4 rusage, an independent source)."""
    _, idle = procs
    started = time.monotonic()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    s = resources.Sampler({"busy": busy.pid, "idle": idle.pid}, interval_s=0.25).start()
    time.sleep(1.1)
    s.mark_run()
    time.sleep(1.1)
    samples = s.stop()
    busy.kill()
    _, _, usage = os.wait4(busy.pid, 0)
    reference = 100 * (usage.ru_utime + usage.ru_stime) / (time.monotonic() - started)
    json.dumps(samples)  # resources.json is plain JSON
    assert {x["phase"] for x in samples} == {"idle", "run"}
    phases = [x["phase"] for x in samples]
    assert phases == sorted(phases)  # idle first, then run: never back
    for x in samples:
        # a system row also says how many CPUs its cpu_pct is out of (the CPU-headroom gate reads it)
        assert set(x) == {"t_s", "phase", "component", "name", "cpu_pct", "rss_mb"} | (
            {"cpus"} if x["component"] == "system" else set())
        assert x["component"] in ("workload", "system")
        assert x.get("cpus", resources.NCPU) == resources.NCPU
    summ = resources.summarize(samples)
    cpu_busy = [x["cpu_pct"] for x in samples if x["name"] == "busy"]
    mean_busy = sum(cpu_busy) / len(cpu_busy)
    print(f"\nbusy process: sampled {mean_busy:.1f}% of one CPU, kernel accounting {reference:.1f}%")
    assert mean_busy > 20 and abs(mean_busy - reference) < 30
    for phase in ("idle", "run"):
        w = summ[phase]["workload"]
        assert w["busy"]["cpu_pct"] <= 105, w  # one thread cannot exceed one CPU
        assert w["idle"]["cpu_pct"] < 5 and w["busy"]["cpu_pct"] > w["idle"]["cpu_pct"] + 10, w
        assert 3 < w["busy"]["rss_mb"] < 200 and 3 < w["idle"]["rss_mb"] < 200
        sysm = summ[phase]["system"]["system"]
        # the whole machine includes the spinning process; percent of one CPU, so up to 100 x cores
        assert w["busy"]["cpu_pct"] * 0.8 <= sysm["cpu_pct"] <= 100 * resources.NCPU + 1
        assert sysm["rss_mb"] > 10
    ts = [x["t_s"] for x in samples]
    assert ts == sorted(ts) and ts[0] > 0


def test_callable_source_picks_up_late_processes_and_exits(procs):
    busy, _ = procs
    pids: dict[str, int] = {}
    s = resources.Sampler(lambda: pids, interval_s=0.2).start()
    time.sleep(0.5)
    pids["iperf3-client"] = busy.pid  # the workload starts after sampling began
    s.mark_run()
    time.sleep(0.9)
    short = subprocess.Popen([sys.executable, "-c", "pass"])
    pids["gone"] = short.pid
    short.wait()
    time.sleep(0.5)
    samples = s.stop()
    names = {x["name"] for x in samples if x["component"] == "workload"}
    assert "iperf3-client" in names
    assert all(x["phase"] == "run" for x in samples if x["name"] == "iperf3-client")
    assert [x for x in samples if x["phase"] == "idle" and x["name"] == "system"]


def test_summarize_shape():
    samples = [
        {"t_s": 0.5, "phase": "idle", "component": "system", "name": "system", "cpu_pct": 10.0, "rss_mb": 100.0},
        {"t_s": 1.0, "phase": "idle", "component": "system", "name": "system", "cpu_pct": 20.0, "rss_mb": 200.0},
        {"t_s": 1.5, "phase": "run", "component": "workload", "name": "iperf3-client", "cpu_pct": 50.0,
         "rss_mb": None},
    ]
    assert resources.summarize(samples) == {
        "idle": {"system": {"system": {"cpu_pct": 15.0, "rss_mb": 150.0, "samples": 2}}},
        "run": {"workload": {"iperf3-client": {"cpu_pct": 50.0, "rss_mb": None, "samples": 1}}},
    }
    with pytest.raises(ValueError):
        resources.Sampler({}, interval_s=0)


def test_idle_baseline_is_sampled_once_per_cell_and_carried_by_every_run(monkeypatch):
    """sweep/sampling.sampler: the first run of a cell samples the idle phase (IDLE_S), later runs reuse it from the
    cell's state; each run's samples are the baseline's, then its own (phase run, t_s after the baseline's)."""
    from edgebench.sweep import sampling

    slept, real_sleep = [], time.sleep
    monkeypatch.setattr(sampling, "IDLE_S", 0.6)
    monkeypatch.setattr(sampling.time, "sleep", lambda s: (slept.append(s), real_sleep(s)))

    class Provider:
        @staticmethod
        def workload_pids():
            return {}

    class Ctx:
        provider, state, saved = Provider(), {}, 0

        def save(self):
            self.saved += 1

    ctx = Ctx()
    files = []
    for _ in range(2):
        s = sampling.sampler(ctx)
        real_sleep(0.6)
        files.append(s.stop())
    assert slept == [0.6]  # one idle phase for the cell
    idle = [[x for x in f if x["phase"] == "idle"] for f in files]
    assert idle[0] and idle[0] == idle[1] == ctx.state["idle_baseline"] and ctx.saved == 1
    for f in files:
        phases_in_order = [x["phase"] for x in f]
        assert phases_in_order == sorted(phases_in_order) and "run" in phases_in_order
        ts = [x["t_s"] for x in f]
        assert ts == sorted(ts) and min(x["t_s"] for x in f if x["phase"] == "run") > max(x["t_s"] for x in idle[0])
    ctx.state.pop("idle_baseline")  # provision-cluster drops it: a new cluster gets a new baseline
    sampling.sampler(ctx).stop()
    assert slept == [0.6, 0.6]
