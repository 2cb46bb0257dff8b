"""sockperf driver: TCP or UDP request/response latency (ping-pong), the probe of seed 003's latency figures.

One client sends a message of `length` bytes and waits for the server's reply of the same size before it sends the
next, for `duration` seconds (`sockperf ping-pong`, `--no-rdtsc`: the monotonic clock rather than the TSC, which
virtual machines and qemu do not keep steady). sockperf reports latency as half the round-trip time, as ddsperf
does for DDS; its summary gives the mean, the standard deviation and fixed percentiles (docs/tool-formats/sockperf.md).

run.py measures through endpoints; command.py builds the argv, parser.py reads the client's summary.
"""
from __future__ import annotations

import subprocess
from typing import Any

from edgebench import sh
from edgebench.drivers.common import listening
from edgebench.drivers.sockperf.command import client_cmd, server_cmd
from edgebench.drivers.sockperf.parser import ANSI, SockperfError, parse_metrics


def version() -> str:
    try:
        out = sh.call(["sockperf", "--version"], capture_output=True, text=True, timeout=10).stdout
    except FileNotFoundError:
        return "missing"
    return ANSI.sub("", out).strip().split("\n", 1)[0].strip()


def measure(client, server, target: str, port: int, protocol: str, length: int,
            duration: int) -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
    """One ping-pong run: the server in `server`'s namespace (listening on all its addresses), the client in
    `client`'s, dialling `target`. Returns (raw files, metrics or None, error or None); the raw output is kept
    even when the run failed."""
    srv = sh.popen(server.cmd(server_cmd(protocol, "0.0.0.0", port)), stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT)
    raw: dict[str, bytes] = {}
    try:
        listening.wait(server.cmd([]), protocol, port, srv, "sockperf", SockperfError)
        cli = sh.call(client.cmd(client_cmd(protocol, target, port, length, duration)), capture_output=True,
                      timeout=duration + 60)
        raw["sockperf-client.txt"] = cli.stdout
        if cli.stderr:
            raw["sockperf-client.stderr"] = cli.stderr
        if cli.returncode != 0 and not cli.stdout.strip():
            last = (cli.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            return raw, None, f"sockperf client failed (exit code {cli.returncode}): {last[:300]}"
        return raw, parse_metrics(cli.stdout.decode(errors="replace")), None
    except (SockperfError, subprocess.TimeoutExpired) as exc:
        return raw, None, str(exc)
    finally:
        if srv.poll() is None:
            srv.kill()
        try:
            out, _ = srv.communicate(timeout=5)
            raw["sockperf-server.txt"] = out or b""
        except subprocess.TimeoutExpired:
            pass
