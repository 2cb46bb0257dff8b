"""How commands reach the nodes: `SSHTransport` (the ssh/scp CLIs, argument lists only) and `FakeTransport`
(records every command and answers from a script, for offline tests)."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, Sequence, Union

from edgebench.substrates.clusters.inventory import Node
from edgebench import sh
from edgebench.sh import CommandError

Command = Union[Sequence[str], str]  # an argv list, or a shell script (sent on stdin to `sh -s`)


class Transport(Protocol):
    def run(self, node: Node, command: Command, sudo: bool = False, timeout: float | None = 900) -> tuple[int, str, str]:
        """Run an argv (or a shell script) on the node; (exit code, stdout, stderr)."""
        ...

    def put_file(self, node: Node, content: str, dest: str, mode: str = "0644", sudo: bool = False) -> None: ...


def _remote_argv(command: Command, sudo: bool) -> tuple[list[str], str | None]:
    """The remote command line (quoted, as ssh concatenates its arguments) and the stdin to send."""
    prefix = ["sudo", "-n"] if sudo else []
    if isinstance(command, str):
        return [*prefix, "sh", "-s"], command
    return [shlex.quote(a) for a in [*prefix, *command]], None


@dataclass
class SSHTransport:
    key: Path
    known_hosts: Path | None = None
    connect_timeout: int = 15
    runner: Callable[..., subprocess.CompletedProcess] = sh.call

    def ssh_options(self) -> list[str]:
        opts = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout}", "-o", "IdentitiesOnly=yes",
                "-o", "ServerAliveInterval=15", "-i", str(self.key)]
        if self.known_hosts:
            opts += ["-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={self.known_hosts}"]
        else:  # no pinned keys: accept a new host key once, refuse a changed one
            opts += ["-o", "StrictHostKeyChecking=accept-new"]
        return opts

    def ssh_argv(self, node: Node, command: Command, sudo: bool = False) -> tuple[list[str], str | None]:
        remote, stdin = _remote_argv(command, sudo)
        return ["ssh", *self.ssh_options(), "-p", str(node.port), "-l", node.user, node.address, "--", *remote], stdin

    def run(self, node: Node, command: Command, sudo: bool = False, timeout: float | None = 900) -> tuple[int, str, str]:
        argv, stdin = self.ssh_argv(node, command, sudo)
        proc = self.runner(argv, input=stdin, capture_output=True, text=True, timeout=timeout)
        return proc.returncode, proc.stdout, proc.stderr

    def put_file(self, node: Node, content: str, dest: str, mode: str = "0644", sudo: bool = False) -> None:
        # cat on the far side instead of scp, so that sudo can write root-owned paths; content goes via stdin
        remote = ["install", "-D", "-m", mode, "/dev/stdin", dest]
        if sudo:
            remote = ["sudo", "-n", *remote]
        argv = ["ssh", *self.ssh_options(), "-p", str(node.port), "-l", node.user, node.address, "--",
                *[shlex.quote(a) for a in remote]]
        proc = self.runner(argv, input=content, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise CommandError(argv, proc.returncode, proc.stderr)

    def scp_argv(self, node: Node, local: str, dest: str) -> list[str]:
        return ["scp", *self.ssh_options(), "-P", str(node.port), local, f"{node.user}@{node.address}:{dest}"]


@dataclass
class Call:
    node: str
    command: Command
    sudo: bool
    kind: str = "run"  # run | put
    dest: str | None = None

    @property
    def text(self) -> str:
        return self.command if isinstance(self.command, str) else " ".join(self.command)


@dataclass
class FakeTransport:
    """Records commands; `responses` are (substring, (rc, stdout, stderr)) pairs: the first whose substring occurs
    in the command text answers (else rc 0, empty output). `fail_on` makes matching commands exit 1."""

    responses: list[tuple[str, tuple[int, str, str]]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)

    def respond(self, substring: str, stdout: str = "", rc: int = 0, stderr: str = "") -> None:
        self.responses.append((substring, (rc, stdout, stderr)))

    def run(self, node: Node, command: Command, sudo: bool = False, timeout: float | None = 900) -> tuple[int, str, str]:
        call = Call(node.name, command if isinstance(command, str) else list(command), sudo)
        self.calls.append(call)
        for sub, answer in self.responses:
            if sub in call.text:
                return answer
        return 0, "", ""

    def put_file(self, node: Node, content: str, dest: str, mode: str = "0644", sudo: bool = False) -> None:
        self.calls.append(Call(node.name, content, sudo, kind="put", dest=dest))

    def texts(self, node: str | None = None) -> list[str]:
        return [c.text for c in self.calls if node is None or c.node == node]
