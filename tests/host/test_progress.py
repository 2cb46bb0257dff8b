"""`edgebench sweep`'s progress (sweep/progress.py): the ETA arithmetic, the plain lines of a log or pipe, the live
line of a terminal, and the phases the runner reports."""

import io
from pathlib import Path

import pytest

from edgebench.plan import spec
from edgebench.plan.cells import expand
from edgebench.sweep import phases
from edgebench.sweep.progress import Progress, duration, eta_seconds

REPO = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_eta_is_the_pace_so_far_times_the_runs_left():
    assert eta_seconds(60.0, 10, 30) == pytest.approx(180.0)
    assert eta_seconds(90.0, 3, 1) == pytest.approx(30.0)
    assert eta_seconds(5.0, 0, 12) is None  # nothing measured yet: no pace to learn from
    assert eta_seconds(0.0, 0, 0) == 0.0 and eta_seconds(50.0, 5, 0) == 0.0  # nothing left


def test_durations_read_as_hours_minutes_seconds():
    assert [duration(s) for s in (None, 0, 7.4, 65, 3600, 3725)] == ["?", "0s", "7s", "1m05s", "1h00m", "1h02m"]


def test_runs_already_stored_count_as_done_but_teach_the_eta_nothing():
    clock = Clock()
    p = Progress(4, 100, log=lambda m: None, clock=clock)
    p.cell("host:host")
    p.skip(50)  # a resumed sweep: half stored before, instantly
    for _ in range(10):
        clock.t += 10
        p.run()
    assert (p.runs_done, p.measured) == (60, 10)
    assert p.eta() == pytest.approx(400.0)  # 100 s for 10 runs -> 10 s a run, 40 left
    assert p.line() == "cells 0/4, runs 60/100, 1m40s elapsed, ETA 6m40s, host:host"
    p.cell_done()
    assert p.line().startswith("cells 1/4, runs 60/100")


def test_plain_lines_when_not_a_terminal():
    """In a log: one plain line per phase (no carriage return, no escape), the sweep's own lines as they come;
    a measured run adds no progress line of its own (its per-run line says [done/total])."""
    clock, lines, stream = Clock(), [], io.StringIO()
    p = Progress(2, 4, log=lines.append, stream=stream, tty=False, clock=clock)
    p.cell("flannel:vxlan")
    p.phase("provision-cluster")
    clock.t += 30
    p.phase("run-workloads")
    clock.t += 10
    p.run()
    p.log(f"{p.head()} flannel:vxlan iperf3/tcp: 9.41 Gbit/s")
    p.close()
    assert lines == [
        "progress: cells 0/2, runs 0/4, 0s elapsed, ETA ?, flannel:vxlan: provision-cluster",
        "progress: cells 0/2, runs 0/4, 30s elapsed, ETA ?, flannel:vxlan: run-workloads",
        "[1/4] flannel:vxlan iperf3/tcp: 9.41 Gbit/s",
    ]
    assert stream.getvalue() == ""  # nothing written around the log
    assert not any("\r" in line or "\x1b" in line for line in lines)


def test_one_live_line_on_a_terminal():
    clock, lines, stream = Clock(), [], io.StringIO()
    p = Progress(1, 2, log=lines.append, stream=stream, tty=True, clock=clock)
    p.cell("host:host")
    p.phase("run-workloads")
    clock.t += 20
    p.run()
    p.log("a sweep line")  # cleared, printed through log, drawn again
    p.close()
    text = stream.getvalue()
    assert lines == ["a sweep line"]  # no plain progress lines on a terminal
    assert text.count("\n") == 1 and text.endswith("\n")  # only close() ends the line
    f0 = "cells 0/1, runs 0/2, 0s elapsed, ETA ?, host:host: run-workloads"
    f1 = "cells 0/1, runs 1/2, 20s elapsed, ETA 20s, host:host: run-workloads"  # 20 s for 1 run, 1 left
    cr = "\r\x1b[K"  # back to the line's start, erase it
    # the phase, the run, cleared for the sweep line, drawn again, and ended by close()
    assert text == cr + f0 + cr + f1 + cr + cr + f1 + cr + f1 + "\n"


def test_run_cell_reports_every_phase_in_order(tmp_path, monkeypatch):
    sweep = spec.load(REPO / "workflows" / "sweep.yaml", substrate="local")
    cell = expand(sweep)[0]
    seen, ran = [], []
    monkeypatch.setattr(phases, "FUNCTIONS", {p: (lambda ctx, p=p: ran.append(p)) for p in phases.PHASES})
    monkeypatch.setattr(phases, "reset_cluster", lambda ctx: False)
    monkeypatch.setattr(phases, "disconnect_clusters", lambda ctx: None)
    monkeypatch.setattr(phases, "teardown_cluster", lambda ctx: seen.append("teardown-cluster"))
    ctx = phases.CellContext(sweep, cell, workdir=tmp_path, results=tmp_path, provider=None, on_phase=seen.append)
    phases.run_cell(ctx)
    assert seen == list(phases.PHASES) and ran == list(phases.PHASES[:-1])
