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

import json
import math
import re
from typing import Any, Iterable

from edgebench.errors import EdgebenchError
from edgebench.drivers.ddsperf import SAMPLE_KEYS

METRIC_KEYS = ("latency_mean_us", "latency_min_us", "latency_p50_us", "latency_p90_us", "latency_p99_us",
               "latency_max_us", "latency_count", "samples_per_s", "throughput_mbps", "per_subscriber_mbps",
               "lost_samples", "cpu_pub_pct", "rss_pub_mb", "cpu_sub_pct", "rss_sub_mb")


class PerftestParseError(EdgebenchError, ValueError):
    """The text is not a Perftest output this parser can read without guessing."""


# field -> (lowest, highest, what it is); values outside are rejected as absurd
LIMITS: dict[str, tuple[float, float, str]] = {
    "length": (1, 2 ** 31, "sample size (bytes)"),
    "latency": (0, 1e9, "one-way latency (us)"),
    "ave": (0, 1e9, "mean latency (us)"),
    "std": (0, 1e9, "latency standard deviation (us)"),
    "min": (0, 1e9, "minimum latency (us)"),
    "max": (0, 1e9, "maximum latency (us)"),
    "p50": (0, 1e9, "50th percentile latency (us)"),
    "p90": (0, 1e9, "90th percentile latency (us)"),
    "p99": (0, 1e9, "99th percentile latency (us)"),
    "p9999": (0, 1e9, "99.99th percentile latency (us)"),
    "p999999": (0, 1e9, "99.9999th percentile latency (us)"),
    "total": (0, 1e15, "total samples"),
    "sps": (0, 1e9, "samples/s"),
    "sps_ave": (0, 1e9, "average samples/s"),
    "mbps": (0, 1e7, "Mbps"),
    "mbps_ave": (0, 1e7, "average Mbps"),
    "lost": (0, 1e15, "lost samples"),
    "lost_pct": (0, 100, "lost samples (%)"),
    "cpu": (0, 110, "CPU (%)"),
    "ser": (0, 1e9, "serialization time (us)"),
    "deser": (0, 1e9, "deserialization time (us)"),
    "ser_total": (0, 1e9, "serialization + deserialization time (us)"),
}
_TIME_FIELDS = {"latency", "ave", "std", "min", "max", "p50", "p90", "p99", "p9999", "p999999", "ser", "deser",
                "ser_total"}
# time columns a "(ns)" header converts to microseconds (serialization times are not: Perftest measures them in
# microseconds whatever the clock, see the "Serialization/Deserialization: %0.3f us" line of the legacy format)
_SCALED_FIELDS = _TIME_FIELDS - {"ser", "deser", "ser_total"}
_INT_FIELDS = {"length", "total", "lost"}
_LATENCY_KINDS = ("latency_interval", "latency_summary")
_THROUGHPUT_KINDS = ("throughput_interval", "throughput_summary")


class _Row:
    __slots__ = ("kind", "v", "where")

    def __init__(self, kind: str, v: dict[str, float | None], where: str):
        self.kind, self.v, self.where = kind, v, where


def _snippet(text: str) -> str:
    s = text[:200].replace("\n", "\\n")
    return repr(s) if s else "(empty output)"


def _value(field: str, raw: Any, where: str, scale: float = 1.0) -> float | None:
    """One number, checked: finite, not negative, within LIMITS[field]. Perftest prints a NaN standard deviation when
    the variance rounds below zero; that one field becomes None, every other NaN is an error."""
    what = LIMITS[field][2] if field in LIMITS else field
    if isinstance(raw, bool) or raw is None or isinstance(raw, (list, dict)):
        raise PerftestParseError(f"{where}: {what} is {json.dumps(raw) if not isinstance(raw, str) else raw!r}, "
                                 "not a number")
    if isinstance(raw, str):
        tok = raw.strip()
        if not tok:
            raise PerftestParseError(f"{where}: {what} is empty")
        if field == "std" and tok.lower() in ("nan", "-nan"):
            return None
        if not re.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|[-+]?(nan|inf|infinity)", tok, re.I):
            raise PerftestParseError(f"{where}: {what} is {tok[:40]!r}, not a number")
        x = float(tok)
    else:
        try:
            x = float(raw)
        except OverflowError:
            raise PerftestParseError(f"{where}: {what} is too large") from None
    if math.isnan(x):
        if field == "std":
            return None
        raise PerftestParseError(f"{where}: {what} is NaN")
    if math.isinf(x):
        raise PerftestParseError(f"{where}: {what} is infinite")
    if x < 0:
        raise PerftestParseError(f"{where}: {what} is negative ({x:g})")
    if field in _INT_FIELDS and x != int(x):
        raise PerftestParseError(f"{where}: {what} is {x:g}, not a whole number")
    x = x * scale if field in _SCALED_FIELDS else x
    lo, hi, _ = LIMITS.get(field, (0, 1e15, field))
    if not lo <= x <= hi:
        raise PerftestParseError(f"{where}: {what} {x:g} is outside {lo:g}..{hi:g}")
    return x


def _check_row(r: _Row) -> _Row:
    """Consistency Perftest's own arithmetic guarantees (within print rounding)."""
    v = r.v

    def le(a: str, b: str) -> None:
        x, y = v.get(a), v.get(b)
        if x is not None and y is not None and x > y + 0.5 + 1e-9 * y:
            raise PerftestParseError(f"{r.where}: {LIMITS[a][2]} {x:g} is above {LIMITS[b][2]} {y:g}")

    if r.kind == "latency_summary":
        for a, b in (("min", "p50"), ("p50", "p90"), ("p90", "p99"), ("p99", "p9999"), ("p9999", "p999999"),
                     ("p999999", "max"), ("min", "ave"), ("ave", "max")):
            le(a, b)
    elif r.kind == "latency_interval":
        for a, b in (("min", "latency"), ("latency", "max"), ("min", "ave"), ("ave", "max")):
            le(a, b)
    return r


def _require(r: _Row, fields: Iterable[str]) -> _Row:
    missing = [f for f in fields if r.v.get(f) is None]
    if missing:
        raise PerftestParseError(f"{r.where}: no {', '.join(LIMITS[f][2] for f in missing)}")
    return r


_REQUIRED = {"latency_interval": ("latency",), "latency_summary": ("ave", "min", "max", "p50", "p90", "p99"),
             "throughput_interval": ("total", "sps", "mbps", "lost"),
             "throughput_summary": ("total", "sps_ave", "mbps_ave", "lost")}


def _finish(r: _Row) -> _Row:
    return _check_row(_require(r, _REQUIRED[r.kind]))


# --- format detection --------------------------------------------------------------------------------------------

def _lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, line) without a final line that lacks its newline (cut off output)."""
    lines = text.split("\n")
    lines.pop()  # "" after a final newline, or the unterminated (cut off) last line
    return [(i, ln.rstrip("\r")) for i, ln in enumerate(lines, 1)]


_LEGACY_START = re.compile(r"^\s*(One[ -]way Latency:|Length:\s*\S+\s+(Latency|Packets):|Packets:\s)", re.I)


def _detect(text: str) -> str:
    s = text.lstrip("\ufeff \t\r\n")
    if s.startswith(("{", "[")):
        return "json"
    if any(_LEGACY_START.match(ln) for ln in text.splitlines()):
        return "legacy"
    return "csv"


# --- csv ---------------------------------------------------------------------------------------------------------

def _key(header: str) -> tuple[str, float]:
    """Header cell -> (field, scale to microseconds for time columns)."""
    h = header.strip().lower().replace("μs", "us").replace("µs", "us")
    h = re.sub(r"\s+", " ", h).replace("avg", "ave")
    scale = 1.0
    if h.endswith("(ns)"):
        h, scale = h[:-4] + "(us)", 1e-3
    table = {
        "length (bytes)": "length", "sample size (bytes)": "length",
        "latency (us)": "latency", "ave (us)": "ave", "std (us)": "std", "min (us)": "min", "max (us)": "max",
        "50% (us)": "p50", "90% (us)": "p90", "99% (us)": "p99", "99.99% (us)": "p9999",
        "99.9999% (us)": "p999999", "total samples": "total", "samples/s": "sps", "ave samples/s": "sps_ave",
        "mbps": "mbps", "ave mbps": "mbps_ave", "lost samples": "lost", "lost samples (%)": "lost_pct",
        "cpu %": "cpu", "cpu (%)": "cpu", "serialization (us)": "ser", "deserialization (us)": "deser",
        "total (us)": "ser_total",
    }
    return table.get(h, "?" + h), scale


def _kind_of_header(fields: list[str]) -> str | None:
    f = set(fields)
    if "latency" in f and "ave" in f:
        return "latency_interval"
    if "p50" in f and "ave" in f:
        return "latency_summary"
    if "sps" in f and "total" in f:
        return "throughput_interval"
    if "total" in f and "sps_ave" in f:
        return "throughput_summary"
    return None


_LAT = ["length", "latency", "ave", "std", "min", "max"]
_LATSUM = ["length", "ave", "std", "min", "max", "p50", "p90", "p99", "p9999", "p999999"]
_TPI = ["length", "total", "sps", "sps_ave", "mbps", "mbps_ave", "lost", "lost_pct"]
_TPS = ["length", "total", "sps_ave", "mbps_ave", "lost", "lost_pct"]
# column layouts of headerless (-noOutputHeaders) rows: kind -> the layouts it can have
_HEADERLESS = {
    "latency_interval": [_LAT, _LAT + ["cpu"]],
    "latency_summary": [_LATSUM, _LATSUM + ["cpu"], _LATSUM + ["ser", "deser", "ser_total"],
                        _LATSUM + ["ser", "deser", "ser_total", "cpu"]],
    "throughput_interval": [_TPI, _TPI + ["cpu"]],
    "throughput_summary": [_TPS, _TPS + ["cpu"]],
}


def _guess(cells: list[str]) -> tuple[str, list[str]] | None:
    """Headerless row: the kind from the column count. 6 and 7 columns are a latency interval or a throughput summary:
    Perftest prints the throughput summary's last column (lost %) with two decimals ("%16.2lf") after an integer
    lost count, while a latency interval ends with two integers (or, in nano-clock builds, all columns decimal)."""
    cands = [(k, cols) for k, layouts in _HEADERLESS.items() for cols in layouts if len(cols) == len(cells)]
    if len(cands) == 1:
        return cands[0]
    for k, cols in cands:
        if k == "throughput_summary":
            lost, pct = cells[cols.index("lost")], cells[cols.index("lost_pct")]
            if "." in pct and "." not in lost:
                return k, cols
    for k, cols in cands:
        if k == "latency_interval":
            return k, cols
    return None


_TITLES = [
    (re.compile(r"^\s*I?ntervals One-way Latency for (\d+) Bytes:\s*$", re.I), "latency_interval"),
    (re.compile(r"^\s*One-way Latency Summary:\s*$", re.I), "latency_summary"),
    (re.compile(r"^\s*Interval Throughput for (\d+) Bytes:\s*$", re.I), "throughput_interval"),
    (re.compile(r"^\s*Throughput Summary:\s*$", re.I), "throughput_summary"),
]
_NUMLIKE = re.compile(r"^\s*[-+.\d]|^\s*-?nan\b|^\s*inf", re.I)


def _parse_csv(text: str) -> list[_Row]:
    rows: list[_Row] = []
    title: str | None = None
    header: tuple[str, list[str], list[float]] | None = None  # (kind, fields, scales)
    seen_header = False
    for n, line in _lines(text):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        for rx, kind in _TITLES:
            if rx.match(s):
                title, header = kind, None
                break
        else:
            if "," not in s:
                continue
            cells = [c.strip() for c in s.split(",")]
            where = f"line {n}"
            if "(bytes)" in cells[0].lower():
                keys = [_key(c) for c in cells]
                fields = [k for k, _ in keys]
                kind = _kind_of_header(fields)
                if kind is None:
                    raise PerftestParseError(f"{where}: header {s[:80]!r} is no Perftest latency or throughput header")
                if title and title != kind:
                    raise PerftestParseError(f"{where}: a {kind.replace('_', ' ')} header under a "
                                             f"{title.replace('_', ' ')} title")
                if len(set(fields)) != len(fields):
                    raise PerftestParseError(f"{where}: header repeats a column")
                header, seen_header = (kind, fields, [sc for _, sc in keys]), True
                title = None
                continue
            if not _NUMLIKE.match(cells[0]):
                continue  # not a result row (other text with a comma)
            if header is not None:
                kind, fields, scales = header
                if len(cells) != len(fields):
                    raise PerftestParseError(f"{where}: {len(cells)} cells under a header of {len(fields)} columns")
            elif seen_header:
                raise PerftestParseError(f"{where}: a result row outside any table (after a title without header)")
            else:
                g = _guess(cells)
                if g is None:
                    raise PerftestParseError(f"{where}: a headerless row of {len(cells)} columns matches no Perftest "
                                             "table")
                kind, fields = g
                scales = [1.0] * len(fields)
            v: dict[str, float | None] = {}
            for f, sc, c in zip(fields, scales, cells):
                if f.startswith("?"):
                    continue  # a column this parser does not know: not used
                v[f] = _value(f, c, f"{where}", sc)
            rows.append(_finish(_Row(kind, v, where)))
    return rows


# --- legacy ------------------------------------------------------------------------------------------------------

_U = r"(?:us|μs|µs|ns)"
_CPU_TAIL = r"(?:\s+CPU:?\s*(?P<cpu>\S+?)\s*(?:%|\(%\)))?"
_LEG_LAT_INT = re.compile(
    r"^One[ -]way Latency:\s+(?P<latency>\S+)\s+(?P<unit>" + _U + r")\s+Ave\s+(?P<ave>\S+)\s+(?P=unit)\s+"
    r"Std\s+(?P<std>\S+)\s+(?P=unit)\s+Min\s+(?P<min>\S+)\s+(?P=unit)\s+Max\s+(?P<max>\S+?)(?:\s+(?P=unit))?"
    + _CPU_TAIL + r"\s*$", re.I)
_LEG_LAT_SUM = re.compile(
    r"^Length:\s+(?P<length>\S+)\s+Latency:\s+Ave\s+(?P<ave>\S+)\s+(?P<unit>" + _U + r")\s+"
    r"Std\s+(?P<std>\S+)\s+(?P=unit)\s+Min\s+(?P<min>\S+)\s+(?P=unit)\s+Max\s+(?P<max>\S+)\s+(?P=unit)\s+"
    r"50%\s+(?P<p50>\S+)\s+(?P=unit)\s+90%\s+(?P<p90>\S+)\s+(?P=unit)\s+99%\s+(?P<p99>\S+)\s+(?P=unit)\s+"
    r"99\.99%\s+(?P<p9999>\S+)\s+(?P=unit)\s+99\.9999%\s+(?P<p999999>\S+)\s+(?P=unit)" + _CPU_TAIL + r"\s*$")
_LOST = r"Lost:\s+(?P<lost>\S+?)(?:\s+\((?P<lost_pct>\S+?)%\))?"
_LEG_TP_INT = re.compile(
    r"^Packets:\s+(?P<total>\S+)\s+Packets/s:\s+(?P<sps>\S+)\s+Packets/s\(ave\):\s+(?P<sps_ave>\S+)\s+"
    r"Mbps:\s+(?P<mbps>\S+)\s+Mbps\(ave\):\s+(?P<mbps_ave>\S+)\s+" + _LOST + _CPU_TAIL + r"\s*$")
_LEG_TP_SUM = re.compile(
    r"^Length:\s+(?P<length>\S+)\s+Packets:\s+(?P<total>\S+)\s+Packets/s\(ave\):\s+(?P<sps_ave>\S+)\s+"
    r"Mbps\(ave\):\s+(?P<mbps_ave>\S+)\s+" + _LOST + _CPU_TAIL + r"\s*$")
_LEG_LENGTH = re.compile(r"^\*+ New data length is (\S+)\s*$")


def _parse_legacy(text: str) -> list[_Row]:
    rows: list[_Row] = []
    length: float | None = None
    for n, line in _lines(text):
        s = line.strip()
        where = f"line {n}"
        if s.startswith("*") and "New data length" in s:
            m = _LEG_LENGTH.match(s)
            if not m:
                raise PerftestParseError(f"{where}: malformed 'New data length' line {s[:80]!r}")
            length = _value("length", m.group(1), where)
            continue
        for rx, kind in ((_LEG_LAT_SUM, "latency_summary"), (_LEG_LAT_INT, "latency_interval"),
                         (_LEG_TP_SUM, "throughput_summary"), (_LEG_TP_INT, "throughput_interval")):
            m = rx.match(s)
            if m:
                break
        else:
            if _LEGACY_START.match(s):
                raise PerftestParseError(f"{where}: not a well-formed Perftest result line: {s[:120]!r}")
            continue
        g = m.groupdict()
        scale = 1e-3 if (g.get("unit") or "").lower() == "ns" else 1.0
        v: dict[str, float | None] = {}
        for f, raw in g.items():
            if f == "unit" or raw is None:
                continue
            v[f] = _value(f, raw, where, scale)
        if kind.endswith("interval"):
            v["length"] = length
        rows.append(_finish(_Row(kind, v, where)))
    return rows


# --- json --------------------------------------------------------------------------------------------------------

_JSON_KEYS = {"latency": "latency", "latency_ave": "ave", "latency_std": "std", "latency_min": "min",
              "latency_max": "max", "latency_50": "p50", "latency_90": "p90", "latency_99": "p99",
              "latency_99.99": "p9999", "latency_99.9999": "p999999", "packets": "total", "packets/s": "sps",
              "packets/s_ave": "sps_ave", "packetsAve": "sps_ave", "packets/sAve": "sps_ave", "mbps": "mbps",
              "mbps_ave": "mbps_ave", "mbpsAve": "mbps_ave", "lost": "lost", "lost_percent": "lost_pct",
              "lostPercent": "lost_pct", "cpu": "cpu", "CPU": "cpu", "length": "length", "serialize": "ser",
              "deserialize": "deser", "total_s": "ser_total"}


def _parse_json(text: str) -> list[_Row]:
    # Perftest prints a NaN standard deviation as C's "nan"/"-nan", which is not JSON
    text = re.sub(r'("latency_std"\s*:\s*)-?nan\b', r"\1null", text)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PerftestParseError(f"Perftest JSON output does not parse: {exc.msg} (line {exc.lineno})") from None
    except RecursionError:
        raise PerftestParseError("Perftest JSON output is nested too deeply") from None
    if not isinstance(doc, dict) or "perftest" not in doc:
        shape = type(doc).__name__ if not isinstance(doc, dict) else f"object with keys {sorted(doc)[:5]}"
        raise PerftestParseError(f"Perftest JSON must be an object {{\"perftest\": [...]}}, not a {shape}")
    blocks = doc["perftest"]
    if not isinstance(blocks, list):
        raise PerftestParseError(f"Perftest JSON: \"perftest\" must be a list of blocks, not {type(blocks).__name__}")
    rows: list[_Row] = []
    for i, block in enumerate(blocks):
        where = f"perftest[{i}]"
        if not isinstance(block, dict):
            raise PerftestParseError(f"{where} must be an object, not {type(block).__name__}")
        length = _value("length", block["length"], f"{where}.length") if "length" in block else None
        intervals = block.get("intervals", [])
        if not isinstance(intervals, list):
            raise PerftestParseError(f"{where}.intervals must be a list, not {type(intervals).__name__}")

        def conv(d: Any, w: str) -> dict[str, float | None]:
            if not isinstance(d, dict):
                raise PerftestParseError(f"{w} must be an object, not {type(d).__name__}")
            out: dict[str, float | None] = {}
            for k, val in d.items():
                if k in _JSON_KEYS:
                    if k == "latency_std" and val is None:
                        out["std"] = None
                        continue
                    out[_JSON_KEYS[k]] = _value(_JSON_KEYS[k], val, f"{w}.{k}")
            if out.get("length") is None:
                out["length"] = length
            return out

        for j, it in enumerate(intervals):
            w = f"{where}.intervals[{j}]"
            r = conv(it, w)
            if "latency" in r:
                kind = "latency_interval"
            elif "sps" in r or "total" in r:
                kind = "throughput_interval"
            else:
                raise PerftestParseError(f"{w} holds neither latency nor packets")
            rows.append(_finish(_Row(kind, r, w)))
        if "summary" in block:
            w = f"{where}.summary"
            r = conv(block["summary"], w)
            if "ave" in r:
                kind = "latency_summary"
            elif "total" in r or "sps_ave" in r:
                kind = "throughput_summary"
            else:
                raise PerftestParseError(f"{w} holds neither latency nor packets")
            rows.append(_finish(_Row(kind, r, w)))
    return rows


# --- shared ------------------------------------------------------------------------------------------------------

def _rows(text: str) -> list[_Row]:
    if not isinstance(text, str):
        raise PerftestParseError(f"Perftest output must be text, not {type(text).__name__}")
    fmt = _detect(text)
    rows = {"json": _parse_json, "legacy": _parse_legacy, "csv": _parse_csv}[fmt](text)
    _check_sequences(rows)
    return rows


def _check_sequences(rows: list[_Row]) -> None:
    """Throughput intervals carry running totals (samples received, lost): within one size they never go down."""
    prev: dict[Any, _Row] = {}
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
           if text and not text.endswith("\n") and _detect(text) != "json" else "")
    return PerftestParseError(f"{what}{cut}: {_snippet(text)}")


def parse(text: str, subscriber: int | None = None) -> list[dict[str, Any]]:
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


def _samples(rows: list[_Row], subscriber: int | None) -> list[dict[str, Any]]:
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
    normalize(length=...) to pick one). Latency from the publisher's latency summary; throughput from a subscriber's
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


def normalize(text: str, **options: Any) -> dict[str, Any]:
    """{"tool": "perftest", "metrics", "samples"} of one Perftest process's output.

    Options: role = "pub" (alias "ping": the publisher, which reports latency) or "sub" (a subscriber, which reports
    throughput); detected from the output when not given (an output holding both kinds needs it). subscriber = the
    number put in the rows' `subscriber` (default 1, as edgebench's ddsperf runs number them). length = the sample
    size to take from a -scan output (required when the output holds several sizes).

    metrics: the 15 DDS run metrics (docs/results-layout.md "DDS runs"). Publisher: latency_mean/min/max/p50/p90/p99_us
    from the latency summary, cpu_pub_pct from its CPU column (-cpu); latency_count is null (Perftest prints no
    count). Subscriber: samples_per_s, throughput_mbps (= per_subscriber_mbps) and lost_samples from the throughput
    summary, cpu_sub_pct. RSS is never printed by Perftest (null). samples: parse()'s rows of that side and size.
    Raises PerftestParseError for anything else, including an output without the side's summary."""
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
    sides = {("pub" if r.kind in _LATENCY_KINDS else "sub") for r in rows}
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
    kinds = _LATENCY_KINDS if side == "pub" else _THROUGHPUT_KINDS
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
