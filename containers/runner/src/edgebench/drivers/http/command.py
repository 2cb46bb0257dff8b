"""fortio's command lines for the HTTP workload (pure but for finding fortio; run.py runs them): the services, the
request each sends, the server and the load generator's argv."""

from __future__ import annotations

from edgebench import sh
from edgebench.drivers.http.parser import HttpDriverError

SERVICES = ("payload-echo", "payload-recv", "static-reply")
STATIC_REPLY_BYTES = 1000
CLIENT = "fortio"  # the load generator `measure` runs
DUET_CLIENT = "edgebench-httpduet"  # the interleaving client `measure_together` runs (containers/httpduet)
# consecutive requests to one member before the next in measure_together: 1 (strict alternation) raised the host's
# p50 by a third and cut the measured overhead from 30 % to 17 % (the other path's work evicts the caches between
# requests); bursts of 25 (about 3 ms) kept the sequential runs' level (28 % against 30 %) at 0.6x their pair SD
# (docs/verdicts.md, "Interleaved HTTP duets")
DUET_BURST = 25
REQUEST_TIMEOUT_S = 30  # per request (fortio -timeout: connect and read); generous for 1 MB over slow/lossy links
HTTP_BUFFER_MIN_KB = 128  # fortio's default -httpbufferkb
HTTP_BUFFER_HEADROOM_KB = 64  # reply headers and slack on top of the reply body


# tools -----------------------------------------------------------------------------------------------
def fortio_path() -> str:
    """`fortio` from PATH, else from $EDGEBENCH_TOOLS (default ~/.local/share/edgebench/tools), else bare "fortio"
    (so running it fails with FileNotFoundError, which `measure` reports as an error)."""
    return sh.exe(CLIENT)


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


def load_cmd(url: str, method: str, body_file: str | None, requests: int, reply_size: int = 0,
             access_log: str = "/dev/stdout") -> list[str]:
    """fortio load: `requests` sequential calls by 1 goroutine over 1 kept-alive connection, no rate limit, no
    warm-up call; one JSON access-log line per call to `access_log` (run.measure gives a file where the client
    runs: on stdout each line would wake whatever carries the client's output, on a cluster kubectl exec's whole
    chain, during the measurement), fortio's own report on stderr. The method is set explicitly (fortio would pick
    GET for an empty body); without a body file the request has no body. The fast client's buffer holds
    `reply_size` bytes plus headers."""
    if requests < 1:
        raise HttpDriverError(f"requests must be >= 1, got {requests}")
    if reply_size < 0:
        raise HttpDriverError(f"reply size must be >= 0, got {reply_size}")
    buffer_kb = max(HTTP_BUFFER_MIN_KB, -(-reply_size // 1024) + HTTP_BUFFER_HEADROOM_KB)
    argv = [fortio_path(), "load", "-c", "1", "-n", str(requests), "-qps", "-1",
            "-timeout", f"{REQUEST_TIMEOUT_S}s", "-httpbufferkb", str(buffer_kb), "-X", method,
            "-access-log-file", access_log, "-access-log-format", "json"]
    if body_file is not None:
        argv += ["-payload-file", str(body_file), "-content-type", "application/octet-stream"]
    return [*argv, url]
