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
import subprocess
from typing import Any, Sequence

from edgebench import sh
from edgebench.drivers.ddsperf.command import INIT_WAIT, cyclone_config
from edgebench.drivers.ddsperf.parser import BATCHINGS, DISCOVERIES, RELIABILITIES, TRANSPORTS, summarize
from edgebench.drivers.ddsperf.run import popen, stop
from edgebench.drivers.ddsperf.scan import DdsperfError
from edgebench.drivers.ddsrr.command import MAX_SUBSCRIBERS, MIN_SIZE, TOOL, ping_cmd, pong_cmd
from edgebench.drivers.ddsrr.parser import parse_ping


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
        pongs = [popen(ep, pong_cmd(k, reliability, limit, domain), xml(ep)) for k, ep in enumerate(subs)]
        procs += pongs
        ping = popen(pub, ping_cmd(len(subs), payload, duration, reliability, domain, init_wait, timeout_ms),
                      xml(pub))
        procs.append(ping)
        try:
            out, _ = ping.communicate(timeout=limit)
            rc = ping.returncode
        except subprocess.TimeoutExpired:
            out, rc = stop(ping), None
            error = f"ping: {TOOL} did not finish within {limit:g}s"
        raw["ddsrr-ping.log"] = out
        for k, proc in enumerate(pongs):
            raw[f"ddsrr-pong-{k}.log"] = stop(proc)
    finally:
        for proc in procs:
            if proc.poll() is None:
                stop(proc, grace=1.0)
    text = raw["ddsrr-ping.log"].decode(errors="replace")
    try:
        samples, totals = parse_ping(text)
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
