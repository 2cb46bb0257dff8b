"""bench/bench_engine.py's split of an Argo workflow's wall time, from its pods' own timestamps (no cluster here)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import bench_engine  # noqa: E402


def _t(s: float) -> str:
    return f"2026-11-26T10:00:{s:06.3f}Z" if s < 60 else f"2026-11-26T10:01:{s - 60:06.3f}Z"


def _pod(created, init, main, wait):
    def term(name, span):
        return {"name": name, "state": {"terminated": {"startedAt": _t(span[0]), "finishedAt": _t(span[1])}}}
    return {"metadata": {"creationTimestamp": _t(created)},
            "status": {"initContainerStatuses": [term("init", init)] if init else [],
                       "containerStatuses": [term(n, span) for n, span in (("main", main), ("wait", wait)) if span]}}


def test_the_wall_time_splits_into_work_pod_start_artifacts_and_controller():
    wf = {"status": {"startedAt": _t(0), "finishedAt": _t(50)}}
    pods = [  # the second pod first: the split follows creation times, not the listing's order
        _pod(22, (24, 25), (25, 40), (25, 43)),
        _pod(2, (5, 6), (6, 16), (6, 18)),
        _pod(3, None, (3.5, 4), None),  # overlaps the first: counted in full, nothing is waited for
        _pod(45, None, None, None),      # never ran: not counted
    ]
    t = bench_engine.timeline(wf, pods)
    assert t["pods"] == 3 and t["wall"] == 50
    assert t["work"] == pytest.approx(10 + 15 + 0.5)
    assert t["pod start"] == pytest.approx(3 + 2 + 0.5)       # creation -> first container
    assert t["artifacts"] == pytest.approx((1 + 2) + (1 + 3))  # init, and wait after main
    assert t["controller"] == pytest.approx(2 + (22 - 18) + (50 - 43))  # before the first, between, after the last
    assert "work 25.5 s" in bench_engine._timeline_text(t, 33)


def test_each_cell_pods_own_cost_with_its_interval():
    wf = {"status": {"startedAt": _t(0), "finishedAt": _t(60)}}
    pods = [_pod(1, (2, 3), (3, 6), (3, 7)),           # the matrix expansion
            _pod(10, (11, 12), (12, 30), (12, 31)),     # gap 3, start 1, artifacts 1 + 1
            _pod(34, (35, 36), (36, 55), (36, 57))]     # gap 3, start 1, artifacts 1 + 2, then 3 s to the end
    t = bench_engine.timeline(wf, pods)
    assert t["per pod"] == pytest.approx([1 + 1 + 1 + 1, 3 + 1 + 2, 3 + 1 + 3 + 3])
    mean, half, n = bench_engine.per_cell_cost(t)
    assert n == 2 and mean == pytest.approx(8) and half == pytest.approx(12.706 * 2)  # sd of 6 and 10: 2.83; / sqrt(2)
    assert bench_engine.per_cell_cost({"per pod": [4, 6]}) is None  # one cell: no interval
