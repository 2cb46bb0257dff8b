"""Checks before anything is installed on a lab's nodes: every node answers over SSH with the key (and sudo), and
the artifact source has what the cell needs for every node's architecture. A failure is one SpecError (exit 2)
naming each node and what is wrong; nothing has been changed on any node."""

from __future__ import annotations

from pathlib import Path

from edgebench.errors import SpecError
from edgebench.substrates.clusters.install import artifacts as artifacts_mod
from edgebench.substrates.clusters.install.artifacts import Source
from edgebench.substrates.clusters.inventory import Inventory, Node
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


BOOT_ID = "cat /proc/sys/kernel/random/boot_id; uname -r"  # one SSH round trip: the kernel's boot and release
LOCAL_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")  # this machine's (the runner's) own
NODE_KINDS = ("namespace", "vm-x86", "vm-arm64", "machine")  # the order of the support matrix's columns


def reach(transport: Transport, inventory: Inventory, timeout: float = 30) -> dict[str, str]:
    """SpecError unless every node answers over SSH with sudo; {node: kernel boot id}."""
    return {name: boot for name, (boot, _) in probe(transport, inventory, timeout).items()}


def probe(transport: Transport, inventory: Inventory, timeout: float = 30) -> dict[str, tuple[str, str | None]]:
    """SpecError unless every node answers over SSH with sudo; {node: (kernel boot id, `uname -r` or None)}."""
    problems, found = [], {}
    for node in inventory.nodes:
        try:
            rc, out, err = transport.run(node, BOOT_ID, sudo=True, timeout=timeout)
        except Exception as exc:  # a timeout of the ssh client itself
            rc, out, err = 255, "", str(exc)
        if rc != 0:
            problems.append(f"node {node.name} ({node.user}@{node.address}:{node.port}): {_why(rc, err)}")
        lines = [x.strip() for x in out.splitlines()]
        found[node.name] = (lines[0] if lines else "", lines[1] if len(lines) > 1 and lines[1] else None)
    if problems:
        raise SpecError("cannot use the inventory's nodes: " + "; ".join(problems) + " (nothing was installed)")
    return found


def local_boot_id() -> str | None:
    try:
        return LOCAL_BOOT_ID.read_text().strip() or None
    except OSError:
        return None


def node_kind(node: Node, boot: str, boots: dict[str, str], local_boot: str | None) -> str:
    """vm-x86 / vm-arm64 for a node whose CPU is emulated (a qemu TCG guest); `namespace` for a node that shares
    its kernel (its boot id) with another native node of the inventory or with the runner's machine (the local lab's
    namespace nodes); `machine` otherwise (a real Pi or x86 lab)."""
    if node.cpu == "emulated":
        return "vm-arm64" if node.arch == "arm64" else "vm-x86"
    others = [b for name, b in boots.items() if name != node.name]
    if boot and (boot == local_boot or boot in others):
        return "namespace"
    return "machine"


def cell_kind(kinds: list[str]) -> str:
    """The kind a cell's runs are filed under: an arm64 VM node among its nodes makes it an arm64 cell, else an x86
    VM node an x86-VM cell (what the emulated node did is what the cell shows), else machine, else namespace."""
    for k in ("vm-arm64", "vm-x86", "machine", "namespace"):
        if k in kinds:
            return k
    return "machine"


def nodes_record(inventory: Inventory, found: dict[str, tuple[str, str | None]],
                 local_boot: str | None) -> dict[str, object]:
    """What the runs record of the cell's nodes: the cell's kind and CPU (emulated if any node's is), and per node
    its name, arch, cpu, kernel release and kind."""
    boots = {n: b for n, (b, _) in found.items()}
    emulated = {n.name for n in inventory.nodes if n.cpu == "emulated"}
    native = {n: b for n, b in boots.items() if n not in emulated}
    nodes = [{"name": n.name, "arch": n.arch, "cpu": n.cpu, "kernel": found.get(n.name, ("", None))[1],
              "kind": node_kind(n, boots.get(n.name, ""), native, local_boot)} for n in inventory.nodes]
    return {"node_kind": cell_kind([n["kind"] for n in nodes]),
            "cpu": "emulated" if any(n["cpu"] == "emulated" for n in nodes) else "native", "node_list": nodes}


def check(transport: Transport, inventory: Inventory, distribution: str, cni: str, source: Source | None,
          version: str | None = None) -> dict[str, object]:
    """Reachability and the artifact source; what the runs record of the lab: its target, its node count and
    whether the nodes share one kernel (the same boot id: the local lab; a Pi lab's nodes do not), with that boot id
    (the warehouse compares two substrates measured on one machine in one boot side by side); and what nodes the
    cell used (nodes_record: each node's arch, cpu, kernel release and kind; the cell's kind and whether a CPU was
    emulated, which keeps its runs out of every performance comparison)."""
    found = probe(transport, inventory)
    boots = {name: boot for name, (boot, _) in found.items()}
    if source is not None:
        artifacts_mod.check(source, inventory, distribution, cni, version)
    ids = {b for b in boots.values() if b}
    shared = len(inventory.nodes) > 1 and len(ids) == 1 and all(boots.values())
    return {"target": inventory.target, "nodes": len(inventory.nodes), "shared_kernel": shared,
            **({"kernel_boot_id": next(iter(ids))} if shared else {}), **nodes_record(inventory, found, local_boot_id())}
