"""Processes of the testbed: which live in its network namespaces, and whether a testbed's recorded owner still runs."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence


def netns_pids(names: Sequence[str]) -> dict[str, list[int]]:
    """{namespace: pids of the processes in it} for named network namespaces (/run/netns), read from /proc: the
    same as `ip netns pids` per namespace, without a process each."""
    inodes = {}
    for ns in names:
        try:
            inodes[os.stat(f"/run/netns/{ns}").st_ino] = ns
        except OSError:
            continue
    out: dict[str, list[int]] = {ns: [] for ns in inodes.values()}
    if not inodes:
        return out
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ino = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            continue
        if ino in inodes:
            out[inodes[ino]].append(int(pid))
    return out


def running(pid: int) -> bool:
    """Is pid a process that has not exited (neither gone nor a zombie)?"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] not in ("Z", "X")


def other_live(pid: int) -> int | None:
    """pid when it is a running process other than this one and its parent, else None."""
    if pid in (0, os.getpid(), os.getppid()) or not os.path.exists(f"/proc/{pid}"):
        return None
    return pid


def cmdline(pid: int) -> str:
    """A process's command line (at most 120 characters), or '?'."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120].strip()
    except OSError:
        return "?"
