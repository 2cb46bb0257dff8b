"""The HTTP driver: summary statistics, the commands, fortio's three behaviours, and real measure() runs between
two network namespaces joined by a veth pair (ebh-* namespaces). Its parsers: test_http_driver_parse.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from edgebench.drivers import http
from edgebench.drivers.http import command as http_command
from edgebench.drivers.http import run as http_run
from edgebench.substrates.local.testbed import Endpoint

PORT = 18080
ROW_KEYS = {"seq", "offset_ms", "response_ms", "connect_ms", "write_ms", "wait_ms", "read_ms", "status"}


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
    assert [http.reply_bytes(s, 5000) for s in http.SERVICES] == [5000, 0, 1000]


def _flag(argv, name):
    return argv[argv.index(name) + 1]


def test_load_cmd_and_server_cmd():
    argv = http.load_cmd("http://10.0.0.1:8080/echo", "POST", "/tmp/p.bin", 40, reply_size=60)
    assert argv[0] == http.fortio_path() and argv[1] == "load" and argv[-1] == "http://10.0.0.1:8080/echo"
    # the seed's plan: 1 connection, exactly N calls (so no warm-up call), no rate limit, keep-alive (default on)
    assert (_flag(argv, "-c"), _flag(argv, "-n"), _flag(argv, "-qps")) == ("1", "40", "-1")
    assert not any(a.startswith("-keepalive") for a in argv) and "-t" not in argv
    # per-request log, us resolution: on stdout unless a file is given (run.measure gives one where the client runs)
    assert (_flag(argv, "-access-log-file"), _flag(argv, "-access-log-format")) == ("/dev/stdout", "json")
    to_file = http.load_cmd("http://10.0.0.1:8080/echo", "POST", "/tmp/p.bin", 40, 60, access_log="/tmp/a.jsonl")
    assert _flag(to_file, "-access-log-file") == "/tmp/a.jsonl"
    assert _flag(argv, "-X") == "POST" and _flag(argv, "-payload-file") == "/tmp/p.bin"
    assert _flag(argv, "-timeout") == f"{http.REQUEST_TIMEOUT_S}s" and _flag(argv, "-httpbufferkb") == "128"
    get = http.load_cmd("http://x/echo?size=1000", "GET", None, 40, reply_size=1000)
    assert "-payload-file" not in get and _flag(get, "-X") == "GET"
    # fortio's fast client must hold the whole reply: 1 MiB echo -> 1024 KB + headroom
    big = http.load_cmd("http://x/echo", "POST", "/tmp/p.bin", 40, reply_size=1048576)
    assert int(_flag(big, "-httpbufferkb")) >= 1024 + 1
    with pytest.raises(http.HttpDriverError):
        http.load_cmd("http://x/", "GET", None, 0)
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


def test_version_reports_the_client_used():
    v = http.version()
    assert set(v) == {http.CLIENT} == {"fortio"} and v["fortio"] not in ("missing", "unknown", "")


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
        http_run._wait_listening(server.cmd([]), PORT, srv, tmp_path / "none.log")
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
    assert set(raw) == {"fortio-access.jsonl", "fortio-load.log", "fortio-server.log", "http-requests.json"}
    assert b"http-echo server listening" in raw["fortio-server.log"]
    report = raw["fortio-load.log"].decode()
    assert "Sockets used: 1 (for perfect keepalive, would be 1)" in report and "Code 200 : 40 (100.0 %)" in report
    assert "for 40 calls" in report and "(plus 0 warmup)" in report  # exactly 40 calls, no warm-up call
    rows = json.loads(raw["http-requests.json"])
    assert rows == http.parse_fortio_access_log(raw["fortio-access.jsonl"].decode())
    assert [r["seq"] for r in rows] == list(range(1, 41))
    assert all(r["status"] == 200 for r in rows)
    assert all(set(r) == ROW_KEYS for r in rows)
    assert rows[0]["offset_ms"] == 0.0 and all(r["offset_ms"] >= 0 for r in rows)
    # microseconds: every answer takes some, and the times are not 0.1 ms steps
    times = [r["response_ms"] for r in rows]
    assert all(t > 0 for t in times)
    assert any(abs(t * 10 - round(t * 10)) > 1e-6 for t in times)
    assert metrics == {**http.summarize(rows, expected=40), "client": "fortio", "resolution_ms": 0.001}
    assert metrics["requests"] == 40 and metrics["errors"] == 0
    assert (metrics["response_p50_ms"] <= metrics["response_p90_ms"] <= metrics["response_p99_ms"]
            <= metrics["response_max_ms"])
    print(f"{service} {size} B: {metrics}")


def test_measure_no_server_listening(pair):
    client, server = pair
    # the server runs, but the client targets its own address, where nothing listens: connection refused
    raw, metrics, error = http.measure(client, server, client.ip, PORT, "payload-echo", 60, requests=5)
    assert metrics is None
    assert "5 of 5 requests failed at the transport level" in error
    rows = json.loads(raw["http-requests.json"])
    assert rows == http.parse_fortio_access_log(raw["fortio-access.jsonl"].decode())
    assert [r["status"] for r in rows] == [0] * 5  # fortio logs each refused call ("details":"-1")
    assert http.summarize(rows)["errors"] == 5
    assert "connection refused" in raw["fortio-load.log"].decode()


def test_measure_server_cannot_start(pair, monkeypatch):
    client, server = pair
    monkeypatch.setattr(http_command, "fortio_path", lambda: "/nonexistent/fortio")
    raw, metrics, error = http.measure(client, server, server.ip, PORT, "static-reply", 0, requests=5)
    assert metrics is None and "fortio server exited early" in error
    assert "fortio-access.jsonl" not in raw


def test_measure_client_stops_early(pair, monkeypatch, tmp_path):
    """A client that logs fewer calls than planned: the missing ones are dropped_request rows, the run fails."""
    client, server = pair
    real = http.load_cmd
    fake = tmp_path / "fake-load"
    fake.write_text("#!/bin/sh\n\"$@\"\nprev=\nfor a in \"$@\"; do [ \"$prev\" = -access-log-file ] && f=$a; prev=$a; done\n"
                    "head -n 2 \"$f\" > \"$f.2\" && mv \"$f.2\" \"$f\"\n")  # the access log cut to 2 lines
    fake.chmod(0o755)
    monkeypatch.setattr(http_command, "load_cmd", lambda *a, **k: [str(fake), *real(*a, **k)])
    raw, metrics, error = http.measure(client, server, server.ip, PORT, "static-reply", 0, requests=5)
    assert metrics is None and "fortio logged 2 of 5 requests" in error
    rows = json.loads(raw["http-requests.json"])
    assert [r["status"] for r in rows] == [200, 200, 0, 0, 0]
    assert rows[2:] == [http.dropped_request(i) for i in range(3, 6)]
