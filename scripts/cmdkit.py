"""What the programs under scripts/ (scripts/kind's and scripts/lab-local's) share: one-line errors with an exit
code, a poll with a deadline, a logger with the program's prefix, SIGTERM through `finally`, and the sub-command
dispatcher behind each program's `--help`. Stdlib only: the programs run as root under the system Python too.

A program's directory is on sys.path when it runs; kindlib.py and lablib.py put this one's (scripts/) there too.
"""
from __future__ import annotations

import signal
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class Fail(Exception):
    """A one-line error: the program prints `PREFIX: error: MESSAGE` and exits with `code` (2: bad input or a
    missing prerequisite, nothing changed; 1: a step failed)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


class Timeout(Fail):
    pass


class Log:
    def __init__(self, prefix: str):
        self.prefix = prefix

    def __call__(self, msg: str) -> None:
        print(f"{self.prefix}: {msg}", file=sys.stderr, flush=True)


def poll(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.1,
         clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Any:
    """Call `check` until it returns something truthy (returned) or `timeout` seconds passed (Timeout: `WHAT: not
    within N s`). `check` may raise Fail to stop early (e.g. the process it waits for exited). At least one call."""
    deadline = clock() + timeout
    while True:
        got = check()
        if got:
            return got
        left = deadline - clock()
        if left <= 0:
            raise Timeout(f"{what}: not within {timeout:g} s")
        sleep(min(interval, left))


def exit_on_sigterm() -> None:
    """SIGTERM (a timeout, `kill`) ends the program through its `finally` clauses and `with` blocks: mounts
    unmounted, a server or containerd it started stopped, a lock's pid note removed."""
    def term(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, term)


# ------------------------------------------------------------------------------------------------ sub-commands
@dataclass
class Command:
    func: Callable[..., Any]
    usage: str
    summary: str
    max_args: int | None = 0  # None: any number (`submit [ARGS]`)


def help_text(prog: str, doc: str, commands: dict[str, Command]) -> str:
    width = max(len(f"{prog} {u}") for u in [*(c.usage for c in commands.values()), "COMMAND --help"])
    lines = [doc.strip(), "", "Commands:"]
    for c in commands.values():
        summary = textwrap.wrap(" ".join(c.summary.split()), max(40, 114 - width))
        lines.append(f"  {f'{prog} {c.usage}':<{width}}  {summary[0]}")
        lines += [f"  {'':<{width}}  {s}" for s in summary[1:]]
    lines.append(f"  {f'{prog} COMMAND --help':<{width}}  what one command does")
    return "\n".join(lines) + "\n"


def main(prog: str, prefix: str, doc: str, commands: dict[str, Command], argv: list[str],
         default: str | None = None) -> int:
    """`PROG COMMAND [ARGS]` (no command: `default`, or the usage and exit 2); `--help` prints the usage, `COMMAND
    --help` what COMMAND does; an unknown command or extra arguments: one line, exit 2. A Fail prints `PREFIX:
    error: ...` and exits with its code; SIGTERM ends the program through its `finally` clauses."""
    if not argv and default is None:
        sys.stderr.write(help_text(prog, doc, commands))
        return 2
    name, rest = (argv[0], argv[1:]) if argv else (default, [])
    if name in ("-h", "--help", "help"):
        sys.stdout.write(help_text(prog, doc, commands))
        return 0
    cmd = commands.get(name)
    if cmd is None:
        print(f"{prefix}: error: unknown command {name!r} (commands: {', '.join(commands)}; {prog} --help)",
              file=sys.stderr)
        return 2
    if rest[:1] in (["-h"], ["--help"]):
        print(f"usage: {prog} {cmd.usage}\n\n" + textwrap.fill(" ".join(cmd.summary.split()), 114))
        return 0
    if cmd.max_args is not None and len(rest) > cmd.max_args:
        print(f"{prefix}: error: {name} takes {cmd.max_args or 'no'} argument{'s' if cmd.max_args != 1 else ''} "
              f"(got {' '.join(rest)}; usage: {prog} {cmd.usage})", file=sys.stderr)
        return 2
    exit_on_sigterm()
    try:
        return int(cmd.func(*rest) or 0)
    except Fail as e:
        print(f"{prefix}: error: {e}", file=sys.stderr, flush=True)
        return e.code
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return 130
