"""Pure parser for RTI Perftest (Connext) output, into the ddsperf driver's sample and metric shapes.

Formats (rticommunity/rtiperftest srcDoc/designDocuments/280-ouput-format.md, srcCpp*/PerftestPrinter.cxx):
- csv (default since v3): blocks introduced by "Intervals One-way Latency for N Bytes:", "One-way Latency
  Summary:", "Interval Throughput for N Bytes:", "Throughput Summary:", each followed by a header row
  ("Length (Bytes), Latency (us), Ave (us), ..." in 3.x; "Sample Size (Bytes), Ave (μs), ..." in 4.x) and
  comma-separated rows. Columns are found by header name, so optional columns (CPU, serialization) and either
  header spelling work. Without headers (-noOutputHeaders) rows are told apart by their column count.
- legacy: "One way Latency: ..." / "Length: N Latency: Ave ..." and "Packets: ..." / "Length: N  Packets: ...".
- json: {"perftest": [{"length": N, "intervals": [...], "summary": {...}}]}.
Latency is Perftest's one-way latency (RTT/2) in microseconds, like ddsperf.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .ddsperf import SAMPLE_KEYS


class PerftestParseError(ValueError):
    pass


def _num(x: str | float | int | None) -> float | None:
    if x is None:
        return None
    try:
        return float(str(x).strip())
    except ValueError:
        return None


def _key(header: str) -> str:
    h = header.strip().lower().replace("μs", "us").replace("avg", "ave")
    h = re.sub(r"\s+", " ", h)
    table = {
        "length (bytes)": "length", "sample size (bytes)": "length",
        "latency (us)": "latency", "ave (us)": "ave", "std (us)": "std", "min (us)": "min", "max (us)": "max",
        "50% (us)": "p50", "90% (us)": "p90", "99% (us)": "p99", "99.99% (us)": "p9999",
        "99.9999% (us)": "p999999", "total samples": "total", "samples/s": "sps", "ave samples/s": "sps_ave",
        "mbps": "mbps", "ave mbps": "mbps_ave", "lost samples": "lost", "lost samples (%)": "lost_pct",
        "cpu %": "cpu", "cpu (%)": "cpu",
    }
    return table.get(h, h)


# column layouts of headerless csv rows, by number of columns (without optional CPU)
_HEADERLESS = {
    "latency_interval": ["length", "latency", "ave", "std", "min", "max"],
    "latency_summary": ["length", "ave", "std", "min", "max", "p50", "p90", "p99", "p9999", "p999999"],
    "throughput_interval": ["length", "total", "sps", "sps_ave", "mbps", "mbps_ave", "lost", "lost_pct"],
    "throughput_summary": ["length", "total", "sps_ave", "mbps_ave", "lost", "lost_pct"],
}


def _detect(text: str) -> str:
    s = text.lstrip()
    if s.startswith("{"):
        return "json"
    if re.search(r"^(One way Latency:|Length:\s+\d+\s+(Latency|Packets)|Packets:\s+\d+)", text, re.M):
        return "legacy"
    return "csv"


def _parse_csv(text: str) -> list[tuple[str, dict[str, float | None]]]:
    rows: list[tuple[str, dict[str, float | None]]] = []
    kind, header = None, None
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        low = s.lower()
        if "latency for" in low and low.startswith(("intervals", "ntervals")):
            kind, header = "latency_interval", None
        elif low.startswith("one-way latency summary"):
            kind, header = "latency_summary", None
        elif low.startswith("interval throughput"):
            kind, header = "throughput_interval", None
        elif low.startswith("throughput summary"):
            kind, header = "throughput_summary", None
        elif "," in s and re.match(r"^[A-Za-z]", s):
            header = [_key(c) for c in s.split(",")]
        elif "," in s and re.match(r"^\d", s):
            cells = [c.strip() for c in s.split(",")]
            cols, k = header, kind
            if cols is None or len(cols) != len(cells):
                k, cols = _guess(cells, kind)
            if k is None:
                continue
            rows.append((k, {c: _num(v) for c, v in zip(cols, cells)}))
    return rows


def _guess(cells: list[str], kind: str | None) -> tuple[str | None, list[str] | None]:
    """Headerless row: the block kind from the column count (latency summary and throughput interval both
    have 10/8 columns, so the decimal lost-% column tells throughput apart)."""
    n = len(cells)
    cands = []
    for k, cols in _HEADERLESS.items():
        if n == len(cols):
            cands.append((k, cols))
        elif n == len(cols) + 1:
            cands.append((k, cols + ["cpu"]))
    if kind:
        for k, cols in cands:
            if k == kind:
                return k, cols
    for k, cols in cands:
        # throughput rows: lost-% is a decimal right after the integer lost count
        if k.startswith("throughput") and "." in cells[cols.index("lost_pct")] and "." not in cells[cols.index("lost")]:
            return k, cols
    for k, cols in cands:
        if k.startswith("latency"):
            return k, cols
    return None, None


_LEG_LAT_INT = re.compile(r"One way Latency:\s*([\d.]+) us Ave\s+([\d.]+) us Std\s+([\d.]+) us Min\s+([\d.]+) us "
                          r"Max\s+([\d.]+) us(?: CPU:?\s*([\d.]+))?")
_LEG_LAT_SUM = re.compile(r"Length:\s*(\d+)\s+Latency: Ave\s+([\d.]+) us Std\s+([\d.]+) us Min\s+([\d.]+) us "
                          r"Max\s+([\d.]+) us 50%\s+([\d.]+) us 90%\s+([\d.]+) us 99%\s+([\d.]+) us "
                          r"99\.99%\s+([\d.]+) us 99\.9999%\s+([\d.]+) us(?:.*?CPU:?\s*([\d.]+))?")
_LEG_TP_INT = re.compile(r"^Packets:\s*(\d+)\s+Packets/s:\s*(\d+)\s+Packets/s\(ave\):\s*(\d+)\s+Mbps:\s*([\d.]+)\s+"
                         r"Mbps\(ave\):\s*([\d.]+)\s+Lost:\s*(\d+) \(([\d.]+)%\)(?:\s+CPU\s*([\d.]+))?")
_LEG_TP_SUM = re.compile(r"Length:\s*(\d+)\s+Packets:\s*(\d+)\s+Packets/s\(ave\):\s*(\d+)\s+Mbps\(ave\):\s*([\d.]+)\s+"
                         r"Lost:\s*(\d+) \(([\d.]+)%\)(?:\s+CPU\s*([\d.]+))?")


def _parse_legacy(text: str) -> list[tuple[str, dict[str, float | None]]]:
    rows: list[tuple[str, dict[str, float | None]]] = []
    length = None
    for line in text.splitlines():
        s = line.strip()
        m = re.match(r"\*+ New data length is (\d+)", s)
        if m:
            length = float(m.group(1))
            continue
        if m := _LEG_LAT_SUM.search(s):
            g = [_num(x) for x in m.groups()]
            rows.append(("latency_summary", dict(zip(
                ["length", "ave", "std", "min", "max", "p50", "p90", "p99", "p9999", "p999999", "cpu"], g))))
        elif m := _LEG_LAT_INT.search(s):
            g = [_num(x) for x in m.groups()]
            rows.append(("latency_interval", {"length": length, **dict(zip(
                ["latency", "ave", "std", "min", "max", "cpu"], g))}))
        elif m := _LEG_TP_SUM.search(s):
            g = [_num(x) for x in m.groups()]
            rows.append(("throughput_summary", dict(zip(
                ["length", "total", "sps_ave", "mbps_ave", "lost", "lost_pct", "cpu"], g))))
        elif m := _LEG_TP_INT.search(s):
            g = [_num(x) for x in m.groups()]
            rows.append(("throughput_interval", {"length": length, **dict(zip(
                ["total", "sps", "sps_ave", "mbps", "mbps_ave", "lost", "lost_pct", "cpu"], g))}))
    return rows


_JSON_KEYS = {"latency": "latency", "latency_ave": "ave", "latency_std": "std", "latency_min": "min",
              "latency_max": "max", "latency_50": "p50", "latency_90": "p90", "latency_99": "p99",
              "latency_99.99": "p9999", "latency_99.9999": "p999999", "packets": "total", "packets/s": "sps",
              "packets/s_ave": "sps_ave", "packetsAve": "sps_ave", "packets/sAve": "sps_ave", "mbps": "mbps",
              "mbps_ave": "mbps_ave", "mbpsAve": "mbps_ave", "lost": "lost", "lost_percent": "lost_pct",
              "lostPercent": "lost_pct", "cpu": "cpu", "length": "length"}


def _parse_json(text: str) -> list[tuple[str, dict[str, float | None]]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PerftestParseError(f"Perftest JSON output does not parse: {exc.msg}") from None
    rows: list[tuple[str, dict[str, float | None]]] = []
    for block in doc.get("perftest", []):
        length = _num(block.get("length"))

        def conv(d: dict) -> dict[str, float | None]:
            out = {_JSON_KEYS[k]: _num(v) for k, v in d.items() if k in _JSON_KEYS}
            out.setdefault("length", length)
            return out

        for it in block.get("intervals", []):
            r = conv(it)
            rows.append(("latency_interval" if "latency" in r else "throughput_interval", r))
        if block.get("summary"):
            r = conv(block["summary"])
            rows.append(("latency_summary" if "ave" in r else "throughput_summary", r))
    return rows


def _rows(text: str) -> list[tuple[str, dict[str, float | None]]]:
    fmt = _detect(text)
    return {"json": _parse_json, "legacy": _parse_legacy, "csv": _parse_csv}[fmt](text)


def parse(text: str, subscriber: int | None = None) -> list[dict[str, Any]]:
    """Per-interval samples (dds-samples.json shape). Perftest prints one interval line per second; t_s is the
    1-based interval index (Perftest prints no timestamps). Latency intervals (role "ping"): latency_mean_us is
    the interval's latency column, min/max are Perftest's running min/max; Perftest prints no per-interval
    percentiles or counts (null). Throughput intervals (role "sub"): samples_per_s, throughput_mbps and
    lost_samples = the running lost total (Perftest prints totals, not deltas)."""
    out: list[dict[str, Any]] = []
    n = {"latency_interval": 0, "throughput_interval": 0}
    for kind, r in _rows(text):
        if kind not in n:
            continue
        n[kind] += 1
        s: dict[str, Any] = dict.fromkeys(SAMPLE_KEYS)
        s.update(t_s=float(n[kind]), subscriber=subscriber)
        if kind == "latency_interval":
            s.update(role="ping", latency_mean_us=r.get("latency"), latency_min_us=r.get("min"),
                     latency_max_us=r.get("max"))
        else:
            lost = r.get("lost")
            s.update(role="sub", samples_per_s=r.get("sps"), throughput_mbps=r.get("mbps"),
                     lost_samples=None if lost is None else int(lost))
        out.append(s)
    return out


def summarize(text: str) -> dict[str, Any]:
    """Metrics (the ddsperf metric keys) from the *last* summary of each kind (a -scan run prints one per size;
    use split per size upstream if needed). Latency from the publisher's "One-way Latency Summary"; throughput
    from a subscriber's "Throughput Summary" (one subscriber per output: sum several outputs upstream).
    Extra keys: length_bytes, latency_std_us, latency_p9999_us, lost_percent, total_samples."""
    m: dict[str, Any] = {k: None for k in (
        "latency_mean_us", "latency_min_us", "latency_p50_us", "latency_p90_us", "latency_p99_us",
        "latency_max_us", "latency_count", "samples_per_s", "throughput_mbps", "per_subscriber_mbps",
        "lost_samples", "cpu_pub_pct", "rss_pub_mb", "cpu_sub_pct", "rss_sub_mb")}
    m.update(length_bytes=None, latency_std_us=None, latency_p9999_us=None, lost_percent=None, total_samples=None)
    rows = _rows(text)
    lat = [r for k, r in rows if k == "latency_summary"]
    tp = [r for k, r in rows if k == "throughput_summary"]
    if not lat and not tp:
        raise PerftestParseError("no Perftest latency or throughput summary found")
    if lat:
        r = lat[-1]
        m.update(latency_mean_us=r.get("ave"), latency_std_us=r.get("std"), latency_min_us=r.get("min"),
                 latency_max_us=r.get("max"), latency_p50_us=r.get("p50"), latency_p90_us=r.get("p90"),
                 latency_p99_us=r.get("p99"), latency_p9999_us=r.get("p9999"), cpu_pub_pct=r.get("cpu"),
                 length_bytes=None if r.get("length") is None else int(r["length"]))
    if tp:
        r = tp[-1]
        lost = r.get("lost")
        m.update(samples_per_s=r.get("sps_ave"), throughput_mbps=r.get("mbps_ave"),
                 per_subscriber_mbps=r.get("mbps_ave"), lost_samples=None if lost is None else int(lost),
                 lost_percent=r.get("lost_pct"), cpu_sub_pct=r.get("cpu"),
                 total_samples=None if r.get("total") is None else int(r["total"]))
        if m["length_bytes"] is None and r.get("length") is not None:
            m["length_bytes"] = int(r["length"])
    return m
