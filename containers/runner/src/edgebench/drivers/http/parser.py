"""Parsing the HTTP load generators' per-request output (fortio's JSON access log, `hey -o csv`) into
http-requests.json rows, and a run's summary of them. Pure functions; see run.py for the formats and their quirks."""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Sequence

from edgebench.drivers.protocol import Record, ToolFormat
from edgebench.errors import EdgebenchError

# time resolution of each client's per-request times, ms: fortio prints seconds with %f (1 us), hey with %4.4f
RESOLUTION_MS = {"fortio": 0.001, "hey": 0.1, "edgebench-httpduet": 0.001}
PHASE_TOLERANCE_MS = RESOLUTION_MS["hey"]  # one step of hey's %4.4f-seconds resolution
MAX_RESPONSE_MS = 3_600_000.0  # a per-request time beyond an hour is not a measurement
# a fortio access-log timestamp outside 2000-01-01 .. 2200-01-01 (Unix ns) is not a real start time
_TIMESTAMP_RANGE_NS = (946_684_800 * 10**9, 7_258_118_400 * 10**9)

# hey CSV column -> http-requests.json key (hey's "DNS" column is not part of the contract)
_COLUMNS = {
    "response-time": "response_ms",
    "DNS+dialup": "connect_ms",
    "Request-write": "write_ms",
    "Response-delay": "wait_ms",
    "Response-read": "read_ms",
}


class HttpDriverError(EdgebenchError):
    """The HTTP workload could not run, or a load generator's output is not what that tool writes."""


# parsing ---------------------------------------------------------------------------------------------
def _ms(seconds: float, what: str) -> float:
    """Seconds -> ms, rejecting NaN, infinities, negative and absurd values."""
    if not math.isfinite(seconds):
        raise HttpDriverError(f"{what}: {seconds!r} is not a finite number")
    if seconds < 0:
        raise HttpDriverError(f"{what}: negative time {seconds!r} s")
    ms = seconds * 1000.0
    if ms > MAX_RESPONSE_MS:
        raise HttpDriverError(f"{what}: {seconds!r} s is beyond {MAX_RESPONSE_MS / 1000:g} s, not a request time")
    return round(ms, 6)  # round away float noise (0.0007 * 1000)


def _hey_seconds(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise HttpDriverError(f"{what}: {text!r} is not a number") from None
    return _ms(value, what)


def _hey_status(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise HttpDriverError(f"{what}: status {text!r} is not an integer") from None
    if not 100 <= value <= 599:
        raise HttpDriverError(f"{what}: status {value} is not an HTTP status code")
    return value


def parse_hey_csv(text: str) -> list[dict[str, Any]]:
    """Per-request rows in the http-requests.json shape, from `hey -o csv` output.

    Columns are found by header name. Rows are ordered by hey's `offset` (request start, seconds since hey
    started) and numbered `seq` 1..n in that order; `offset_ms` is relative to the first request. Times are ms.
    A column hey did not print (older hey: no status-code / offset) gives null. Raises HttpDriverError if the
    text has no hey CSV header, a row is ragged, or a value is not a number, NaN, negative or absurd.
    """
    lines = [ln.strip() for ln in text.replace("\r\n", "\n").split("\n")]
    lines = [ln for ln in lines if ln]
    header_at = next((i for i, ln in enumerate(lines) if ln.startswith("response-time,")), None)
    if header_at is None:
        raise HttpDriverError(f"not hey CSV output (no 'response-time,...' header): {text[:200]!r}")
    header = lines[header_at].split(",")
    index = {name: i for i, name in enumerate(header)}
    rows: list[dict[str, Any]] = []
    for n, ln in enumerate(lines[header_at + 1:], start=1):
        fields = ln.split(",")
        if len(fields) != len(header):
            raise HttpDriverError(f"hey CSV row has {len(fields)} fields, header has {len(header)}: {ln[:200]!r}")
        where = f"hey CSV row {n}"
        row: dict[str, Any] = {
            "_offset": _hey_seconds(fields[index["offset"]], f"{where}, offset") if "offset" in index else None}
        for col, key in _COLUMNS.items():
            row[key] = _hey_seconds(fields[index[col]], f"{where}, {col}") if col in index else None
        row["status"] = _hey_status(fields[index["status-code"]], where) if "status-code" in index else None
        rows.append(row)
    # stable sort: file order breaks ties and orders rows without an offset (old hey) last
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["_offset"] is None, rows[i]["_offset"] or 0.0, i))
    offsets = [rows[i]["_offset"] for i in order if rows[i]["_offset"] is not None]
    first = offsets[0] if offsets else None
    out = []
    for seq, i in enumerate(order, start=1):
        r = rows[i]
        total = r["response_ms"]
        for key in ("connect_ms", "write_ms", "wait_ms", "read_ms"):
            # hey race: when the first response byte arrives before Go's transport reports the request as
            # written, Response-delay is measured from hey's start (seconds, not us). A phase longer than the
            # whole request (beyond one 0.1 ms rounding step) is such garbage: null, not a fake number.
            if r[key] is not None and total is not None and r[key] > total + PHASE_TOLERANCE_MS + 1e-9:
                r[key] = None
        out.append({
            "seq": seq,
            "offset_ms": None if r["_offset"] is None else round(r["_offset"] - first, 6),
            "response_ms": r["response_ms"],
            "connect_ms": r["connect_ms"],
            "write_ms": r["write_ms"],
            "wait_ms": r["wait_ms"],
            "read_ms": r["read_ms"],
            "status": r["status"],
        })
    return out


def _show(value: Any) -> str:
    """A short repr for messages (never raises: huge integers and deep nesting have no repr)."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def _int_field(obj: dict, key: str, where: str, minimum: int = 0) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise HttpDriverError(f"{where}: {key!r} must be an integer, got {_show(value)}")
    if value < minimum:
        raise HttpDriverError(f"{where}: {key!r} = {_show(value)} is below {minimum}")
    return value


def _fortio_status(details: Any, where: str) -> int:
    """fortio's `details` for an HTTP call: the status code as text, "-1" (-2: retried socket) for a transport
    error. Transport errors become status 0, as in the contract."""
    if not isinstance(details, str):
        raise HttpDriverError(f"{where}: 'details' must be the status code as text, got {_show(details)}")
    try:
        code = int(details.strip())
    except ValueError:
        raise HttpDriverError(f"{where}: 'details' {_show(details)} is not an HTTP status code "
                              "(not an HTTP load's access log?)") from None
    if code in (-2, -1, 0):
        return 0
    if not 100 <= code <= 599:
        raise HttpDriverError(f"{where}: 'details' {code} is not an HTTP status code")
    return code


def parse_fortio_access_log(text: str) -> list[dict[str, Any]]:
    """Per-request rows in the http-requests.json shape, from `fortio load -access-log-format json` output.

    One JSON object per non-blank line: latency (s), timestamp (start, Unix ns), thread, iter, ok, details (the
    status code; "-1" = transport error -> status 0). Rows are ordered by start time (then thread, iter) and
    numbered `seq` 1..n; `offset_ms` is the start relative to the first request (ns precision), `response_ms` the
    latency in ms (fortio prints us: 3 decimals). connect/write/wait/read_ms are null (fortio does not measure
    them per call). Raises HttpDriverError for anything else: no lines, a line that is not such an object, NaN,
    negative or absurd times, an implausible timestamp, a repeated (thread, iter).
    """
    rows: list[dict[str, Any]] = []
    seen: set[tuple[int, int]] = set()
    for n, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        if not line.strip():
            continue
        where = f"fortio access log line {n}"
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            raise HttpDriverError(f"{where}: not JSON: {line[:200]!r}") from None
        if not isinstance(obj, dict):
            raise HttpDriverError(f"{where}: not a JSON object: {line[:200]!r}")
        latency = obj.get("latency")
        if not isinstance(latency, (int, float)) or isinstance(latency, bool):
            raise HttpDriverError(f"{where}: 'latency' must be a number of seconds, got {_show(latency)}")
        try:
            seconds = float(latency)
        except OverflowError:  # an integer too large for a float
            raise HttpDriverError(f"{where}: 'latency' is an integer too large to be a request time") from None
        response_ms = _ms(seconds, f"{where}, latency")
        start = _int_field(obj, "timestamp", where)
        if not _TIMESTAMP_RANGE_NS[0] <= start <= _TIMESTAMP_RANGE_NS[1]:
            raise HttpDriverError(f"{where}: 'timestamp' {_show(start)} is not a Unix time in ns "
                                  "between 2000 and 2200")
        thread, it = _int_field(obj, "thread", where), _int_field(obj, "iter", where)
        if (thread, it) in seen:
            raise HttpDriverError(f"{where}: thread {_show(thread)} iter {_show(it)} appears twice "
                                  "(two runs in one log?)")
        seen.add((thread, it))
        if not isinstance(obj.get("ok"), bool):
            raise HttpDriverError(f"{where}: 'ok' must be true or false, got {_show(obj.get('ok'))}")
        rows.append({"_start": start, "_key": (thread, it), "response_ms": response_ms,
                     "status": _fortio_status(obj.get("details"), where)})
    if not rows:
        raise HttpDriverError(f"not a fortio access log (no request lines): {text[:200]!r}")
    rows.sort(key=lambda r: (r["_start"], r["_key"]))
    first = rows[0]["_start"]
    return [{"seq": seq, "offset_ms": round((r["_start"] - first) / 1e6, 6), "response_ms": r["response_ms"],
             "connect_ms": None, "write_ms": None, "wait_ms": None, "read_ms": None, "status": r["status"]}
            for seq, r in enumerate(rows, start=1)]


PARSERS: dict[str, Callable[[str], list[dict[str, Any]]]] = {
    "fortio": parse_fortio_access_log,
    "hey": parse_hey_csv,
    # the testbed's interleaving client (containers/httpduet) writes each member's log in fortio's line format
    "edgebench-httpduet": parse_fortio_access_log,
}


def parse(text: str, tool: str) -> Record:
    """The Record of one load generator output: `samples` are the http-requests.json rows,
    `metrics` the contract's summary plus `client` (= tool) and `resolution_ms` (the tool's time resolution).
    Raises HttpDriverError for an unknown tool or output the tool's parser cannot read."""
    if tool not in PARSERS:
        raise HttpDriverError(f"unknown HTTP load generator {tool!r} (known: {', '.join(PARSERS)})")
    rows = PARSERS[tool](text)
    return {"tool": tool, "metrics": {**summarize(rows), "client": tool, "resolution_ms": RESOLUTION_MS[tool]},
            "samples": rows}



def _parse_fortio(text: str) -> Record:
    return parse(text, "fortio")


def _parse_hey(text: str) -> Record:
    return parse(text, "hey")


def _parse_httpduet(text: str) -> Record:
    return parse(text, "edgebench-httpduet")


FORMATS = (
    ToolFormat("fortio", _parse_fortio, "fortio-access.jsonl", "http-requests.json",
               "fortio load access log (-access-log-format json, one line per request)"),
    ToolFormat("hey", _parse_hey, "hey.csv", "http-requests.json", "hey -o csv output"),
    ToolFormat("edgebench-httpduet", _parse_httpduet, "httpduet-access.jsonl", "http-requests.json",
               "edgebench-httpduet's per-member access log (fortio's JSON line format; duet rounds, interleaved)"),
)

def dropped_request(seq: int) -> dict[str, Any]:
    """The http-requests.json row for a request that was planned but has no line in the client's output (the
    client stopped early, or hey: a transport error): status 0, no times. `measure` appends these after the
    requests the client reported."""
    return {"seq": seq, "offset_ms": None, "response_ms": None, "connect_ms": None, "write_ms": None,
            "wait_ms": None, "read_ms": None, "status": 0}


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """p-th percentile (0..100) with linear interpolation between closest ranks: numpy's default ("linear",
    Hyndman & Fan type 7): h = (n-1)*p/100, x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h])."""
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    h = (len(sorted_values) - 1) * p / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def _is_error(row: dict[str, Any]) -> bool:
    status = row.get("status")
    return not isinstance(status, int) or not 200 <= status <= 299


def summarize(requests: Sequence[dict[str, Any]], expected: int | None = None) -> dict[str, Any]:
    """The contract's metrics from http-requests.json rows.

    `requests` = max(expected, rows); `errors` = rows with a non-2xx, 0 or missing status, plus `expected - rows`
    (requests not in the list). Response-time statistics cover the successful (2xx) rows only, as the warehouse's
    int_http__run_stats does; percentiles use linear interpolation between closest ranks (numpy's default,
    DuckDB's quantile_cont). They are null when no successful row has a response time.
    """
    total = max(expected or 0, len(requests))
    errors = sum(1 for r in requests if _is_error(r)) + (total - len(requests))
    times = sorted(float(r["response_ms"]) for r in requests
                   if not _is_error(r) and r.get("response_ms") is not None)

    def rnd(x: float | None) -> float | None:
        return None if x is None else round(x, 6)

    return {
        "requests": total,
        "errors": errors,
        "response_mean_ms": rnd(sum(times) / len(times)) if times else None,
        "response_p50_ms": rnd(percentile(times, 50)) if times else None,
        "response_p90_ms": rnd(percentile(times, 90)) if times else None,
        "response_p99_ms": rnd(percentile(times, 99)) if times else None,
        "response_max_ms": rnd(times[-1]) if times else None,
    }
