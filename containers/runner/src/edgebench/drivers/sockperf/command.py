"""sockperf's command lines (pure; run.py runs them)."""
from __future__ import annotations

MIN_LENGTH, MAX_LENGTH = 14, 65000  # sockperf's smallest message (its header); a UDP datagram's payload fits 65000


def server_cmd(protocol: str, ip: str, port: int) -> list[str]:
    return ["sockperf", "server", *(["--tcp"] if protocol == "tcp" else []), "-i", ip, "-p", str(port)]


def client_cmd(protocol: str, target: str, port: int, length: int, duration: int) -> list[str]:
    return ["sockperf", "ping-pong", *(["--tcp"] if protocol == "tcp" else []), "-i", target, "-p", str(port),
            "-m", str(length), "-t", str(duration), "--no-rdtsc"]
