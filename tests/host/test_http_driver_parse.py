"""The HTTP driver's parsers of the load generators' per-request output, on captured real output (and mutated
output, hypothesis).

Captured files:
  tests/data/http/fortio-1.66.5-*.jsonl (+ .log, fortio's own report on stderr): `fortio load` (the client measure()
  runs) in one namespace against `fortio server` in another over a veth pair, commands from http.load_cmd
  (tests/data/http/capture.py re-captures them): 40 x POST /echo with 60 B and 1 MiB bodies, 40 x POST
  /echo?size=0 with 100 KiB, 40 x GET /echo?size=1000, 3 requests to a port nobody listens on (connection refused)
  and 3 x GET /echo?status=503.
  tests/data/hey-0.1.4-*.csv: the former client, hey 0.1.4 (Debian 12), the same way: 40 x POST /echo with 60 B
  and 100 KiB bodies, 3 x connection refused (header only), 3 x GET /echo?status=503. Kept because
  `edgebench parse --tool hey` still reads hey output.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgebench.results.records import parsing
from edgebench.drivers import http

DATA = Path(__file__).parents[1] / "data"
FORTIO = DATA / "http"
ROW_KEYS = {"seq", "offset_ms", "response_ms", "connect_ms", "write_ms", "wait_ms", "read_ms", "status"}


def load(name: str) -> list[dict]:
    return http.parse_hey_csv((DATA / name).read_text())


def fortio_text(case: str) -> str:
    return (FORTIO / f"fortio-1.66.5-{case}.jsonl").read_text()


def fortio_report(case: str) -> dict:
    """fortio's own summary lines from its stderr report (independent of the access log): count/min/max/sum of
    all calls (seconds) and the status-code counts."""
    text = (FORTIO / f"fortio-1.66.5-{case}.log").read_text()
    m = re.search(r"^Aggregated Function Time : count (\d+) avg \S+ \+/- \S+ min (\S+) max (\S+) sum (\S+)$", text,
                  re.M)
    codes = {int(c): int(n) for c, n in re.findall(r"^Code +(-?\d+) : (\d+) ", text, re.M)}
    sockets = int(re.search(r"^Sockets used: (\d+) ", text, re.M).group(1))
    return {"count": int(m.group(1)), "min": float(m.group(2)), "max": float(m.group(3)), "sum": float(m.group(4)),
            "codes": codes, "sockets": sockets}


def raw_fields(text: str) -> list[tuple[str, int]]:
    """(latency as printed, start timestamp) per line, read with a regex rather than the json module."""
    return [(lat, int(ts)) for lat, ts in re.findall(r'"latency":([0-9.]+),"timestamp":(\d+),', text)]


def quantiles_type7(values: list[float]) -> dict[int, float]:
    """p50/p90/p99 by the standard library (method="inclusive" is numpy's default linear interpolation)."""
    q = statistics.quantiles(values, n=100, method="inclusive")
    return {50: q[49], 90: q[89], 99: q[98]}


# fortio access log, on real output -------------------------------------------------------------------
FORTIO_OK = ["echo-60B", "echo-1MiB", "recv-100KiB", "static-1000B"]


@pytest.mark.parametrize("case", FORTIO_OK)
def test_parse_fortio_against_fortio_own_report(case):
    text = fortio_text(case)
    rows = http.parse_fortio_access_log(text)
    report = fortio_report(case)
    assert len(rows) == report["count"] == 40 and report["codes"] == {200: 40}
    assert report["sockets"] == 1  # one kept-alive connection for all 40 calls, no warm-up call
    assert [r["seq"] for r in rows] == list(range(1, 41))
    assert all(set(r) == ROW_KEYS for r in rows)
    assert all(r["status"] == 200 for r in rows)
    # fortio measures the whole call only: no phase split
    assert all(r[k] is None for r in rows for k in ("connect_ms", "write_ms", "wait_ms", "read_ms"))
    times = [r["response_ms"] for r in rows]
    # the access log prints seconds with 6 decimals: each time is within 0.5 us of fortio's own histogram figures
    assert min(times) == pytest.approx(report["min"] * 1000, abs=0.0005 + 1e-9)
    assert max(times) == pytest.approx(report["max"] * 1000, abs=0.0005 + 1e-9)
    assert sum(times) == pytest.approx(report["sum"] * 1000, abs=40 * 0.0005 + 1e-5)
    # values as printed (regex, not json): seconds -> ms, 3 decimals
    printed = raw_fields(text)
    assert sorted(times) == sorted(round(float(lat) * 1000, 3) for lat, _ in printed)
    # offsets: start timestamps (ns) relative to the first one
    starts = sorted(ts for _, ts in printed)
    assert [r["offset_ms"] for r in rows] == [(ts - starts[0]) / 1e6 for ts in starts]
    # sequential: each call starts after the previous one ended (the log's clocks agree to well under 0.1 ms)
    for prev, nxt in zip(rows, rows[1:]):
        assert nxt["offset_ms"] >= prev["offset_ms"] + prev["response_ms"] - 0.05
    # microsecond resolution: not quantized to hey's 0.1 ms steps
    assert any(abs(t * 10 - round(t * 10)) > 1e-6 for t in times)
    assert len(set(times)) > 20
    m = http.summarize(rows, expected=40)
    q = quantiles_type7(times)
    assert m["requests"] == 40 and m["errors"] == 0
    assert m["response_p50_ms"] == pytest.approx(q[50]) and m["response_p90_ms"] == pytest.approx(q[90])
    assert m["response_p99_ms"] == pytest.approx(q[99]) and m["response_max_ms"] == max(times)
    assert m["response_mean_ms"] == pytest.approx(report["sum"] * 1000 / 40, abs=0.0005)


def test_parse_fortio_echo_60b_first_rows():
    rows = http.parse_fortio_access_log(fortio_text("echo-60B"))
    first = json.loads(fortio_text("echo-60B").splitlines()[0])
    assert rows[0] == {"seq": 1, "offset_ms": 0.0, "response_ms": round(first["latency"] * 1000, 3),
                       "connect_ms": None, "write_ms": None, "wait_ms": None, "read_ms": None, "status": 200}
    # the first call opens the connection: slower than the median of the reused ones
    assert rows[0]["response_ms"] > statistics.median(r["response_ms"] for r in rows[1:])


def test_parse_fortio_connection_refused():
    text = fortio_text("conn-refused")
    rows = http.parse_fortio_access_log(text)
    report = fortio_report("conn-refused")
    assert report["codes"] == {-1: 3} and len(rows) == 3
    # fortio logs every call, also a transport error ("details":"-1"): status 0 in the contract, time kept
    assert [r["status"] for r in rows] == [0, 0, 0]
    assert all(r["response_ms"] is not None and r["response_ms"] > 0 for r in rows)
    assert http.summarize(rows, expected=3) == {
        "requests": 3, "errors": 3, "response_mean_ms": None, "response_p50_ms": None, "response_p90_ms": None,
        "response_p99_ms": None, "response_max_ms": None}


def test_parse_fortio_status_503():
    rows = http.parse_fortio_access_log(fortio_text("status-503"))
    assert fortio_report("status-503")["codes"] == {503: 3}
    assert [r["status"] for r in rows] == [503, 503, 503]
    m = http.summarize(rows, expected=3)
    assert m["errors"] == 3 and m["response_p50_ms"] is None  # statistics cover 2xx answers only


def test_parse_fortio_orders_by_start_across_threads_and_tolerates_crlf():
    line = '{{"latency":{},"timestamp":{},"thread":{},"iter":{},"ok":true,"details":"200"}}'
    t0 = 1_795_423_139_354_610_419
    text = "\r\n".join([line.format("0.000300", t0 + 500_000, 0, 1), "",
                        line.format("0.000250", t0 + 100_000, 1, 0),
                        line.format("0.000400", t0, 0, 0)]) + "\r\n"
    rows = http.parse_fortio_access_log(text)
    assert [(r["seq"], r["offset_ms"], r["response_ms"]) for r in rows] == [(1, 0.0, 0.4), (2, 0.1, 0.25),
                                                                             (3, 0.5, 0.3)]


_GOOD = {"latency": 0.000123, "timestamp": 1795423139354610419, "thread": 0, "iter": 0, "ok": True,
         "details": "200"}


def _line(**changes) -> str:
    obj = {k: v for k, v in {**_GOOD, **changes}.items() if v is not ...}
    return json.dumps(obj)


@pytest.mark.parametrize("text, words", [
    ("", "no request lines"),
    ("\n \n", "no request lines"),
    ("Fortio 1.66.5 running at -1 queries per second", "not JSON"),
    ((DATA / "hey-0.1.4-echo-60B.csv").read_text(), "not JSON"),
    ("[1, 2]", "not a JSON object"),
    ("[" * 100000, "not JSON"),
    (_line(latency=float("nan")), "not a finite number"),
    (_line(latency=float("inf")), "not a finite number"),
    ('{"latency":1e999,"timestamp":1795423139354610419,"thread":0,"iter":0,"ok":true,"details":"200"}',
     "not a finite number"),
    (_line(latency=-0.000001), "negative"),
    (_line(latency=1e9), "beyond"),
    (_line(latency=10 ** 400), "too large"),
    (_line(latency="0.000123"), "number of seconds"),
    (_line(latency=True), "number of seconds"),
    (_line(latency=...), "number of seconds"),
    (_line(timestamp=1.795423139354610e18), "'timestamp' must be an integer"),
    (_line(timestamp=5), "between 2000 and 2200"),
    (_line(timestamp=10 ** 4000), "between 2000 and 2200"),
    (_line(thread=...), "'thread' must be an integer"),
    (_line(iter=-1), "'iter' = -1 is below 0"),
    (_line() + "\n" + _line(latency=0.0002), "appears twice"),
    (_line(ok="yes"), "'ok' must be true or false"),
    (_line(details="SERVING"), "not an HTTP status code"),
    (_line(details=200), "status code as text"),
    (_line(details="700"), "not an HTTP status code"),
    (_line() + "\n{\"latency\":", "line 2: not JSON"),
])
def test_parse_fortio_rejects_malformed(text, words):
    with pytest.raises(http.HttpDriverError, match=re.escape(words)):
        http.parse_fortio_access_log(text)


# hey CSV, on real output -------------------------------------------------------------------------------
def test_hey_csv_header_as_captured():
    header = (DATA / "hey-0.1.4-echo-60B.csv").read_text().split("\n", 1)[0]
    assert header == "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset"


def test_parse_echo_60b():
    rows = load("hey-0.1.4-echo-60B.csv")
    assert len(rows) == 40
    assert [r["seq"] for r in rows] == list(range(1, 41))
    assert rows[0] == {"seq": 1, "offset_ms": 0.0, "response_ms": 1.2, "connect_ms": 0.5, "write_ms": 0.1,
                       "wait_ms": 0.3, "read_ms": 0.1, "status": 200}
    assert rows[1] == {"seq": 2, "offset_ms": 1.1, "response_ms": 0.2, "connect_ms": 0.0, "write_ms": 0.0,
                       "wait_ms": 0.2, "read_ms": 0.0, "status": 200}
    assert rows[-1] == {"seq": 40, "offset_ms": 4.7, "response_ms": 0.2, "connect_ms": 0.0, "write_ms": 0.0,
                        "wait_ms": 0.2, "read_ms": 0.0, "status": 200}
    assert rows[19]["response_ms"] == 0.0  # sub-50 µs answers print as 0.0000 s (hey's resolution)
    assert all(r["status"] == 200 for r in rows)
    # one kept-alive connection: only the first request dialled
    assert [r["connect_ms"] for r in rows[1:]] == [0.0] * 39
    offsets = [r["offset_ms"] for r in rows]
    assert offsets == sorted(offsets)
    assert http.summarize(rows, expected=40) == {
        "requests": 40, "errors": 0, "response_mean_ms": 0.1325, "response_p50_ms": 0.1, "response_p90_ms": 0.2,
        "response_p99_ms": 0.81, "response_max_ms": 1.2}


def test_parse_echo_100kb_and_hey_delay_race():
    rows = load("hey-0.1.4-echo-100KB.csv")
    assert len(rows) == 40 and [r["seq"] for r in rows] == list(range(1, 41))
    assert rows[0] == {"seq": 1, "offset_ms": 0.0, "response_ms": 4.2, "connect_ms": 0.4, "write_ms": 0.2,
                       "wait_ms": 1.7, "read_ms": 1.8, "status": 200}
    assert rows[11]["response_ms"] == 6.5 and rows[11]["wait_ms"] == 4.2 and rows[11]["offset_ms"] == 8.7
    # last row as printed: 0.0003,0.0000,0.0000,0.0003,0.0314,0.0000,200,0.0311 -- Response-delay counted from hey's
    # start (WroteRequest fired after the first response byte): longer than the request itself, so null
    assert rows[-1] == {"seq": 40, "offset_ms": 30.9, "response_ms": 0.3, "connect_ms": 0.0, "write_ms": 0.3,
                        "wait_ms": None, "read_ms": 0.0, "status": 200}
    assert sum(r["wait_ms"] is None for r in rows) == 1
    m = http.summarize(rows, expected=40)
    assert m == {"requests": 40, "errors": 0, "response_mean_ms": 0.785, "response_p50_ms": 0.4,
                 "response_p90_ms": 1.68, "response_p99_ms": 5.603, "response_max_ms": 6.5}
    # numpy.percentile(response times, 99) on this file gives 5.603 as well


def test_parse_connection_refused_is_header_only():
    text = (DATA / "hey-0.1.4-conn-refused.csv").read_text()
    assert text.count("\n") == 1  # hey prints the bare header: transport errors get no row
    assert http.parse_hey_csv(text) == []
    assert http.summarize([], expected=3) == {
        "requests": 3, "errors": 3, "response_mean_ms": None, "response_p50_ms": None, "response_p90_ms": None,
        "response_p99_ms": None, "response_max_ms": None}


def test_parse_non_2xx_counts_as_errors():
    rows = load("hey-0.1.4-status-503.csv")
    assert [r["status"] for r in rows] == [503, 503, 503]
    m = http.summarize(rows, expected=3)
    assert m["requests"] == 3 and m["errors"] == 3
    assert m["response_max_ms"] is None and m["response_p50_ms"] is None  # statistics cover 2xx answers only


def test_parse_orders_by_offset_and_tolerates_crlf_and_blank_lines():
    text = ("response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\r\n"
            "0.0020,0.0000,0.0000,0.0001,0.0010,0.0009,200,0.0100\r\n"
            "\r\n"
            "0.0050,0.0010,0.0000,0.0001,0.0030,0.0009,200,0.0040\r\n")
    rows = http.parse_hey_csv(text)
    assert [(r["seq"], r["offset_ms"], r["response_ms"]) for r in rows] == [(1, 0.0, 5.0), (2, 6.0, 2.0)]
    assert rows[0]["connect_ms"] == 1.0


def test_parse_old_hey_without_status_and_offset_columns():
    text = ("response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read\n"
            "0.0010,0.0000,0.0000,0.0001,0.0005,0.0004\n")
    rows = http.parse_hey_csv(text)
    assert rows == [{"seq": 1, "offset_ms": None, "response_ms": 1.0, "connect_ms": 0.0, "write_ms": 0.1,
                     "wait_ms": 0.5, "read_ms": 0.4, "status": None}]
    assert http.summarize(rows)["errors"] == 1  # missing status is an error


@pytest.mark.parametrize("text", ["", "Error: connection refused", "Summary:\n  Total: 1.0 secs\n"])
def test_parse_rejects_non_csv(text):
    with pytest.raises(http.HttpDriverError, match="not hey CSV"):
        http.parse_hey_csv(text)


def test_parse_rejects_ragged_row():
    with pytest.raises(http.HttpDriverError, match="fields"):
        http.parse_hey_csv("response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,"
                           "offset\n0.1,0.1\n")


HEY_HEADER = "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\n"


@pytest.mark.parametrize("row, words", [
    ("NaN,0.0000,0.0000,0.0001,0.0005,0.0004,200,0.0010", "not a finite number"),
    ("inf,0.0000,0.0000,0.0001,0.0005,0.0004,200,0.0010", "not a finite number"),
    ("-0.0010,0.0000,0.0000,0.0001,0.0005,0.0004,200,0.0010", "negative time"),
    ("99999999.0,0.0000,0.0000,0.0001,0.0005,0.0004,200,0.0010", "beyond"),
    ("abc,0.0000,0.0000,0.0001,0.0005,0.0004,200,0.0010", "response-time: 'abc' is not a number"),
    (",0.0000,0.0000,0.0001,0.0005,0.0004,200,0.0010", "is not a number"),
    ("0.0010,0.0000,0.0000,0.0001,0.0005,0.0004,OK,0.0010", "status 'OK' is not an integer"),
    ("0.0010,0.0000,0.0000,0.0001,0.0005,0.0004,999,0.0010", "status 999 is not an HTTP status code"),
    ("0.0010,0.0000,0.0000,0.0001,0.0005,0.0004,200,-1.0", "offset: negative time"),
])
def test_parse_hey_rejects_bad_values(row, words):
    with pytest.raises(http.HttpDriverError, match=re.escape(words)):
        http.parse_hey_csv(HEY_HEADER + row + "\n")


# normalize: what `edgebench parse` / `import` store -----------------------------------------------------
def test_normalize_fortio_and_hey():
    rec = http.parse(fortio_text("echo-60B"), "fortio")
    rows = http.parse_fortio_access_log(fortio_text("echo-60B"))
    assert rec == {"tool": "fortio", "samples": rows,
                   "metrics": {**http.summarize(rows), "client": "fortio", "resolution_ms": 0.001}}
    hey = http.parse((DATA / "hey-0.1.4-echo-60B.csv").read_text(), "hey")
    assert hey["tool"] == "hey" and hey["metrics"]["resolution_ms"] == 0.1 and hey["metrics"]["client"] == "hey"
    assert hey["samples"] == load("hey-0.1.4-echo-60B.csv")
    with pytest.raises(http.HttpDriverError, match="unknown HTTP load generator"):
        http.parse("", "jmeter")


def test_parse_registry_reads_fortio_access_logs():
    rec = parsing.parse_text("fortio", fortio_text("static-1000B"), "static.jsonl")
    assert rec["workload"] == "http" and len(rec["samples"]) == 40 and rec["metrics"]["resolution_ms"] == 0.001
    with pytest.raises(parsing.ParseFailure, match="not a valid fortio output"):
        parsing.parse_text("fortio", "garbage", "bad.jsonl")


# property: any mutation of a real output parses to sane rows or raises HttpDriverError -------------------
_FIXTURES = ([("fortio", p.read_text()) for p in sorted(FORTIO.glob("*.jsonl"))]
             + [("hey", p.read_text()) for p in sorted(DATA.glob("hey-0.1.4-*.csv"))])
_TOKENS = ["NaN", "Infinity", "-Infinity", "1e999", "-1", "-0.0001", "0", "null", "true", '"200"', '"-1"', "1e-7",
           "99999999999999999999999", "1" * 5000, "{", "}", "[", "]", ",", ":", '"', "\n", "\r\n", " ", ",,",
           '"latency":', '"timestamp":', '"details":"abc"', '"ok":1', "200", "503", "0.0000", "response-time,"]


@st.composite
def mutated(draw):
    tool, text = draw(st.sampled_from(_FIXTURES))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["replace", "insert", "delete", "dup_line", "drop_line", "swap_lines",
                                     "truncate"]))
        lines = text.split("\n")
        if kind in ("dup_line", "drop_line", "swap_lines") and len(lines) > 1:
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if kind == "dup_line":
                lines.insert(j, lines[i])
            elif kind == "drop_line":
                del lines[i]
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
            continue
        pos = draw(st.integers(0, len(text)))
        if kind == "truncate":
            text = text[:pos]
            continue
        piece = draw(st.one_of(st.sampled_from(_TOKENS), st.text(alphabet="0123456789.-+eE,\"{}:\n", max_size=6),
                               st.text(max_size=3)))
        if kind == "insert":
            text = text[:pos] + piece + text[pos:]
        elif kind == "replace":
            text = text[:pos] + piece + text[pos + draw(st.integers(1, 12)):]
        else:
            text = text[:pos] + text[pos + draw(st.integers(1, 40)):]
    return tool, text


def _sane(x, nullable=True, upper=http.MAX_RESPONSE_MS):
    if x is None:
        return nullable
    return isinstance(x, float) and math.isfinite(x) and 0 <= x <= upper


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_outputs_parse_sanely_or_raise(case):
    tool, text = case
    try:
        rec = http.parse(text, tool)
    except http.HttpDriverError:
        return
    rows = rec["samples"]
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    for r in rows:
        assert set(r) == ROW_KEYS
        assert _sane(r["response_ms"], nullable=tool == "hey")  # fortio always has a time
        assert _sane(r["offset_ms"], nullable=tool == "hey", upper=math.inf)
        assert all(_sane(r[k]) for k in ("connect_ms", "write_ms", "wait_ms", "read_ms"))
        assert r["status"] is None or (isinstance(r["status"], int) and (r["status"] == 0
                                                                         or 100 <= r["status"] <= 599))
        if tool == "fortio":
            assert all(r[k] is None for k in ("connect_ms", "write_ms", "wait_ms", "read_ms"))
    m = rec["metrics"]
    assert m["requests"] == len(rows) and 0 <= m["errors"] <= len(rows)
    assert m["resolution_ms"] == http.RESOLUTION_MS[tool]
    stats = [m[k] for k in ("response_p50_ms", "response_p90_ms", "response_p99_ms", "response_max_ms")]
    if stats[0] is not None:
        assert all(_sane(x, nullable=False) for x in stats) and stats == sorted(stats)
    assert json.loads(json.dumps(rows, allow_nan=False)) == rows  # what measure() writes: strict JSON
