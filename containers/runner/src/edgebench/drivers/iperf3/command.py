"""iperf3's command lines (pure; the driver that runs them is run.py)."""
from __future__ import annotations


def server_cmd(port: int) -> list[str]:
    return ["iperf3", "--server", "--one-off", "--json", "--port", str(port)]


def client_cmd(target: str, port: int, protocol: str, length: int, duration: int, bitrate: str = "0") -> list[str]:
    argv = ["iperf3", "--client", target, "--port", str(port), "--json", "--time", str(duration),
            "--length", str(length)]
    if protocol == "udp":
        argv += ["--udp", "--bitrate", bitrate]
    return argv
