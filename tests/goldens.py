"""Golden files shared by the rendering tests: compare a rendering with its reviewed file, or (re)write the file when
EDGEBENCH_UPDATE_GOLDEN=1. A missing golden fails: it is never created silently."""

import os
from pathlib import Path

import pytest

UPDATE = os.environ.get("EDGEBENCH_UPDATE_GOLDEN") == "1"


def check_golden(path: Path, text: str) -> None:
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"golden file {path} is missing: run with EDGEBENCH_UPDATE_GOLDEN=1 once and review it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs from the rendering (EDGEBENCH_UPDATE_GOLDEN=1 to accept)"
