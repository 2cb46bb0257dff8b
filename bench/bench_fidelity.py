"""Benchmark part "fidelity": does the sweep add anything to what it measures?

For each workload the sweep's own run path (phases.run_workload with ctx.only = one run: the workload plug-in, its
driver's command lines, the resource sampler, the parser, the manifest) is interleaved with the raw tool run by hand
(`ip netns exec <ns> <tool> ...`, written out here, parsed here) between the same two namespaces of the same
testbed, alternating which side goes first. Rows: sweep mean / by-hand mean per workload, datapath and metric.

  iperf3 TCP and UDP   host and flannel:vxlan (one overlay datapath)   throughput (receiver)   target 0.98-1.02
  ddsperf latency      host and flannel:vxlan                          p50 and p99 (RTT/2)     target 0.95-1.05
  HTTP (fortio)        host and flannel:vxlan                          response p50            target 0.95-1.05

The sweep's DDS latency is the count-weighted mean of ddsperf's per-second percentiles (ddsperf's summarize);
the by-hand side computes the same from the ping's lines. HTTP p50 is the linearly interpolated median of fortio's
per-request times on both sides.

Each row's ratio is the geometric mean of the n paired ratios (sweep run / the by-hand run beside it) with its 95%
confidence interval; the verdict is the project's one rule (results/report/verdict.py, paired by pair, margin = the band): meets,
MISSES,
or inconclusive when the interval straddles a band edge (the machine's noise at this n cannot tell; the detail says
about how many pairs would). `python bench/bench_fidelity.py [--quick] [--reps N]` runs it alone, with N pairs.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, band_verdict, paired_ratio  # noqa: E402
from edgebench.results.report.verdict import compare  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOOLS = Path.home() / ".local/share/edgebench/tools"
DATAPATHS = ("host", "flannel:vxlan")
PAYLOAD_DDS, PAYLOAD_HTTP, HAND_PORT = 64, 1000, 5999


# --- by hand: the tools' own command lines, nothing from edgebench ------------------------------------------------
def iperf3_by_hand(client_ns: str, server_ns: str, server_ip: str, duration: int, protocol: str, length: int,
                   bitrate: str) -> float:
    srv = subprocess.Popen(["ip", "netns", "exec", server_ns, "iperf3", "-s", "-1", "-p", str(HAND_PORT)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        argv = ["ip", "netns", "exec", client_ns, "iperf3", "-c", server_ip, "-p", str(HAND_PORT), "-t",
                str(duration), "-J", "-l", str(length)] + (["-u", "-b", bitrate] if protocol == "udp" else [])
        doc = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
        srv.wait(timeout=30)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    end = doc["end"]
    return (end.get("sum_received") or end["sum"])["bits_per_second"] / 1e6


def _cyclone_xml(own_ip: str, peers: list[str] | None) -> str:
    """The Cyclone DDS configuration as one would write it: multicast discovery, or static unicast peers."""
    disc = ("<ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>19</MaxAutoParticipantIndex><Peers>"
            + "".join(f'<Peer address="{p}"/>' for p in peers) + "</Peers>") if peers else ""
    mc = "false" if peers else "spdp"
    return (f'<CycloneDDS xmlns="https://cdds.io/config"><Domain Id="any"><General><Interfaces>'
            f'<NetworkInterface address="{own_ip}"/></Interfaces><AllowMulticast>{mc}</AllowMulticast></General>'
            f"<Discovery>{disc}</Discovery></Domain></CycloneDDS>")


_LAT = re.compile(r" 50% ([\d.]+)us 90% [\d.]+us 99% ([\d.]+)us max [\d.]+us cnt (\d+)")


def dds_by_hand(pub_ns: str, pub_ip: str, sub_ns: str, sub_ip: str, duration: int, peers: list[str] | None
                ) -> tuple[float, float]:
    """ddsperf pong + ping (64 B, reliable, -Qminmatch:1); (p50, p99) in us, count-weighted over ping's seconds."""
    common = ["ddsperf", "-i", "0", "-c"]
    pong = subprocess.Popen(["ip", "netns", "exec", sub_ns, "env", f"CYCLONEDDS_URI={_cyclone_xml(sub_ip, peers)}",
                             *common, "-D", "60", "-Qminmatch:1", "-Qinitwait:10", "pong"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(0.2)
        out = subprocess.run(["ip", "netns", "exec", pub_ns, "env", f"CYCLONEDDS_URI={_cyclone_xml(pub_ip, peers)}",
                              *common, "-D", str(duration), "-Qminmatch:1", "-Qinitwait:10", "ping", "size",
                              str(PAYLOAD_DDS)], capture_output=True, text=True, timeout=duration + 30).stdout
    finally:
        os.killpg(pong.pid, signal.SIGINT)
        try:
            pong.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(pong.pid, signal.SIGKILL)
            pong.wait()
    lines = [(float(a), float(b), int(n)) for a, b, n in _LAT.findall(out)]
    n = sum(c for *_, c in lines)
    if not n:
        raise RuntimeError(f"ddsperf ping by hand printed no latency line: {out[-300:]!r}")
    return sum(a * c for a, _, c in lines) / n, sum(b * c for _, b, c in lines) / n


def http_by_hand(client_ns: str, server_ns: str, server_ip: str, requests: int) -> float:
    """fortio server + `fortio load -c 1 -n N -qps -1` POSTing PAYLOAD_HTTP bytes to /echo; p50 of the calls, ms."""
    fortio = str(TOOLS / "fortio") if (TOOLS / "fortio").exists() else "fortio"
    work = Path(tempfile.mkdtemp(prefix="edgebench-bench-http-"))
    (work / "body").write_bytes(os.urandom(PAYLOAD_HTTP))
    srv = subprocess.Popen(["ip", "netns", "exec", server_ns, fortio, "server", "-http-port", str(HAND_PORT),
                            "-grpc-port", "disabled", "-redirect-port", "disabled", "-tcp-port", "disabled",
                            "-udp-port", "disabled", "-ui-path", ""], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, cwd=work)
    try:
        time.sleep(0.3)
        out = subprocess.run(["ip", "netns", "exec", client_ns, fortio, "load", "-c", "1", "-n", str(requests),
                              "-qps", "-1", "-X", "POST", "-payload-file", str(work / "body"),
                              "-content-type", "application/octet-stream", "-access-log-file", "/dev/stdout",
                              "-access-log-format", "json", f"http://{server_ip}:{HAND_PORT}/echo"],
                             capture_output=True, text=True, timeout=120, check=True).stdout
    finally:
        srv.terminate()
        srv.wait(timeout=10)
    ms = sorted(json.loads(line)["latency"] * 1000 for line in out.splitlines() if line.strip())
    k = (len(ms) - 1) * 0.5
    lo = int(k)
    return ms[lo] + (ms[min(lo + 1, len(ms) - 1)] - ms[lo]) * (k - lo)


# --- the sweep's side ------------------------------------------------------------------------------------------
def _pairs(quick: bool, reps: int | None = None) -> list[Row]:
    from edgebench.plan import spec
    from edgebench.plan.cells import expand, runs_for
    from edgebench.substrates.local.provider import LocalProvider
    from edgebench.substrates.local.testbed import Testbed
    from edgebench.sweep import phases

    default_reps, duration, requests = (3, 2, 200) if quick else (5, 3, 1000)
    reps = reps or default_reps
    prefix = os.environ.get("EDGEBENCH_TESTBED_PREFIX", "ebbench")
    os.environ["PATH"] = f"{TOOLS}:{os.environ['PATH']}"
    rows: list[Row] = []
    for cni in DATAPATHS:
        sweep = spec.load(REPO / "workflows" / "sweep.yaml", {
            "cnis": json.dumps([cni]), "workloads": '["iperf3:tcp","iperf3:udp","dds:latency","http:payload-echo"]',
            "duration": str(duration), "dds-duration": str(duration), "repetitions": str(reps),
            "iperf3-paths": '["pod-to-pod:cross-node"]', "dds-payloads": json.dumps([str(PAYLOAD_DDS)]),
            "http-payloads": json.dumps([str(PAYLOAD_HTTP)]), "http-requests": str(requests),
            "http-paths": '["pod-to-pod:cross-node"]'}, substrate="local")
        cell = expand(sweep)[0]
        tb = Testbed(prefix)
        docs: list[dict] = []
        work = Path(tempfile.mkdtemp(prefix="edgebench-bench-fidelity-"))
        ctx = phases.CellContext(sweep, cell, workdir=work / "state", results=work / "results",
                                 provider=LocalProvider(tb, cell=cell), log=lambda s: None,
                                 sink=lambda run, doc: docs.append(doc))
        got: dict[tuple[str, str], tuple[list[float], list[float]]] = {}

        def add(key, s, h):
            got.setdefault(key, ([], []))
            got[key][0].append(s)
            got[key][1].append(h)

        try:
            for phase in ("provision-cluster", "install-cni", "tune-nodes", "apply-netem"):
                phases.FUNCTIONS[phase](ctx)
            client, server = tb.client(), tb.server("cross-node")
            sub = tb.peers("cross-node")[0]
            dds_peers = None if cni == "host" else sorted({client.ip, sub.ip})
            for i, run in enumerate(runs_for(sweep, cell)):
                def sweep_side():
                    ctx.only = {run.run_id}
                    phases.run_workload(ctx, run.workload)
                    m = docs[-1]
                    if m["status"] != "ok":
                        raise RuntimeError(f"sweep run {run.label} {m['status']}: {m['error']}")
                    return m["metrics"]

                def hand_side():
                    if run.workload == "iperf3":
                        return iperf3_by_hand(client.ns, server.ns, server.ip, duration, run.protocol,
                                              run.length_bytes, run.params.get("bitrate", "0"))
                    if run.workload == "dds":
                        return dds_by_hand(client.ns, client.ip, sub.ns, sub.ip, duration, dds_peers)
                    return http_by_hand(client.ns, server.ns, server.ip, requests)

                if i % 2:  # alternate which side goes first
                    h = hand_side()
                    m = sweep_side()
                else:
                    m = sweep_side()
                    h = hand_side()
                if run.workload == "iperf3":
                    add((f"iperf3 {run.protocol} {cni}", "throughput", "Mbit/s"), m["throughput_mbps"], h)
                elif run.workload == "dds":
                    add((f"ddsperf latency {cni}", "p50", "us"), m["latency_p50_us"], h[0])
                    add((f"ddsperf latency {cni}", "p99", "us"), m["latency_p99_us"], h[1])
                else:
                    add((f"http fortio {cni}", "p50", "ms"), m["response_p50_ms"], h)
        finally:
            phases.teardown_cluster(ctx)
            tb.down()
        for (what, metric, unit), (s, h) in got.items():
            tol = 0.02 if what.startswith("iperf3") else 0.05
            ratio, lo, hi, sd_log = paired_ratio(s, h)
            # the project's one rule (results/report/verdict.py): the sweep against by hand, paired by pair, margin +-tol
            judged = compare(s, h, higher_is_better=True, pct=tol * 100, rounds_a=list(range(len(s))),
                             rounds_b=list(range(len(h))))
            ok, verdict = band_verdict(judged.verdict)
            needed = (len(s) + judged.runs_to_decide) if judged.runs_to_decide else None
            rows.append(Row(
                "fidelity", f"{what} {metric}: sweep / by hand", ratio, "ratio", f"{1 - tol:.2f}-{1 + tol:.2f}", ok,
                f"95% CI {lo:.3f}-{hi:.3f} (n={len(s)} interleaved pairs, geometric mean of the paired ratios); "
                f"sweep {statistics.mean(s):.4g} {unit} (sd {statistics.stdev(s) if len(s) > 1 else 0:.3g}), "
                f"by hand {statistics.mean(h):.4g} {unit} (sd {statistics.stdev(h) if len(h) > 1 else 0:.3g}); "
                f"sweep - by hand: {judged.text()}"
                + (f"; deciding needs about n={needed} pairs on this machine" if verdict and needed else ""),
                {"sweep": s, "by_hand": h, "unit": unit, "duration_s": duration, "ci95": [lo, hi],
                 "ratio_of_means": statistics.mean(s) / statistics.mean(h), "sd_log_ratio": sd_log,
                 "pairs_for_band": needed, "requests": requests if what.startswith("http") else None},
                verdict=verdict))
    return rows


def run(quick: bool, reps: int | None = None) -> list[Row]:
    return _pairs(quick, reps)


def _pair_count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of pairs (a whole number, at least 2: "
                                         "a confidence interval needs two)")
    return n


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 pairs of 2 s runs (development; figures are rough)")
    ap.add_argument("--reps", type=_pair_count, metavar="N",
                    help="interleaved pairs per workload (at least 2; default 5, 3 with --quick): "
                         "what an inconclusive row says a decision would need")
    a = ap.parse_args()
    for r in run(a.quick, a.reps):
        print(f"{r.name}: {r.value:.3f} (target {r.target}, {r.verdict or ('meets' if r.ok else 'MISSES')}) "
              f"{r.detail}")
