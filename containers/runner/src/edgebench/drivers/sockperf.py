"""sockperf driver: TCP or UDP request/response latency (ping-pong), the probe of seed 003's latency figures.

One client sends a message of `length` bytes and waits for the server's reply of the same size before it sends the
next, for `duration` seconds (`sockperf ping-pong`, `--no-rdtsc`: the monotonic clock rather than the TSC, which
virtual machines and qemu do not keep steady). sockperf reports latency as half the round-trip time, as ddsperf
does for DDS; its summary gives the mean, the standard deviation and fixed percentiles (docs/tool-formats/sockperf.md).

`parse` is pure: it takes the client's output and returns the metrics record, or raises SockperfError naming what
is missing or out of range. No other exception escapes it.
"""
from __future__ import annotations

import re
import subprocess
from typing import Any

from edgebench import sh
from edgebench.drivers import listening

MIN_LENGTH, MAX_LENGTH = 14, 65000  # sockperf's smallest message (its header); a UDP datagram's payload fits 65000
MAX_LATENCY_US = 10_000_000.0  # 10 s: a half round trip beyond this is a broken clock or output, not a network

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_VALID = re.compile(r"\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)")
_AVG = re.compile(r"avg-latency=([0-9.]+) \(std-dev=([0-9.]+)")
_DROPPED = re.compile(r"# dropped messages = (\d+); # duplicated messages = (\d+); # out-of-order messages = (\d+)")
_PCT = re.compile(r"---> percentile +([0-9.]+) = +([0-9.]+)")
_EDGE = re.compile(r"---> <(MAX|MIN)> observation = +([0-9.]+)")
_OBS = re.compile(r"Total (\d+) observations")


class SockperfError(ValueError):
    """The client's output is not a complete, sane sockperf ping-pong summary."""


def server_cmd(protocol: str, ip: str, port: int) -> list[str]:
    return ["sockperf", "server", *(["--tcp"] if protocol == "tcp" else []), "-i", ip, "-p", str(port)]


def client_cmd(protocol: str, target: str, port: int, length: int, duration: int) -> list[str]:
    return ["sockperf", "ping-pong", *(["--tcp"] if protocol == "tcp" else []), "-i", target, "-p", str(port),
            "-m", str(length), "-t", str(duration), "--no-rdtsc"]


def parse(text: str) -> dict[str, Any]:
    """The metrics of one ping-pong run: latency_{mean,min,p50,p90,p99,max}_us (half round trips), its standard
    deviation, the observations they come from, messages sent/received in the valid window and the drops."""
    t = _ANSI.sub("", text)
    error = re.search(r"ERROR: ?(.+)", t)
    if error:
        raise SockperfError(f"sockperf: {error.group(1).strip()[:300]}")
    if "No valid observations" in t:
        raise SockperfError("sockperf found no valid observations (the run is shorter than its warm-up and "
                            "edges: use 2 s or more)")
    valid, avg, obs = _VALID.search(t), _AVG.search(t), _OBS.search(t)
    if not valid:
        raise SockperfError("sockperf output has no '[Valid Duration]' line: the run did not finish")
    if not avg:
        raise SockperfError("sockperf output has no 'avg-latency=' line")
    pct = {float(p): float(v) for p, v in _PCT.findall(t)}
    edges = {k: float(v) for k, v in _EDGE.findall(t)}
    for want in (50.0, 90.0, 99.0):
        if want not in pct:
            raise SockperfError(f"sockperf output has no 'percentile {want:.3f}' line")
    if set(edges) != {"MAX", "MIN"}:
        raise SockperfError("sockperf output lacks its <MIN> or <MAX> observation")
    out = {"latency_mean_us": float(avg.group(1)), "latency_stddev_us": float(avg.group(2)),
           "latency_min_us": edges["MIN"], "latency_p50_us": pct[50.0], "latency_p90_us": pct[90.0],
           "latency_p99_us": pct[99.0], "latency_max_us": edges["MAX"],
           "latency_count": int(obs.group(1)) if obs else int(valid.group(3)),
           "valid_seconds": float(valid.group(1)), "sent_messages": int(valid.group(2)),
           "received_messages": int(valid.group(3))}
    dropped = _DROPPED.search(t)
    out["dropped_messages"] = int(dropped.group(1)) if dropped else None
    if out["latency_count"] < 1 or out["received_messages"] < 1:
        raise SockperfError("sockperf received no reply in its valid window")
    order = [out[k] for k in ("latency_min_us", "latency_p50_us", "latency_p90_us", "latency_p99_us",
                              "latency_max_us")]
    if any(not 0 <= v <= MAX_LATENCY_US for v in order):
        raise SockperfError(f"sockperf latency out of range (0..{MAX_LATENCY_US:g} us): {order}")
    if order != sorted(order):
        raise SockperfError(f"sockperf percentiles are not in order (min, p50, p90, p99, max = {order})")
    return out


def version() -> str:
    try:
        out = sh.call(["sockperf", "--version"], capture_output=True, text=True, timeout=10).stdout
    except FileNotFoundError:
        return "missing"
    return _ANSI.sub("", out).strip().split("\n", 1)[0].strip()


def measure(client, server, target: str, port: int, protocol: str, length: int,
            duration: int) -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
    """One ping-pong run: the server in `server`'s namespace (listening on all its addresses), the client in
    `client`'s, dialling `target`. Returns (raw files, metrics or None, error or None); the raw output is kept
    even when the run failed."""
    srv = sh.popen(server.cmd(server_cmd(protocol, "0.0.0.0", port)), stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT)
    raw: dict[str, bytes] = {}
    try:
        listening.wait(server.cmd([]), protocol, port, srv, "sockperf", SockperfError)
        cli = sh.call(client.cmd(client_cmd(protocol, target, port, length, duration)), capture_output=True,
                      timeout=duration + 60)
        raw["sockperf-client.txt"] = cli.stdout
        if cli.stderr:
            raw["sockperf-client.stderr"] = cli.stderr
        if cli.returncode != 0 and not cli.stdout.strip():
            last = (cli.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            return raw, None, f"sockperf client failed (exit code {cli.returncode}): {last[:300]}"
        return raw, parse(cli.stdout.decode(errors="replace")), None
    except (SockperfError, subprocess.TimeoutExpired) as exc:
        return raw, None, str(exc)
    finally:
        if srv.poll() is None:
            srv.kill()
        try:
            out, _ = srv.communicate(timeout=5)
            raw["sockperf-server.txt"] = out or b""
        except subprocess.TimeoutExpired:
            pass
