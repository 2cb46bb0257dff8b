"""iperf3 driver. `parse` is pure: it takes the client's `-J` output and returns the metrics record."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any, Sequence

from ..errors import EdgebenchError


class Iperf3Error(EdgebenchError):
    """iperf3 ran but reported an error (its JSON "error" field), or its output is not iperf3 JSON."""


def server_cmd(port: int) -> list[str]:
    return ["iperf3", "--server", "--one-off", "--json", "--port", str(port)]


def client_cmd(target: str, port: int, protocol: str, length: int, duration: int, bitrate: str = "0") -> list[str]:
    argv = ["iperf3", "--client", target, "--port", str(port), "--json", "--time", str(duration),
            "--length", str(length)]
    if protocol == "udp":
        argv += ["--udp", "--bitrate", bitrate]
    return argv


def _mbps(bps: Any) -> float | None:
    return None if bps is None else float(bps) / 1e6


def parse(text: str) -> dict[str, Any]:
    """Metrics from iperf3 client JSON (3.x). Receiver-side throughput; UDP jitter/loss from the receiver."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Iperf3Error(f"iperf3 output is not JSON ({exc.msg}): {text[:200]!r}") from None
    if not isinstance(doc, dict):
        raise Iperf3Error("iperf3 output is not a JSON object")
    if doc.get("error"):
        raise Iperf3Error(f"iperf3: {doc['error']}")
    end = doc.get("end") or {}
    protocol = ((doc.get("start") or {}).get("test_start") or {}).get("protocol", "TCP").lower()
    sent, received = end.get("sum_sent") or {}, end.get("sum_received") or {}
    cpu = end.get("cpu_utilization_percent") or {}
    out: dict[str, Any] = {
        "protocol": protocol,
        "sent_mbps": _mbps(sent.get("bits_per_second")),
        "received_mbps": _mbps(received.get("bits_per_second")),
        "retransmits": None,
        "jitter_ms": None,
        "lost_packets": None,
        "packets": None,
        "lost_percent": None,
        "cpu_host_pct": cpu.get("host_total"),
        "cpu_remote_pct": cpu.get("remote_total"),
        "mean_rtt_us": None,
    }
    if protocol == "tcp":
        out["retransmits"] = sent.get("retransmits")
        rtts = [s["sender"]["mean_rtt"] for s in end.get("streams", []) if "mean_rtt" in s.get("sender", {})]
        out["mean_rtt_us"] = sum(rtts) / len(rtts) if rtts else None
    else:
        # iperf3 >= 3.11 reports the receiver's view in sum_received; older versions only in `sum`
        udp = received if "lost_percent" in received else end.get("sum") or {}
        out.update(jitter_ms=udp.get("jitter_ms"), lost_packets=udp.get("lost_packets"),
                   packets=udp.get("packets"), lost_percent=udp.get("lost_percent"))
        if out["received_mbps"] is None:
            out["received_mbps"] = _mbps(udp.get("bits_per_second"))
    out["throughput_mbps"] = out["received_mbps"]
    if out["throughput_mbps"] is None:
        raise Iperf3Error("iperf3 JSON has no end.sum_received/end.sum bits_per_second")
    return out


def version() -> str:
    try:
        out = subprocess.run(["iperf3", "--version"], capture_output=True, text=True, timeout=10).stdout
    except FileNotFoundError:
        return "missing"
    return out.split("\n", 1)[0].strip()


def _wait_listening(server_ns_cmd: Sequence[str], port: int, proc: subprocess.Popen, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Iperf3Error(f"iperf3 server exited early: {proc.stdout.read() if proc.stdout else ''}")
        out = subprocess.run([*server_ns_cmd, "ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
        if out.stdout.strip():
            return
        time.sleep(0.05)
    raise Iperf3Error(f"iperf3 server did not listen on port {port} within {timeout}s")


def measure(client, server, target: str, port: int, protocol: str, length: int, duration: int,
            bitrate: str = "0") -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
    """Run one iperf3 test: server in `server`'s namespace, client in `client`'s, connecting to `target`.

    Returns (raw files, metrics or None, error or None). Raw output is returned even when the run failed.
    """
    server_prefix = server.cmd([])
    srv = subprocess.Popen(server.cmd(server_cmd(port)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    raw: dict[str, bytes] = {}
    try:
        _wait_listening(server_prefix, port, srv)
        cli = subprocess.run(client.cmd(client_cmd(target, port, protocol, length, duration, bitrate)),
                             capture_output=True, timeout=duration + 60)
        raw["iperf3-client.json"] = cli.stdout
        if cli.stderr:
            raw["iperf3-client.stderr"] = cli.stderr
        try:
            srv_out, _ = srv.communicate(timeout=15)
            raw["iperf3-server.json"] = srv_out
        except subprocess.TimeoutExpired:
            srv.kill()
        return raw, parse(cli.stdout.decode(errors="replace")), None
    except (Iperf3Error, subprocess.TimeoutExpired) as exc:
        return raw, None, str(exc)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
