"""Cyclone DDS `ddsperf` driver (workload "dds", see docs/results-layout.md "DDS runs").

Command builders, `cyclone_config` and the parsers are pure; `measure` runs the processes in the endpoints'
network namespaces. Output formats are those of ddsperf 0.10 (src/tools/ddsperf/ddsperf.c, cputime.c):

  latency (ping side, one line per pong peer, RTT/2):
    [pid] 2.000  host:pid size 64 mean 8.034us min 7.420us 50% 7.701us 90% 8.172us 99% 19.669us max 2140.788us cnt 61859
  throughput (sub side, one line per subscriber process, all publishers summed):
    [pid] 2.001  size 1024 total 254839 lost 0 delta 182491 lost 0 rate 182.48 kS/s 1494.90 Mb/s (25.48 kS/s 208.75 Mb/s)
  own CPU/RSS (threads below 0.5% are left out; rss is the process's *peak* RSS, getrusage maxrss):
    [pid] 2.000  rss:7.6MB vcsw:31640 ivcsw:30251 recvUC:7%+42% ddsperf:0%+1%
  a peer's CPU/RSS (only with -c): same with "(stale)" and/or "@host:pid" before rss.
These formats are unchanged from 0.8 to master (docs/tool-formats/ddsperf.md has the source lines). The parsers
never return a number ddsperf cannot have printed: malformed lines, NaN/negative/absurd values and a ping or sub
that measured nothing raise DdsperfError, which measure() records as the run's error; `normalize` gives the
`edgebench parse`/`import` record of one process's output.

DDS Security (security="auth-encrypt"): see the "DDS Security material" section; throwaway certificates and signed
governance/permissions are made with openssl per run, and the run's raw files gain dds-security.json.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence
from xml.sax.saxutils import escape, quoteattr

from edgebench.errors import EdgebenchError

MODES = ("latency", "throughput")
RELIABILITIES = ("reliable", "best-effort")
TRANSPORTS = ("unicast", "multicast")
DISCOVERIES = ("multicast", "static-peers")
SECURITIES = ("none", "auth-encrypt")

# Participant indices probed by unicast (static-peers) discovery: index i listens on 7400+250*domain+10+2*i.
# 13 ddsperf processes on one host (1 pub + 12 subs) need indices 0..12; leave some headroom.
MAX_PARTICIPANT_INDEX = 19

# seconds ddsperf may wait for all peers to match before giving up (-Qinitwait)
INIT_WAIT = 10.0

SAMPLE_KEYS = ("t_s", "role", "subscriber", "peer", "latency_mean_us", "latency_min_us", "latency_p50_us",
               "latency_p90_us", "latency_p99_us", "latency_max_us", "latency_count", "samples_per_s",
               "throughput_mbps", "lost_samples")

# Lines of one ddsperf process (0.10.x and master print them with the same formats, src/tools/ddsperf/ddsperf.c
# print_stats/latencystat_print, cputime.c print_cputime): "[pid] " then, for the per-second lines, "%.3f " seconds
# since the process started, then one of the bodies below. Values are captured loosely (\S+) and checked by
# _checknum, so a malformed number gives an error naming the field instead of a silently skipped line.
_PREFIX = r"^\[(?P<pid>\d+)\]\s+(?P<t>\S+)\s+"
_LAT_BODY = (r"(?P<sublat>sublat\s+)?(?P<peer>\S+)\s+size\s+(?P<size>\S+)\s+mean\s+(?P<mean>\S+?)us\s+"
             r"min\s+(?P<min>\S+?)us\s+50%\s+(?P<p50>\S+?)us\s+90%\s+(?P<p90>\S+?)us\s+99%\s+(?P<p99>\S+?)us\s+"
             r"max\s+(?P<max>\S+?)us\s+cnt\s+(?P<cnt>\S+)\s*$")
_SUB_BODY = (r"size\s+(?P<size>\S+)\s+total\s+(?P<total>\S+)\s+lost\s+(?P<totlost>\S+)\s+delta\s+(?P<delta>\S+)\s+"
             r"lost\s+(?P<lost>\S+)\s+rate\s+(?P<ksps>\S+)\s+kS/s\s+(?P<mbps>\S+)\s+Mb/s"
             r"(?:\s+\((?P<ksps10>\S+)\s+kS/s\s+(?P<mbps10>\S+)\s+Mb/s\))?\s*$")
_CPU_BODY = (r"(?P<stale>\(stale\)\s+)?(?:@(?P<peer>\S+)\s+)?(?:rss:(?P<rss>\S+?)(?P<unit>[kMG]B)\s+)?"
             r"vcsw:(?P<vcsw>\S+)\s+ivcsw:(?P<ivcsw>\S+)(?P<threads>(?:\s+\S+)*)\s*$")
LAT_RE = re.compile(_PREFIX + _LAT_BODY)
SUB_RE = re.compile(_PREFIX + _SUB_BODY)
CPU_RE = re.compile(_PREFIX + _CPU_BODY)
THREAD_RE = re.compile(r"^(?P<name>\S+):(?P<u>[^%\s]+)%\+(?P<s>[^%\s]+)%$")
# the publisher's rate histogram (hist_print, "pub" with any rate): "[pid] 1.000  190k/s   0n |@--_...|   0%   7m"
_HIST_BODY = re.compile(r"^\s*\S+/s\s+.*\|.*\|\s+\d+%")


class DdsperfError(EdgebenchError):
    """ddsperf could not run or its output could not be interpreted."""


# --- commands -------------------------------------------------------------------------------------

def _common(duration: float | None, reliability: str, domain: int, minmatch: int | None,
            init_wait: float | None) -> list[str]:
    if reliability not in RELIABILITIES:
        raise ValueError(f"reliability must be one of {RELIABILITIES}, not {reliability!r}")
    argv = ["ddsperf", "-i", str(int(domain)), "-c"]
    if duration is not None:
        argv += ["-D", _num(duration)]
    if reliability == "best-effort":
        argv.append("-u")
    if minmatch:
        argv.append(f"-Qminmatch:{int(minmatch)}")
        if init_wait:
            argv.append(f"-Qinitwait:{_num(init_wait)}")
    return argv


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{float(x):g}"


def _rate(rate: str | float | int | None) -> list[str]:
    if rate is None or str(rate) == "inf":
        return []
    if float(rate) <= 0:
        raise ValueError(f"rate must be 'inf' or > 0, not {rate!r}")
    return [f"{_num(float(rate))}Hz"]


def ping_cmd(payload: int, duration: float, reliability: str = "reliable", rate: str | float | None = None,
             domain: int = 0, *, minmatch: int = 1, init_wait: float = INIT_WAIT) -> list[str]:
    """Latency initiator: without a rate the next ping goes out as soon as all pongs are in (ping-pong)."""
    return [*_common(duration, reliability, domain, minmatch, init_wait), "ping", *_rate(rate),
            "size", str(int(payload))]


def pong_cmd(duration: float | None, reliability: str = "reliable", domain: int = 0, *, minmatch: int = 1,
             init_wait: float = INIT_WAIT) -> list[str]:
    return [*_common(duration, reliability, domain, minmatch, init_wait), "pong"]


def pub_cmd(payload: int, duration: float, reliability: str = "reliable", rate: str | float | None = "inf",
            domain: int = 0, *, minmatch: int = 1, init_wait: float = INIT_WAIT) -> list[str]:
    """Throughput publisher; `minmatch` = number of subscriber processes it must match before publishing."""
    return [*_common(duration, reliability, domain, minmatch, init_wait), "pub", *_rate(rate),
            "size", str(int(payload))]


def sub_cmd(duration: float | None, reliability: str = "reliable", domain: int = 0) -> list[str]:
    """Throughput subscriber; `-1` prints a stats line every second even when nothing arrived. No minmatch:
    subscribers also see each other, so matching is checked on the publisher (its -Qminmatch)."""
    return [*_common(duration, reliability, domain, None, None), "-1", "sub"]


def cyclone_config(discovery: str, peers: Sequence[str] | None, allow_multicast: bool,
                   security: dict[str, str] | None = None, *, interface: str | None = None,
                   max_participant_index: int = MAX_PARTICIPANT_INDEX) -> str:
    """XML for CYCLONEDDS_URI (element names from docs/manual/config/config_file_reference.rst).

    General/AllowMulticast:
      discovery=multicast,    allow_multicast (multicast data)  -> true
      discovery=multicast,    not allow_multicast               -> spdp (multicast only for participant discovery)
      discovery=static-peers, not allow_multicast               -> false (no multicast at all)
      discovery=static-peers, allow_multicast                   -> asm (data may use multicast; note SPDP then
                                                                   also goes to 239.255.0.1 besides the peers)
    Static peers need Discovery/ParticipantIndex=auto (the 0.10 default "none" uses random ports, making unicast
    discovery impossible) and MaxAutoParticipantIndex >= participants per host - 1.
    `security`: optional {"Library...": ...} dict rendered as Domain/Security (see security_config()).
    """
    if discovery not in DISCOVERIES:
        raise ValueError(f"discovery must be one of {DISCOVERIES}, not {discovery!r}")
    static = discovery == "static-peers"
    if static and not peers:
        raise ValueError("static-peers discovery needs at least one peer address")
    mc = {(False, True): "true", (False, False): "spdp", (True, False): "false", (True, True): "asm"}[
        (static, bool(allow_multicast))]
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<CycloneDDS xmlns="https://cdds.io/config">',
             '  <Domain Id="any">',
             '    <General>']
    if interface:
        lines.append(f"      <Interfaces><NetworkInterface address={quoteattr(interface)}/></Interfaces>")
    lines += [f"      <AllowMulticast>{mc}</AllowMulticast>",
              "    </General>",
              "    <Discovery>"]
    if static:
        lines += ["      <ParticipantIndex>auto</ParticipantIndex>",
                  f"      <MaxAutoParticipantIndex>{int(max_participant_index)}</MaxAutoParticipantIndex>",
                  "      <Peers>"]
        lines += [f"        <Peer address={quoteattr(p)}/>" for p in peers or ()]
        lines += ["      </Peers>"]
    lines.append("    </Discovery>")
    if security:
        lines.append(_security_xml(security))
    lines += ["  </Domain>", "</CycloneDDS>"]
    return "\n".join(lines) + "\n"


def _security_xml(sec: dict[str, str]) -> str:
    """Domain/Security (element names: config_file_reference.rst "//CycloneDDS/Domain/Security"). Values are
    URIs (`file:/abs/path`); Library@path is the plugin's absolute file name (see security_config())."""
    def lib(kind: str) -> str:
        path = sec[f"{kind}_library"]
        init = {"auth": "init_authentication", "ac": "init_access_control", "crypto": "init_crypto"}[kind]
        fini = {"auth": "finalize_authentication", "ac": "finalize_access_control", "crypto": "finalize_crypto"}[kind]
        return f'<Library path={quoteattr(path)} initFunction="{init}" finalizeFunction="{fini}"/>'

    def el(tag: str, key: str) -> str:
        return f"<{tag}>{escape(sec[key])}</{tag}>"
    return "\n".join([
        "    <Security>",
        "      <Authentication>",
        f"        {lib('auth')}",
        f"        {el('IdentityCA', 'identity_ca')}",
        f"        {el('IdentityCertificate', 'identity_cert')}",
        f"        {el('PrivateKey', 'private_key')}",
        "      </Authentication>",
        "      <AccessControl>",
        f"        {lib('ac')}",
        f"        {el('PermissionsCA', 'permissions_ca')}",
        f"        {el('Governance', 'governance')}",
        f"        {el('Permissions', 'permissions')}",
        "      </AccessControl>",
        "      <Cryptographic>",
        f"        {lib('crypto')}",
        "      </Cryptographic>",
        "    </Security>"])


# --- parsing --------------------------------------------------------------------------------------
#
# One process's output is scanned once (_scan): every per-second latency, throughput and CPU/RSS line must be
# well formed, hold finite, non-negative values within LIMITS and be consistent the way ddsperf's own arithmetic
# guarantees (min <= percentiles <= max, delta <= total); no second may be reported twice; all lines come from one
# pid. Anything else raises DdsperfError: a run never yields numbers from output ddsperf cannot have printed. A final
# line without its newline is taken as cut off (ddsperf ends every line with one) and ignored.

ROLES = ("ping", "pong", "pub", "sub")

# field -> (lowest, highest, what it is)
LIMITS: dict[str, tuple[float, float, str]] = {
    "t": (0, 1e7, "time (s)"),
    "size": (0, 2 ** 32, "size (bytes)"),
    "mean": (0, 1e9, "mean latency (us)"),
    "min": (0, 1e9, "min latency (us)"),
    "p50": (0, 1e9, "50% latency (us)"),
    "p90": (0, 1e9, "90% latency (us)"),
    "p99": (0, 1e9, "99% latency (us)"),
    "max": (0, 1e9, "max latency (us)"),
    "cnt": (1, 1e10, "latency count"),
    "total": (0, 1e15, "total samples"),
    "totlost": (0, 1e15, "total lost samples"),
    "delta": (0, 1e12, "samples in the second"),
    "lost": (0, 1e12, "lost samples in the second"),
    "ksps": (0, 1e6, "rate (kS/s)"),
    "mbps": (0, 1e7, "rate (Mb/s)"),
    "ksps10": (0, 1e6, "10 s rate (kS/s)"),
    "mbps10": (0, 1e7, "10 s rate (Mb/s)"),
    "rss": (0, 1e7, "rss (MB)"),
    "vcsw": (0, 2 ** 32, "vcsw"),
    "ivcsw": (0, 2 ** 32, "ivcsw"),
    "thread": (0, 1e4, "thread CPU (%)"),
    "cpu": (0, 1e5, "process CPU (%)"),
}
_INTS = {"size", "cnt", "total", "totlost", "delta", "lost", "vcsw", "ivcsw", "thread"}
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|[-+]?(nan|inf|infinity)", re.I)


def _snippet(text: str) -> str:
    return json.dumps(text[:200], ensure_ascii=False) if text else "(empty output)"


def _checknum(field: str, tok: Any, where: str, scale: float = 1.0) -> float:
    """One checked number: finite, not negative, a whole number for counts, within LIMITS[field] (after scale)."""
    what = LIMITS[field][2]
    if isinstance(tok, bool) or not isinstance(tok, (str, int, float)):
        raise DdsperfError(f"{where}: {what} is {tok!r}, not a number")
    if isinstance(tok, str):
        if not _NUMBER.fullmatch(tok):
            raise DdsperfError(f"{where}: {what} is {tok[:40]!r}, not a number")
        x = float(tok)
    else:
        try:
            x = float(tok)
        except OverflowError:
            raise DdsperfError(f"{where}: {what} is too large") from None
    if math.isnan(x):
        raise DdsperfError(f"{where}: {what} is NaN")
    if math.isinf(x):
        raise DdsperfError(f"{where}: {what} is infinite")
    if x < 0:
        raise DdsperfError(f"{where}: {what} is negative ({x:g})")
    if field in _INTS and x != int(x):
        raise DdsperfError(f"{where}: {what} is {x:g}, not a whole number")
    x *= scale
    lo, hi, _ = LIMITS[field]
    if not lo <= x <= hi:
        raise DdsperfError(f"{where}: {what} {x:g} is outside {lo:g}..{hi:g}")
    return x


class _Scan:
    """The checked contents of one process's output."""

    def __init__(self) -> None:
        self.lat: list[dict[str, Any]] = []      # latency lines (ping: "peer size ..."; sub -l: "sublat peer ...")
        self.tp: list[dict[str, Any]] = []       # throughput lines (sub)
        self.own: list[tuple[float, float, float | None, list[str]]] = []   # (t, cpu %, rss MB, thread names)
        self.peers: dict[str, list[tuple[float, float | None]]] = {}        # host:pid -> [(cpu %, rss MB)]
        self.hist = 0                             # publisher rate histogram lines
        self.ping_timeouts = 0
        self.pid: int | None = None


def _lines(text: str) -> list[tuple[int, str]]:
    lines = text.split("\n")
    lines.pop()  # "" after the final newline, or a cut off last line
    return [(i, ln.rstrip("\r")) for i, ln in enumerate(lines, 1)]


def _scan(text: str) -> _Scan:
    if not isinstance(text, str):
        raise DdsperfError(f"ddsperf output must be text, not {type(text).__name__}")
    sc = _Scan()
    pids: set[int] = set()
    seen: dict[tuple, int] = {}

    def once(key: tuple, n: int) -> None:
        if key in seen:
            raise DdsperfError(f"line {n} repeats line {seen[key]} (the same second reported twice: two outputs "
                               "in one?)")
        seen[key] = n

    for n, line in _lines(text):
        m = re.match(r"^\[(\d+)\]\s", line)
        if not m:
            continue
        if len(m.group(1)) > 10:
            raise DdsperfError(f"line {n}: pid {m.group(1)[:20]} is not a process id")
        pids.add(int(m.group(1)))
        if len(pids) > 1:
            raise DdsperfError(f"line {n}: output of more than one ddsperf process (pids "
                               f"{', '.join(map(str, sorted(pids)))})")
        parts = line.split(None, 2)
        if len(parts) < 3:
            continue
        tok, rest = parts[1], parts[2]
        if "ping timed out" in line:
            sc.ping_timeouts += 1
        if not re.match(r"^([-+.\d]|nan|inf)", tok, re.I):
            continue  # "[pid] participant ...", "[pid] error: ...", "[pid] ping timed out ..."
        where = f"line {n}"
        if re.search(r"(^|\s)size\s+\S+\s+mean\s", rest):
            lm = re.match(_LAT_BODY, rest)
            if not lm:
                raise DdsperfError(f"{where}: malformed ddsperf latency line: {line[:160]!r}")
            t = _checknum("t", tok, where)
            g = lm.groupdict()
            v = {f: _checknum(f, g[f], where) for f in ("size", "mean", "min", "p50", "p90", "p99", "max", "cnt")}
            for a, b in (("min", "p50"), ("p50", "p90"), ("p90", "p99"), ("p99", "max"), ("min", "mean"),
                         ("mean", "max")):
                if v[a] > v[b] + 0.0015 + 1e-9 * v[b]:
                    raise DdsperfError(f"{where}: {LIMITS[a][2]} {v[a]:g} is above {LIMITS[b][2]} {v[b]:g}")
            once(("lat", bool(g["sublat"]), g["peer"], t), n)
            sc.lat.append({"t": t, "sublat": bool(g["sublat"]), "peer": g["peer"], **v})
        elif re.match(r"size\s", rest) and re.search(r"\stotal\s", rest):
            tm = re.match(_SUB_BODY, rest)
            if not tm:
                raise DdsperfError(f"{where}: malformed ddsperf throughput line: {line[:160]!r}")
            t = _checknum("t", tok, where)
            g = tm.groupdict()
            v = {f: _checknum(f, g[f], where) for f in ("size", "total", "totlost", "delta", "lost", "ksps", "mbps")}
            for f in ("ksps10", "mbps10"):
                if g[f] is not None:
                    _checknum(f, g[f], where)
            if v["delta"] > v["total"] or v["lost"] > v["totlost"]:
                raise DdsperfError(f"{where}: the second's counts exceed the run's totals")
            once(("tp", t), n)
            sc.tp.append({"t": t, **v})
        elif re.search(r"(^|\s)vcsw:", rest):
            cm = re.match(_CPU_BODY, rest)
            if not cm:
                raise DdsperfError(f"{where}: malformed ddsperf CPU/RSS line: {line[:160]!r}")
            t = _checknum("t", tok, where)
            g = cm.groupdict()
            _checknum("vcsw", g["vcsw"], where)
            _checknum("ivcsw", g["ivcsw"], where)
            rss = None
            if g["rss"] is not None:
                rss = _checknum("rss", g["rss"], where, {"kB": 1 / 1024, "MB": 1.0, "GB": 1024.0}[g["unit"]])
            cpu, names = 0.0, []
            for th in (g["threads"] or "").split():
                tm2 = THREAD_RE.match(th)
                if not tm2:
                    raise DdsperfError(f"{where}: malformed thread CPU {th[:40]!r} (expected name:U%+S%)")
                cpu += _checknum("thread", tm2.group("u"), where) + _checknum("thread", tm2.group("s"), where)
                names.append(tm2.group("name"))
            if g["peer"]:
                if not g["stale"]:
                    sc.peers.setdefault(g["peer"], []).append((cpu, rss))
            else:
                once(("own", t), n)
                sc.own.append((t, cpu, rss, names))
        elif _HIST_BODY.match(rest):
            _checknum("t", tok, where)
            sc.hist += 1
    sc.pid = pids.pop() if pids else None
    return sc


def _sample(t: float | None, role: str, subscriber: int | None, peer: str | None) -> dict[str, Any]:
    s: dict[str, Any] = dict.fromkeys(SAMPLE_KEYS)
    s.update(t_s=t, role=role, subscriber=subscriber, peer=peer)
    return s


def _samples(sc: _Scan, text: str, role: str, subscriber: int | None) -> list[dict[str, Any]]:
    if role not in ROLES:
        raise DdsperfError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    out: list[dict[str, Any]] = []
    if role in ("ping", "sub"):
        for x in sc.lat:
            if (role == "ping") != x["sublat"]:
                s = _sample(x["t"], role, subscriber, x["peer"])
                s.update(latency_mean_us=x["mean"], latency_min_us=x["min"], latency_p50_us=x["p50"],
                         latency_p90_us=x["p90"], latency_p99_us=x["p99"], latency_max_us=x["max"],
                         latency_count=int(x["cnt"]))
                out.append(s)
    if role == "sub":
        for x in sc.tp:
            s = _sample(x["t"], role, subscriber, None)
            s.update(samples_per_s=x["ksps"] * 1000.0, throughput_mbps=x["mbps"], lost_samples=int(x["lost"]))
            out.append(s)
    who = f"role {role}" + (f", subscriber {subscriber}" if role == "sub" and subscriber is not None else "")
    cut = " (the last line has no newline and was taken as cut off)" if text and not text.endswith("\n") else ""
    if role == "ping" and not out:
        raise DdsperfError(f"ddsperf printed no latency samples ({who}){cut}: {_snippet(text)}")
    if role == "sub" and not sc.tp:
        raise DdsperfError(f"ddsperf printed no throughput samples ({who}){cut}: {_snippet(text)}")
    return out


def parse(text: str, role: str, subscriber: int | None = None) -> list[dict[str, Any]]:
    """dds-samples.json objects from one process's output: latency lines of `ping` (one per pong peer and
    second; `peer` = "host:pid", or the publication handle in hex once the peer is gone) and throughput lines of
    `sub` (`subscriber` = the caller's 1-based number; `sublat` lines of `sub -l` carry latency instead).
    `pong`/`pub` output yields no samples. Raises DdsperfError for malformed output (see _scan) and for a ping
    without latency lines or a sub without throughput lines: such a process measured nothing."""
    return _samples(_scan(text), text, role, subscriber)


def _agg(rows: list[tuple[float, float | None]]) -> dict[str, Any]:
    cpus = [c for c, _ in rows]
    rss = [r for _, r in rows if r is not None]
    return {"cpu_pct": sum(cpus) / len(cpus) if cpus else None,
            "rss_mb": sum(rss) / len(rss) if rss else None,
            "cpu_max_pct": max(cpus) if cpus else None,
            "rss_max_mb": max(rss) if rss else None,
            "lines": len(rows)}


def _stats(sc: _Scan) -> dict[str, Any]:
    return {**_agg([(c, r) for _, c, r, _ in sc.own]), "pid": sc.pid if sc.own else None,
            "peers": {k: _agg(v) for k, v in sc.peers.items()}}


def parse_stats(text: str) -> dict[str, Any]:
    """The process's own CPU/RSS lines: {"cpu_pct": mean over lines of the sum of all threads' user+system %,
    "rss_mb": mean peak RSS, "cpu_max_pct", "rss_max_mb", "lines": n, "pid": int|None,
    "peers": {"host:pid": {"cpu_pct", "rss_mb", "lines"}}} (the peers' lines only appear with -c).
    Seconds in which no thread used >= 0.5% CPU print no line and are not counted (no line at all: None values).
    Raises DdsperfError for malformed output (see _scan)."""
    return _stats(_scan(text))


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _active(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-second throughput lines of one subscriber inside its active window: leading/trailing seconds with
    no data are dropped, and so are the first and last data seconds (partial: the publisher started/stopped
    within them) when at least 3 data seconds remain."""
    rows = sorted(rows, key=lambda s: s["t_s"])
    idx = [i for i, s in enumerate(rows) if s["samples_per_s"]]
    if not idx:
        return []
    rows = rows[idx[0]:idx[-1] + 1]
    return rows[1:-1] if len(rows) >= 3 else rows


def _metrics() -> dict[str, Any]:
    return {k: None for k in (
        "latency_mean_us", "latency_min_us", "latency_p50_us", "latency_p90_us", "latency_p99_us",
        "latency_max_us", "latency_count", "samples_per_s", "throughput_mbps", "per_subscriber_mbps",
        "lost_samples", "cpu_pub_pct", "rss_pub_mb", "cpu_sub_pct", "rss_sub_mb")}


_SAMPLE_LIMITS = {"t_s": "t", "latency_mean_us": "mean", "latency_min_us": "min", "latency_p50_us": "p50",
                  "latency_p90_us": "p90", "latency_p99_us": "p99", "latency_max_us": "max", "latency_count": "cnt",
                  "throughput_mbps": "mbps", "lost_samples": "lost"}


def _val(field: str, v: Any, where: str, scale: float = 1.0) -> float:
    """A number that is already a number (int or float, not bool), checked like _checknum."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DdsperfError(f"{where} is {v!r}, not a number")
    return _checknum(field, v, where, scale)


def _checked(samples: Sequence[dict[str, Any]], keys: Sequence[str]) -> None:
    for i, s in enumerate(samples):
        for k in keys:
            if k == "samples_per_s":
                _val("ksps", s.get(k), f"sample {i} {k}", 1e-3)
            else:
                _val(_SAMPLE_LIMITS[k], s.get(k), f"sample {i} {k}")


def summarize(mode: str, samples: Sequence[dict[str, Any]],
              stats_by_role: dict[str, dict[str, Any] | Sequence[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The manifest `metrics` of a DDS run.

    latency: over all latency samples (ping lines, all peers): mean = count-weighted mean of the per-second
    means, min of mins, max of maxes, each percentile = count-weighted mean of the per-second percentiles,
    count = sum. throughput: per subscriber the mean over its active seconds (see _active) of samples/s and
    Mb/s; samples_per_s and throughput_mbps = sums over subscribers, per_subscriber_mbps = their mean,
    lost_samples = sum of all per-second lost counts. CPU/RSS: `stats_by_role` maps role ("ping", "pong",
    "pub", "sub") to parse_stats() results (or a list of them for several subs); pub side = ping/pub,
    sub side = pong/sub (mean over processes).

    Raises DdsperfError when there is nothing to summarize (latency: no sample with a count; throughput: no
    subscriber sample, or no subscriber received anything) or a sample holds an impossible value."""
    if mode not in MODES:
        raise DdsperfError(f"mode must be one of {MODES}, not {mode!r}")
    m = _metrics()
    if mode == "latency":
        lat = [s for s in samples if isinstance(s, dict) and s.get("latency_count")]
        if not lat:
            raise DdsperfError("no latency samples to summarize (no ping line with a count: no pong answered?)")
        _checked(lat, ("latency_mean_us", "latency_min_us", "latency_p50_us", "latency_p90_us", "latency_p99_us",
                       "latency_max_us", "latency_count"))
        n = sum(s["latency_count"] for s in lat)

        def w(key: str) -> float:
            return sum(s[key] * s["latency_count"] for s in lat) / n
        m.update(latency_mean_us=w("latency_mean_us"), latency_p50_us=w("latency_p50_us"),
                 latency_p90_us=w("latency_p90_us"), latency_p99_us=w("latency_p99_us"),
                 latency_min_us=min(s["latency_min_us"] for s in lat),
                 latency_max_us=max(s["latency_max_us"] for s in lat), latency_count=int(n))
    else:
        by_sub: dict[Any, list[dict[str, Any]]] = {}
        for s in samples:
            if isinstance(s, dict) and s.get("role") == "sub" and s.get("samples_per_s") is not None:
                by_sub.setdefault(s.get("subscriber"), []).append(s)
        if not by_sub:
            raise DdsperfError("no subscriber throughput samples to summarize")
        rows_all = [s for rows in by_sub.values() for s in rows]
        _checked(rows_all, ("t_s", "samples_per_s", "throughput_mbps"))
        for i, s in enumerate(rows_all):
            if s.get("lost_samples") is not None:
                _val("lost", s["lost_samples"], f"sample {i} lost_samples")
        if not any(s["samples_per_s"] for s in rows_all):
            raise DdsperfError(f"no subscriber received any data ({len(by_sub)} subscriber(s), every per-second "
                               "rate is 0)")
        sps, mbps = [], []
        for rows in by_sub.values():
            act = _active(rows)
            sps.append(_mean([r["samples_per_s"] for r in act]) or 0.0)
            mbps.append(_mean([r["throughput_mbps"] for r in act]) or 0.0)
        m.update(samples_per_s=sum(sps), throughput_mbps=sum(mbps), per_subscriber_mbps=sum(mbps) / len(mbps),
                 lost_samples=int(sum(s["lost_samples"] or 0 for s in rows_all)))
    _add_stats(m, stats_by_role or {})
    return m


def _add_stats(m: dict[str, Any], stats_by_role: dict[str, Any]) -> None:
    def side(roles: Sequence[str], key: str) -> float | None:
        vals = []
        for r in roles:
            st = stats_by_role.get(r)
            for one in ([st] if isinstance(st, dict) else list(st or [])):
                if one is None:
                    continue
                if not isinstance(one, dict):
                    raise DdsperfError(f"{r} stats must be parse_stats() results, not {type(one).__name__}")
                if one.get(key) is not None:
                    vals.append(_val("rss" if key == "rss_mb" else "cpu", one[key], f"{r} stats {key}"))
        return _mean(vals)

    m.update(cpu_pub_pct=side(("ping", "pub"), "cpu_pct"), rss_pub_mb=side(("ping", "pub"), "rss_mb"),
             cpu_sub_pct=side(("pong", "sub"), "cpu_pct"), rss_sub_mb=side(("pong", "sub"), "rss_mb"))


def _responder_text(text: str) -> str:
    """A responder's (pong/sub) output up to the first peer leaving: the idle seconds after the initiator left are
    not part of the run (what measure() counts for CPU/RSS)."""
    return text.split(": gone\n", 1)[0]


def detect_role(text: str) -> str:
    """ping (latency lines), sub (throughput or sublat lines), pub (rate histogram lines or a busy "pub" thread),
    ping (ping time-outs), pong (a busy "pong" thread); else DdsperfError. A pong normally prints only CPU/RSS lines,
    exactly like a ping or sub that measured nothing, so its role must usually be given."""
    return _detect(_scan(text), text)


def _detect(sc: _Scan, text: str) -> str:
    ping = any(not x["sublat"] for x in sc.lat)
    sub = bool(sc.tp) or any(x["sublat"] for x in sc.lat)
    threads = {name for *_, names in sc.own for name in names}
    if ping and sub:
        raise DdsperfError("the output holds both ping latency and subscriber lines: pass role=ping or role=sub")
    if ping:
        return "ping"
    if sub:
        return "sub"
    if sc.hist or "pub" in threads:
        return "pub"
    if sc.ping_timeouts:
        return "ping"
    if "pong" in threads:
        return "pong"
    raise DdsperfError("cannot tell the ddsperf role: no latency, throughput or publisher lines (a pong prints "
                       "only CPU/RSS lines, and so does a ping or sub that measured nothing); pass role=ping, pong, "
                       f"pub or sub: {_snippet(text)}")


def normalize(text: str, **options: Any) -> dict[str, Any]:
    """{"tool": "ddsperf", "metrics", "samples"} of one ddsperf process's output, as measure() would record it.

    Options: role = ping | pong | pub | sub (detected from the output when not given, see detect_role);
    subscriber = the number for the rows' `subscriber` (default 1: measure() numbers a ping's rows 1 and the subs
    1..n). metrics: the 15 DDS run metrics (docs/results-layout.md). ping: the latency metrics (summarize) and
    cpu/rss_pub; sub: this one subscriber's throughput (samples_per_s = throughput over its active seconds,
    per_subscriber_mbps = throughput_mbps) and cpu/rss_sub; pong / pub: only cpu/rss of their side, which need at
    least one CPU/RSS line. CPU/RSS of pong and sub count up to the first peer leaving, as in measure(); peers'
    lines (-c) are not used. samples: parse()'s rows, sorted as in dds-samples.json."""
    unknown = set(options) - {"role", "subscriber"}
    if unknown:
        raise DdsperfError(f"unknown option(s) {', '.join(sorted(unknown))} (known: role, subscriber)")
    subscriber = options.get("subscriber", 1)
    if subscriber is not None and (isinstance(subscriber, bool) or not isinstance(subscriber, int) or subscriber < 1):
        raise DdsperfError(f"subscriber must be a positive integer, not {subscriber!r}")
    sc = _scan(text)
    role = options.get("role")
    if role is None:
        role = _detect(sc, text)
    elif role not in ROLES:
        raise DdsperfError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    samples = _samples(sc, text, role, subscriber if role in ("ping", "sub") else None)
    st = _stats(sc) if role in ("ping", "pub") else _stats(_scan(_responder_text(text)))
    if role in ("ping", "sub"):
        metrics = summarize("latency" if role == "ping" else "throughput", samples,
                            {role: st if role == "ping" else [st]})
    else:
        if not st["lines"]:
            raise DdsperfError(f"ddsperf printed no CPU/RSS lines (role {role}): nothing measured: {_snippet(text)}")
        metrics = _metrics()
        _add_stats(metrics, {role: st})
    samples.sort(key=lambda s: (s["role"], s["subscriber"] or 0, s["t_s"]))
    return {"tool": "ddsperf", "metrics": metrics, "samples": samples}


# --- environment ----------------------------------------------------------------------------------

SECURITY_LIBS = ("libdds_security_auth", "libdds_security_ac", "libdds_security_crypto")


def version() -> str:
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "cyclonedds-tools"], capture_output=True,
                             text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return f"cyclonedds-tools {out.stdout.strip()}"
    except (FileNotFoundError, subprocess.TimeoutExpired):
        pass
    return "ddsperf (version unknown)" if shutil.which("ddsperf") else "missing"


def _find_security_libs() -> dict[str, str]:
    """{"auth": path, "ac": path, "crypto": path} for the plugins found (Debian puts them in a private dir
    next to libddsc, e.g. /usr/lib/x86_64-linux-gnu/libddsc0debian/)."""
    roots = []
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if "libddsc" in line and "=>" in line:
                roots.append(os.path.dirname(os.path.realpath(line.split("=>", 1)[1].strip())))
    except (FileNotFoundError, subprocess.TimeoutExpired):
        pass
    roots += ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/arm-linux-gnueabihf",
              "/usr/local/lib", "/usr/lib", "/opt/cyclonedds/lib"]
    found: dict[str, str] = {}
    for root in dict.fromkeys(roots):
        if not os.path.isdir(root):
            continue
        for dirpath, _dirs, files in os.walk(root):
            if dirpath.count(os.sep) - root.count(os.sep) > 1:
                _dirs[:] = []
                continue
            for f in files:
                for lib in SECURITY_LIBS:
                    kind = lib.rsplit("_", 1)[1]
                    if kind not in found and f.startswith(lib + ".so"):
                        found[kind] = os.path.join(dirpath, f)
        if len(found) == 3:
            break
    return found


def security_support() -> str | None:
    """None if this Cyclone build can run DDS Security (auth + access control + crypto plugins present and
    loadable, openssl available to make certificates), else the reason."""
    import ctypes

    libs = _find_security_libs()
    missing = [lib for lib in SECURITY_LIBS if lib.rsplit("_", 1)[1] not in libs]
    if missing:
        return (f"cyclonedds on this machine ships no DDS Security plugins "
                f"({', '.join(m + '.so' for m in missing)} not found)")
    for kind, path in libs.items():
        try:
            ctypes.CDLL(path)
        except OSError as exc:
            return f"DDS Security plugin {path} does not load: {exc}"
    if not shutil.which("openssl"):
        return "openssl is not installed (needed to generate the DDS Security certificates)"
    return None


# --- DDS Security material --------------------------------------------------------------------------
#
# params.security = "auth-encrypt" (docs/results-layout.md) reproduces the seed's strongest DDS Security setting,
# "SignWithOrigAuthRTPSEncryptSM": whole RTPS messages signed with origin authentication, RTPS submessages encrypted.
# Governance mapping (OMG DDS Security 1.1, 9.4.1.2; Cyclone's builtin plugins: AES-GCM/GMAC):
#   rtps_protection_kind      SIGN_WITH_ORIGIN_AUTHENTICATION  "SignWithOrigAuthRTPS": every RTPS message gets a
#                                                              common MAC plus one receiver-specific MAC
#   metadata_protection_kind  ENCRYPT                          "EncryptSM": every submessage of user topics (DATA,
#                                                              HEARTBEAT, ACKNACK, ...) is encrypted, so the
#                                                              serialized payload inside DATA is encrypted as well
#   data_protection_kind      NONE                             no second, separate payload encryption (the seed's
#                                                              setting did not encrypt the payload on its own; it
#                                                              travels inside the encrypted submessage)
#   discovery/liveliness_protection_kind ENCRYPT, enable_discovery/liveliness_protection true: secure SEDP and
#                                                              participant-message endpoints, encrypted
#   allow_unauthenticated_participants false, enable_join_access_control true, read/write access control true:
#   participants without valid certificates and permissions signed by the permissions CA cannot join or match.
# One identity (EC P-256 certificate + key, signed by a throwaway CA that is both identity and permissions CA) is
# shared by all participants: Cyclone authenticates participants, not hosts, and accepts the same identity on
# both ends of a handshake.

DOMAIN_ID_MAX = 230  # highest domain id Cyclone 0.10's governance/permissions parser accepts (232 is rejected)

PROTECTION_KINDS = {
    "rtps_protection_kind": "SIGN_WITH_ORIGIN_AUTHENTICATION",
    "discovery_protection_kind": "ENCRYPT",
    "liveliness_protection_kind": "ENCRYPT",
    "metadata_protection_kind": "ENCRYPT",
    "data_protection_kind": "NONE",
}
PROTECTION_VALUES = ("NONE", "SIGN", "ENCRYPT", "SIGN_WITH_ORIGIN_AUTHENTICATION",
                     "ENCRYPT_WITH_ORIGIN_AUTHENTICATION")
SEED_SETTING = "SignWithOrigAuthRTPSEncryptSM"


def _openssl(*args: str, cwd: str) -> str:
    try:
        out = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise DdsperfError("openssl is not installed (needed to generate the DDS Security certificates)") from None
    except subprocess.TimeoutExpired:
        raise DdsperfError(f"openssl {args[0]} did not finish within 60s") from None
    if out.returncode != 0:
        raise DdsperfError(f"openssl {' '.join(args[:2])} failed: {(out.stderr or out.stdout).strip()[-300:]}")
    return out.stdout


def _utc(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def governance_xml(kinds: dict[str, str] | None = None, domains: tuple[int, int] = (0, DOMAIN_ID_MAX)) -> str:
    """Governance document (OMG omg_shared_ca_governance.xsd): one domain rule for `domains`, one topic rule "*"."""
    k = {**PROTECTION_KINDS, **(kinds or {})}
    bad = {n: v for n, v in k.items() if n not in PROTECTION_KINDS or v not in PROTECTION_VALUES}
    if bad:
        raise ValueError(f"bad protection kinds {bad}: names {sorted(PROTECTION_KINDS)}, values {PROTECTION_VALUES}")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd">
  <domain_access_rules>
    <domain_rule>
      <domains>
        <id_range><min>{int(domains[0])}</min><max>{int(domains[1])}</max></id_range>
      </domains>
      <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
      <enable_join_access_control>true</enable_join_access_control>
      <discovery_protection_kind>{k["discovery_protection_kind"]}</discovery_protection_kind>
      <liveliness_protection_kind>{k["liveliness_protection_kind"]}</liveliness_protection_kind>
      <rtps_protection_kind>{k["rtps_protection_kind"]}</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>*</topic_expression>
          <enable_discovery_protection>true</enable_discovery_protection>
          <enable_liveliness_protection>true</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>true</enable_write_access_control>
          <metadata_protection_kind>{k["metadata_protection_kind"]}</metadata_protection_kind>
          <data_protection_kind>{k["data_protection_kind"]}</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"""


def permissions_xml(subject: str, not_before: datetime, not_after: datetime,
                    domains: tuple[int, int] = (0, DOMAIN_ID_MAX)) -> str:
    """Permissions document (OMG omg_shared_ca_permissions.xsd): `subject` (the identity certificate's subject,
    RFC 2253) may publish and subscribe every topic in every partition of `domains`; everything else is denied."""
    allow = "\n".join(f"""        <{what}>
          <topics><topic>*</topic></topics>
          <partitions><partition>*</partition></partitions>
        </{what}>""" for what in ("publish", "subscribe"))
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd">
  <permissions>
    <grant name="edgebench_ddsperf">
      <subject_name>{escape(subject)}</subject_name>
      <validity>
        <not_before>{_utc(not_before)}</not_before>
        <not_after>{_utc(not_after)}</not_after>
      </validity>
      <allow_rule>
        <domains>
          <id_range><min>{int(domains[0])}</min><max>{int(domains[1])}</max></id_range>
        </domains>
{allow}
      </allow_rule>
      <default>DENY</default>
    </grant>
  </permissions>
</dds>
"""


def make_security_material(directory: str, *, kinds: dict[str, str] | None = None, valid_hours: float = 48
                           ) -> dict[str, Any]:
    """Throwaway DDS Security material in `directory` (which must exist; the caller deletes it), made with
    openssl (argument lists, no shell): ca.pem/ca.key (self-signed EC P-256 CA, used as identity CA and as
    permissions CA), identity.pem/identity.key (the participants' shared identity, signed by the CA),
    governance.xml/.p7s and permissions.xml/.p7s (S/MIME-signed with the CA, `openssl smime -sign -text`).

    Returns {"files": {name: absolute path}, "subject": identity subject (RFC 2253), "ca_subject",
    "not_before"/"not_after" (permissions validity, UTC), "kinds": the governance protection kinds,
    "key": "EC prime256v1"}. The certificates are valid for `valid_hours` from now (the permissions from an hour
    before now, so slightly skewed clocks still accept them)."""
    d = os.path.abspath(directory)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    days = str(max(1, int(-(-valid_hours // 24))))
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", days, "-sha256",
             "-subj", "/O=edgebench/CN=edgebench throwaway DDS CA", cwd=d)
    _openssl("req", "-new", *ec, "-keyout", "identity.key", "-out", "identity.csr", "-sha256",
             "-subj", "/O=edgebench/CN=edgebench ddsperf", cwd=d)
    _openssl("x509", "-req", "-in", "identity.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial",
             str(int.from_bytes(os.urandom(8), "big")), "-days", days, "-sha256", "-out", "identity.pem", cwd=d)
    os.remove(os.path.join(d, "identity.csr"))

    def subject(cert: str) -> str:
        out = _openssl("x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in", cert, cwd=d).strip()
        return out.split("=", 1)[1].strip() if out.startswith("subject") else out

    now = datetime.now(timezone.utc).replace(microsecond=0)
    not_before, not_after = now - timedelta(hours=1), now + timedelta(hours=valid_hours)
    subj = subject("identity.pem")
    k = {**PROTECTION_KINDS, **(kinds or {})}
    docs = {"governance": governance_xml(k), "permissions": permissions_xml(subj, not_before, not_after)}
    for name, text in docs.items():
        with open(os.path.join(d, f"{name}.xml"), "w") as f:
            f.write(text)
        _openssl("smime", "-sign", "-text", "-in", f"{name}.xml", "-out", f"{name}.p7s", "-signer", "ca.pem",
                 "-inkey", "ca.key", cwd=d)
    for key in ("ca.key", "identity.key"):
        os.chmod(os.path.join(d, key), 0o600)
    names = ("ca.pem", "ca.key", "identity.pem", "identity.key", "governance.xml", "governance.p7s",
             "permissions.xml", "permissions.p7s")
    return {"files": {n: os.path.join(d, n) for n in names}, "subject": subj, "ca_subject": subject("ca.pem"),
            "not_before": _utc(not_before) + "Z", "not_after": _utc(not_after) + "Z", "kinds": k,
            "key": "EC prime256v1"}


def security_config(material: dict[str, Any], libs: dict[str, str] | None = None) -> dict[str, str]:
    """The `security` dict for cyclone_config(). Plugins: Library@path = the absolute file name found by
    _find_security_libs() (Debian keeps them in libddsc0debian/, off the loader's path, so the default bare
    names "dds_security_auth" etc. would need LD_LIBRARY_PATH; absolute paths need no environment)."""
    libs = libs or _find_security_libs()
    missing = [k for k in ("auth", "ac", "crypto") if k not in libs]
    if missing:
        raise DdsperfError(f"DDS Security plugins not found: {', '.join(missing)}")
    f = material["files"]
    return {"auth_library": libs["auth"], "ac_library": libs["ac"], "crypto_library": libs["crypto"],
            "identity_ca": "file:" + f["ca.pem"], "identity_cert": "file:" + f["identity.pem"],
            "private_key": "file:" + f["identity.key"], "permissions_ca": "file:" + f["ca.pem"],
            "governance": "file:" + f["governance.p7s"], "permissions": "file:" + f["permissions.p7s"]}


def security_record(material: dict[str, Any], libs: dict[str, str] | None = None) -> dict[str, Any]:
    """dds-security.json: what protected the run (no keys; certificates only by subject)."""
    k = material["kinds"]
    return {
        "security": "auth-encrypt",
        "seed_setting": SEED_SETTING,
        "governance": {"domains": [0, DOMAIN_ID_MAX], "topic_expression": "*",
                       "allow_unauthenticated_participants": False, "enable_join_access_control": True,
                       "enable_discovery_protection": True, "enable_liveliness_protection": True,
                       "enable_read_access_control": True, "enable_write_access_control": True, **k},
        "permissions": {"subject_name": material["subject"], "not_before": material["not_before"],
                        "not_after": material["not_after"], "publish": ["*"], "subscribe": ["*"],
                        "default": "DENY"},
        "identity": {"shared_by_all_participants": True, "key": material["key"], "subject": material["subject"],
                     "identity_ca_subject": material["ca_subject"],
                     "permissions_ca_subject": material["ca_subject"]},
        "plugins": dict(libs or _find_security_libs()),
        "signed": "S/MIME (openssl smime -sign -text) by the permissions CA",
    }


# --- running --------------------------------------------------------------------------------------

def _popen(ep, argv: list[str], xml: str) -> subprocess.Popen:
    return subprocess.Popen(ep.cmd(["env", f"CYCLONEDDS_URI={xml}", *argv]), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen, grace: float = 5.0) -> bytes:
    """SIGINT (ddsperf then prints its final checks and exits), SIGKILL after `grace` s; returns the output."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
    try:
        out, _ = proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
    return out or b""


def _diagnose(rc: int, text: str, what: str, init_wait: float) -> str | None:
    """Error text for a ddsperf exit code, or None when the run counts as a measurement.

    Exit 1 caused only by "N samples lost" is a measurement, not a failure: ddsperf 0.10 raises it only for
    reliable keep-all data (never in best-effort mode, where loss is expected and reported in lost_samples);
    the loss is reported through lost_samples either way. Exit 1 for matching/peer problems is an error."""
    if rc == 0:
        return None
    errs = [ln.split("error:", 1)[1].strip() for ln in text.splitlines() if "error:" in ln]
    if rc == 3:
        return f"{what}: ddsperf rejected its arguments: {text.strip()[-300:]}"
    if rc == 2:
        return f"{what}: DDS operation failed: {text.strip()[-300:]}"
    if rc == 1:
        real = [e for e in errs if not re.fullmatch(r"\d+ samples lost", e)]
        if not real and errs:
            return None
        if any("too few matching participants" in e for e in real):
            return (f"{what}: DDS peers did not match within {init_wait:g}s ({'; '.join(real)}): "
                    "check discovery (multicast reachability or static peer addresses)")
        return f"{what}: ddsperf failed: {'; '.join(real) or text.strip()[-300:]}"
    if rc < 0:
        return f"{what}: ddsperf killed by signal {-rc}"
    return f"{what}: ddsperf exited with {rc}: {text.strip()[-300:]}"


def measure(pub, subs, *, mode: str, payload: int, duration: float, reliability: str, transport: str,
            discovery: str, peers: Sequence[str] | None, security: str = "none", domain: int = 0,
            timeout_extra: float = 60, rate: str | float | None = None, init_wait: float = INIT_WAIT,
            responder_security: str | None = None
            ) -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
    """One DDS run. latency: ping on `pub`, pong on `subs[0]`; throughput: pub on `pub`, one sub per entry of
    `subs` (several may share a namespace). `peers` (static-peers): addresses every participant is told
    about; None = the endpoints' IPs. Returns (raw files, metrics or None, error or None); raw output is
    returned even when the run failed.

    security="auth-encrypt": throwaway material (make_security_material) in a temp dir that is deleted after the
    run; every participant gets the same Domain/Security block (plugins by absolute path, no LD_LIBRARY_PATH) and
    raw gains dds-security.json (security_record: protection kinds, subjects, validity; no keys). The temp dir is
    on this host's filesystem, so all endpoints must be namespaces of this host (as Endpoint.cmd implies).
    `responder_security` (default: = security) gives the pong/subs a different setting; only meant to check that
    secure and non-secure participants do not match (the run then fails with a "did not match" error)."""
    raw: dict[str, bytes] = {}
    try:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, not {transport!r}")
        if discovery not in DISCOVERIES:
            raise ValueError(f"discovery must be one of {DISCOVERIES}, not {discovery!r}")
        if reliability not in RELIABILITIES:
            raise ValueError(f"reliability must be one of {RELIABILITIES}, not {reliability!r}")
        if security not in SECURITIES:
            raise ValueError(f"security must be one of {SECURITIES}, not {security!r}")
        if responder_security not in (None, *SECURITIES):
            raise ValueError(f"responder_security must be one of {SECURITIES}, not {responder_security!r}")
        if not subs:
            raise ValueError("need at least one subscriber endpoint")
        if "auth-encrypt" in (security, responder_security) and not 0 <= int(domain) <= DOMAIN_ID_MAX:
            raise ValueError(f"DDS Security runs need a domain id in 0..{DOMAIN_ID_MAX}, not {domain!r}")
    except ValueError as exc:
        return raw, None, str(exc)
    resp_security = responder_security or security
    if "auth-encrypt" not in (security, resp_security):
        return _run(pub, subs, raw, mode, payload, duration, reliability, transport, discovery, peers, domain,
                    timeout_extra, rate, init_wait, None, None)
    reason = security_support()
    if reason:
        return raw, None, f"unsupported: {reason}"
    with tempfile.TemporaryDirectory(prefix="edgebench-ddssec-") as tmp:
        try:
            libs = _find_security_libs()
            material = make_security_material(tmp)
            sec = security_config(material, libs)
        except DdsperfError as exc:
            return raw, None, f"DDS Security material: {exc}"
        record = security_record(material, libs)
        if resp_security != security:
            record.update(initiator_security=security, responder_security=resp_security)
        raw["dds-security.json"] = json.dumps(record, indent=1).encode()
        raw, metrics, error = _run(pub, subs, raw, mode, payload, duration, reliability, transport, discovery, peers,
                                   domain, timeout_extra, rate, init_wait,
                                   sec if security == "auth-encrypt" else None,
                                   sec if resp_security == "auth-encrypt" else None)
    if error and "did not match" in error:
        if resp_security != security:
            error = error.replace(": check discovery (multicast reachability or static peer addresses)", "")
            error += (f" (the {'ping' if mode == 'latency' else 'pub'} runs with security={security}, the "
                      f"{'pong' if mode == 'latency' else 'subs'} with security={resp_security}: participants "
                      "with and without DDS Security never match)")
        else:
            error += " (with DDS Security on, also check the handshake and permissions errors in the logs)"
    return raw, metrics, error


def _run(pub, subs, raw: dict[str, bytes], mode: str, payload: int, duration: float, reliability: str,
         transport: str, discovery: str, peers: Sequence[str] | None, domain: int, timeout_extra: float,
         rate: str | float | None, init_wait: float, init_sec: dict[str, str] | None,
         resp_sec: dict[str, str] | None) -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
    if discovery == "static-peers" and not peers:
        peers = list(dict.fromkeys([pub.ip, *(s.ip for s in subs)]))

    def xml(ep, sec: dict[str, str] | None) -> str:
        return cyclone_config(discovery, peers, transport == "multicast", sec, interface=ep.ip)

    # initiator (ping/pub) waits up to init_wait for its peers, then runs `duration` s; the responders
    # (pong/subs) get a generous -D as a safety net and are stopped with SIGINT once the initiator is done.
    responder_d = init_wait + duration + timeout_extra
    if mode == "latency":
        responders = [("ddsperf-pong.log", "pong", None, subs[0],
                       pong_cmd(responder_d, reliability, domain, minmatch=1, init_wait=init_wait))]
        init = ("ddsperf-ping.log", "ping", None, pub,
                ping_cmd(payload, duration, reliability, rate, domain, minmatch=1, init_wait=init_wait))
    else:
        responders = [(f"ddsperf-sub-{i}.log", "sub", i, ep, sub_cmd(responder_d, reliability, domain))
                      for i, ep in enumerate(subs, 1)]
        init = ("ddsperf-pub.log", "pub", None, pub,
                pub_cmd(payload, duration, reliability, rate if rate is not None else "inf", domain,
                        minmatch=len(subs), init_wait=init_wait))

    procs: list[tuple[str, str, int | None, subprocess.Popen]] = []
    outputs: dict[str, tuple[str, int | None, str, int | None]] = {}
    error = None
    try:
        for name, role, n, ep, argv in responders:
            procs.append((name, role, n, _popen(ep, argv, xml(ep, resp_sec))))
        time.sleep(0.2)
        name, role, n, ep, argv = init
        iproc = _popen(ep, argv, xml(ep, init_sec))
        procs.append((name, role, n, iproc))
        try:
            iout, _ = iproc.communicate(timeout=init_wait + duration + timeout_extra)
            irc = iproc.returncode
        except subprocess.TimeoutExpired:
            iout, irc = _stop(iproc), None
            error = f"{role}: ddsperf did not finish within {init_wait + duration + timeout_extra:g}s"
        outputs[name] = (role, n, iout.decode(errors="replace"), irc)
        time.sleep(1.2)  # let the responders print the last full second
        for pname, prole, pn, proc in procs[:-1]:
            out = _stop(proc)
            outputs[pname] = (prole, pn, out.decode(errors="replace"), proc.returncode)
    finally:
        for *_, proc in procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()

    samples: list[dict[str, Any]] = []
    stats: dict[str, Any] = {}
    for name in [init[0]] + [r[0] for r in responders]:
        role, n, text, rc = outputs.get(name, ("?", None, "", None))
        raw[name] = text.encode()
        if error is None and rc is not None:
            # responders are SIGINTed: only their own ddsperf error verdicts count, not the signal
            err = _diagnose(rc, text, name.removesuffix(".log"), init_wait)
            if err and (name == init[0] or "error:" in text):
                error = err
        # a ping without latency lines, a sub without throughput lines or malformed output: a failed run whose
        # error is the parser's reason (unless the process itself already failed, which explains it better)
        try:
            samples += parse(text, role, n if role == "sub" else (1 if role == "ping" else None))
            if name != init[0]:
                # responders outlive the initiator: their idle seconds after it left are not part of the run
                text = _responder_text(text)
            st = parse_stats(text)
        except DdsperfError as exc:
            error = error or str(exc)
            continue
        if role == "sub":
            stats.setdefault("sub", []).append(st)
        else:
            stats[role] = st
    samples.sort(key=lambda s: (s["role"], s["subscriber"] or 0, s["t_s"]))
    raw["dds-samples.json"] = json.dumps(samples, indent=1).encode()
    if error:
        return raw, None, error
    try:
        metrics = summarize(mode, samples, stats)
    except DdsperfError as exc:
        return raw, None, f"{'ping' if mode == 'latency' else 'sub'}: {exc}"
    return raw, metrics, None
