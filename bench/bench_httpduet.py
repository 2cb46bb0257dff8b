"""Benchmark part "httpduet": HTTP runs of the host and a CNI mode measured one after another against interleaved in
one window (drivers/http/run.py measure_together; docs/verdicts.md, "Interleaved HTTP duets"), side by side.

Two testbeds up at once (host and flannel:vxlan). Each trial measures the pair under three plans, the plans in a
random order per trial: `seq` (fortio's run on one, then on the other: the duet rounds before), `burst1` (requests
alternate one by one) and `burst25` (the default: bursts of DUET_BURST requests per member). Every trial gives the
overhead of flannel against the host, in % of the host's p50 (60 B payload-echo, 1000 requests a run).

Rows (each with n and the 95% interval; pair SD = the sd over trials of the overhead, in points):
  pair SD, interleaved / one after another   target < 1.0 (the point of interleaving)
  overhead, interleaved - one after another  informational: how far the interleaved level moves from the sequential
                                             one, in points, with the one rule's verdict on the two sets of trials
Needs root and `make tools` (edgebench-httpduet). `python bench/bench_httpduet.py [--quick] [--trials N]`.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, t95  # noqa: E402
from edgebench.drivers import http as driver  # noqa: E402
from edgebench.plan.catalog import resolve_cni  # noqa: E402
from edgebench.results.report.verdict import compare  # noqa: E402
from edgebench.substrates.local.testbed import Testbed  # noqa: E402

ARMS = {"host": "ebwh", "flannel:vxlan": "ebwf"}
PORT = 8080
PLANS = ("seq", "burst1", f"burst{driver.DUET_BURST}")


def _p50(measured) -> float:
    raw, metrics, error = measured
    if error:
        raise RuntimeError(error)
    return metrics["response_p50_ms"]


def measure(trials: int, requests: int = 1000) -> dict[str, list[float]]:
    """plan -> flannel's overhead against the host per trial, in %."""
    beds = {arm: Testbed(prefix) for arm, prefix in ARMS.items()}
    got: dict[str, list[float]] = {p: [] for p in PLANS}
    try:
        ends = []
        for arm, tb in beds.items():
            tb.up(resolve_cni(arm))
            client, server = tb.pin(tb.client(), "client"), tb.pin(tb.server("cross-node"), "server")
            ends.append((arm, client, server, server.ip))
        for t in range(trials):
            order = list(PLANS)
            random.shuffle(order)
            for plan in order:
                if plan == "seq":
                    pair = ends if t % 2 else ends[::-1]
                    p50 = {arm: _p50(driver.measure(c, s, ip, PORT, "payload-echo", 60, requests)[:3])
                           for arm, c, s, ip in pair}
                else:
                    res = driver.measure_together(ends, PORT, "payload-echo", 60, requests, burst=int(plan[5:]))
                    p50 = {arm: _p50(m) for arm, m in res.items()}
                got[plan].append(100 * (p50["flannel:vxlan"] / p50["host"] - 1))
            print(f"   trial {t + 1}/{trials}", flush=True)
    finally:
        for tb in beds.values():
            tb.down()
    return got


def rows_from(got: dict[str, list[float]]) -> list[Row]:
    seq, best = got["seq"], got[f"burst{driver.DUET_BURST}"]
    n = len(seq)
    sd = {p: statistics.stdev(v) for p, v in got.items()}
    mean = {p: statistics.mean(v) for p, v in got.items()}
    rows = []
    for plan in PLANS[1:]:
        ratio = sd[plan] / sd["seq"] if sd["seq"] else None
        rows.append(Row("httpduet", f"HTTP 60 B pair SD, interleaved ({plan}) / one after another", ratio, "ratio",
                        "< 1.0", ratio is not None and ratio < 1.0,
                        f"n={n} trials each; pair SD {sd[plan]:.1f} points against {sd['seq']:.1f}; overhead "
                        f"{mean[plan]:.1f} % against {mean['seq']:.1f} %", extra={"sd": sd, "mean": mean, "got": got}))
    diff = [b - a for a, b in zip(seq, best)]
    half = t95(n - 1) * statistics.stdev(diff) / n ** 0.5
    v = compare([100 + x for x in best], [100 + x for x in seq], higher_is_better=False, pct=5.0).verdict
    rows.append(Row("httpduet", f"HTTP 60 B overhead, burst{driver.DUET_BURST} - one after another (points)",
                    statistics.mean(diff), "points", "informational", None,
                    f"[{statistics.mean(diff) - half:+.1f}, {statistics.mean(diff) + half:+.1f}], n={n}: how far "
                    f"interleaving moves the measured level (burst1: {mean['burst1'] - mean['seq']:+.1f})",
                    extra={"ci": [statistics.mean(diff) - half, statistics.mean(diff) + half], "n": n}, verdict=v))
    return rows


def run(quick: bool) -> list[Row]:
    return rows_from(measure(trials=4 if quick else 10))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trials", type=int, default=None)
    a = ap.parse_args()
    for row in rows_from(measure(a.trials or (4 if a.quick else 10))):
        print(f"{row.name}: {row.value:.3f} {row.detail} -> {row.verdict or row.ok}")
