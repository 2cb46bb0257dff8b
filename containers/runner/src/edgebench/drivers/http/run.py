"""HTTP request/response driver: `fortio load` (client, 1 kept-alive connection) against fortio's echo server.

The seed's JMeter plan (N sequential requests, 1 thread, TCP connection reuse) maps to
`fortio load -c 1 -n N -qps -1`: one goroutine with one HTTP/1.1 connection, keep-alive on (fortio's default
`-keepalive`), no rate limit, exactly N calls and, because `-n` is given, no warm-up call (fortio v1.66.5
fhttp/httprunner.go warms up only when `Exactly <= 0`). So the first request includes the TCP connect, as with
JMeter. One fortio server gives the three services through its echo handler (see containers/http-services/README.md):

  payload-echo   POST /echo          the request body comes back byte for byte
  payload-recv   POST /echo?size=0   fortio reads the whole body, then replies 200 with an empty body
  static-reply   GET  /echo?size=1000  a fixed 1000-byte body for an empty request

Per-request times come from fortio's access log (`-access-log-file <file> -access-log-format json`, a file where the
client runs, read once the client is done), one JSON line per call, written by periodic.fileAccessLogger.Report in
fortio v1.66.5:

  {"latency":%f,"timestamp":%d,"thread":%d,"iter":%d,"ok":%t,"details":%q}

  latency    seconds as float, printed with %f: 6 decimals, so 1 us resolution (measured with Go's monotonic
             clock around the whole call: connect if needed, write, wait, read of the full reply)
  timestamp  the call's start, wall clock, Unix nanoseconds
  thread, iter  the goroutine and its call number (0-based)
  ok         fortio's success rule: 2xx or 418
  details    the HTTP status code as text; "-1" for a transport error (refused, reset, timeout)

fortio does not split a call into connect / write / wait / read: those fields are null. fortio's fast client
reads a whole reply into one buffer (`-httpbufferkb`, default 128 KB; a bigger reply is cut and the connection
breaks), so command.load_cmd sizes the buffer for the expected reply.

parser.py (`parse_fortio_access_log`, `parse_hey_csv`, `parse`, `summarize`) is pure. `hey -o csv` (the client before
fortio; kept for `edgebench parse --tool hey`) prints seconds with `%4.4f`, a 0.1 ms resolution; its quirks:
  * requests that failed at the transport level get NO row at all (only counted in a summary `-o csv` omits);
  * a run without any answered request prints the header line alone;
  * a race in hey's tracing: when the first response byte arrives before Go reports the request as written,
    Response-delay is counted from hey's start. Phase times longer than the whole request are nulled;
  * a reused connection reports DNS+dialup 0.0000 (also what a sub-50 us dial would print).

Every run's metrics carry `client` (the load generator) and `resolution_ms` (its time resolution): differences
below it are not measurable, and the warehouse says so instead of printing a percentage.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

Measured = tuple[dict[str, bytes], dict[str, Any] | None, str | None]

from edgebench import sh
from edgebench.drivers.http import command
from edgebench.drivers.http.parser import (RESOLUTION_MS, HttpDriverError, dropped_request, parse_fortio_access_log,
                                           summarize)


def version() -> dict[str, str]:
    """{"fortio": `fortio version`}: fortio is both the load client and the server; "missing" if absent."""
    try:
        r = sh.call([command.fortio_path(), "version"], capture_output=True, text=True, timeout=10)
        return {"fortio": (r.stdout.strip() or r.stderr.strip()).split("\n", 1)[0] or "unknown"}
    except FileNotFoundError:
        return {"fortio": "missing"}


# running ---------------------------------------------------------------------------------------------
def _wait_listening(server_ns_cmd: Sequence[str], port: int, proc: subprocess.Popen, log_path: Path,
                    timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise HttpDriverError(f"fortio server exited early (rc {proc.returncode}): "
                                  f"{log_path.read_text(errors='replace')[-500:]}")
        out = sh.call([*server_ns_cmd, "ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
        if out.stdout.strip():
            return
        time.sleep(0.05)
    raise HttpDriverError(f"fortio server did not listen on port {port} within {timeout}s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure(client, server, target: str, port: int, service: str, payload_bytes: int,
            requests: int = 40) -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
    """One HTTP run: fortio's server in `server`'s namespace, `fortio load` in `client`'s, against
    http://{target}:{port}{path}.

    Returns (raw files, metrics or None, error or None). Raw files: `fortio-access.jsonl` (the client's
    per-request log), `fortio-load.log` (its report: sockets used, status code counts), `fortio-server.log`,
    `http-requests.json` (whatever exists; also on failure). http-requests.json always holds `requests` rows:
    planned requests without a log line are appended as `dropped_request` rows (status 0, null times). Metrics are
    `summarize`'s plus `client` ("fortio") and `resolution_ms` (0.001). The run fails unless all `requests` got
    status 200. Never raises for run-time failures (missing tools, no server, timeouts); an unknown service or a
    negative size raise HttpDriverError.
    """
    method, path, body_bytes = command.request_plan(service, payload_bytes)
    reply_size = command.reply_bytes(service, payload_bytes)
    raw: dict[str, bytes] = {}
    # under /tmp: the client's side of it (payload, access log) is made where the client runs, and a runc container
    # has only /tmp writable (substrates/local/container.py)
    workdir = Path(tempfile.mkdtemp(prefix="edgebench-http-", dir="/tmp"))
    log_path = workdir / "fortio-server.log"
    srv: subprocess.Popen | None = None
    try:
        # made from inside the client endpoint, so they exist where the client runs (a namespace on this host shares
        # the file system; a pod reached with `kubectl exec` does not): the request body and the access log
        body_file = str(workdir / "payload.bin") if method != "GET" else None
        access = str(workdir / "fortio-access.jsonl")
        made = sh.call(client.cmd(["sh", "-c", 'mkdir -p "$1" && if [ -n "$2" ]; then head -c "$0" /dev/urandom > "$2"; fi',
                                   str(int(body_bytes)), str(workdir), body_file or ""]), capture_output=True)
        if made.returncode != 0:
            raise HttpDriverError(f"could not prepare the client's directory (payload {body_bytes} bytes): "
                                  f"{made.stderr.decode(errors='replace').strip()}")
        with open(log_path, "wb") as log:
            srv = sh.popen(server.cmd(command.server_cmd(port)), stdout=log, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, cwd=workdir)
        _wait_listening(server.cmd([]), port, srv, log_path)
        url = f"http://{target}:{port}{path}"
        cli = sh.call(client.cmd(command.load_cmd(url, method, body_file, requests, reply_size, access)),
                             capture_output=True, stdin=subprocess.DEVNULL,
                             timeout=requests * command.REQUEST_TIMEOUT_S + 30)
        got = sh.call(client.cmd(["sh", "-c", 'cat "$0" && rm -f "$0"', access]), capture_output=True, timeout=60)
        access_log = got.stdout
        raw["fortio-access.jsonl"] = access_log
        raw["fortio-load.log"] = cli.stderr
        if cli.returncode != 0:
            raise HttpDriverError(f"fortio load exited with {cli.returncode}: "
                                  f"{(cli.stderr or cli.stdout).decode(errors='replace').strip()[-500:]}")
        if got.returncode != 0:
            raise HttpDriverError(f"could not read the client's access log {access}: "
                                  f"{got.stderr.decode(errors='replace').strip()[-300:]}")
        metrics, error = _judge(raw, access_log, requests, command.CLIENT, f"{service} {url}")
        return raw, metrics, error
    except (HttpDriverError, subprocess.TimeoutExpired, OSError) as exc:
        return raw, None, str(exc)
    finally:
        if srv is not None:
            _stop(srv)
        if log_path.exists():
            raw["fortio-server.log"] = log_path.read_bytes()
        shutil.rmtree(workdir, ignore_errors=True)


_CLIENT_LOG = {command.CLIENT: "fortio-load.log", command.DUET_CLIENT: "httpduet.log"}


def _judge(raw: dict[str, bytes], log: bytes, requests: int, client: str,
           what: str) -> tuple[dict[str, Any] | None, str | None]:
    """Metrics or the error of one run from its client's access log (fortio's JSON line format); adds
    http-requests.json to `raw`, with `requests` rows (planned requests without a line as dropped rows)."""
    rows = parse_fortio_access_log(log.decode(errors="replace"))
    logged = len(rows)
    if logged > requests:
        raise HttpDriverError(f"{client} logged {logged} requests, {requests} were planned")
    rows += [dropped_request(seq) for seq in range(logged + 1, requests + 1)]
    raw["http-requests.json"] = json.dumps(rows, indent=1).encode()
    metrics = {**summarize(rows, expected=requests), "client": client, "resolution_ms": RESOLUTION_MS[client]}
    problems = []
    if logged < requests:
        problems.append(f"{client} logged {logged} of {requests} requests")
    transport = sum(1 for r in rows[:logged] if r["status"] == 0)
    if transport:
        problems.append(f"{transport} of {requests} requests failed at the transport level "
                        f"(refused, reset or timeout: see {_CLIENT_LOG.get(client, 'the client log')})")
    bad: dict[Any, int] = {}
    for r in rows[:logged]:
        if r["status"] not in (0, 200):
            bad[r["status"]] = bad.get(r["status"], 0) + 1
    if bad:
        problems.append("non-200 responses: " + ", ".join(f"{k}: {v}" for k, v in sorted(bad.items(), key=str)))
    return (None, f"{what}: " + "; ".join(problems)) if problems else (metrics, None)


def measure_together(members: Sequence[tuple[str, Any, Any, str]], port: int, service: str, payload_bytes: int,
                     requests: int, burst: int = command.DUET_BURST) -> dict[str, Measured]:
    """The runs of several testbed members measured in one time window by edgebench-httpduet (a duet round's
    HTTP variant: the host baseline and the CNI modes side by side; containers/httpduet/main.go says why).

    `members`: (key, client, server, target) per member, each client a namespace on this host. Every member's
    fortio server starts in its server's namespace; one client process (pinned as the first member's client is)
    holds a kept-alive connection per member, opened in that member's client namespace, and sends `burst`
    consecutive requests to one member at a time, the members in a random order per cycle, until each member had
    `requests`. Returns {key: (raw files, metrics or None, error or None)} as `measure` does, per member; a
    client that fails fails every member's run with its message. An unknown service raises HttpDriverError."""
    method, path, body_bytes = command.request_plan(service, payload_bytes)
    tool = sh.exe(command.DUET_CLIENT)
    out: dict[str, Measured] = {}
    raws: dict[str, dict[str, bytes]] = {key: {} for key, *_ in members}
    workdir = Path(tempfile.mkdtemp(prefix="edgebench-httpduet-"))
    servers: dict[str, tuple[subprocess.Popen, Path]] = {}
    urls = {key: f"http://{target}:{port}{path}" for key, _, _, target in members}
    try:
        body_file: str | None = None
        if method != "GET":
            body_file = str(workdir / "payload.bin")
            (workdir / "payload.bin").write_bytes(os.urandom(int(body_bytes)))
        for key, _, server, _ in members:
            log_path = workdir / f"server-{len(servers)}.log"
            with open(log_path, "wb") as log:
                servers[key] = (sh.popen(server.cmd(command.server_cmd(port)), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=workdir), log_path)
        for key, _, server, _ in members:
            _wait_listening(server.cmd([]), port, *servers[key])
        logs = {key: workdir / f"access-{n}.jsonl" for n, (key, *_) in enumerate(members)}
        config = {"requests": requests, "burst": burst, "timeout_s": command.REQUEST_TIMEOUT_S,
                  "seed": int.from_bytes(os.urandom(4), "big"),
                  "targets": [{"name": key, "netns": f"/run/netns/{client.ns}", "url": urls[key], "method": method,
                               "body_file": body_file or "", "access_log": str(logs[key])}
                              for key, client, _, _ in members]}
        cli = sh.call(members[0][1].cmd([tool]), input=json.dumps(config).encode(), capture_output=True,
                      timeout=len(members) * requests * command.REQUEST_TIMEOUT_S + 30)
        for key, *_ in members:
            raw = raws[key]
            raw["httpduet.log"] = cli.stderr
            log = logs[key].read_bytes() if logs[key].exists() else b""
            raw["httpduet-access.jsonl"] = log
            if not log.strip():
                out[key] = (raw, None, f"{command.DUET_CLIENT} exited with {cli.returncode}: "
                                       f"{cli.stderr.decode(errors='replace').strip()[-500:]}")
                continue
            try:
                metrics, error = _judge(raw, log, requests, command.DUET_CLIENT, f"{service} {urls[key]}")
            except HttpDriverError as exc:
                metrics, error = None, str(exc)
            if metrics is not None:
                metrics["interleaved"] = {"members": len(members), "burst": burst}
            out[key] = (raw, metrics, error)
        return out
    except (HttpDriverError, subprocess.TimeoutExpired, OSError) as exc:
        return {key: (raws[key], None, str(exc)) for key, *_ in members}
    finally:
        for key, (proc, log_path) in servers.items():
            _stop(proc)
            if log_path.exists():
                raws[key]["fortio-server.log"] = log_path.read_bytes()
        shutil.rmtree(workdir, ignore_errors=True)
