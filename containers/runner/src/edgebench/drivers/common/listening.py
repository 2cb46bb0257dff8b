"""Waiting for a measuring tool's server to listen before its client starts (iperf3, sockperf)."""
from __future__ import annotations

import subprocess
import time
from typing import Sequence

from edgebench import sh


def wait(server_ns_cmd: Sequence[str], protocol: str, port: int, proc: subprocess.Popen, tool: str,
         error: type[Exception], timeout: float = 10) -> None:
    """Until `ss` in the server's namespace shows a TCP listener or UDP socket on `port`; `error(message)` when the
    server exits first or nothing listens within `timeout` seconds."""
    flags = "-Hltn" if protocol == "tcp" else "-Hlun"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise error(f"{tool} server exited early: {proc.stdout.read() if proc.stdout else ''}")
        out = sh.call([*server_ns_cmd, "ss", flags, f"sport = :{port}"], capture_output=True, text=True)
        if out.stdout.strip():
            return
        time.sleep(0.05)
    raise error(f"{tool} server did not listen on {protocol} port {port} within {timeout}s")
