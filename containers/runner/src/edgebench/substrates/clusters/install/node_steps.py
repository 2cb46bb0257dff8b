"""How a distribution's steps (distributions.Step) run on the nodes, as fast as they allow.

- A step for several nodes (`all`, `agents`) runs on them at once: each node's setup (containerd, the binaries,
  image imports) takes as long as the slowest node, not their sum.
- Consecutive steps that each name one node, all different, none capturing output, run at once too: the agents'
  `kubeadm join`, each node's `kubeadm reset` and cleanup. Steps on `server`, `local` or capturing a value keep their
  place, so an order the plan relies on (init before the join command is created, the join command before the
  joins) holds.
- Every step is timed (Timings): what provision-cluster and install-cni report, stage by stage.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence, TypeVar

from edgebench.substrates.clusters.install.distributions import Step

KEYWORDS = ("all", "agents", "server", "local")
T = TypeVar("T")
R = TypeVar("R")


def batches(steps: Iterable[Step]) -> list[list[Step]]:
    """The steps in order, consecutive single-node steps on distinct nodes grouped to run at once."""
    out: list[list[Step]] = []
    for step in steps:
        solo = step.where not in KEYWORDS and not step.capture
        last = out[-1] if out else None
        if solo and last and all(s.where not in KEYWORDS and not s.capture for s in last) \
                and step.where not in {s.where for s in last}:
            last.append(step)
        else:
            out.append([step])
    return out


def at_once(fn: Callable[[T], R], items: Sequence[T]) -> list[R | BaseException]:
    """fn over items concurrently (threads: the work is remote commands), results or exceptions in item order."""
    if len(items) <= 1:
        return [_call(fn, x) for x in items]
    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        return list(pool.map(lambda x: _call(fn, x), items))


def _call(fn, x):
    try:
        return fn(x)
    except BaseException as exc:  # handed back to the caller, which raises the first one in order
        return exc


def label(step: Step) -> str:
    """A short name of a step for its timing: its note, else its command's first words."""
    if step.note:
        return " ".join(step.note.split(";")[0].split(" (")[0].split()[:6])
    if step.capture:
        return step.capture.replace("_", " ")
    cmd = step.command
    if isinstance(cmd, str) and cmd.startswith("<<"):  # a captured command run as it is: `<<join_command>> ...`
        return cmd[2:cmd.index(">>")].replace("_", " ").removesuffix(" command")
    words = cmd if isinstance(cmd, list) else cmd.split()
    return " ".join(str(w) for w in words[:2])[:60]


def argv_label(argv: Sequence[str]) -> str:
    """`kubectl rollout status ds/cilium` of `kubectl --kubeconfig K -n kube-system rollout status ds/cilium ...`:
    the command's words without its options and their values."""
    words, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a.startswith("-"):
            skip = "=" not in a and a not in ("--all", "--wait", "--atomic", "--install")
        else:
            words.append(a.rsplit("/", 1)[-1] if a.startswith("/") else a)
    return " ".join(words[:4])[:60]


@dataclass
class Timings:
    """Seconds per stage of one provider's work, in the order they ran (a stage: one step or one batch)."""
    stages: list[dict[str, Any]] = field(default_factory=list)

    def add(self, name: str, where: str, seconds: float) -> None:
        self.stages.append({"stage": name, "where": where, "seconds": round(seconds, 1)})

    def timed(self, name: str, where: str, fn: Callable[[], R]) -> R:
        t0 = time.monotonic()
        try:
            return fn()
        finally:
            self.add(name, where, time.monotonic() - t0)

    def take(self) -> list[dict[str, Any]]:
        """The stages so far, and start afresh (each phase reports its own)."""
        out, self.stages = self.stages, []
        return out


def summary(stages: list[dict[str, Any]]) -> str:
    """`node setup 12.3 s (all), kubeadm init 20.1 s (server), ...; 41.0 s in all`."""
    if not stages:
        return ""
    parts = [f"{s['stage']} {s['seconds']:.1f} s ({s['where']})" for s in stages]
    return ", ".join(parts) + f"; {sum(s['seconds'] for s in stages):.1f} s in all"
