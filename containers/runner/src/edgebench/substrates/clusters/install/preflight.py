"""Checks before anything is installed on a lab's nodes: every node answers over SSH with the key (and sudo), and
the artifact source has what the cell needs for every node's architecture. A failure is one SpecError (exit 2)
naming each node and what is wrong; nothing has been changed on any node."""

from __future__ import annotations

from edgebench.errors import SpecError
from edgebench.substrates.clusters.install import artifacts as artifacts_mod
from edgebench.substrates.clusters.install.artifacts import Source
from edgebench.substrates.clusters.inventory import Inventory
from edgebench.substrates.clusters.transport import Transport


def _why(rc: int, err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    text = lines[-1] if lines else f"exit code {rc}"
    if "Permission denied" in text:
        return f"the key was refused ({text})"
    if rc == 255:
        return f"not reachable over SSH ({text})"
    if "sudo" in text or "password" in text:
        return f"sudo without a password is not allowed ({text})"
    return text


BOOT_ID = ["cat", "/proc/sys/kernel/random/boot_id"]


def reach(transport: Transport, inventory: Inventory, timeout: float = 30) -> dict[str, str]:
    """SpecError unless every node answers over SSH with sudo; {node: kernel boot id}."""
    problems, boots = [], {}
    for node in inventory.nodes:
        try:
            rc, out, err = transport.run(node, BOOT_ID, sudo=True, timeout=timeout)
        except Exception as exc:  # a timeout of the ssh client itself
            rc, out, err = 255, "", str(exc)
        if rc != 0:
            problems.append(f"node {node.name} ({node.user}@{node.address}:{node.port}): {_why(rc, err)}")
        boots[node.name] = out.strip()
    if problems:
        raise SpecError("cannot use the inventory's nodes: " + "; ".join(problems) + " (nothing was installed)")
    return boots


def check(transport: Transport, inventory: Inventory, distribution: str, cni: str, source: Source | None,
          version: str | None = None) -> dict[str, object]:
    """Reachability and the artifact source; what the runs record of the lab: its target, its node count and
    whether the nodes share one kernel (the same boot id: the local lab; a Pi lab's nodes do not), with that boot id
    (the warehouse compares two substrates measured on one machine in one boot side by side)."""
    boots = reach(transport, inventory)
    if source is not None:
        artifacts_mod.check(source, inventory, distribution, cni, version)
    ids = {b for b in boots.values() if b}
    shared = len(inventory.nodes) > 1 and len(ids) == 1 and all(boots.values())
    return {"target": inventory.target, "nodes": len(inventory.nodes), "shared_kernel": shared,
            **({"kernel_boot_id": next(iter(ids))} if shared else {})}
