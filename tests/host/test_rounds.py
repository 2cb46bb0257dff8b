"""Interleaved rounds (sweep/runner.visits): round r of every cell runs before round r + 1 of any, so the warehouse
can pair each configuration with its baseline by round (docs/verdicts.md); --cell-by-cell keeps the old order."""
from __future__ import annotations

from edgebench.plan import spec
from edgebench.plan.cells import expand_checked, runs_for
from edgebench.sweep.runner import visits


def _sweep(reps: int):
    return spec.from_parameters({"substrate": "local", "cnis": '["host","flannel:vxlan","flannel:host-gw"]',
                                 "workloads": '["iperf3:tcp"]', "repetitions": str(reps), "duration": "1"},
                                source="test")


def test_interleaved_visits_are_rounds_of_every_cell():
    s = _sweep(3)
    cells, _ = expand_checked(s)
    todos = [{r.run_id for r in runs_for(s, c)} for c in cells]
    plan = visits(s, cells, todos, interleave=True)
    assert [i for i, _ in plan] == [0, 1, 2] * 3
    reps = [{r.repetition for r in runs_for(s, cells[i]) if r.run_id in todo} for i, todo in plan]
    assert reps == [{1}] * 3 + [{2}] * 3 + [{3}] * 3
    # every run exactly once
    seen = [rid for _, todo in plan for rid in todo]
    assert sorted(seen) == sorted(rid for t in todos for rid in t)


def test_resumed_and_cell_by_cell_orders():
    s = _sweep(2)
    cells, _ = expand_checked(s)
    todos = [{r.run_id for r in runs_for(s, c)} for c in cells]
    done = {r.run_id for r in runs_for(s, cells[1]) if r.repetition == 1}
    todos[1] -= done  # a resumed sweep: round 1 of the second cell is stored
    plan = visits(s, cells, todos, interleave=True)
    assert [i for i, _ in plan] == [0, 2, 0, 1, 2]
    assert [i for i, _ in visits(s, cells, todos, interleave=False)] == [0, 1, 2]
