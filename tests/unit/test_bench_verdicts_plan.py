"""bench/bench_verdicts.py measures `make sweep`'s plan as the Makefile states it (REPEAT), not a copy of it."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(1, str(REPO / "tests"))

import bench_verdicts  # noqa: E402


def test_after_is_the_makefiles_repeat_without_its_budget():
    line = next(x for x in (REPO / "Makefile").read_text().splitlines() if x.startswith("REPEAT"))
    pairs = dict(re.findall(r"-p ([\w-]+)=(\S+)", line))
    assert pairs.pop("time-budget")  # the bench gives after the wall time before took
    assert {k: bench_verdicts.AFTER[k] for k in pairs} == pairs
    assert "time-budget" not in bench_verdicts.AFTER


def test_a_changed_repeat_is_followed_and_a_fixed_one_refused(tmp_path):
    mk = tmp_path / "Makefile"
    mk.write_text("X := 1\nREPEAT     ?= -p repetitions=auto -p min-repetitions=3 -p max-repetitions=8 "
                  "-p time-budget=20m\n")
    assert bench_verdicts.makefile_repeat(mk) == {"repetitions": "auto", "min-repetitions": "3",
                                                  "max-repetitions": "8"}
    mk.write_text("REPEAT ?= -p repetitions=3\n")
    with pytest.raises(SystemExit, match="not an adaptive plan"):
        bench_verdicts.makefile_repeat(mk)
