"""Scanning one ddsperf process's output (see run.py for the formats) into checked per-second lines: the samples
(parse_samples) and the CPU/RSS lines (parse_stats). Pure functions; DdsperfError for anything ddsperf cannot have
printed. parser.py builds a run's metrics from them."""

from __future__ import annotations

import json
import re
from typing import Any

from edgebench.drivers.common.numbers import checked_number, complete_lines as _lines
from edgebench.errors import EdgebenchError

SAMPLE_KEYS = ("t_s", "role", "subscriber", "peer", "latency_mean_us", "latency_min_us", "latency_p50_us",
               "latency_p90_us", "latency_p99_us", "latency_max_us", "latency_count", "samples_per_s",
               "throughput_mbps", "lost_samples")
# the 15 DDS run metrics (docs/results-layout.md "DDS runs"), in the manifest's order; Perftest's parser gives them too
METRIC_KEYS = ("latency_mean_us", "latency_min_us", "latency_p50_us", "latency_p90_us", "latency_p99_us",
               "latency_max_us", "latency_count", "samples_per_s", "throughput_mbps", "per_subscriber_mbps",
               "lost_samples", "cpu_pub_pct", "rss_pub_mb", "cpu_sub_pct", "rss_sub_mb")

# Lines of one ddsperf process (0.10.x and master print them with the same formats, src/tools/ddsperf/ddsperf.c
# print_stats/latencystat_print, cputime.c print_cputime): "[pid] " then, for the per-second lines, "%.3f " seconds
# since the process started, then one of the bodies below. Values are captured loosely (\S+) and checked by
# checknum, so a malformed number gives an error naming the field instead of a silently skipped line.
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


def snippet(text: str) -> str:
    return json.dumps(text[:200], ensure_ascii=False) if text else "(empty output)"


def checknum(field: str, tok: Any, where: str, scale: float = 1.0) -> float:
    """One checked number: finite, not negative, a whole number for counts, within LIMITS[field] (after scale)."""
    lo, hi, what = LIMITS[field]
    if isinstance(tok, bool) or not isinstance(tok, (str, int, float)):
        raise DdsperfError(f"{where}: {what} is {tok!r}, not a number")
    return checked_number(tok, what=what, where=where, bounds=(lo, hi), error=DdsperfError, whole=field in _INTS,
                          scale=scale)


class Scan:
    """The checked contents of one process's output."""

    def __init__(self) -> None:
        self.lat: list[dict[str, Any]] = []      # latency lines (ping: "peer size ..."; sub -l: "sublat peer ...")
        self.tp: list[dict[str, Any]] = []       # throughput lines (sub)
        self.own: list[tuple[float, float, float | None, list[str]]] = []   # (t, cpu %, rss MB, thread names)
        self.peers: dict[str, list[tuple[float, float | None]]] = {}        # host:pid -> [(cpu %, rss MB)]
        self.hist = 0                             # publisher rate histogram lines
        self.ping_timeouts = 0
        self.pid: int | None = None


def scan_text(text: str) -> Scan:
    if not isinstance(text, str):
        raise DdsperfError(f"ddsperf output must be text, not {type(text).__name__}")
    sc = Scan()
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
        if "ping timed out" in line:  # printed at most once a second, with the running total
            total = re.search(r"total (\d+) times", line)
            sc.ping_timeouts = max(sc.ping_timeouts + 1, int(total.group(1)) if total else 0)
        if not re.match(r"^([-+.\d]|nan|inf)", tok, re.I):
            continue  # "[pid] participant ...", "[pid] error: ...", "[pid] ping timed out ..."
        where = f"line {n}"
        if re.search(r"(^|\s)size\s+\S+\s+mean\s", rest):
            lm = re.match(_LAT_BODY, rest)
            if not lm:
                raise DdsperfError(f"{where}: malformed ddsperf latency line: {line[:160]!r}")
            t = checknum("t", tok, where)
            g = lm.groupdict()
            v = {f: checknum(f, g[f], where) for f in ("size", "mean", "min", "p50", "p90", "p99", "max", "cnt")}
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
            t = checknum("t", tok, where)
            g = tm.groupdict()
            v = {f: checknum(f, g[f], where) for f in ("size", "total", "totlost", "delta", "lost", "ksps", "mbps")}
            for f in ("ksps10", "mbps10"):
                if g[f] is not None:
                    checknum(f, g[f], where)
            if v["delta"] > v["total"] or v["lost"] > v["totlost"]:
                raise DdsperfError(f"{where}: the second's counts exceed the run's totals")
            once(("tp", t), n)
            sc.tp.append({"t": t, **v})
        elif re.search(r"(^|\s)vcsw:", rest):
            cm = re.match(_CPU_BODY, rest)
            if not cm:
                raise DdsperfError(f"{where}: malformed ddsperf CPU/RSS line: {line[:160]!r}")
            t = checknum("t", tok, where)
            g = cm.groupdict()
            checknum("vcsw", g["vcsw"], where)
            checknum("ivcsw", g["ivcsw"], where)
            rss = None
            if g["rss"] is not None:
                rss = checknum("rss", g["rss"], where, {"kB": 1 / 1024, "MB": 1.0, "GB": 1024.0}[g["unit"]])
            cpu, names = 0.0, []
            for th in (g["threads"] or "").split():
                tm2 = THREAD_RE.match(th)
                if not tm2:
                    raise DdsperfError(f"{where}: malformed thread CPU {th[:40]!r} (expected name:U%+S%)")
                cpu += checknum("thread", tm2.group("u"), where) + checknum("thread", tm2.group("s"), where)
                names.append(tm2.group("name"))
            if g["peer"]:
                if not g["stale"]:
                    sc.peers.setdefault(g["peer"], []).append((cpu, rss))
            else:
                once(("own", t), n)
                sc.own.append((t, cpu, rss, names))
        elif _HIST_BODY.match(rest):
            checknum("t", tok, where)
            sc.hist += 1
    sc.pid = pids.pop() if pids else None
    return sc


def _sample(t: float | None, role: str, subscriber: int | None, peer: str | None) -> dict[str, Any]:
    s: dict[str, Any] = dict.fromkeys(SAMPLE_KEYS)
    s.update(t_s=t, role=role, subscriber=subscriber, peer=peer)
    return s


def samples_of(sc: Scan, text: str, role: str, subscriber: int | None) -> list[dict[str, Any]]:
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
        raise DdsperfError(f"ddsperf printed no latency samples ({who}){cut}: {snippet(text)}")
    if role == "sub" and not sc.tp:
        raise DdsperfError(f"ddsperf printed no throughput samples ({who}){cut}: {snippet(text)}")
    return out


def parse_samples(text: str, role: str, subscriber: int | None = None) -> list[dict[str, Any]]:
    """dds-samples.json objects from one process's output: latency lines of `ping` (one per pong peer and
    second; `peer` = "host:pid", or the publication handle in hex once the peer is gone) and throughput lines of
    `sub` (`subscriber` = the caller's 1-based number; `sublat` lines of `sub -l` carry latency instead).
    `pong`/`pub` output yields no samples. Raises DdsperfError for malformed output (see _scan) and for a ping
    without latency lines or a sub without throughput lines: such a process measured nothing."""
    return samples_of(scan_text(text), text, role, subscriber)


def _agg(rows: list[tuple[float, float | None]]) -> dict[str, Any]:
    cpus = [c for c, _ in rows]
    rss = [r for _, r in rows if r is not None]
    return {"cpu_pct": sum(cpus) / len(cpus) if cpus else None,
            "rss_mb": sum(rss) / len(rss) if rss else None,
            "cpu_max_pct": max(cpus) if cpus else None,
            "rss_max_mb": max(rss) if rss else None,
            "lines": len(rows)}


def stats_of(sc: Scan) -> dict[str, Any]:
    return {**_agg([(c, r) for _, c, r, _ in sc.own]), "pid": sc.pid if sc.own else None,
            "peers": {k: _agg(v) for k, v in sc.peers.items()}}


def parse_stats(text: str) -> dict[str, Any]:
    """The process's own CPU/RSS lines: {"cpu_pct": mean over lines of the sum of all threads' user+system %,
    "rss_mb": mean peak RSS, "cpu_max_pct", "rss_max_mb", "lines": n, "pid": int|None,
    "peers": {"host:pid": {"cpu_pct", "rss_mb", "lines"}}} (the peers' lines only appear with -c).
    Seconds in which no thread used >= 0.5% CPU print no line and are not counted (no line at all: None values).
    Raises DdsperfError for malformed output (see _scan)."""
    return stats_of(scan_text(text))
