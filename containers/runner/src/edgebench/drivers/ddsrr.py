"""edgebench-ddsrr driver: DDS latency with several subscribers, each ping answered by one of them in turn (seed 000,
Fig. 7 and Eq. 1; seed 002, Fig. 4). The pinger is edgebench's own, on Cyclone DDS's C API (containers/ddsrr,
built by `make tools`): ddsperf's ping is answered by every pong, so its N-th answer's round trip includes the N-1
answers handled before it, the error the paper's round robin avoids.

Output formats (docs/tool-formats/ddsrr.md; containers/ddsrr/main.c prints them):

  ping, one line per second, then a total (latency = RTT/2, over the pings answered in that second):
    ddsrr-ping t 1.000 subscribers 4 size 64 cnt 9071 mean 52.31us min 40.11us 50% 50.02us 90% 61.40us 99% 90.12us
               max 301.20us timeouts 0
    ddsrr-ping total sent 9071 answered 9071 timeouts 0 per-subscriber 2268 2268 2268 2267
  pong, one line when it stops:
    ddsrr-pong index 2 answered 2268

The per-second lines become the same dds-samples.json rows as ddsperf's ping lines (role "ping"), and the run's
metrics come from the same summarize(), so the warehouse treats both alike; the manifest says which pinger ran.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any, Sequence

from edgebench import sh
from edgebench.drivers.ddsperf import _popen, _stop
from edgebench.drivers.ddsperf_cmds import INIT_WAIT, cyclone_config
from edgebench.drivers.ddsperf_parse import (BATCHINGS, DISCOVERIES, RELIABILITIES, SAMPLE_KEYS, TRANSPORTS,
                                             DdsperfError, _checknum, summarize)

TOOL = "edgebench-ddsrr"
MIN_SIZE = 12  # seq + target + the baggage's length: the smallest sample the pinger sends
MAX_SUBSCRIBERS = 64

_NUM = r"(\S+?)"
_SECOND = re.compile(rf"^ddsrr-ping t {_NUM} subscribers (\d+) size (\d+) cnt (\d+)"
                     rf"(?: mean {_NUM}us min {_NUM}us 50% {_NUM}us 90% {_NUM}us 99% {_NUM}us max {_NUM}us)?"
                     r" timeouts (\d+)$")
_TOTAL = re.compile(r"^ddsrr-ping total sent (\d+) answered (\d+) timeouts (\d+) per-subscriber((?: \d+)+)$")
_FIELDS = (("latency_mean_us", "mean"), ("latency_min_us", "min"), ("latency_p50_us", "p50"),
           ("latency_p90_us", "p90"), ("latency_p99_us", "p99"), ("latency_max_us", "max"))


def ping_cmd(subscribers: int, payload: int, duration: float, reliability: str, domain: int,
             init_wait: float = INIT_WAIT, timeout_ms: int = 1000) -> list[str]:
    return [TOOL, "ping", "-n", str(subscribers), "-s", str(payload), "-D", f"{duration:g}", "-r", reliability,
            "-t", str(timeout_ms), "-w", f"{init_wait:g}", "-i", str(domain)]


def pong_cmd(index: int, reliability: str, duration: float, domain: int) -> list[str]:
    return [TOOL, "pong", "-k", str(index), "-r", reliability, "-D", f"{duration:g}", "-i", str(domain)]


def parse(text: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(samples, totals) of a ping's output: one dds-samples.json row per second that had answers (SAMPLE_KEYS,
    role "ping") and {sent, answered, timeouts, per_subscriber}. DdsperfError for an error line, a malformed line,
    a missing total, or a total that disagrees with the seconds."""
    samples: list[dict[str, Any]] = []
    totals: dict[str, Any] | None = None
    seconds_cnt = seconds_timeouts = 0
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith("ddsrr-ping") and not line.startswith("error:"):
            continue
        if line.startswith("error:"):
            raise DdsperfError(f"ping: {line.removeprefix('error:').strip()}")
        if m := _SECOND.match(line):
            t, subs, size, cnt, *vals, timeouts = m.groups()
            where = f"line {n}"
            seconds_cnt += int(cnt)
            seconds_timeouts += int(timeouts)
            if int(cnt) == 0:
                continue
            if vals[0] is None:
                raise DdsperfError(f"{where}: {cnt} answers but no latency figures: {line!r}")
            row = dict.fromkeys(SAMPLE_KEYS)
            row.update(role="ping", t_s=_checknum("t", t, where), peer=f"round-robin/{int(subs)}",
                       latency_count=int(cnt))
            for (key, limit), v in zip(_FIELDS, vals):
                row[key] = _checknum(limit, v, where)
            samples.append(row)
        elif m := _TOTAL.match(line):
            per = [int(x) for x in m.group(4).split()]
            totals = {"sent": int(m.group(1)), "answered": int(m.group(2)), "timeouts": int(m.group(3)),
                      "per_subscriber": per}
        else:
            raise DdsperfError(f"line {n} is no ddsrr-ping line edgebench knows: {line!r}")
    if totals is None:
        raise DdsperfError("ping: no total line (the pinger did not finish)")
    if totals["answered"] != seconds_cnt or totals["timeouts"] != seconds_timeouts or \
            sum(totals["per_subscriber"]) != totals["answered"]:
        raise DdsperfError(f"ping: the total ({totals}) disagrees with the per-second lines ({seconds_cnt} answered, "
                           f"{seconds_timeouts} timeouts)")
    return samples, totals


def measure(pub, subs: Sequence, *, payload: int, duration: float, reliability: str, transport: str,
            discovery: str, peers: Sequence[str] | None, domain: int = 0, init_wait: float = INIT_WAIT,
            timeout_extra: float = 60, batching: str = "on", timeout_ms: int = 1000
            ) -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
    """One round-robin latency run: the pinger on `pub`, pong k on subs[k] (several may share a namespace). Returns
    (raw files, metrics or None, error or None) as ddsperf.measure does; the raw output is kept when the run
    failed. `timeout_ms`: how long the pinger waits for the named subscriber's answer before the next ping."""
    raw: dict[str, bytes] = {}
    checks = ((transport, TRANSPORTS, "transport"), (discovery, DISCOVERIES, "discovery"),
              (reliability, RELIABILITIES, "reliability"), (batching, BATCHINGS, "batching"))
    for value, allowed, what in checks:
        if value not in allowed:
            return raw, None, f"{what} must be one of {allowed}, not {value!r}"
    if not 1 <= len(subs) <= MAX_SUBSCRIBERS:
        return raw, None, f"the round-robin pinger takes 1..{MAX_SUBSCRIBERS} subscribers, not {len(subs)}"
    if payload < MIN_SIZE:
        return raw, None, f"unsupported: a {payload} B sample: the round-robin pinger's smallest is {MIN_SIZE} B"
    if sh.which(TOOL) is None:
        return raw, None, f"{TOOL} is not installed (`make tools` builds it from containers/ddsrr)"
    if discovery == "static-peers" and not peers:
        peers = list(dict.fromkeys([pub.ip, *(s.ip for s in subs)]))

    def xml(ep) -> str:
        return cyclone_config(discovery, peers, transport == "multicast", None, interface=ep.ip, batching=batching)

    limit = init_wait + duration + timeout_extra
    procs: list[subprocess.Popen] = []
    error = None
    try:
        pongs = [_popen(ep, pong_cmd(k, reliability, limit, domain), xml(ep)) for k, ep in enumerate(subs)]
        procs += pongs
        ping = _popen(pub, ping_cmd(len(subs), payload, duration, reliability, domain, init_wait, timeout_ms),
                      xml(pub))
        procs.append(ping)
        try:
            out, _ = ping.communicate(timeout=limit)
            rc = ping.returncode
        except subprocess.TimeoutExpired:
            out, rc = _stop(ping), None
            error = f"ping: {TOOL} did not finish within {limit:g}s"
        raw["ddsrr-ping.log"] = out
        for k, proc in enumerate(pongs):
            raw[f"ddsrr-pong-{k}.log"] = _stop(proc)
    finally:
        for proc in procs:
            if proc.poll() is None:
                _stop(proc, grace=1.0)
    text = raw["ddsrr-ping.log"].decode(errors="replace")
    try:
        samples, totals = parse(text)
    except DdsperfError as exc:
        samples, totals, error = [], None, error or str(exc)
    if error is None and rc not in (0, None):
        error = f"ping: {TOOL} exited with {rc}: {text.strip()[-300:]}"
    raw["dds-samples.json"] = json.dumps(samples, indent=1).encode()
    if totals is not None:
        raw["ddsrr-totals.json"] = json.dumps(totals).encode()
    if error:
        return raw, None, error
    try:
        metrics = summarize("latency", samples, {})
    except DdsperfError as exc:
        return raw, None, f"ping: {exc} ({totals['timeouts']} of {totals['sent']} pings timed out)"
    return raw, metrics, None


def version() -> str:
    """The pinger is edgebench's own: the digest of the binary that ran (as the netem emulator's); the Cyclone DDS
    it links is ddsperf's (the same libddsc)."""
    return sh.digest(TOOL) or "not installed"
