"""Reading the sockperf ping-pong client's summary (pure; docs/tool-formats/sockperf.md): `parse_metrics` gives the
metrics, `parse` the Record, or SockperfError naming what is missing or out of range. No other exception escapes."""
from __future__ import annotations

import re
from typing import Any

from edgebench.drivers.protocol import Record

MAX_LATENCY_US = 10_000_000.0  # 10 s: a half round trip beyond this is a broken clock or output, not a network

ANSI = re.compile(r"\x1b\[[0-9;]*m")
_VALID = re.compile(r"\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)")
_AVG = re.compile(r"avg-latency=([0-9.]+) \(std-dev=([0-9.]+)")
_DROPPED = re.compile(r"# dropped messages = (\d+); # duplicated messages = (\d+); # out-of-order messages = (\d+)")
_PCT = re.compile(r"---> percentile +([0-9.]+) = +([0-9.]+)")
_EDGE = re.compile(r"---> <(MAX|MIN)> observation = +([0-9.]+)")
_OBS = re.compile(r"Total (\d+) observations")


class SockperfError(ValueError):
    """The client's output is not a complete, sane sockperf ping-pong summary."""


def parse_metrics(text: str) -> dict[str, Any]:
    """The metrics of one ping-pong run: latency_{mean,min,p50,p90,p99,max}_us (half round trips), its standard
    deviation, the observations they come from, messages sent/received in the valid window and the drops."""
    t = ANSI.sub("", text)
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


def parse(text: str) -> Record:
    """The Record of one client output: its metrics, no per-sample rows."""
    return {"tool": "sockperf", "metrics": parse_metrics(text), "samples": []}
