"""Benchmark part "overhead": how much of a small local sweep's wall time is measurement.

Runs a sweep of about 20 cells (quick: 4) through the code `edgebench sweep --local` runs (runner.run_local), into a
throwaway MinIO and a throwaway state directory, on a testbed prefix of its own (EDGEBENCH_TESTBED_PREFIX, default
`ebbench`). Reports, side by side from that one sweep:

  - wall time / the sum of the tools' own measurement durations (iperf3 -t and ddsperf -D, which the tools measure
    for exactly that long; fortio: the sum of its per-request times, its calls being sequential on one connection);
  - per-cell setup + teardown of the testbed (provision, install-cni, connect, tune, netem, teardown, or the reset
    when the next cell of the same datapath reuses the testbed), median and max;
  - where the rest goes: per-run time outside the tool (median) and the phases' totals, in `detail`/`extra`.

The phases are timed by wrapping phases.FUNCTIONS from here (the package itself carries no bench code).
`python bench/bench_overhead.py [--quick] [--profile]` runs it alone; --profile adds a cProfile summary.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/servers.py: the throwaway MinIO

from common import Row, scoped_env  # noqa: E402
from servers import throwaway_minio  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOOLS = Path.home() / ".local/share/edgebench/tools"

# ~20 cells: 5 CNI modes (host, two VXLAN flavours, two routed) x 2 tuning profiles x 2 link conditions;
# each cell runs one iperf3 TCP, one DDS latency and one HTTP run (3 runs per cell) for the sweep's default
# durations (`duration` and `dds-duration`, 3 s each): the ratio of the sweep as a user runs it
CNIS = ["host", "flannel:vxlan", "flannel:host-gw", "calico:vxlan", "kube-router"]
PARAMS = {
    "cnis": CNIS, "tuning": ["default_settings", "network-latency"], "netem": ["none", "lcl"],
    "workloads": ["iperf3:tcp", "dds:latency", "http:payload-echo"], "repetitions": "1",
    "iperf3-paths": ["pod-to-pod:cross-node"], "dds-payloads": ["64"],
    "http-payloads": ["1000"], "http-requests": "200",
}
QUICK = {**PARAMS, "cnis": ["host", "flannel:vxlan"], "netem": ["none"], "duration": "1", "dds-duration": "2",
         "http-requests": "50"}
SETUP = ("provision-cluster", "install-cni", "connect-clusters", "tune-nodes", "apply-netem")


def tool_seconds(doc: dict) -> float:
    """The tool's own measurement time of one ok run (see the module docstring); 0 for runs that measured nothing."""
    if doc.get("status") != "ok":
        return 0.0
    m = doc.get("metrics") or {}
    if doc["workload"] == "http":
        return (m.get("response_mean_ms") or 0) * (m.get("requests") or 0) / 1000
    return float(doc.get("duration_s") or 0)


def _seconds(a: str, b: str) -> float:
    import datetime as dt

    f = "%Y-%m-%dT%H:%M:%S.%fZ"
    return (dt.datetime.strptime(b, f) - dt.datetime.strptime(a, f)).total_seconds()


def sweep_once(quick: bool, profile: bool = False) -> dict:
    """One sweep through runner.run_local with the phases timed; returns the raw timings."""
    import json

    os.environ.setdefault("EDGEBENCH_TESTBED_PREFIX", "ebbench")
    os.environ["PATH"] = f"{TOOLS}:{os.environ['PATH']}"
    work = Path(tempfile.mkdtemp(prefix="edgebench-bench-overhead-"))
    (work / "minio").mkdir()
    with throwaway_minio(work / "minio") as server:
        with scoped_env({**server["env"], "EDGEBENCH_STATE": str(work / "state")}):
            from edgebench.plan import spec
            from edgebench.results.records.store import ResultStore
            from edgebench.sweep import phases, runner
            from edgebench.substrates.local.testbed import Testbed

            values = {k: json.dumps(v) if isinstance(v, list) else v for k, v in (QUICK if quick else PARAMS).items()}
            sweep = spec.load(REPO / "workflows" / "sweep.yaml", values, substrate="local")
            timings: dict[str, dict[str, float]] = {}
            originals = dict(phases.FUNCTIONS), phases.teardown_cluster, phases.reset_cluster

            def timed(name, fn):
                def wrapper(ctx, *a, **kw):
                    t0 = time.perf_counter()
                    try:
                        return fn(ctx, *a, **kw)
                    finally:
                        cell = timings.setdefault(ctx.cell.cell_id, {})
                        cell[name] = cell.get(name, 0.0) + time.perf_counter() - t0
                return wrapper

            for name, fn in originals[0].items():
                phases.FUNCTIONS[name] = timed(name, fn)
            phases.teardown_cluster = phases.FUNCTIONS["teardown-cluster"]
            phases.reset_cluster = timed("reset-cluster", originals[2])  # a testbed kept for the next cell
            lines: list[str] = []
            prof = None
            if profile:
                import cProfile

                prof = cProfile.Profile()
            t0 = time.perf_counter()
            try:
                if prof:
                    prof.enable()
                report = runner.run_local(sweep, ResultStore(), log=lines.append,
                                          testbed=Testbed(os.environ["EDGEBENCH_TESTBED_PREFIX"]))
            finally:
                if prof:
                    prof.disable()
                wall = time.perf_counter() - t0
                phases.FUNCTIONS.update(originals[0])
                phases.teardown_cluster = originals[1]
                phases.reset_cluster = originals[2]
                Testbed(os.environ["EDGEBENCH_TESTBED_PREFIX"]).down()
            stored = len(ResultStore().keys("runs/"))
    if prof:
        import pstats

        pstats.Stats(prof).sort_stats("cumulative").print_stats(35)
    return {"wall": wall, "report": report, "timings": timings, "log": lines, "stored_objects": stored}


def rows_from(res: dict, quick: bool) -> list[Row]:
    report, timings, wall = res["report"], res["timings"], res["wall"]
    docs = report.results
    tool = sum(tool_seconds(d) for d in docs)
    # teardown-cluster, or reset-cluster when the next cell reuses the testbed (its verification included)
    per_cell = [sum(t.get(p, 0.0) for p in (*SETUP, "teardown-cluster", "reset-cluster")) for t in timings.values()]
    reused = sum(1 for line in res["log"] if "reset and verified, is reused" in line)
    phase_tot = {}
    for t in timings.values():
        for k, v in t.items():
            phase_tot[k] = phase_tot.get(k, 0.0) + v
    run_over: dict[str, list[float]] = {}
    for d in docs:
        if d["status"] == "ok":
            run_over.setdefault(d["workload"], []).append(_seconds(d["started_at"], d["finished_at"]) - tool_seconds(d))
    c = report.counts
    ratio = wall / tool if tool else None
    ncells = len(timings)
    size = (f"{ncells} cells ({reused} on the previous cell's testbed), {len(docs)} runs ({c['ok']} ok, "
            f"{c['failed']} failed, {c['unsupported']} unsupported)")
    phases_txt = ", ".join(f"{k} {v:.1f}" for k, v in sorted(phase_tot.items(), key=lambda kv: -kv[1]) if v >= 0.05)
    over_txt = ", ".join(f"{w} {statistics.median(v):.2f}" for w, v in run_over.items())
    extra = {"wall_s": round(wall, 2), "tool_s": round(tool, 2), "cells": ncells, "cells_reusing_testbed": reused,
             "counts": c,
             "phase_totals_s": {k: round(v, 2) for k, v in phase_tot.items()},
             "per_cell_setup_teardown_s": [round(x, 3) for x in per_cell],
             "per_run_overhead_median_s": {w: round(statistics.median(v), 3) for w, v in run_over.items()},
             "failures": report.failures[:10], "stored_objects": res["stored_objects"]}
    rows = [Row("overhead", f"local sweep wall / tool measurement time ({ncells} cells)", ratio, "ratio", "<= 1.15",
                None if ratio is None else ratio <= 1.15,
                f"wall {wall:.1f} s, tools {tool:.1f} s; {size}; phases (s): {phases_txt}", extra)]
    if per_cell:
        med, mx = statistics.median(per_cell), max(per_cell)
        rows.append(Row("overhead", "per-cell setup + teardown, median", med, "s", "<= 1 s", med <= 1.0,
                        f"provision + install-cni + connect + tune + netem + teardown (or the reset for the next "
                        f"cell) over {ncells} cells"))
        rows.append(Row("overhead", "per-cell setup + teardown, max", mx, "s", "<= 1 s", mx <= 1.0,
                        f"slowest of {ncells} cells"))
    if run_over:
        rows.append(Row("overhead", "per-run time outside the tool, median", statistics.median(
            [x for v in run_over.values() for x in v]), "s", "", None,
            f"run wall (manifest started..finished) - tool time, median per workload (s): {over_txt}"))
    if report.failures:
        rows.append(Row("overhead", "sweep runs failed", float(len(report.failures)), "runs", "0", False,
                        "; ".join(report.failures[:3])))
    return rows


def run(quick: bool) -> list[Row]:
    return rows_from(sweep_once(quick), quick)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--profile", action="store_true", help="print a cProfile summary of the sweep")
    a = ap.parse_args()
    res = sweep_once(a.quick, a.profile)
    for r in rows_from(res, a.quick):
        print(f"{r.name}: {r.value if r.value is None else round(r.value, 3)} {r.unit} (target {r.target}, "
              f"ok={r.ok}) {r.detail}")
    print("\n".join(res["log"][-5:]))
