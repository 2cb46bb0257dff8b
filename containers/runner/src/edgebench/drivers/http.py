"""HTTP request/response driver: `hey` (client, 1 kept-alive connection) against fortio's echo server.

The seed's JMeter plan (N sequential requests, 1 thread, TCP connection reuse) maps to `hey -n N -c 1`: one worker,
one `http.Transport`, keep-alive on, no rate limit, so requests go back to back over one TCP connection.
One fortio server gives the three services through its echo handler (see containers/http-services/README.md):

  payload-echo   POST /echo          the request body comes back byte for byte
  payload-recv   POST /echo?size=0   fortio reads the whole body, then replies 200 with an empty body
  static-reply   GET  /echo?size=1000  a fixed 1000-byte body for an empty request

`parse_hey_csv` and `summarize` are pure. hey quirks the parser handles:
  * values are seconds printed with `%4.4f`, i.e. a 0.1 ms resolution (sub-0.1 ms differences are invisible);
  * requests that failed at the transport level (refused, reset, timeout) get NO row at all: hey only counts them
    in an error summary it does not print with `-o csv`. Missing rows are the only trace; `measure` and
    `summarize(expected=...)` count them as errors;
  * a run without any answered request prints the header line alone (exit code 0, nothing on stderr);
  * a race in hey's tracing: when the first response byte arrives before Go reports the request as written,
    Response-delay is counted from hey's start (seen with 100 KB echo: response-time 0.0003, Response-delay
    0.0314). Phase times longer than the whole request are nulled;
  * a reused connection reports DNS+dialup 0.0000 (also what a sub-50 µs dial would print).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from .. import sh
from ..errors import EdgebenchError

SERVICES = ("payload-echo", "payload-recv", "static-reply")
STATIC_REPLY_BYTES = 1000
PHASE_TOLERANCE_MS = 0.1  # one step of hey's %4.4f-seconds resolution
REQUEST_TIMEOUT_S = 30  # hey -t: per request; generous for 1 MB over emulated slow/lossy links

# hey CSV column -> http-requests.json key (hey's "DNS" column is not part of the contract)
_COLUMNS = {
    "response-time": "response_ms",
    "DNS+dialup": "connect_ms",
    "Request-write": "write_ms",
    "Response-delay": "wait_ms",
    "Response-read": "read_ms",
}


class HttpDriverError(EdgebenchError):
    """The HTTP workload could not run, or hey's output is not hey CSV."""


# tools -----------------------------------------------------------------------------------------------
def fortio_path() -> str:
    """`fortio` from PATH, else from $EDGEBENCH_TOOLS (default ~/.local/share/edgebench/tools), else bare "fortio"
    (so running it fails with FileNotFoundError, which `measure` reports as an error)."""
    return sh.which("fortio") or "fortio"


def version() -> dict[str, str]:
    """{"hey": Debian package version (hey has no --version), "fortio": `fortio version`}; "missing" if absent."""
    out: dict[str, str] = {}
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "hey"], capture_output=True, text=True,
                           timeout=10)
        out["hey"] = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else (
            "unknown" if shutil.which("hey") else "missing")
    except FileNotFoundError:
        out["hey"] = "unknown" if shutil.which("hey") else "missing"
    try:
        r = subprocess.run([fortio_path(), "version"], capture_output=True, text=True, timeout=10)
        out["fortio"] = (r.stdout.strip() or r.stderr.strip()).split("\n", 1)[0] or "unknown"
    except FileNotFoundError:
        out["fortio"] = "missing"
    return out


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


def load_cmd(url: str, method: str, body_file: str | None, requests: int) -> list[str]:
    """hey: `requests` sequential requests by 1 worker over 1 kept-alive connection, no rate limit (-q unset),
    per-request CSV on stdout. Without a body file the request has no body (use it with GET)."""
    if requests < 1:
        raise HttpDriverError(f"requests must be >= 1, got {requests}")
    argv = ["hey", "-n", str(requests), "-c", "1", "-m", method, "-t", str(REQUEST_TIMEOUT_S),
            "-disable-compression", "-disable-redirects", "-o", "csv"]
    if body_file is not None:
        argv += ["-D", str(body_file), "-T", "application/octet-stream"]
    return [*argv, url]


# parsing ---------------------------------------------------------------------------------------------
def _seconds_to_ms(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return round(value * 1000.0, 6)  # hey prints %4.4f seconds: round away float noise (0.0007*1000)


def _status(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def parse_hey_csv(text: str) -> list[dict[str, Any]]:
    """Per-request rows in the http-requests.json shape, from `hey -o csv` output.

    Columns are found by header name. Rows are ordered by hey's `offset` (request start, seconds since hey
    started) and numbered `seq` 1..n in that order; `offset_ms` is relative to the first request. Times are ms.
    A field hey left empty or unparseable becomes null; a missing status-code column gives status null.
    Raises HttpDriverError if the text has no hey CSV header.
    """
    lines = [ln.strip() for ln in text.replace("\r\n", "\n").split("\n")]
    lines = [ln for ln in lines if ln]
    header_at = next((i for i, ln in enumerate(lines) if ln.startswith("response-time,")), None)
    if header_at is None:
        raise HttpDriverError(f"not hey CSV output (no 'response-time,...' header): {text[:200]!r}")
    header = lines[header_at].split(",")
    index = {name: i for i, name in enumerate(header)}
    rows: list[dict[str, Any]] = []
    for ln in lines[header_at + 1:]:
        fields = ln.split(",")
        if len(fields) != len(header):
            raise HttpDriverError(f"hey CSV row has {len(fields)} fields, header has {len(header)}: {ln!r}")
        row: dict[str, Any] = {"_offset": _seconds_to_ms(fields[index["offset"]]) if "offset" in index else None}
        for col, key in _COLUMNS.items():
            row[key] = _seconds_to_ms(fields[index[col]]) if col in index else None
        row["status"] = _status(fields[index["status-code"]]) if "status-code" in index else None
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
            # written, Response-delay is measured from hey's start (seconds, not µs). A phase longer than the
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


def dropped_request(seq: int) -> dict[str, Any]:
    """The http-requests.json row for a request hey sent but got no response for (transport error): status 0,
    no times. hey does not say when it happened, so `measure` appends these after the answered requests."""
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
    """One HTTP run: fortio in `server`'s namespace, hey in `client`'s, against http://{target}:{port}{path}.

    Returns (raw files, metrics or None, error or None). Raw files: `hey.csv`, `fortio-server.log`,
    `http-requests.json` (whatever exists; also on failure). http-requests.json always holds `requests` rows:
    requests hey got no response for are appended as `dropped_request` rows (status 0, null times).
    The run fails unless hey answered all `requests` with status 200. Never raises for run-time failures
    (missing tools, no server, timeouts); an unknown service or a negative size raise HttpDriverError.
    """
    method, path, body_bytes = request_plan(service, payload_bytes)
    raw: dict[str, bytes] = {}
    workdir = Path(tempfile.mkdtemp(prefix="edgebench-http-"))
    log_path = workdir / "fortio-server.log"
    srv: subprocess.Popen | None = None
    try:
        body_file: str | None = None
        if method != "GET":
            # written from inside the client endpoint, so it exists where hey runs (a namespace on this host
            # shares the file system; a pod reached with `kubectl exec` does not)
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
        cli = subprocess.run(client.cmd(load_cmd(url, method, body_file, requests)), capture_output=True,
                             stdin=subprocess.DEVNULL, timeout=requests * REQUEST_TIMEOUT_S + 30)
        raw["hey.csv"] = cli.stdout
        if cli.returncode != 0:
            raise HttpDriverError(f"hey exited with {cli.returncode}: "
                                  f"{(cli.stderr or cli.stdout).decode(errors='replace').strip()[:500]}")
        rows = parse_hey_csv(cli.stdout.decode(errors="replace"))
        answered = len(rows)
        rows += [dropped_request(seq) for seq in range(answered + 1, requests + 1)]
        raw["http-requests.json"] = json.dumps(rows, indent=1).encode()
        metrics = summarize(rows, expected=requests)
        problems = []
        if answered < requests:
            problems.append(f"{requests - answered} of {requests} requests got no response "
                            "(transport errors: refused, reset or timeout; hey does not say which)")
        bad: dict[Any, int] = {}
        for r in rows:
            if r["status"] != 200:
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
