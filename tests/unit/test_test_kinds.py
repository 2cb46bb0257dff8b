"""Tests by kind (tests/conftest.py): every test file sits in one of the kind folders, which decide how `make test`
runs it (host/ and live/ one at a time; the rest beside them)."""
from __future__ import annotations

from pathlib import Path

import conftest

TESTS = Path(__file__).resolve().parents[1]
KINDS = set(conftest.KINDS)


def test_every_test_file_is_in_a_kind_folder():
    misplaced = [str(p.relative_to(TESTS)) for p in TESTS.rglob("test_*.py") if p.parent.parent != TESTS
                 or p.parent.name not in KINDS]
    assert not misplaced, f"test files outside tests/{{{','.join(sorted(KINDS))}}}/: {misplaced}"
    assert conftest.ONE_AT_A_TIME <= KINDS


def test_the_folders_that_use_the_machine_run_one_at_a_time():
    assert conftest.ONE_AT_A_TIME == {"host", "live"}
    for kind in KINDS:
        assert any((TESTS / kind).glob("test_*.py")), f"tests/{kind}/ is empty"
