"""Who holds a shared thing: a testbed prefix or a lab is driven by one sweep at a time.

Two kinds of hold, one refusal (`HeldError`, which names the holder):
- `LocalHold`: an exclusive `flock` on /run/edgebench/hold-<name>.lock, taken by the process that drives the thing
  (a local sweep on testbed prefix `eb`, say) and kept until it exits. The kernel drops the lock when the process
  dies, however it dies, so a hold never outlives its holder; the file names the holder (pid, command, sweep) for
  the message another process gets. `holder_of(name)` reads it without taking anything.
- the lab lease (substrates/clusters/lease.py): a lab's nodes are shared by processes on several machines (an
  `edgebench sweep` here, an Argo cell pod on a management cluster), so no local lock can see them all; its hold is
  a lease file on the lab's first server, renewed while its holder runs.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from edgebench.errors import EdgebenchError

RUN_DIR = Path(os.environ.get("EDGEBENCH_RUN_DIR", "/run/edgebench"))


class HeldError(EdgebenchError):
    """Refused: another live sweep holds it (exit code 2: nothing was changed)."""

    exit_code = 2


def describe_self(sweep_id: str | None = None) -> dict[str, Any]:
    """What a holder says of itself: pid, host, command line, sweep id, since when."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(sys.argv[:3]),
            "sweep_id": sweep_id, "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def holder_text(h: dict[str, Any]) -> str:
    """One line naming a holder, for messages."""
    sweep = f"sweep {h['sweep_id']}, " if h.get("sweep_id") else ""
    return f"{sweep}pid {h.get('pid')} on {h.get('host')} (`{h.get('command')}`, since {h.get('since')})"


def _path(name: str) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise EdgebenchError(f"bad hold name {name!r}")
    return RUN_DIR / f"hold-{name}.lock"


class LocalHold:
    """An exclusive hold on `name` for this process (a context manager). `what` says what is held, for messages:
    "testbed prefix eb". Taking it again in the same process is allowed (nested holds share the lock)."""

    _mine: dict[str, tuple[int, int]] = {}  # name -> (fd, depth) held by this process

    def __init__(self, name: str, what: str, sweep_id: str | None = None):
        self.name, self.what, self.sweep_id = name, what, sweep_id

    def __enter__(self) -> "LocalHold":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def acquire(self) -> None:
        if self.name in self._mine:
            fd, depth = self._mine[self.name]
            self._mine[self.name] = (fd, depth + 1)
            return
        path = _path(self.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            h = holder_of(self.name)
            who = holder_text(h) if h else "another process (it has not said who yet)"
            raise HeldError(f"{self.what} is in use by {who}: wait for it to end, or stop it (Ctrl-C, or "
                            f"`kill {h.get('pid') if h else 'PID'}`: it tears down what it built)") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(describe_self(self.sweep_id)).encode(), 0)
        self._mine[self.name] = (fd, 1)

    def release(self) -> None:
        if self.name not in self._mine:
            return
        fd, depth = self._mine[self.name]
        if depth > 1:
            self._mine[self.name] = (fd, depth - 1)
            return
        del self._mine[self.name]
        os.ftruncate(fd, 0)
        os.close(fd)  # closing drops the flock


def holder_of(name: str) -> dict[str, Any] | None:
    """Who holds `name` now (its description), or None if nobody does. A file left by a dead holder is not a hold:
    the lock went with the process."""
    path = _path(name)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if name in LocalHold._mine:  # this very process holds it
            return describe_self()
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 4096, 0).decode(errors="replace")
            try:
                return json.loads(text)
            except ValueError:
                return {"pid": "?", "host": socket.gethostname(), "command": "?", "since": "?"}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
