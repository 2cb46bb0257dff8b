"""Running commands: always argument lists, never shell strings built from input."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Sequence

from edgebench.errors import EdgebenchError


class CommandError(EdgebenchError):
    def __init__(self, argv: Sequence[str], returncode: int, stderr: str):
        self.argv, self.returncode, self.stderr = list(argv), returncode, stderr.strip()
        super().__init__(f"`{' '.join(argv)}` failed (exit {returncode}): {self.stderr or 'no error output'}")


def run(argv: Sequence[str], check: bool = True, input: str | None = None, timeout: float | None = 120) -> str:
    """Run a command, return its stdout; raise CommandError with its stderr on failure."""
    proc = subprocess.run(list(argv), input=input, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, proc.stderr or proc.stdout)
    return proc.stdout


def ok(argv: Sequence[str]) -> tuple[bool, str]:
    """Run a command that may fail; return (succeeded, stderr)."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    return proc.returncode == 0, (proc.stderr or proc.stdout).strip()


def tools_dir() -> str:
    """Where `make` installs the Go-built tools (MinIO, mc, fortio)."""
    return os.environ.get("EDGEBENCH_TOOLS", os.path.expanduser("~/.local/share/edgebench/tools"))


def which(tool: str) -> str | None:
    """A tool on PATH, or in the tools directory."""
    return shutil.which(tool) or shutil.which(tool, path=tools_dir())


def require(*tools: str) -> None:
    missing = [t for t in tools if which(t) is None]
    if missing:
        raise EdgebenchError(
            f"missing tool(s): {', '.join(missing)}; run `make setup` (Debian/Ubuntu: apt-get install "
            f"{' '.join(missing)})"
        )
