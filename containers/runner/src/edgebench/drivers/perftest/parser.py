"""Pure parser for RTI Perftest (Connext DDS) output, into the ddsperf driver's sample and metric shapes.

Every format below is taken from the printf calls in rticommunity/rtiperftest (docs/tool-formats/perftest.md has
the line references and examples; tests/data/perftest/ holds one output of each):

- legacy text, the only format of 2.x and 3.0.1 (srcCpp/perftest_publisher.cxx) and `-outputFormat legacy` of 3.1+
  (srcCppCommon/PerftestPrinter.cxx):
    "One way Latency:     69 us  Ave    287 us  Std  218.0 us  Min     69 us  Max    505 CPU: 1.23%"   (2.x, 3.0.1)
    "One way Latency:     69 us Ave    287 us Std  218.0 us Min     69 us Max    505 us CPU 1.23 (%)"   (3.1-3.3)
    "One-Way Latency:     69 μs Ave    287 μs Std  218.0 μs Min     69 μs Max    505 μs"                (4.x)
    "Length:   100  Latency: Ave    126 us  Std  146.0 us  Min ... 99.9999%    505 us" (and 3.1+: single spaces)
    "Packets:  5286144  Packets/s: 2678745  Packets/s(ave): 2678745  Mbps: 685.8  Mbps(ave): 685.8  Lost: 0 (0.00%)"
    "Length:    32  Packets: 14080011  Packets/s(ave): 2641911  Mbps(ave):   676.3  Lost:     0 (0.00%)"
  (2.0-2.3: "Lost: N" without the percentage; 3.x builds with RTI_PERFTEST_NANO_CLOCK print "ns", 4.x such builds
  print "μs" with three decimals).
- csv (default since 3.1): optional title lines ("Intervals One-Way Latency for N Bytes:", "One-way Latency Summary:",
  "Interval Throughput for N Bytes:", "Throughput Summary:"), a header row, comma-separated rows. Columns are found by
  header name (3.x "Length (Bytes), Ave (us)", 4.x "Sample Size (Bytes), Ave (μs)"; optional CPU and serialization
  columns). With -noPrint (= -noPrintIntervals, Perftest accepts option prefixes) 4.x prints no title, only the
  summary's header row and row: the block kind comes from the header's columns. With -noOutputHeaders there are no
  titles and no headers: the kind comes from the column count and the decimal pattern.
- json (3.1+): {"perftest": [{"length": N, "intervals": [...], "summary": {...}}, ...]}.

Latency is Perftest's one-way latency (RTT/2) in microseconds, like ddsperf's. Anything that is not a well-formed
Perftest output raises PerftestParseError (never another exception): NaN, negative or absurd numbers (see LIMITS),
rows that contradict their header, percentiles out of order, intervals out of order, an unknown JSON shape. A final
line without a newline is treated as cut off and ignored (Perftest ends every line with one).
"""

from __future__ import annotations

from typing import Any

from edgebench.drivers.ddsperf.scan import METRIC_KEYS, SAMPLE_KEYS
from edgebench.drivers.perftest.readers import detect_format, read_csv, read_json, read_legacy
from edgebench.drivers.perftest.rows import (LATENCY_KINDS, LIMITS, THROUGHPUT_KINDS, PerftestParseError, Row,
                                           snippet)
from edgebench.drivers.protocol import Record, ToolFormat

# --- shared ------------------------------------------------------------------------------------------------------

def _rows(text: str) -> list[Row]:
    if not isinstance(text, str):
        raise PerftestParseError(f"Perftest output must be text, not {type(text).__name__}")
    fmt = detect_format(text)
    rows = {"json": read_json, "legacy": read_legacy, "csv": read_csv}[fmt](text)
    _check_sequences(rows)
    return rows


def _check_sequences(rows: list[Row]) -> None:
    """Throughput intervals carry running totals (samples received, lost): within one size they never go down."""
    prev: dict[Any, Row] = {}
    for r in rows:
        if r.kind != "throughput_interval":
            continue
        p = prev.get(r.v.get("length"))
        if p is not None:
            for f in ("total", "lost"):
                if r.v[f] < p.v[f]:  # type: ignore[operator]
                    raise PerftestParseError(f"{r.where}: running {LIMITS[f][2]} went down from {p.v[f]:g} "
                                             f"({p.where}) to {r.v[f]:g}: intervals out of order or from two runs")
        prev[r.v.get("length")] = r


def _no_results(text: str, what: str) -> PerftestParseError:
    cut = (" (the last line has no newline and was taken as cut off)"
           if text and not text.endswith("\n") and detect_format(text) != "json" else "")
    return PerftestParseError(f"{what}{cut}: {snippet(text)}")


def parse_samples(text: str, subscriber: int | None = None) -> list[dict[str, Any]]:
    """dds-samples.json rows of every interval line (both kinds, every size), in output order.

    Latency intervals (role "ping"): Perftest prints one line per received pong, not per second, carrying that one
    pong's one-way latency plus running average/std/min/max since the size started. The row is that one
    measurement: latency_mean_us = the latency column, latency_count = 1; t_s, min/max and percentiles are null
    (Perftest prints no time and no per-interval statistics; its running min/max are not this row's).
    Throughput intervals (role "sub", one per second: the subscriber's print loop sleeps
    PERFTEST_DISCOVERY_TIME_MSEC = 1000 ms): t_s = interval number within its size, samples_per_s = "Samples/s",
    throughput_mbps = "Mbps", lost_samples = the increase of Perftest's running lost count since the previous
    interval of that size."""
    return _samples(_rows(text), subscriber)


def _samples(rows: list[Row], subscriber: int | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    n: dict[Any, int] = {}
    lost_prev: dict[Any, float] = {}
    for r in rows:
        if r.kind not in ("latency_interval", "throughput_interval"):
            continue
        s: dict[str, Any] = dict.fromkeys(SAMPLE_KEYS)
        s["subscriber"] = subscriber
        if r.kind == "latency_interval":
            s.update(role="ping", latency_mean_us=r.v["latency"], latency_count=1)
        else:
            key = r.v.get("length")
            n[key] = n.get(key, 0) + 1
            lost = r.v["lost"]
            s.update(t_s=float(n[key]), role="sub", samples_per_s=r.v["sps"], throughput_mbps=r.v["mbps"],
                     lost_samples=int(lost - lost_prev.get(key, 0.0)))  # type: ignore[operator]
            lost_prev[key] = lost  # type: ignore[assignment]
        out.append(s)
    return out


def summarize(text: str) -> dict[str, Any]:
    """Metrics (the ddsperf metric keys) from the *last* summary of each kind (a -scan run prints one per size; use
    parse(length=...) to pick one). Latency from the publisher's latency summary; throughput from a subscriber's
    throughput summary (one subscriber per output: sum several outputs upstream). Extra keys: length_bytes,
    latency_std_us, latency_p9999_us, lost_percent, total_samples. Raises PerftestParseError without any summary."""
    m: dict[str, Any] = dict.fromkeys(METRIC_KEYS)
    m.update(length_bytes=None, latency_std_us=None, latency_p9999_us=None, lost_percent=None, total_samples=None)
    rows = _rows(text)
    lat = [r for r in rows if r.kind == "latency_summary"]
    tp = [r for r in rows if r.kind == "throughput_summary"]
    if not lat and not tp:
        raise _no_results(text, "no Perftest latency or throughput summary found")
    if lat:
        v = lat[-1].v
        m.update(latency_mean_us=v.get("ave"), latency_std_us=v.get("std"), latency_min_us=v.get("min"),
                 latency_max_us=v.get("max"), latency_p50_us=v.get("p50"), latency_p90_us=v.get("p90"),
                 latency_p99_us=v.get("p99"), latency_p9999_us=v.get("p9999"), cpu_pub_pct=v.get("cpu"),
                 length_bytes=None if v.get("length") is None else int(v["length"]))  # type: ignore[arg-type]
    if tp:
        v = tp[-1].v
        m.update(samples_per_s=v["sps_ave"], throughput_mbps=v["mbps_ave"], per_subscriber_mbps=v["mbps_ave"],
                 lost_samples=int(v["lost"]), lost_percent=v.get("lost_pct"),  # type: ignore[arg-type]
                 cpu_sub_pct=v.get("cpu"), total_samples=int(v["total"]))  # type: ignore[arg-type]
        if m["length_bytes"] is None and v.get("length") is not None:
            m["length_bytes"] = int(v["length"])  # type: ignore[arg-type]
    return m


_ROLES = {"pub": "pub", "ping": "pub", "publisher": "pub", "sub": "sub", "subscriber": "sub"}


def parse(text: str, **options: Any) -> Record:
    """{"tool": "perftest", "metrics", "samples"} of one Perftest process's output.

    Options: role = "pub" (alias "ping": the publisher, which reports latency) or "sub" (a subscriber, which reports
    throughput); detected from the output when not given (an output holding both kinds needs it). subscriber = the
    number put in the rows' `subscriber` (default 1, as edgebench's ddsperf runs number them). length = the sample
    size to take from a -scan output (required when the output holds several sizes).

    metrics: the 15 DDS run metrics (docs/results-layout.md "DDS runs"). Publisher: latency_mean/min/max/p50/p90/p99_us
    from the latency summary, cpu_pub_pct from its CPU column (-cpu); latency_count is null (Perftest prints no
    count). Subscriber: samples_per_s, throughput_mbps (= per_subscriber_mbps) and lost_samples from the throughput
    summary, cpu_sub_pct. RSS is never printed by Perftest (null). samples: parse_samples()'s rows of that side and
    size. Raises PerftestParseError for anything else, including an output without the side's summary."""
    unknown = set(options) - {"role", "subscriber", "length"}
    if unknown:
        raise PerftestParseError(f"unknown option(s) {', '.join(sorted(unknown))} (known: role, subscriber, length)")
    role = options.get("role")
    if role is not None and role not in _ROLES:
        raise PerftestParseError(f"role must be one of pub, ping, sub, not {role!r}")
    subscriber = options.get("subscriber", 1)
    if subscriber is not None and (isinstance(subscriber, bool) or not isinstance(subscriber, int) or subscriber < 1):
        raise PerftestParseError(f"subscriber must be a positive integer, not {subscriber!r}")
    rows = _rows(text)
    sides = {("pub" if r.kind in LATENCY_KINDS else "sub") for r in rows}
    if role is not None:
        side = _ROLES[role]
        if side not in sides:
            what = "latency" if side == "pub" else "throughput"
            raise _no_results(text, f"Perftest printed no {what} results (role {role})")
    elif not sides:
        raise _no_results(text, "Perftest printed no latency or throughput results")
    elif len(sides) == 2:
        raise PerftestParseError("the output holds both latency (publisher) and throughput (subscriber) results: "
                                 "pass role=pub or role=sub")
    else:
        side = sides.pop()
    kinds = LATENCY_KINDS if side == "pub" else THROUGHPUT_KINDS
    mine = [r for r in rows if r.kind in kinds]
    lengths = sorted({int(r.v["length"]) for r in mine if r.v.get("length") is not None})  # type: ignore[arg-type]
    length = options.get("length")
    if length is not None:
        if isinstance(length, bool) or not isinstance(length, int) or length not in lengths:
            raise PerftestParseError(f"length {length!r} is not a size of this output (sizes: {lengths})")
        if len(lengths) > 1:
            mine = [r for r in mine if r.v.get("length") == length]
    elif len(lengths) > 1:
        raise PerftestParseError(f"the output holds results for {len(lengths)} sample sizes {lengths} (-scan): "
                                 "pass length=<bytes> to take one")
    summaries = [r for r in mine if r.kind.endswith("summary")]
    if not summaries:
        raise _no_results(text, f"Perftest printed no {'latency' if side == 'pub' else 'throughput'} summary "
                                f"(role {role or side}; did the run end early?)")
    if len(summaries) > 1:
        raise PerftestParseError(f"{len(summaries)} summaries for one size ({', '.join(r.where for r in summaries)}):"
                                 " several runs in one output")
    v = summaries[0].v
    m: dict[str, Any] = dict.fromkeys(METRIC_KEYS)
    if side == "pub":
        m.update(latency_mean_us=v["ave"], latency_min_us=v["min"], latency_max_us=v["max"], latency_p50_us=v["p50"],
                 latency_p90_us=v["p90"], latency_p99_us=v["p99"], cpu_pub_pct=v.get("cpu"))
    else:
        m.update(samples_per_s=v["sps_ave"], throughput_mbps=v["mbps_ave"], per_subscriber_mbps=v["mbps_ave"],
                 lost_samples=int(v["lost"]), cpu_sub_pct=v.get("cpu"))  # type: ignore[arg-type]
    samples = _samples(mine, subscriber)
    return {"tool": "perftest", "metrics": m, "samples": samples}


FORMAT = ToolFormat("perftest", parse, "perftest.txt", "dds-samples.json",
                    "RTI Perftest output (legacy text, CSV, -noPrint CSV or JSON)")
