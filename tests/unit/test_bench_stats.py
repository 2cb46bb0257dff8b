"""bench/common.py: the fidelity rows' paired ratio, its 95% interval and the verdict against a target band."""
from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from common import T95, band_verdict, paired_ratio, t95  # noqa: E402


def test_t_table_is_the_warehouse_macro_s():
    macro = (REPO / "analytics/macros/t_critical_95.sql").read_text()
    table = [float(x) for x in re.search(r"set t = \[([^\]]*)\]", macro).group(1).split(",")]
    assert T95 == table
    assert (t95(1), t95(30), t95(35), t95(50), t95(100), t95(500)) == (12.706, 2.042, 2.042, 2.021, 2.0, 1.98)


def test_paired_ratio_is_the_geometric_mean_of_the_pairs_with_a_t_interval():
    # log ratios +0.1, -0.1, 0: mean 0, sd 0.1, half-width t(2) * 0.1 / sqrt(3)
    a = [math.exp(0.1) * 10, math.exp(-0.1) * 20, 30]
    ratio, lo, hi, sd = paired_ratio(a, [10, 20, 30])
    half = 4.303 * 0.1 / math.sqrt(3)
    assert ratio == pytest.approx(1.0)
    assert sd == pytest.approx(0.1)
    assert (lo, hi) == (pytest.approx(math.exp(-half)), pytest.approx(math.exp(half)))
    # the pairs' common drift (the machine slowing down between pairs) cancels: every pair 10% apart
    ratio, lo, hi, sd = paired_ratio([11, 22, 5.5], [10, 20, 5])
    assert (ratio, lo, hi, sd) == (pytest.approx(1.1), pytest.approx(1.1), pytest.approx(1.1), pytest.approx(0))
    with pytest.raises(ValueError):
        paired_ratio([1, 2], [1])


@pytest.mark.parametrize("sweep, expected", [
    ([100.5, 99.6, 100.2, 99.9], (True, "")),            # within +-2 % of the paired reference: meets
    ([90.0, 91.0, 89.5, 90.4], (False, "")),             # 10 % below, tight: a difference beyond the noise
    ([101.0, 97.5, 103.0, 98.0], (None, "inconclusive")),  # holds no difference and reaches beyond the band
])
def test_band_verdict_is_the_one_rule(sweep, expected):
    from edgebench.results.report.verdict import compare

    by_hand = [100.0, 100.0, 100.0, 100.0]
    judged = compare(sweep, by_hand, higher_is_better=True, pct=2.0, rounds_a=[0, 1, 2, 3], rounds_b=[0, 1, 2, 3])
    assert judged.method == "paired"
    assert band_verdict(judged.verdict) == expected


def test_fidelity_pairs_from_the_command_line_need_two_at_least():
    import argparse

    import bench_fidelity

    assert bench_fidelity._pair_count("31") == 31
    for bad in ("1", "0", "-4", "x", "2.5"):
        with pytest.raises(argparse.ArgumentTypeError, match="at least 2"):
            bench_fidelity._pair_count(bad)


def test_the_engine_part_says_why_it_measured_nothing_without_the_management_cluster(tmp_path, monkeypatch):
    import bench_engine

    mgmt = tmp_path / "mgmt.sh"  # mgmt.sh kubeconfig as it answers without the kind cluster
    mgmt.write_text('echo "mgmt: error: no kind cluster edgebench: make up" >&2; exit 2\n')
    monkeypatch.setattr(bench_engine, "MGMT", mgmt)
    (row,) = bench_engine.run()
    assert row.part == "engine" and row.value is None and row.ok is None
    assert row.detail == ("not measured: the kind management cluster is not up (make up): "
                          "mgmt: error: no kind cluster edgebench: make up")
    assert row.target == "<= 1.10"
