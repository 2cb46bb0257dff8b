"""A sweep's progress you can follow: cells done/total, runs done/total, elapsed time, an ETA learned from the runs
measured so far, the current cell and its phase.

On a terminal it is one live line at the bottom, rewritten in place (carriage return), under the sweep's log lines;
in a log or a pipe it is a plain line whenever the current cell or phase changes (no control characters). Runs
already stored (skipped on resume) count as done but teach the ETA nothing: they take no time.
"""

from __future__ import annotations

import shutil
import threading
import time
from typing import Callable, TextIO

Log = Callable[[str], None]


def eta_seconds(elapsed: float, measured: int, remaining: int) -> float | None:
    """Seconds left at the pace so far: the time per measured run (phases, provisioning and teardown included,
    spread over the runs of this session) times the runs left; None before the first run is measured."""
    if remaining <= 0:
        return 0.0
    if measured <= 0 or elapsed <= 0:
        return None
    return elapsed / measured * remaining


def duration(seconds: float | None) -> str:
    """1h02m, 4m05s, 7s; '?' when unknown."""
    if seconds is None:
        return "?"
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class Progress:
    """Counts a sweep as it runs (the runner calls cell/phase/run/skip/cell_done) and shows it. `log` prints the
    sweep's own lines; `stream` gets the live line on a terminal (tty=True). `clock` is for tests."""

    def __init__(self, cells: int, runs: int, *, log: Log = print, stream: TextIO | None = None, tty: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.cells_total, self.runs_total = cells, runs
        self.cells_done = self.runs_done = self.measured = 0
        self.current: str | None = None
        self.phase_name: str | None = None
        self._log, self.stream, self.tty, self.clock = log, stream, tty and stream is not None, clock
        self.started = clock()
        self.round_marks: list[tuple[int, float, int]] = []  # (round, elapsed, measured) at each round's end
        self._shown = False
        self._lock = threading.RLock()  # the upload thread logs too

    # what happened -------------------------------------------------------------------------------------------
    def cell(self, label: str) -> None:
        with self._lock:
            self.current, self.phase_name = label, None

    def phase(self, name: str) -> None:
        with self._lock:
            self.phase_name = name
            self._show(changed=True)

    def run(self) -> None:
        """One run measured (ok, failed or unsupported)."""
        with self._lock:
            self.runs_done += 1
            self.measured += 1
            self._show(changed=False)

    def skip(self, n: int) -> None:
        """Runs already stored: done, not measured."""
        with self._lock:
            self.runs_done += n
            self._show(changed=False)

    def round_ended(self, rnd: int) -> None:
        """Round `rnd` of an interleaved sweep ended: its time and runs give the pace of the next (sweep/runner.py)."""
        with self._lock:
            self.round_marks.append((rnd, self.elapsed(), self.measured))

    def cell_done(self) -> None:
        with self._lock:
            self.cells_done += 1
            self.phase_name = None
            self._show(changed=False)

    # what it shows -------------------------------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.clock() - self.started

    def eta(self) -> float | None:
        return eta_seconds(self.elapsed(), self.measured, self.runs_total - self.runs_done)

    def line(self) -> str:
        now = f", {self.current}" + (f": {self.phase_name}" if self.phase_name else "") if self.current else ""
        return (f"cells {self.cells_done}/{self.cells_total}, runs {self.runs_done}/{self.runs_total}, "
                f"{duration(self.elapsed())} elapsed, ETA {duration(self.eta())}{now}")

    def head(self) -> str:
        """The prefix of a per-run line: where the sweep stands."""
        return f"[{self.runs_done}/{self.runs_total}]"

    def log(self, message: str) -> None:
        """Print one of the sweep's lines; on a terminal above the live line (cleared, then drawn again)."""
        with self._lock:
            self._clear()
            self._log(message)
            self._show(changed=False)

    def close(self) -> None:
        """End the live line (a terminal gets its newline); nothing on a plain stream."""
        with self._lock:
            if self._shown:
                self.stream.write("\r\x1b[K" + self.line() + "\n")
                self.stream.flush()
                self._shown = False

    def _clear(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False

    def _show(self, *, changed: bool) -> None:
        if self.tty:  # cut to the terminal's width: a wrapped line cannot be rewritten in place
            self.stream.write("\r\x1b[K" + self.line()[:max(20, shutil.get_terminal_size().columns - 1)])
            self.stream.flush()
            self._shown = True
        elif changed:  # plain lines only when the cell or phase changes: a log stays readable
            self._log(f"progress: {self.line()}")
