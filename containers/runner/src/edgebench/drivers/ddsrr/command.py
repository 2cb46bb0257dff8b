"""edgebench-ddsrr's command lines (pure; run.py runs them)."""
from __future__ import annotations

from edgebench.drivers.ddsperf.command import INIT_WAIT

TOOL = "edgebench-ddsrr"
MIN_SIZE = 12  # seq + target + the baggage's length: the smallest sample the pinger sends
MAX_SUBSCRIBERS = 64


def ping_cmd(subscribers: int, payload: int, duration: float, reliability: str, domain: int,
             init_wait: float = INIT_WAIT, timeout_ms: int = 1000) -> list[str]:
    return [TOOL, "ping", "-n", str(subscribers), "-s", str(payload), "-D", f"{duration:g}", "-r", reliability,
            "-t", str(timeout_ms), "-w", f"{init_wait:g}", "-i", str(domain)]


def pong_cmd(index: int, reliability: str, duration: float, domain: int) -> list[str]:
    return [TOOL, "pong", "-k", str(index), "-r", reliability, "-D", f"{duration:g}", "-i", str(domain)]
