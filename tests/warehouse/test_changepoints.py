"""Change points over a CNI's whole version history (edgebench.results.report.changepoints): binary segmentation judged by
the one verdict rule, the minimum segment length and the re-check of an early change point."""
from __future__ import annotations

import random

from edgebench.results.report import changepoints as cp


def _hist(means, n=4, sd=1.0, seed=3):
    rng = random.Random(seed)
    return [(f"v1.{i}.0", [rng.gauss(m, sd) for _ in range(n)]) for i, m in enumerate(means)]


def test_one_step_is_found_where_it_is():
    points = cp.detect(_hist([100, 100, 100, 80, 80, 80]), higher_is_better=True, pct=5.0)
    assert [(p.before, p.after, p.comparison.verdict) for p in points] == [("v1.2.0", "v1.3.0", "worse")]
    assert not points[0].early


def test_flat_history_and_small_moves_have_none():
    assert cp.detect(_hist([100] * 6), higher_is_better=True, pct=5.0) == []
    # a 2 % move with tight runs excludes 0 but stays within the 5 % margin: equivalent, no change point
    assert cp.detect(_hist([100, 100, 100, 102, 102, 102], sd=0.2), higher_is_better=True, pct=5.0) == []


def test_two_steps_and_the_direction_of_latency():
    points = cp.detect(_hist([50, 50, 70, 70, 40, 40]), higher_is_better=False, pct=5.0)
    assert [(p.after, p.comparison.verdict) for p in points] == [("v1.2.0", "worse"), ("v1.4.0", "better")]


def test_an_early_change_point_is_rechecked_with_the_whole_look_back():
    # the first version alone differs: fewer than MIN_SEGMENT versions before the change
    points = cp.detect(_hist([130, 100, 100, 100, 100]), higher_is_better=True, pct=5.0)
    assert len(points) == 1 and points[0].early and points[0].after == "v1.1.0"
    assert points[0].comparison.verdict == "worse" and points[0].comparison.n_b == 4


def test_report_history_runs_on_the_warehouse(fixture_warehouse, monkeypatch):
    import json

    from typer.testing import CliRunner

    from edgebench.cli import app

    res = CliRunner().invoke(app, ["report", "--history", "--warehouse", str(fixture_warehouse)])
    assert res.exit_code == 0, res.output
    assert "3 or more versions" in res.output
    res = CliRunner().invoke(app, ["report", "--history", "--json", "--warehouse", str(fixture_warehouse)])
    assert res.exit_code == 0, res.output
    assert isinstance(json.loads(res.output), list)
