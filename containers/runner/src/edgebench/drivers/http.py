"""HTTP request/response driver: `fortio load` (client, 1 kept-alive connection) against fortio's echo server.

The seed's JMeter plan (N sequential requests, 1 thread, TCP connection reuse) maps to
`fortio load -c 1 -n N -qps -1`: one goroutine with one HTTP/1.1 connection, keep-alive on (fortio's default
`-keepalive`), no rate limit, exactly N calls and, because `-n` is given, no warm-up call (fortio v1.66.5
fhttp/httprunner.go warms up only when `Exactly <= 0`). So the first request includes the TCP connect, as with
JMeter. One fortio server gives the three services through its echo handler (see containers/http-services/README.md):

  payload-echo   POST /echo          the request body comes back byte for byte
  payload-recv   POST /echo?size=0   fortio reads the whole body, then replies 200 with an empty body
  static-reply   GET  /echo?size=1000  a fixed 1000-byte body for an empty request

Per-request times come from fortio's access log (`-access-log-file /dev/stdout -access-log-format json`), one JSON
line per call, written by periodic.fileAccessLogger.Report in fortio v1.66.5:

  {"latency":%f,"timestamp":%d,"thread":%d,"iter":%d,"ok":%t,"details":%q}

  latency    seconds as float, printed with %f: 6 decimals, so 1 us resolution (measured with Go's monotonic
             clock around the whole call: connect if needed, write, wait, read of the full reply)
  timestamp  the call's start, wall clock, Unix nanoseconds
  thread, iter  the goroutine and its call number (0-based)
  ok         fortio's success rule: 2xx or 418
  details    the HTTP status code as text; "-1" for a transport error (refused, reset, timeout)

fortio does not split a call into connect / write / wait / read: those fields are null. fortio's fast client
reads a whole reply into one buffer (`-httpbufferkb`, default 128 KB; a bigger reply is cut and the connection
breaks), so `load_cmd` sizes the buffer for the expected reply.

`parse_fortio_access_log`, `parse_hey_csv`, `normalize` and `summarize` are pure. `hey -o csv` (the client before
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
import math
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from edgebench import sh
from edgebench.errors import EdgebenchError

SERVICES = ("payload-echo", "payload-recv", "static-reply")
STATIC_REPLY_BYTES = 1000
CLIENT = "fortio"  # the load generator `measure` runs
# time resolution of each client's per-request times, ms: fortio prints seconds with %f (1 us), hey with %4.4f
RESOLUTION_MS = {"fortio": 0.001, "hey": 0.1}
PHASE_TOLERANCE_MS = RESOLUTION_MS["hey"]  # one step of hey's %4.4f-seconds resolution
REQUEST_TIMEOUT_S = 30  # per request (fortio -timeout: connect and read); generous for 1 MB over slow/lossy links
MAX_RESPONSE_MS = 3_600_000.0  # a per-request time beyond an hour is not a measurement
HTTP_BUFFER_MIN_KB = 128  # fortio's default -httpbufferkb
HTTP_BUFFER_HEADROOM_KB = 64  # reply headers and slack on top of the reply body
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


# tools -----------------------------------------------------------------------------------------------
def fortio_path() -> str:
    """`fortio` from PATH, else from $EDGEBENCH_TOOLS (default ~/.local/share/edgebench/tools), else bare "fortio"
    (so running it fails with FileNotFoundError, which `measure` reports as an error)."""
    return sh.which("fortio") or "fortio"


def version() -> dict[str, str]:
    """{"fortio": `fortio version`}: fortio is both the load client and the server; "missing" if absent."""
    try:
        r = subprocess.run([fortio_path(), "version"], capture_output=True, text=True, timeout=10)
        return {"fortio": (r.stdout.strip() or r.stderr.strip()).split("\n", 1)[0] or "unknown"}
    except FileNotFoundError:
        return {"fortio": "missing"}


# commands --------------------------------------------------------------------------------------------
def server_cmd(port: int) -> list[str]:
    """fortio's HTTP echo server only (as the edgebench-http image): no gRPC, redirector, tcp/udp echo or UI."""
    return [fortio_path(), "server", "-http-port", str(port), "-grpc-port", "disabled",
            "-redirect-port", "disabled", "-tcp-port", "disabled", "-udp-port", "disabled", "-ui-path", ""]


def request_plan(service: str, payload_bytes: int) -> tuple[str, str, int]:
    """(method, path, request body size in bytes) for one service."""
    if service not in SERVICES:
        raise HttpDriverError(f"unknown HTTP service {service!r} (known: {', '.join(SERVICES)})")
    if payload_bytes < 0:
        raise HttpDriverError(f"payload size must be >= 0, got {payload_bytes}")
    if service == "payload-echo":
        return "POST", "/echo", payload_bytes
    if service == "payload-recv":
        return "POST", "/echo?size=0", payload_bytes
    return "GET", f"/echo?size={STATIC_REPLY_BYTES}", 0


def reply_bytes(service: str, payload_bytes: int) -> int:
    """The reply body size a service gives for a request of `payload_bytes`."""
    request_plan(service, payload_bytes)  # validates
    return {"payload-echo": payload_bytes, "payload-recv": 0, "static-reply": STATIC_REPLY_BYTES}[service]


def load_cmd(url: str, method: str, body_file: str | None, requests: int, reply_size: int = 0) -> list[str]:
    """fortio load: `requests` sequential calls by 1 goroutine over 1 kept-alive connection, no rate limit, no
    warm-up call; one JSON access-log line per call on stdout, fortio's own report on stderr. The method is set
    explicitly (fortio would pick GET for an empty body); without a body file the request has no body. The fast
    client's buffer holds `reply_size` bytes plus headers."""
    if requests < 1:
        raise HttpDriverError(f"requests must be >= 1, got {requests}")
    if reply_size < 0:
        raise HttpDriverError(f"reply size must be >= 0, got {reply_size}")
    buffer_kb = max(HTTP_BUFFER_MIN_KB, -(-reply_size // 1024) + HTTP_BUFFER_HEADROOM_KB)
    argv = [fortio_path(), "load", "-c", "1", "-n", str(requests), "-qps", "-1",
            "-timeout", f"{REQUEST_TIMEOUT_S}s", "-httpbufferkb", str(buffer_kb), "-X", method,
            "-access-log-file", "/dev/stdout", "-access-log-format", "json"]
    if body_file is not None:
        argv += ["-payload-file", str(body_file), "-content-type", "application/octet-stream"]
    return [*argv, url]


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
}


def normalize(text: str, tool: str) -> dict[str, Any]:
    """{"tool", "metrics", "samples"} from one load generator output: `samples` are the http-requests.json rows,
    `metrics` the contract's summary plus `client` (= tool) and `resolution_ms` (the tool's time resolution).
    Raises HttpDriverError for an unknown tool or output the tool's parser cannot read."""
    if tool not in PARSERS:
        raise HttpDriverError(f"unknown HTTP load generator {tool!r} (known: {', '.join(PARSERS)})")
    rows = PARSERS[tool](text)
    return {"tool": tool, "metrics": {**summarize(rows), "client": tool, "resolution_ms": RESOLUTION_MS[tool]},
            "samples": rows}


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


# running ---------------------------------------------------------------------------------------------
def _wait_listening(server_ns_cmd: Sequence[str], port: int, proc: subprocess.Popen, log_path: Path,
                    timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise HttpDriverError(f"fortio server exited early (rc {proc.returncode}): "
                                  f"{log_path.read_text(errors='replace')[-500:]}")
        out = subprocess.run([*server_ns_cmd, "ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
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
    method, path, body_bytes = request_plan(service, payload_bytes)
    reply_size = reply_bytes(service, payload_bytes)
    raw: dict[str, bytes] = {}
    workdir = Path(tempfile.mkdtemp(prefix="edgebench-http-"))
    log_path = workdir / "fortio-server.log"
    srv: subprocess.Popen | None = None
    try:
        body_file: str | None = None
        if method != "GET":
            # written from inside the client endpoint, so it exists where the client runs (a namespace on this
            # host shares the file system; a pod reached with `kubectl exec` does not)
            body_file = str(workdir / "payload.bin")
            made = subprocess.run(client.cmd(["sh", "-c", 'mkdir -p "$(dirname "$1")" && head -c "$0" /dev/urandom > "$1"',
                                              str(int(body_bytes)), body_file]), capture_output=True)
            if made.returncode != 0:
                raise HttpDriverError(f"could not write the {body_bytes}-byte payload in the client: "
                                      f"{made.stderr.decode(errors='replace').strip()}")
        with open(log_path, "wb") as log:
            srv = subprocess.Popen(server.cmd(server_cmd(port)), stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=workdir)
        _wait_listening(server.cmd([]), port, srv, log_path)
        url = f"http://{target}:{port}{path}"
        cli = subprocess.run(client.cmd(load_cmd(url, method, body_file, requests, reply_size)),
                             capture_output=True, stdin=subprocess.DEVNULL,
                             timeout=requests * REQUEST_TIMEOUT_S + 30)
        raw["fortio-access.jsonl"] = cli.stdout
        raw["fortio-load.log"] = cli.stderr
        if cli.returncode != 0:
            raise HttpDriverError(f"fortio load exited with {cli.returncode}: "
                                  f"{(cli.stderr or cli.stdout).decode(errors='replace').strip()[-500:]}")
        rows = parse_fortio_access_log(cli.stdout.decode(errors="replace"))
        logged = len(rows)
        if logged > requests:
            raise HttpDriverError(f"fortio logged {logged} requests, {requests} were planned")
        rows += [dropped_request(seq) for seq in range(logged + 1, requests + 1)]
        raw["http-requests.json"] = json.dumps(rows, indent=1).encode()
        metrics = {**summarize(rows, expected=requests), "client": CLIENT, "resolution_ms": RESOLUTION_MS[CLIENT]}
        problems = []
        if logged < requests:
            problems.append(f"fortio logged {logged} of {requests} requests")
        transport = sum(1 for r in rows[:logged] if r["status"] == 0)
        if transport:
            problems.append(f"{transport} of {requests} requests failed at the transport level "
                            "(refused, reset or timeout: see fortio-load.log)")
        bad: dict[Any, int] = {}
        for r in rows[:logged]:
            if r["status"] not in (0, 200):
                bad[r["status"]] = bad.get(r["status"], 0) + 1
        if bad:
            problems.append("non-200 responses: " + ", ".join(f"{k}: {v}" for k, v in sorted(bad.items(), key=str)))
        if problems:
            return raw, None, f"{service} {url}: " + "; ".join(problems)
        return raw, metrics, None
    except (HttpDriverError, subprocess.TimeoutExpired, OSError) as exc:
        return raw, None, str(exc)
    finally:
        if srv is not None:
            _stop(srv)
        if log_path.exists():
            raw["fortio-server.log"] = log_path.read_bytes()
        shutil.rmtree(workdir, ignore_errors=True)
