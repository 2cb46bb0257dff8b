"""Benchmark part "verdicts" (opt-in: `make bench ONLY=verdicts`): how decisive the one verdict rule is on this
machine, and what repetitions=auto costs.

Runs the same small sweep twice back to back through runner.run_local (interleaved rounds, a throwaway MinIO, a
testbed prefix of its own): once with 3 fixed repetitions, once with repetitions=auto (min 3, max 8). Each CNI
cell's comparisons with the host (every workload variant, paired by round; results/verdict.py) are judged from the
runs of that sweep alone. Rows:
  - the share of decisive comparisons (equivalent, better or worse) with auto (target >= 0.80), beside fixed 3's;
  - wall time auto / fixed 3 (target <= 1.0: deciding early should not cost more than it saves; with
    min-repetitions 3 auto can only add rounds to fixed 3's, so this target is met only when every variant decides
    at the minimum), and wall time per decisive comparison, auto / fixed 3 (what a decided answer costs);
  - a simulation of the rule at the auto setting: a 20 % shift (5 % run-to-run spread) detected in >= 90 % of
    comparisons, and identical sides called better / worse in <= 5 % (the A/A false-verdict rate).
"""
from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tests"))

from common import Row, scoped_env  # noqa: E402
from servers import throwaway_minio  # noqa: E402

from edgebench.results.verdict import DECISIVE, compare  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOOLS = Path.home() / ".local/share/edgebench/tools"
PARAMS = {"cnis": ["host", "flannel:vxlan", "flannel:host-gw", "kube-router", "calico:bgp"],
          "workloads": ["iperf3:tcp", "dds:latency", "http:payload-echo"], "duration": "2", "dds-duration": "2",
          "iperf3-paths": ["pod-to-pod:cross-node", "pod-to-pod:same-node"], "dds-payloads": ["64", "16384"],
          "http-payloads": ["60"], "http-requests": "100"}
QUICK = {**PARAMS, "cnis": ["host", "flannel:vxlan", "flannel:host-gw"], "workloads": ["iperf3:tcp"],
         "duration": "1"}


def _sweep(values: dict, sweep_id: str):
    from edgebench.plan import spec
    from edgebench.results.store import ResultStore
    from edgebench.sweep import runner
    from edgebench.substrates.local.testbed import Testbed

    raw = {k: json.dumps(v) if isinstance(v, list) else v for k, v in values.items()}
    sweep = spec.load(REPO / "workflows" / "sweep.yaml", {**raw, "sweep-id": sweep_id}, substrate="local")
    t0 = time.perf_counter()
    try:
        report = runner.run_local(sweep, ResultStore(), log=lambda _: None,
                                  testbed=Testbed(os.environ["EDGEBENCH_TESTBED_PREFIX"]))
    finally:
        Testbed(os.environ["EDGEBENCH_TESTBED_PREFIX"]).down()
    return sweep, report, time.perf_counter() - t0


def decisive(sweep, report) -> tuple[int, int, dict[str, int]]:
    """(decisive, total, verdict counts) over every CNI cell's comparisons with its host in this sweep's runs."""
    from edgebench.plan.cells import expand_checked
    from edgebench.sweep import adaptive

    cells, _ = expand_checked(sweep)
    docs: dict[str, list[dict]] = {}
    for d in report.results:
        docs.setdefault(d["cell_id"], []).append(d)
    base = adaptive.baselines(cells)
    counts: dict[str, int] = {}
    for i, cell in enumerate(cells):
        if base.get(i) is None:
            continue
        for c in adaptive.judge(docs.get(cell.cell_id, []), docs.get(cells[base[i]].cell_id, [])).values():
            counts[c.verdict] = counts.get(c.verdict, 0) + 1
    total = sum(counts.values())
    return sum(n for v, n in counts.items() if v in DECISIVE), total, counts


def simulate(trials: int = 2000, lo: int = 3, hi: int = 8, shift: float = 0.20, cv: float = 0.05) -> tuple[float, float]:
    """The auto procedure on simulated paired rounds: (share of 20 % shifts called worse, share of A/A pairs called
    better or worse)."""
    from edgebench.sweep import adaptive

    rng = random.Random(11)

    def run(delta: float) -> str:
        a, b = [], []
        for n in range(1, hi + 1):
            drift = rng.gauss(1.0, 0.1)
            b.append(1000 * drift * rng.gauss(1, cv))
            a.append(1000 * (1 - delta) * drift * rng.gauss(1, cv))
            if n >= lo:
                c = compare(a, b, higher_is_better=True, rounds_a=list(range(n)), rounds_b=list(range(n)))
                if adaptive.settled(c, hi) or adaptive.futile(c, hi):  # the runner's stopping rule
                    return c.verdict
        return c.verdict

    detected = sum(run(shift) == "worse" for _ in range(trials)) / trials
    false = sum(run(0.0) in ("better", "worse") for _ in range(trials)) / trials
    return detected, false


def run(quick: bool = False) -> list[Row]:
    os.environ.setdefault("EDGEBENCH_TESTBED_PREFIX", "ebverd")
    os.environ["PATH"] = f"{TOOLS}:{os.environ['PATH']}"
    work = Path(tempfile.mkdtemp(prefix="edgebench-bench-verdicts-"))
    (work / "minio").mkdir()
    values = QUICK if quick else PARAMS
    with throwaway_minio(work / "minio") as server, scoped_env({**server["env"],
                                                                "EDGEBENCH_STATE": str(work / "state")}):
        fixed = _sweep({**values, "repetitions": "3"}, "bench-verdicts-fixed3")
        auto = _sweep({**values, "repetitions": "auto", "min-repetitions": "3", "max-repetitions": "8"},
                      "bench-verdicts-auto")
    fd, ft, fc = decisive(fixed[0], fixed[1])
    ad, at, ac = decisive(auto[0], auto[1])
    detected, false = simulate()
    return [
        Row("verdicts", "decisive comparisons, repetitions=auto (3..8)", ad / at if at else None, "share", ">= 0.80",
            (ad / at >= 0.80) if at else None,
            f"auto {ad}/{at} decisive {ac}; fixed 3: {fd}/{ft} decisive {fc}; runs auto {len(auto[1].results)}, "
            f"fixed {len(fixed[1].results)}", {"auto": ac, "fixed3": fc}),
        Row("verdicts", "wall time, repetitions=auto / fixed 3", auto[2] / fixed[2], "ratio", "<= 1.0",
            auto[2] / fixed[2] <= 1.0, f"auto {auto[2]:.0f} s, fixed 3 {fixed[2]:.0f} s (back to back)"),
        Row("verdicts", "wall time per decisive comparison, repetitions=auto / fixed 3",
            (auto[2] / ad) / (fixed[2] / fd) if ad and fd else None, "ratio", "<= 1.0",
            ((auto[2] / ad) / (fixed[2] / fd) <= 1.0) if ad and fd else None,
            f"auto {auto[2] / ad:.0f} s per decisive comparison, fixed 3 "
            + (f"{fixed[2] / fd:.0f} s" if fd else "none decisive") if ad else "auto decided none"),
        Row("verdicts", "simulated 20 % shift detected at the auto setting", detected, "share", ">= 0.90",
            detected >= 0.90, "2000 paired trials, 5 % spread, 10 % drift between rounds, 3..8 rounds"),
        Row("verdicts", "simulated A/A: better / worse called on identical sides", false, "share", "<= 0.05",
            false <= 0.05, "2000 paired trials at the auto setting (binomial SE about 0.5 %), the runner's stopping rule "
            "(sweep/adaptive.py: an early stop on a difference needs it with the interval widened by 2 sqrt(max / n), futile ones stop; looking after every round inflates "
            "the per-look 5 %, this row measures what is left)"),
    ]


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(f"{r.name}: {r.value} (target {r.target}) {r.detail}")
