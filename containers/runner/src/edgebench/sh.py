"""Running commands: always argument lists, never shell strings built from input.

Every program the runner starts is found by one lookup, `which` / `exe`: PATH, then the tools directory
($EDGEBENCH_TOOLS, where `make tools` builds edgebench-relay, the netem emulator, fortio, ...), and the absolute path
found is what is executed. `run`, `ok`, `call` and `popen` (nothing else in the package starts a process) resolve
argv[0] and the program a wrapper in argv starts by a PATH lookup of its own (`ip netns exec NS prog`, `env VAR=...
prog`; `program_positions`): the wrapper's own lookup sees PATH only, not the tools directory. A wrapper that is a
shell script (the CPU classes' cgroup entry) resolves its argv itself; a command run in a pod (`kubectl exec`) names a
program found in the tools directory by its name again (`in_image`): the pod's image has it on its PATH.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from typing import Any, Sequence

from edgebench.errors import EdgebenchError


# what says why a command failed: lines that name an error (kubeadm's "[ERROR Port-10250]: ...", klog's "E0412 ...",
# "error: ...", "fatal: ..."), else lines that mention one; warnings and hints ("To see the stack trace ...") never
_STRONG = re.compile(r"^\s*(\[ERROR\b|ERROR\b|E\d{4} |error:|Error:|fatal:|FATAL|panic:)")
_WEAK = re.compile(r"\b(error|fatal|failed|refused|denied|cannot|unable|no such|not found|timed out)\b", re.I)
_NOT_CAUSE = re.compile(r"^\s*\[?(WARNING|warning|W\d{4} |I\d{4} |info)|stack trace|--ignore-preflight-errors")


def error_lines(text: str, limit: int = 6) -> list[str]:
    """The lines of a failed command's output that say why (at most `limit`): the error lines if any, else lines
    mentioning a failure, else the last line. A command's first line is often a warning (kubeadm's cgroup v1
    notice), so the first line alone is not the reason."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for pattern in (_STRONG, _WEAK):
        hits = [ln for ln in lines if pattern.search(ln) and not _NOT_CAUSE.search(ln)]
        if hits:
            return hits[:limit]
    return lines[-1:]


class CommandError(EdgebenchError):
    """A command failed. Its message starts with the lines that say why (error_lines), then the whole output when
    that has more, so a one-line view (a progress line, a table cell) shows the cause."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str):
        self.argv, self.returncode, self.stderr = list(argv), returncode, stderr.strip()
        why = error_lines(self.stderr)
        head = "; ".join(why) if why else "no error output"
        more = "" if not self.stderr or self.stderr == head else f"\n--- its whole output:\n{self.stderr}"
        super().__init__(f"`{' '.join(argv)}` failed (exit {returncode}): {head}{more}")


def run(argv: Sequence[str], check: bool = True, input: str | None = None, timeout: float | None = 120) -> str:
    """Run a command, return its stdout; raise CommandError with its stderr on failure."""
    proc = call(argv, input=input, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, proc.stderr or proc.stdout)
    return proc.stdout


def ok(argv: Sequence[str]) -> tuple[bool, str]:
    """Run a command that may fail; return (succeeded, stderr)."""
    proc = call(argv, capture_output=True, text=True, timeout=60)
    return proc.returncode == 0, (proc.stderr or proc.stdout).strip()


def resolved(argv: Sequence[str]) -> list[str]:
    """argv with each program it starts named by the path `exe` finds: argv[0] and the programs of the wrappers
    it names (`program_positions`)."""
    argv = list(argv)
    for i in program_positions(argv):
        argv[i] = exe(argv[i])
    return argv


def call(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """subprocess.run of argv with its program resolved (`exe`)."""
    return subprocess.run(resolved(argv), **kwargs)


def popen(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """subprocess.Popen of argv with its program resolved (`exe`)."""
    return subprocess.Popen(resolved(argv), **kwargs)


def tools_dir() -> str:
    """Where `make` installs the Go-built tools (MinIO, mc, fortio, edgebench-relay, edgebench-netem-emu)."""
    return os.environ.get("EDGEBENCH_TOOLS", os.path.expanduser("~/.local/share/edgebench/tools"))


def which(tool: str) -> str | None:
    """The absolute path of a tool on PATH, or in the tools directory; None if neither has it. A path (one with a
    slash) is itself if executable."""
    found = shutil.which(tool) or (None if os.sep in tool else shutil.which(tool, path=tools_dir()))
    return os.path.abspath(found) if found else None


def digest(tool: str) -> str | None:
    """`sha256:` and the first 16 hex digits of the binary `which` finds for tool (None if it is nowhere): the version
    of a tool built from this repository (edgebench-netem-emu, edgebench-ddsrr), which has no version of its own."""
    found = which(tool)
    if found is None:
        return None
    with open(found, "rb") as f:
        return f"sha256:{hashlib.sha256(f.read()).hexdigest()[:16]}"


def exe(tool: str) -> str:
    """What to execute for `tool`: its absolute path (`which`), or the bare name if it is nowhere, so that starting it
    fails naming it (`require` and the substrates' checks say earlier what is missing). A path in the tools
    directory is named back by its name where the program runs in a pod (`in_image`)."""
    return which(tool) or tool


def program_positions(argv: Sequence[str]) -> list[int]:
    """Where argv names programs: 0, and through the wrappers that start another program by a PATH lookup of their
    own: `ip netns exec NS prog ...` and `env [-opts] [VAR=value ...] prog ...` (options without an argument: the
    package passes none), nested."""
    found, i = [], 0
    while i < len(argv):
        found.append(i)
        name = os.path.basename(argv[i])
        if name == "ip" and list(argv[i + 1:i + 3]) == ["netns", "exec"] and len(argv) > i + 4:
            i += 4
        elif name == "env":
            j = i + 1
            while j < len(argv) and (argv[j].startswith("-") or "=" in argv[j]):
                j += 1
            if j == len(argv):
                break
            i = j
        else:
            break
    return found


def in_image(argv: Sequence[str]) -> list[str]:
    """argv to run in another machine's image (a pod): a program this runner found in its tools directory (`exe`)
    is named by its name, which the image has on its PATH; the runner's tools directory means nothing there. Any
    other path (an image path) stays."""
    argv, tools = list(argv), os.path.normpath(tools_dir())
    for i in program_positions(argv):
        if os.path.isabs(argv[i]) and os.path.dirname(os.path.normpath(argv[i])) == tools:
            argv[i] = os.path.basename(argv[i])
    return argv


def require(*tools: str) -> None:
    missing = [t for t in tools if which(t) is None]
    if missing:
        raise EdgebenchError(
            f"missing tool(s): {', '.join(missing)}; run `make setup` (Debian/Ubuntu: apt-get install "
            f"{' '.join(missing)})"
        )
