"""Parsing ddsperf's output (see run.py for the formats): summaries of a run's per-second samples, role detection
and the Record of one process's output (`parse`), over what scan.py reads from each process's output. Pure
functions; DdsperfError for anything ddsperf cannot have printed."""

from __future__ import annotations

from typing import Any, Sequence

from edgebench.drivers.ddsperf.scan import (METRIC_KEYS, ROLES, DdsperfError, Scan, checknum, samples_of, scan_text,
                                           snippet, stats_of)
from edgebench.drivers.protocol import Record, ToolFormat

MODES = ("latency", "throughput")
RELIABILITIES = ("reliable", "best-effort")
TRANSPORTS = ("unicast", "multicast")
DISCOVERIES = ("multicast", "static-peers")
SECURITIES = ("none", "auth-encrypt")
BATCHINGS = ("on", "off")  # on: ddsperf's own write batching (it cannot be turned off); off: see cyclone_config


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
    return dict.fromkeys(METRIC_KEYS)


_SAMPLE_LIMITS = {"t_s": "t", "latency_mean_us": "mean", "latency_min_us": "min", "latency_p50_us": "p50",
                  "latency_p90_us": "p90", "latency_p99_us": "p99", "latency_max_us": "max", "latency_count": "cnt",
                  "throughput_mbps": "mbps", "lost_samples": "lost"}


def _val(field: str, v: Any, where: str, scale: float = 1.0) -> float:
    """A number that is already a number (int or float, not bool), checked like checknum."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DdsperfError(f"{where} is {v!r}, not a number")
    return checknum(field, v, where, scale)


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


def responder_text(text: str) -> str:
    """A responder's (pong/sub) output up to the first peer leaving: the idle seconds after the initiator left are
    not part of the run (what measure() counts for CPU/RSS)."""
    return text.split(": gone\n", 1)[0]


def detect_role(text: str) -> str:
    """ping (latency lines), sub (throughput or sublat lines), pub (rate histogram lines or a busy "pub" thread),
    ping (ping time-outs), pong (a busy "pong" thread); else DdsperfError. A pong normally prints only CPU/RSS lines,
    exactly like a ping or sub that measured nothing, so its role must usually be given."""
    return _detect(scan_text(text), text)


def _detect(sc: Scan, text: str) -> str:
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
                       f"pub or sub: {snippet(text)}")


def parse(text: str, **options: Any) -> Record:
    """{"tool": "ddsperf", "metrics", "samples"} of one ddsperf process's output, as measure() would record it.

    Options: role = ping | pong | pub | sub (detected from the output when not given, see detect_role);
    subscriber = the number for the rows' `subscriber` (default 1: measure() numbers a ping's rows 1 and the subs
    1..n). metrics: the 15 DDS run metrics (docs/results-layout.md). ping: the latency metrics (summarize) and
    cpu/rss_pub; sub: this one subscriber's throughput (samples_per_s = throughput over its active seconds,
    per_subscriber_mbps = throughput_mbps) and cpu/rss_sub; pong / pub: only cpu/rss of their side, which need at
    least one CPU/RSS line. CPU/RSS of pong and sub count up to the first peer leaving, as in measure(); peers'
    lines (-c) are not used. samples: parse_samples()'s rows, sorted as in dds-samples.json."""
    unknown = set(options) - {"role", "subscriber"}
    if unknown:
        raise DdsperfError(f"unknown option(s) {', '.join(sorted(unknown))} (known: role, subscriber)")
    subscriber = options.get("subscriber", 1)
    if subscriber is not None and (isinstance(subscriber, bool) or not isinstance(subscriber, int) or subscriber < 1):
        raise DdsperfError(f"subscriber must be a positive integer, not {subscriber!r}")
    sc = scan_text(text)
    role = options.get("role")
    if role is None:
        role = _detect(sc, text)
    elif role not in ROLES:
        raise DdsperfError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    samples = samples_of(sc, text, role, subscriber if role in ("ping", "sub") else None)
    st = stats_of(sc) if role in ("ping", "pub") else stats_of(scan_text(responder_text(text)))
    if role in ("ping", "sub"):
        metrics = summarize("latency" if role == "ping" else "throughput", samples,
                            {role: st if role == "ping" else [st]})
    else:
        if not st["lines"]:
            raise DdsperfError(f"ddsperf printed no CPU/RSS lines (role {role}): nothing measured: {snippet(text)}")
        metrics = _metrics()
        _add_stats(metrics, {role: st})
    samples.sort(key=lambda s: (s["role"], s["subscriber"] or 0, s["t_s"]))
    return {"tool": "ddsperf", "metrics": metrics, "samples": samples}


FORMAT = ToolFormat("ddsperf", parse, "ddsperf.log", "dds-samples.json",
                    "Cyclone DDS ddsperf output of one process (ping, pong, pub or sub)")
