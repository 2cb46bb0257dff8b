"""File sizes across the whole repository, not only the package (tests/unit/test_layers.py counts the package's code
lines): no tracked file over MAX_LINES lines, and no shell script over SHELL_MAX lines (the platform's programs are
Python, scripts/cmdkit.py; a shell script is an entry point, a node's init or a capture recipe). Generated or data
files are exempt by what they are, listed below."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 600
SHELL_MAX = 100
# data, not code: Go's checksum lists, frozen recipe text (sha256-checked), recorded tool outputs, lock files
EXEMPT_SUFFIXES = (".sum", ".lock", ".json", ".jsonl", ".csv", ".log", ".svg", ".png")
EXEMPT_PREFIXES = ("tests/data/", "scripts/e2e-argo/recipe-v1.txt")


def tracked() -> list[Path]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True).stdout
    return [ROOT / p for p in out.splitlines() if (ROOT / p).is_file()]


def exempt(path: Path) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return rel.endswith(EXEMPT_SUFFIXES) or rel.startswith(EXEMPT_PREFIXES)


def lines(path: Path) -> int:
    try:
        return path.read_text().count("\n")
    except UnicodeDecodeError:
        return 0


def is_shell(path: Path) -> bool:
    if path.suffix == ".sh":
        return True
    try:
        first = path.read_text(errors="replace").split("\n", 1)[0]
    except OSError:
        return False
    return first.startswith("#!") and ("bash" in first or first.rstrip().endswith("/sh"))


def test_no_tracked_file_over_max_lines():
    over = {p.relative_to(ROOT).as_posix(): n for p in tracked() if not exempt(p) and (n := lines(p)) > MAX_LINES}
    assert not over, f"over {MAX_LINES} lines (split where the concept splits): {over}"


def test_shell_scripts_stay_short():
    over = {p.relative_to(ROOT).as_posix(): n for p in tracked()
            if not p.relative_to(ROOT).as_posix().startswith("tests/data/") and is_shell(p)
            and (n := lines(p)) > SHELL_MAX}
    assert not over, f"shell scripts over {SHELL_MAX} lines (write the program in Python, scripts/cmdkit.py): {over}"


def test_the_checks_see_a_long_file_and_a_long_script(tmp_path):
    long = tmp_path / "x.py"
    long.write_text("x = 1\n" * (MAX_LINES + 1))
    script = tmp_path / "run"
    script.write_text("#!/usr/bin/env bash\n" + "true\n" * SHELL_MAX)
    assert lines(long) > MAX_LINES and is_shell(script) and lines(script) > SHELL_MAX
    assert not is_shell(long)
