"""Benchmark part "verdicts" (opt-in: `make bench ONLY=verdicts`): how decisive the one verdict rule is on this
machine with the old default plan and with `make sweep`'s, side by side.

Runs the same small sweep twice back to back through runner.run_local (a throwaway MinIO, a testbed prefix of its
own), each comparison of a CNI cell with its host (every workload variant, paired by round; results/report/verdict.py)
judged from that sweep's runs alone:
  - before: the sweep file's plan as it was the default until 2026-11-28: 3 fixed rounds of 3 s runs, the cells of a
    round one after another (--no-duet), tools not pinned to CPUs (EDGEBENCH_PIN_CPUS=0);
  - after: `make sweep`'s plan (the Makefile's REPEAT): duet rounds, client and server pinned to CPUs of their own,
    the same 3 s runs, repetitions=auto (REPEAT's min..max rounds) within a time budget equal to the wall time `before` took just now.
Rows: the share of decisive comparisons (equivalent, better or worse; target >= 0.90; the spreads of the modes paired
with the same host runs pooled, as the rule pools them) and of HTTP p50 comparisons (>= 0.80) after, beside before's;
after's decisive comparisons pooled against the same runs judged each alone; wall time after / before (<= 1.0); the pair SD (sd over rounds of the per-round
difference, in % of the host mean, median over variants) after / before, per workload; and a simulation of the
stopping rule at the after setting: identical sides called better / worse in <= 5 % (A/A), a 20 % shift found.
"""
from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tests"))

from common import Row, scoped_env  # noqa: E402
from servers import throwaway_minio  # noqa: E402

from edgebench.results.report.verdict import DECISIVE, compare  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOOLS = Path.home() / ".local/share/edgebench/tools"
PARAMS = {"cnis": ["host", "flannel:vxlan", "flannel:host-gw", "kube-router", "calico:bgp"],
          "workloads": ["iperf3:tcp", "dds:latency", "http:payload-echo"],
          "iperf3-paths": ["pod-to-pod:cross-node", "pod-to-pod:same-node"], "dds-payloads": ["64", "16384"],
          "http-payloads": ["60"]}
QUICK = {**PARAMS, "cnis": ["host", "flannel:vxlan", "flannel:host-gw"], "workloads": ["iperf3:tcp", "http:payload-echo"]}
BEFORE = {"repetitions": "3", "duration": "3", "dds-duration": "3"}


def makefile_repeat(makefile: Path = REPO / "Makefile") -> dict[str, str]:
    """`make sweep`'s plan as the Makefile's REPEAT line gives it (`-p key=value` pairs), without its time budget
    (the bench gives `after` the wall time `before` took)."""
    for line in makefile.read_text().splitlines():
        if line.startswith("REPEAT") and "=" in line:
            words = line.split("=", 1)[1].split()
            pairs = dict(w.split("=", 1) for w, flag in zip(words[1:], words) if flag == "-p")
            pairs.pop("time-budget", None)
            if pairs.get("repetitions") != "auto" or not {"min-repetitions", "max-repetitions"} <= set(pairs):
                raise SystemExit(f"bench verdicts: the Makefile's REPEAT is not an adaptive plan: {line}")
            return pairs
    raise SystemExit(f"bench verdicts: no REPEAT line in {makefile}")


AFTER = {**makefile_repeat(), "duration": "3", "dds-duration": "3"}  # + time-budget


def _sweep(values: dict, sweep_id: str, duet: bool):
    from edgebench.plan import spec
    from edgebench.results.records.store import ResultStore
    from edgebench.sweep import runner
    from edgebench.substrates.local.testbed import Testbed

    raw = {k: json.dumps(v) if isinstance(v, list) else v for k, v in values.items()}
    sweep = spec.load(REPO / "workflows" / "sweep.yaml", {**raw, "sweep-id": sweep_id}, substrate="local")
    t0 = time.perf_counter()
    try:
        report = runner.run_local(sweep, ResultStore(), log=lambda _: None, duet_on=duet,
                                  testbed=Testbed(os.environ["EDGEBENCH_TESTBED_PREFIX"]))
    finally:
        Testbed(os.environ["EDGEBENCH_TESTBED_PREFIX"]).down()
    return sweep, report, time.perf_counter() - t0


def pair_sd(sweep, report) -> dict[str, float]:
    """Per workload: the median over CNI variants of the sd over rounds of (cell - host) / host mean, in %."""
    from edgebench.plan.cells import expand_checked
    from edgebench.sweep import adaptive

    cells, _ = expand_checked(sweep)
    docs: dict[str, list[dict]] = {}
    for d in report.results:
        docs.setdefault(d["cell_id"], []).append(d)
    base = adaptive.baselines(cells)
    sds: dict[str, list[float]] = {}
    for i, cell in enumerate(cells):
        if base.get(i) is None:
            continue
        host = adaptive._values(docs.get(cells[base[i]].cell_id, []))
        for v, rounds in adaptive._values(docs.get(cell.cell_id, [])).items():
            b = host.get(v) or {}
            rs = sorted(set(rounds) & set(b))
            if len(rs) >= 2:
                mean = statistics.fmean(b[r][1] for r in rs)
                sds.setdefault(v[0], []).append(statistics.stdev((rounds[r][1] - b[r][1]) / mean * 100 for r in rs))
    return {w: statistics.median(v) for w, v in sds.items()}


def decisive(sweep, report, workload: str | None = None, pool: bool = True) -> tuple[int, int, dict[str, int]]:
    """(decisive, total, verdict counts) over every CNI cell's comparisons with its host in this sweep's runs (of
    one workload, or all); pool=False judges each alone (paired, its own spread), as the rule did before pooled
    spreads."""
    from edgebench.plan.cells import expand_checked
    from edgebench.sweep import adaptive

    cells, _ = expand_checked(sweep)
    docs: dict[str, list[dict]] = {}
    for d in report.results:
        docs.setdefault(d["cell_id"], []).append(d)
    counts: dict[str, int] = {}
    # judged as the warehouse judges them: the cells paired with the same host runs pool their spreads
    base = adaptive.baselines(cells)
    judged = adaptive.judge_all(cells, docs, base) if pool else {
        i: adaptive.judge(docs.get(cells[i].cell_id, []), docs.get(cells[b].cell_id, []))
        for i, b in base.items() if b is not None}
    for comps in judged.values():
        for v, c in comps.items():
            if workload is None or v[0] == workload:
                counts[c.verdict] = counts.get(c.verdict, 0) + 1
    total = sum(counts.values())
    return sum(n for v, n in counts.items() if v in DECISIVE), total, counts


def simulate(trials: int = 2000, lo: int = int(AFTER["min-repetitions"]),
             hi: int = int(AFTER["max-repetitions"]), shift: float = 0.20, cv: float = 0.05, modes: int = 1) -> tuple[float, float]:
    """The auto procedure on simulated paired rounds, `modes` CNI modes sharing one host's runs as a sweep's modes do
    (more than one: their spreads pooled, verdict.pooled, as the runner and the warehouse pool them; each mode stops
    on its own): (share of 20 % shifts called worse, share of A/A comparisons called better or worse). Each trial
    ends with the one rule on all of its runs, as the warehouse judges them."""
    from edgebench.results.report.verdict import pooled
    from edgebench.sweep import adaptive

    rng = random.Random(11)

    def judged(a: list[list[float]], b: list[float]):
        comps = [compare(x, b[:len(x)], higher_is_better=True, rounds_a=list(range(len(x))),
                         rounds_b=list(range(len(x)))) for x in a]
        return pooled(comps) if len(comps) > 1 else comps

    def run(delta: float) -> list[str]:
        a: list[list[float]] = [[] for _ in range(modes)]
        b: list[float] = []
        active = set(range(modes))
        for n in range(1, hi + 1):
            drift = rng.gauss(1.0, 0.1)
            b.append(1000 * drift * rng.gauss(1, cv))
            for i in active:
                a[i].append(1000 * (1 - delta) * drift * rng.gauss(1, cv))
            if n >= lo:
                comps = judged(a, b)
                active -= {i for i in active if adaptive.settled(comps[i], hi) or adaptive.futile(comps[i], hi)}
                if not active:  # the runner's stopping rule
                    break
        return [c.verdict for c in judged(a, b)]

    per = max(1, trials // modes)
    detected = sum(v == "worse" for _ in range(per) for v in run(shift)) / (per * modes)
    false = sum(v in ("better", "worse") for _ in range(per) for v in run(0.0)) / (per * modes)
    return detected, false


def run(quick: bool = False) -> list[Row]:
    os.environ.setdefault("EDGEBENCH_TESTBED_PREFIX", "ebverd")
    os.environ["PATH"] = f"{TOOLS}:{os.environ['PATH']}"
    work = Path(tempfile.mkdtemp(prefix="edgebench-bench-verdicts-"))
    (work / "minio").mkdir()
    values = QUICK if quick else PARAMS
    with throwaway_minio(work / "minio") as server, scoped_env({**server["env"],
                                                                "EDGEBENCH_STATE": str(work / "state")}):
        with scoped_env({"EDGEBENCH_PIN_CPUS": "0"}):
            before = _sweep({**values, **BEFORE}, "bench-verdicts-before", duet=False)
        after = _sweep({**values, **AFTER, "time-budget": str(int(before[2]))}, "bench-verdicts-after", duet=True)
    bd, bt, bc = decisive(before[0], before[1])
    ad, at, ac = decisive(after[0], after[1])
    alone_d, alone_t, alone_c = decisive(after[0], after[1], pool=False)
    hb, htb, _ = decisive(before[0], before[1], "http")
    ha, hta, hc = decisive(after[0], after[1], "http")
    sd_b, sd_a = pair_sd(before[0], before[1]), pair_sd(after[0], after[1])
    detected, false = simulate()  # one mode alone: its own spread, no pooling
    detected8, false8 = simulate(trials=8000, modes=8)  # a sweep's modes against one host, pooled
    rows = [
        Row("verdicts", "decisive comparisons, make sweep's plan", ad / at if at else None, "share", ">= 0.90",
            (ad / at >= 0.90) if at else None,
            f"after {ad}/{at} {ac}; before (fixed 3 x 3 s, round order, unpinned) {bd}/{bt} {bc}; runs after "
            f"{len(after[1].results)}, before {len(before[1].results)}", {"after": ac, "before": bc}),
        Row("verdicts", "decisive comparisons, make sweep's plan, pooled / each judged alone (the same runs)",
            ad / alone_d if alone_d else None, "ratio", ">= 1.0", (ad >= alone_d) if alone_d else None,
            f"pooled {ad}/{at} (the rule); alone {alone_d}/{alone_t} {alone_c}"),
        Row("verdicts", "decisive HTTP p50 comparisons, make sweep's plan", ha / hta if hta else None, "share",
            ">= 0.80", (ha / hta >= 0.80) if hta else None, f"after {ha}/{hta} {hc}; before {hb}/{htb}"),
        Row("verdicts", "wall time, make sweep's plan / fixed 3 before", after[2] / before[2], "ratio", "<= 1.0",
            after[2] / before[2] <= 1.0, f"after {after[2]:.0f} s (budget {before[2]:.0f} s), before {before[2]:.0f} s "
            "(back to back)"),
    ]
    for w in sorted(set(sd_a) & set(sd_b)):
        rows.append(Row("verdicts", f"pair SD {w}, make sweep's plan / before", sd_a[w] / sd_b[w] if sd_b[w] else None,
                        "ratio", "< 1.0", (sd_a[w] / sd_b[w] < 1.0) if sd_b[w] else None,
                        f"median over variants of the sd over rounds of the difference to the host: after "
                        f"{sd_a[w]:.2f} % of the host mean, before {sd_b[w]:.2f} %"))
    rounds = f'{AFTER["min-repetitions"]}..{AFTER["max-repetitions"]} rounds'
    rows += [
        Row("verdicts", "simulated 20 % shift detected at the auto setting", detected, "share", ">= 0.90",
            detected >= 0.90, "2000 paired trials of one mode alone, 5 % spread, 10 % drift between rounds, "
            f"{rounds}"),
        Row("verdicts", "simulated A/A: better / worse called on identical sides", false, "share", "<= 0.05",
            false <= 0.05, "2000 paired trials of one mode alone at the auto setting (binomial SE about 0.5 %), the "
            "runner's stopping rule (sweep/adaptive.py: an early stop needs 2 or more degrees of freedom in its "
            "spread, and on a difference the interval widened by 2 sqrt(max / n); futile ones stop; looking after "
            "every round inflates the per-look 5 %, this row measures what is left)"),
        Row("verdicts", "simulated 20 % shift detected, 8 modes pooled against one host", detected8, "share",
            ">= 0.90", detected8 >= 0.90, "1000 trials of 8 modes sharing one host's runs, their spreads pooled as "
            f"the sweep pools them, {rounds}, each mode stopping on its own"),
        Row("verdicts", "simulated A/A, 8 modes pooled against one host: better / worse called", false8, "share",
            "<= 0.05", false8 <= 0.05, "8000 comparisons (1000 trials of 8 modes), the runner's stopping rule on "
            f"pooled spreads from round {AFTER['min-repetitions']} (make sweep's plan)"),
    ]
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(f"{r.name}: {r.value} (target {r.target}) {r.detail}")
