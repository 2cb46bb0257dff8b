"""Benchmark part "ebpf": what the testbed's eBPF forwarding (Cilium's modes: substrates/local/ebpf.py) costs, and
where it puts Cilium against Flannel, measured side by side.

Four testbeds up at once, one per arm: host, calico:vxlan (the same attachment and encapsulation as cilium:vxlan -
ptp veths, a VXLAN device - without any program: what the testbed built for Cilium before), cilium:vxlan (the same
with the tc programs and a collect-metadata device) and flannel:vxlan. Each round runs iperf3 cross-node pod to pod
on every arm, the arms in a random order, UDP 1300 B at 1 Gbit/s and TCP; every figure is taken against the host run
of its own round.

Rows (each with n, the 95% interval and the one rule's verdict, results/report/verdict.py, paired by round):
  cilium / calico vxlan   the programs' cost: throughput ratio, and the extra overhead in points of the host's
  cilium / flannel vxlan  where the testbed now ranks the two (the order the real labs were checked on)
Informational: no target, the verdict says what was found. `python bench/bench_ebpf.py [--quick] [--rounds N]`.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, paired_ratio, t95  # noqa: E402
from edgebench.plan.catalog import resolve_cni  # noqa: E402
from edgebench.results.report.verdict import compare  # noqa: E402
from edgebench.substrates.local.testbed import Testbed  # noqa: E402

ARMS = {"host": "ebqh", "calico:vxlan": "ebqc", "cilium:vxlan": "ebqe", "flannel:vxlan": "ebqf"}
PORT = 5297
TESTS = {"udp": ["-u", "-b", "1G", "-l", "1300"], "tcp": []}


def _iperf3(tb: Testbed, extra: list[str], seconds: int) -> float:
    client, server = tb.client(), tb.server("cross-node")
    srv = subprocess.Popen(server.cmd(["iperf3", "-s", "-1", "-p", str(PORT)]), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = subprocess.run(client.cmd(["iperf3", "-c", server.ip, "-p", str(PORT), "-t", str(seconds), "-J",
                                         *extra]), capture_output=True, text=True, timeout=seconds + 30, check=True)
        srv.wait(timeout=30)
    finally:
        if srv.poll() is None:
            srv.kill()
    end = json.loads(out.stdout)["end"]
    return (end.get("sum_received") or end["sum"])["bits_per_second"] / 1e6


def measure(rounds: int, seconds: int) -> dict[str, dict[str, list[float]]]:
    """protocol -> arm -> throughput per round (Mbit/s)."""
    beds = {arm: Testbed(prefix) for arm, prefix in ARMS.items()}
    got = {proto: {arm: [] for arm in ARMS} for proto in TESTS}
    try:
        for arm, tb in beds.items():
            tb.up(resolve_cni(arm))
        for r in range(rounds):
            for proto, extra in TESTS.items():
                order = list(ARMS)
                random.shuffle(order)
                for arm in order:
                    got[proto][arm].append(_iperf3(beds[arm], extra, seconds))
            print(f"   round {r + 1}/{rounds}", flush=True)
    finally:
        for tb in beds.values():
            tb.down()
    return got


def _points(a: list[float], b: list[float], host: list[float]) -> tuple[float, float]:
    """How many points of the host's throughput arm a loses more than arm b, per round: mean and 95% half-width."""
    d = [100 * (y - x) / h for x, y, h in zip(a, b, host)]
    return statistics.mean(d), t95(len(d) - 1) * statistics.stdev(d) / len(d) ** 0.5


def rows_from(got: dict[str, dict[str, list[float]]]) -> list[Row]:
    out = []
    for proto, arms in got.items():
        host = arms["host"]
        for other, what in (("calico:vxlan", "the programs' cost: the same ptp + VXLAN without them"),
                            ("flannel:vxlan", "Cilium against Flannel on the testbed")):
            a, b = arms["cilium:vxlan"], arms[other]
            ratio, lo, hi, _ = paired_ratio(a, b)
            rounds = list(range(1, len(a) + 1))
            v = compare(a, b, higher_is_better=True, pct=5.0, rounds_a=rounds, rounds_b=rounds).verdict
            pts, half = _points(a, b, host)
            over = {k: 100 * (1 - statistics.mean(vals) / statistics.mean(host)) for k, vals in arms.items()
                    if k != "host"}
            out.append(Row("ebpf", f"iperf3 {proto} cross-node: cilium:vxlan / {other} ({what})", ratio, "ratio",
                           "informational", None,
                           f"[{lo:.3f}, {hi:.3f}], n={len(a)} paired rounds; cilium costs {pts:+.1f} points of the "
                           f"host [{pts - half:+.1f}, {pts + half:+.1f}] more; overhead vs host: "
                           + ", ".join(f"{k} {x:.1f} %" for k, x in over.items()),
                           extra={"ci": [lo, hi], "n": len(a), "points": pts, "points_ci95": half,
                                  "overhead_pct": over, "mbps": arms},
                           verdict=v))
    return out


def run(quick: bool) -> list[Row]:
    return rows_from(measure(rounds=3 if quick else 8, seconds=2 if quick else 3))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    a = ap.parse_args()
    for row in rows_from(measure(a.rounds or (3 if a.quick else 8), 2 if a.quick else 3)):
        print(f"{row.name}: {row.value:.3f} {row.detail} -> {row.verdict}")
