"""Reading the three RTI Perftest output formats (legacy text, CSV, JSON) into checked rows (rows.py); see parser.py
for the formats and their sources. PerftestParseError for anything Perftest cannot have printed."""

from __future__ import annotations

import json
import re
from typing import Any

from edgebench.drivers.common.numbers import complete_lines as _lines
from edgebench.drivers.perftest.rows import PerftestParseError, Row, checked_value, finish_row


# --- format detection --------------------------------------------------------------------------------------------

_LEGACY_START = re.compile(r"^\s*(One[ -]way Latency:|Length:\s*\S+\s+(Latency|Packets):|Packets:\s)", re.I)


def detect_format(text: str) -> str:
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


def read_csv(text: str) -> list[Row]:
    rows: list[Row] = []
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
                v[f] = checked_value(f, c, f"{where}", sc)
            rows.append(finish_row(Row(kind, v, where)))
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


def read_legacy(text: str) -> list[Row]:
    rows: list[Row] = []
    length: float | None = None
    for n, line in _lines(text):
        s = line.strip()
        where = f"line {n}"
        if s.startswith("*") and "New data length" in s:
            m = _LEG_LENGTH.match(s)
            if not m:
                raise PerftestParseError(f"{where}: malformed 'New data length' line {s[:80]!r}")
            length = checked_value("length", m.group(1), where)
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
            v[f] = checked_value(f, raw, where, scale)
        if kind.endswith("interval"):
            v["length"] = length
        rows.append(finish_row(Row(kind, v, where)))
    return rows


# --- json --------------------------------------------------------------------------------------------------------

_JSON_KEYS = {"latency": "latency", "latency_ave": "ave", "latency_std": "std", "latency_min": "min",
              "latency_max": "max", "latency_50": "p50", "latency_90": "p90", "latency_99": "p99",
              "latency_99.99": "p9999", "latency_99.9999": "p999999", "packets": "total", "packets/s": "sps",
              "packets/s_ave": "sps_ave", "packetsAve": "sps_ave", "packets/sAve": "sps_ave", "mbps": "mbps",
              "mbps_ave": "mbps_ave", "mbpsAve": "mbps_ave", "lost": "lost", "lost_percent": "lost_pct",
              "lostPercent": "lost_pct", "cpu": "cpu", "CPU": "cpu", "length": "length", "serialize": "ser",
              "deserialize": "deser", "total_s": "ser_total"}


def read_json(text: str) -> list[Row]:
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
    rows: list[Row] = []
    for i, block in enumerate(blocks):
        where = f"perftest[{i}]"
        if not isinstance(block, dict):
            raise PerftestParseError(f"{where} must be an object, not {type(block).__name__}")
        length = checked_value("length", block["length"], f"{where}.length") if "length" in block else None
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
                    out[_JSON_KEYS[k]] = checked_value(_JSON_KEYS[k], val, f"{w}.{k}")
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
            rows.append(finish_row(Row(kind, r, w)))
        if "summary" in block:
            w = f"{where}.summary"
            r = conv(block["summary"], w)
            if "ave" in r:
                kind = "latency_summary"
            elif "total" in r or "sps_ave" in r:
                kind = "throughput_summary"
            else:
                raise PerftestParseError(f"{w} holds neither latency nor packets")
            rows.append(finish_row(Row(kind, r, w)))
    return rows
