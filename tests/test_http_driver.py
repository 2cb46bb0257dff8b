"""The HTTP driver: hey CSV parser on captured real output (hey 0.1.4, Debian 12), summary statistics, fortio's three
behaviours, and real measure() runs between two network namespaces joined by a veth pair (ebh-* namespaces).

Captured files (tests/data/hey-0.1.4-*.csv): hey in one namespace against `fortio server` (v1.66.5) in another over a
veth pair, commands from http.load_cmd: 40 x POST /echo with 60 B and 100 KiB bodies, 3 requests to a port nobody
listens on (connection refused: header only) and 3 x GET /echo?status=503.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgebench.drivers import http
from edgebench.testbed import Endpoint

DATA = Path(__file__).parent / "data"
PORT = 18080


def load(name: str) -> list[dict]:
    return http.parse_hey_csv((DATA / name).read_text())


# parser on real output ---------------------------------------------------------------------------
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


# summarize on hand-made rows ---------------------------------------------------------------------
def _row(seq, ms, status=200):
    return {"seq": seq, "offset_ms": float(seq), "response_ms": ms, "connect_ms": None, "write_ms": None,
            "wait_ms": None, "read_ms": None, "status": status}


def test_summarize_percentiles_linear_interpolation():
    rows = [_row(i, float(v)) for i, v in enumerate([10, 1, 9, 2, 8, 3, 7, 4, 6, 5], start=1)]
    m = http.summarize(rows)
    assert m == {"requests": 10, "errors": 0, "response_mean_ms": 5.5, "response_p50_ms": 5.5,
                 "response_p90_ms": 9.1, "response_p99_ms": 9.91, "response_max_ms": 10.0}
    # the same as numpy.percentile(range(1, 11), [50, 90, 99]) -> 5.5, 9.1, 9.91
    assert http.percentile([1.0, 2.0], 0) == 1.0 and http.percentile([1.0, 2.0], 100) == 2.0


def test_summarize_counts_errors():
    rows = [_row(1, 1.0), _row(2, 2.0, 404), _row(3, 3.0, None), _row(4, 4.0, 500), _row(5, 7.0, 204),
            http.dropped_request(6)]
    m = http.summarize(rows, expected=8)  # 1 transport error as a status-0 row, 2 more missing from the list
    assert m["requests"] == 8 and m["errors"] == 6
    # times from the 2xx rows only (1.0 and 7.0)
    assert m["response_mean_ms"] == 4.0 and m["response_p50_ms"] == 4.0 and m["response_max_ms"] == 7.0
    assert m["response_p90_ms"] == pytest.approx(6.4)


def test_summarize_single_row():
    m = http.summarize([_row(1, 2.5)])
    assert (m["response_p50_ms"], m["response_p99_ms"], m["response_max_ms"]) == (2.5, 2.5, 2.5)


# commands ----------------------------------------------------------------------------------------
def test_request_plan():
    assert http.request_plan("payload-echo", 60) == ("POST", "/echo", 60)
    assert http.request_plan("payload-recv", 1048576) == ("POST", "/echo?size=0", 1048576)
    assert http.request_plan("static-reply", 0) == ("GET", "/echo?size=1000", 0)
    with pytest.raises(http.HttpDriverError):
        http.request_plan("nope", 1)


def test_load_cmd_and_server_cmd():
    argv = http.load_cmd("http://10.0.0.1:8080/echo", "POST", "/tmp/p.bin", 40)
    assert argv[0] == "hey" and argv[-1] == "http://10.0.0.1:8080/echo"
    joined = " ".join(argv)
    assert "-n 40" in joined and "-c 1" in joined and "-o csv" in joined and "-D /tmp/p.bin" in joined
    assert "-disable-keepalive" not in argv and "-q" not in argv and "-z" not in argv
    assert "-D" not in http.load_cmd("http://x/echo?size=1000", "GET", None, 40)
    srv = http.server_cmd(9000)
    assert srv[1] == "server" and srv[srv.index("-http-port") + 1] == "9000"
    for flag in ("-grpc-port", "-redirect-port", "-tcp-port", "-udp-port"):
        assert srv[srv.index(flag) + 1] == "disabled"
    assert srv[srv.index("-ui-path") + 1] == ""


def test_fortio_path_uses_tools_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("EDGEBENCH_TOOLS", str(tmp_path))
    assert http.fortio_path() == "fortio"
    (tmp_path / "fortio").write_text("#!/bin/sh\n")
    (tmp_path / "fortio").chmod(0o755)
    assert http.fortio_path() == str(tmp_path / "fortio")


def test_version():
    v = http.version()
    assert v["hey"] not in ("missing", "") and v["fortio"] not in ("missing", "")


# real namespaces -------------------------------------------------------------------------------
def _tcp_counter(ns: str, name: str) -> int:
    """A TCP MIB counter (e.g. PassiveOpens) of one network namespace, from its /proc/net/snmp."""
    text = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"], capture_output=True, text=True,
                          check=True).stdout
    head, values = [ln.split() for ln in text.splitlines() if ln.startswith("Tcp:")]
    return int(values[head.index(name)])


@pytest.fixture(scope="module")
def pair():
    """Two namespaces (client, server) joined by a veth pair; deleted afterwards, also when a test failed."""
    if os.geteuid() != 0:
        pytest.fail("these tests create network namespaces and need root", pytrace=False)
    if not os.access(http.fortio_path(), os.X_OK):
        pytest.fail("fortio not found on PATH or in $EDGEBENCH_TOOLS: GOBIN=~/.local/share/edgebench/tools "
                    "go install fortio.org/fortio@v1.66.5", pytrace=False)
    tag = f"ebh-t{os.getpid()}"
    c, s = f"{tag}-c", f"{tag}-s"

    def delete():
        for ns in (c, s):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    delete()
    try:
        for argv in (["ip", "netns", "add", c], ["ip", "netns", "add", s],
                     ["ip", "link", "add", "vc", "netns", c, "type", "veth", "peer", "name", "vs", "netns", s],
                     ["ip", "-n", c, "addr", "add", "10.199.0.1/24", "dev", "vc"],
                     ["ip", "-n", s, "addr", "add", "10.199.0.2/24", "dev", "vs"],
                     ["ip", "-n", c, "link", "set", "vc", "up"], ["ip", "-n", s, "link", "set", "vs", "up"],
                     ["ip", "-n", c, "link", "set", "lo", "up"], ["ip", "-n", s, "link", "set", "lo", "up"]):
            subprocess.run(argv, check=True, capture_output=True)
        yield Endpoint(c, "10.199.0.1", 0), Endpoint(s, "10.199.0.2", 1)
    finally:
        delete()


_CLIENT = r"""
import hashlib, http.client, json, sys
host, port, body_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
body = open(body_path, "rb").read()
conn = http.client.HTTPConnection(host, port, timeout=10)
out = []
for method, path, payload in (("POST", "/echo", body), ("POST", "/echo?size=0", body),
                              ("GET", "/echo?size=1000", None)):
    conn.request(method, path, body=payload)
    resp = conn.getresponse()
    data = resp.read()
    out.append({"status": resp.status, "len": len(data), "sha256": hashlib.sha256(data).hexdigest()})
print(json.dumps(out))
"""


@pytest.mark.parametrize("size", [60, 1048576])
def test_fortio_behaviours(pair, tmp_path, size):
    client, server = pair
    srv = subprocess.Popen(server.cmd(http.server_cmd(PORT)), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                           cwd=tmp_path)
    try:
        http._wait_listening(server.cmd([]), PORT, srv, tmp_path / "none.log")
        body = os.urandom(size)
        (tmp_path / "body").write_bytes(body)
        before = _tcp_counter(server.ns, "PassiveOpens")
        out = subprocess.run(client.cmd([sys.executable, "-c", _CLIENT, server.ip, str(PORT), str(tmp_path / "body")]),
                             capture_output=True, text=True, timeout=30, check=True).stdout
        echo, recv, static = json.loads(out)
        assert echo == {"status": 200, "len": size, "sha256": hashlib.sha256(body).hexdigest()}  # byte for byte
        assert recv["status"] == 200 and recv["len"] == 0  # body read, empty reply
        assert static["status"] == 200 and static["len"] == 1000
        assert _tcp_counter(server.ns, "PassiveOpens") - before == 1  # all three on one connection
    finally:
        srv.terminate()
        srv.wait(timeout=10)


@pytest.mark.parametrize("service,size", [("payload-echo", 60), ("payload-echo", 1048576),
                                          ("payload-recv", 102400), ("static-reply", 0)])
def test_measure(pair, service, size):
    client, server = pair
    opens = (_tcp_counter(server.ns, "PassiveOpens"), _tcp_counter(client.ns, "ActiveOpens"))
    t0 = time.monotonic()
    raw, metrics, error = http.measure(client, server, server.ip, PORT, service, size, requests=40)
    assert error is None, error
    assert time.monotonic() - t0 < 15
    # exactly one TCP connection for the 40 requests: counted by both kernels (the ss polls open none)
    assert _tcp_counter(server.ns, "PassiveOpens") - opens[0] == 1
    assert _tcp_counter(client.ns, "ActiveOpens") - opens[1] == 1
    assert set(raw) == {"hey.csv", "fortio-server.log", "http-requests.json"}
    assert b"http-echo server listening" in raw["fortio-server.log"]
    rows = json.loads(raw["http-requests.json"])
    assert rows == http.parse_hey_csv(raw["hey.csv"].decode())
    assert [r["seq"] for r in rows] == list(range(1, 41))
    assert all(r["status"] == 200 for r in rows)
    assert all(set(r) == {"seq", "offset_ms", "response_ms", "connect_ms", "write_ms", "wait_ms", "read_ms",
                          "status"} for r in rows)
    assert rows[0]["offset_ms"] == 0.0 and all(r["offset_ms"] >= 0 for r in rows)
    # hey prints seconds with 4 decimals: an answer under 50 µs (small replies on a veth) prints as 0
    assert all(r["response_ms"] is not None and r["response_ms"] >= 0 for r in rows)
    if size >= 102400:
        assert all(r["response_ms"] > 0 for r in rows)
    assert metrics["response_max_ms"] > 0 and metrics["response_mean_ms"] > 0
    # reuse as hey sees it: no dialling after the first request
    assert [r["connect_ms"] for r in rows[1:]] == [0.0] * 39
    assert metrics["requests"] == 40 and metrics["errors"] == 0
    assert metrics == http.summarize(rows, expected=40)
    assert (metrics["response_p50_ms"] <= metrics["response_p90_ms"] <= metrics["response_p99_ms"]
            <= metrics["response_max_ms"])
    print(f"{service} {size} B: {metrics}")


def test_measure_no_server_listening(pair):
    client, server = pair
    # the server runs, but hey targets the client's own address, where nothing listens: connection refused
    raw, metrics, error = http.measure(client, server, client.ip, PORT, "payload-echo", 60, requests=5)
    assert metrics is None
    assert "5 of 5 requests got no response" in error
    assert raw["hey.csv"].startswith(b"response-time,")
    assert json.loads(raw["http-requests.json"]) == [http.dropped_request(i) for i in range(1, 6)]
    assert http.summarize(json.loads(raw["http-requests.json"]))["errors"] == 5


def test_measure_server_cannot_start(pair, monkeypatch):
    client, server = pair
    monkeypatch.setattr(http, "fortio_path", lambda: "/nonexistent/fortio")
    raw, metrics, error = http.measure(client, server, server.ip, PORT, "static-reply", 0, requests=5)
    assert metrics is None and "fortio server exited early" in error
    assert "hey.csv" not in raw
