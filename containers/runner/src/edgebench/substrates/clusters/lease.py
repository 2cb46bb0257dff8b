"""The lab lease: a lab (an inventory's nodes) is driven by one sweep at a time.

A lab is shared by processes on several machines (`edgebench sweep -p substrate=ssh` on a laptop, the cell pods of an
Argo sweep on a management cluster), so its hold lives on the lab itself: a lease file on the inventory's first
server, /var/lib/edgebench/lab.lease (holder, expiry, since), read and written under `flock` on that node in one
`sh` script, so two takers cannot both win. A holder renews it every TTL/3 while it runs (`LabLease.hold()`); one
that dies stops renewing and its lease lapses after TTL_S. Taking a lease held by another live holder raises
HeldError naming it; the same holder takes it again (the phases of one Argo workflow, each its own pod).

`scripts/lab-local/lab.sh down` reads the same file and refuses while a lease is live (FORCE=1 overrides).
"""

from __future__ import annotations

import os
import shlex
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from edgebench.errors import EdgebenchError
from edgebench.holds import HeldError
from edgebench.substrates.clusters import inventory as inv_mod
from edgebench.substrates.clusters.inventory import Inventory
from edgebench.substrates.clusters.transport import SSHTransport, Transport

LEASE_DIR = "/var/lib/edgebench"  # lab.lease and its lock file lab.lock, on the inventory's first server
TTL_S = 180  # a holder renews every TTL_S / 3; a dead one's lease lapses after this long
ENV_HOLDER = "EDGEBENCH_HOLDER"  # on Argo: "argo workflow NAMESPACE/NAME" (templates/cell-phase.yaml)

_SCRIPT = """set -u
action={action}; holder={holder}; ttl={ttl}
mkdir -p {dir} || exit 5
exec 9>>{dir}/lab.lock
flock -w 30 9 || {{ echo "LEASE busy"; exit 4; }}
now=$(date +%s); cur=""; exp=0; since=$now
if [ -f {file} ]; then
  cur=$(sed -n 's/^holder=//p' {file}); exp=$(sed -n 's/^expires=//p' {file}); since=$(sed -n 's/^since=//p' {file})
fi
live=0; [ -n "$cur" ] && [ "${{exp:-0}}" -gt "$now" ] && live=1
case $action in
  show) if [ $live = 1 ]; then echo "HELD $((exp - now)) $((now - since)) $cur"; else echo FREE; fi ;;
  take) if [ $live = 1 ] && [ "$cur" != "$holder" ]; then echo "HELD $((exp - now)) $((now - since)) $cur"; exit 3; fi
        [ $live = 1 ] || since=$now
        printf 'holder=%s\\nexpires=%s\\nsince=%s\\n' "$holder" $((now + ttl)) "$since" > {file}.tmp && mv {file}.tmp {file}
        echo "TAKEN $ttl" ;;
  release) if [ "$cur" = "$holder" ] || [ "$holder" = "--force" ]; then rm -f {file}; fi; echo RELEASED ;;
esac
"""


def default_holder(sweep_id: str | None = None) -> str:
    """This process as a holder: $EDGEBENCH_HOLDER (set by the Argo templates to the workflow), else the sweep, pid
    and host of this `edgebench sweep`."""
    env = os.environ.get(ENV_HOLDER)
    if env:
        return env
    sweep = f"sweep {sweep_id} " if sweep_id else ""
    return f"edgebench {sweep}(pid {os.getpid()} on {socket.gethostname()})"


def script(action: str, holder: str, ttl: int = TTL_S, directory: str = LEASE_DIR) -> str:
    """The lease script run on the lab's first server (sudo sh -s)."""
    if "\n" in holder:
        raise EdgebenchError("a lease holder is one line")
    d = shlex.quote(directory)
    return _SCRIPT.format(action=action, holder=shlex.quote(holder), ttl=int(ttl), dir=d, file=f"{d}/lab.lease")


def parse_held(line: str) -> dict[str, Any]:
    """`HELD <lapses in s> <held for s> <holder>` -> {lapses_s, held_s, holder}."""
    _, lapses, held, holder = line.split(" ", 3)
    return {"lapses_s": int(lapses), "held_s": int(held), "holder": holder}


@dataclass
class LabLease:
    transport: Transport
    inventory: Inventory
    holder: str
    ttl: int = TTL_S
    directory: str = LEASE_DIR  # on the node
    release_on_stop: bool = True  # hold(release=False): an Argo phase pod keeps it for its workflow's next phase
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)

    @property
    def node(self):
        return self.inventory.server

    def _run(self, action: str) -> str:
        rc, out, err = self.transport.run(self.node, script(action, self.holder, self.ttl, self.directory), sudo=True, timeout=60)
        line = (out.strip().splitlines() or [""])[-1]
        if rc == 3 and line.startswith("HELD "):
            h = parse_held(line)
            raise HeldError(
                f"lab {self.inventory.target!r} is held by {h['holder']} (for {h['held_s']} s; its lease on "
                f"{self.node.name} lapses in {h['lapses_s']} s unless renewed): one sweep drives a lab at a time. "
                "Wait for it to end, or stop it (it tears down what it built); a holder that died releases the lab "
                f"within {self.ttl} s")
        if rc != 0 or not line:
            why = (err or out).strip().splitlines()
            raise EdgebenchError(f"cannot {action} the lab lease on {self.node.name} ({self.node.address}): "
                                 f"exit {rc}: {why[-1] if why else 'no output'}")
        return line

    def show(self) -> dict[str, Any] | None:
        """The live lease ({lapses_s, held_s, holder}), or None if the lab is free."""
        line = self._run("show")
        return parse_held(line) if line.startswith("HELD ") else None

    def take(self) -> None:
        """Take (or renew) the lease; HeldError if another live holder has it."""
        self._run("take")

    def release(self, force: bool = False) -> None:
        if force:
            self.holder = "--force"
        self._run("release")

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self.take()
            except EdgebenchError:  # a node that stops answering: the cell's own commands fail and say so; the
                pass                # lease is taken again at the next renewal, or lapses

    def hold(self, release: bool = True) -> "LabLease":
        """Take the lease and renew it in the background until `stop()`; `release`: give it back then (an Argo
        phase pod keeps it for the next phase of its workflow and lets it lapse instead)."""
        self.take()
        self.release_on_stop = release
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew, name="lab-lease", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self.release_on_stop:
            try:
                self.release()
            except EdgebenchError:
                pass  # the lease lapses by itself

    def __enter__(self) -> "LabLease":
        return self.hold()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def for_lab(inventory_path: str | None = None, ssh_key: str | None = None, known_hosts: str | None = None,
            holder: str | None = None, sweep_id: str | None = None) -> LabLease:
    """The lease of the lab an inventory describes, reached as the ssh provider reaches it (same key and defaults)."""
    inv = inv_mod.load(inventory_path)
    transport = SSHTransport(inv_mod.ssh_key_path(ssh_key), inv_mod.known_hosts_path(known_hosts))
    return LabLease(transport, inv, holder or default_holder(sweep_id))
