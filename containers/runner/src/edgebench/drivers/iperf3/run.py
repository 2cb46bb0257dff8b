"""Running iperf3 through endpoints: a one-off server in one namespace, the client in another (parser.py reads the
client's JSON)."""
from __future__ import annotations

import subprocess
from typing import Any, Sequence

from edgebench import sh
from edgebench.drivers.common import listening
from edgebench.drivers.iperf3.command import client_cmd, server_cmd
from edgebench.drivers.iperf3.parser import parse_metrics
from edgebench.drivers.iperf3.reader import Iperf3Error


def version() -> str:
    try:
        out = sh.call(["iperf3", "--version"], capture_output=True, text=True, timeout=10).stdout
    except FileNotFoundError:
        return "missing"
    return out.split("\n", 1)[0].strip()


def _wait_listening(server_ns_cmd: Sequence[str], port: int, proc: subprocess.Popen, timeout: float = 10) -> None:
    listening.wait(server_ns_cmd, "tcp", port, proc, "iperf3", Iperf3Error, timeout)


def _no_output_error(client, returncode: int, stderr: bytes) -> str:
    """Why a client printed nothing. `kubectl exec` whose stream breaks (the node's kubelet or containerd killed or
    restarted mid-run) exits 0 with no output and no message: say so rather than 'output is not JSON'."""
    lines = stderr.decode(errors="replace").strip().splitlines()
    if lines:
        return f"iperf3 client failed (exit code {returncode}): {lines[-1][:300]}"
    argv = client.cmd([])
    if argv[:1] == ["kubectl"] and "exec" in argv:
        pod = getattr(client, "pod", "?")
        node = getattr(client, "node", "?")
        return (f"iperf3 client printed nothing (kubectl exec into pod {pod} on node {node} exited {returncode} "
                "without output: its stream ended before the result - the node's kubelet or container runtime "
                "stopped or restarted during the run?)")
    return f"iperf3 client printed nothing (exit code {returncode}, no message)"


def measure(client, server, target: str, port: int, protocol: str, length: int, duration: int,
            bitrate: str = "0") -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
    """Run one iperf3 test: server in `server`'s namespace, client in `client`'s, connecting to `target`.

    Returns (raw files, metrics or None, error or None). Raw output is returned even when the run failed.
    """
    server_prefix = server.cmd([])
    srv = sh.popen(server.cmd(server_cmd(port)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    raw: dict[str, bytes] = {}
    try:
        _wait_listening(server_prefix, port, srv)
        cli = sh.call(client.cmd(client_cmd(target, port, protocol, length, duration, bitrate)),
                             capture_output=True, timeout=duration + 60)
        raw["iperf3-client.json"] = cli.stdout
        if cli.stderr:
            raw["iperf3-client.stderr"] = cli.stderr
        try:
            srv_out, _ = srv.communicate(timeout=15)
            raw["iperf3-server.json"] = srv_out
        except subprocess.TimeoutExpired:
            srv.kill()
        if not cli.stdout.strip():  # nothing measured: say why (e.g. kubectl exec refused, or its stream broke)
            return raw, None, _no_output_error(client, cli.returncode, cli.stderr)
        return raw, parse_metrics(cli.stdout.decode(errors="replace")), None
    except (Iperf3Error, subprocess.TimeoutExpired) as exc:
        return raw, None, str(exc)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
