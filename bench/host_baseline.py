"""Benchmark: is the host-network baseline the sweep reports the same as iperf3 run by hand?

On one host-network testbed, interleaves N measurements through the sweep's own run path (runner._execute: the
driver, its command line and parser) with N plain `ip netns exec <node> iperf3 -c <peer>` runs between the same two
namespaces, and prints both means and their ratio. Side by side in one run; the target is |1 - ratio| <= 5%.

Usage: python bench/host_baseline.py [--repetitions N] [--duration S] [--protocol tcp|udp]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import tempfile
from pathlib import Path

from edgebench.sweep import phases
from edgebench.plan import spec
from edgebench.plan.cells import expand, runs_for
from edgebench.substrates.local.provider import LocalProvider
from edgebench.results.store import repo_root
from edgebench.substrates.local.testbed import Testbed


def by_hand(tb: Testbed, duration: int, protocol: str, length: int, bitrate: str) -> float:
    server, client = tb.node_ns(2), tb.node_ns(1)
    srv = subprocess.Popen(["ip", "netns", "exec", server, "iperf3", "-s", "-1", "-p", "5999"],
                           stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    argv = ["ip", "netns", "exec", client, "iperf3", "-c", "10.77.0.12", "-p", "5999", "-t", str(duration), "-J",
            "-l", str(length)] + (["-u", "-b", bitrate] if protocol == "udp" else [])
    doc = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    srv.wait(timeout=30)
    return doc["end"]["sum_received"]["bits_per_second"] / 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--protocol", choices=["tcp", "udp"], default="tcp")
    a = ap.parse_args()
    sweep = spec.load(repo_root() / "workflows" / "sweep.yaml", {
        "cnis": '["host"]', "workloads": f'["iperf3:{a.protocol}"]', "duration": str(a.duration),
        "iperf3-paths": '["pod-to-pod:cross-node"]', "repetitions": str(a.repetitions)}, substrate="local")
    cell = expand(sweep)[0]
    tb = Testbed("ebbench")
    docs: list[dict] = []
    work = Path(tempfile.mkdtemp(prefix="edgebench-bench-"))
    ctx = phases.CellContext(sweep, cell, workdir=work / "state", results=work / "results", provider=LocalProvider(tb),
                             sink=lambda run, doc: docs.append(doc))
    sweep_mbps, hand_mbps = [], []
    try:
        phases.provision_cluster(ctx)
        phases.install_cni(ctx)
        for r in runs_for(sweep, cell):
            ctx.only = {r.run_id}  # one run of the sweep's own run path, then one by hand, alternating
            phases.run_workload(ctx, "iperf3")
            m = docs[-1]
            if m["status"] != "ok":
                print(f"sweep run failed: {m['error']}", file=sys.stderr)
                return 1
            sweep_mbps.append(m["metrics"]["throughput_mbps"])
            hand_mbps.append(by_hand(tb, a.duration, a.protocol, r.length_bytes, r.params.get("bitrate", "0")))
            print(f"rep {r.repetition}: sweep {sweep_mbps[-1]:9.1f} Mbit/s   by hand {hand_mbps[-1]:9.1f} Mbit/s")
    finally:
        tb.down()
    s_mean, h_mean = statistics.mean(sweep_mbps), statistics.mean(hand_mbps)
    ratio = s_mean / h_mean
    print(f"host baseline, {a.protocol}, node-to-node, {a.repetitions} x {a.duration}s interleaved:")
    print(f"  sweep   mean {s_mean:9.1f} Mbit/s (stdev {statistics.pstdev(sweep_mbps):.1f})")
    print(f"  by hand mean {h_mean:9.1f} Mbit/s (stdev {statistics.pstdev(hand_mbps):.1f})")
    print(f"  ratio sweep/by-hand = {ratio:.3f} ({(ratio - 1) * 100:+.1f}%) -> "
          f"{'within' if abs(ratio - 1) <= 0.05 else 'OUTSIDE'} the 5% target")
    return 0 if abs(ratio - 1) <= 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
