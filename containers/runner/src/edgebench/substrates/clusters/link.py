"""Link conditions on a cluster's nodes (the ssh substrate: a Pi lab, the local lab, its VM nodes): the scenario's tc
commands (plan/netem.py's render_apply, the same ones the testbed runs in its node namespaces) on each node's uplink,
on egress, as root over the transport. The uplink is the interface that holds the node's inventory address.

The kernel is what it is: a node whose kernel has no sch_netem (or htb, for a rate) makes the cell unsupported with
tc's own message and the node's name; nothing is emulated in its place (the testbed's userspace emulator stands in
for its own kernel only). Scope `inter-group` (only traffic between groups) is applied on the testbed alone in this
version: on a cluster it is unsupported, said so. Whatever was applied is written to the provider's state first, so
a revert after a crash, or the next provision's teardown, finds it."""

from __future__ import annotations

import shlex
from typing import Callable, Sequence

from edgebench import sh
from edgebench.plan.netem import (Scenario, manifest_object, qdisc_problem, render_apply, render_readback, render_revert,
                                  render_script)
from edgebench.substrates.base import Unsupported
from edgebench.substrates.clusters.inventory import Node
from edgebench.substrates.clusters.transport import Transport

MECHANISM = "tc-netem"
# tc's words when the kernel lacks a qdisc (iproute2 >= 5: "Error: Specified qdisc kind is unknown."; older
# versions: "Unknown qdisc", and RTNETLINK's "No such file or directory" for a module that cannot be loaded)
_MISSING = ("qdisc kind is unknown", "unknown qdisc", "no such file or directory")


def uplink_script(address: str) -> str:
    """Prints the interface holding `address` (IPv4), nothing if none does."""
    return (f"ip -o -4 addr show | awk -v a={shlex.quote(address)} "
            "'{split($4, p, \"/\"); if (p[1] == a) {print $2; exit}}'\n")


def uplink(transport: Transport, node: Node) -> str:
    """The node's uplink: the interface that holds its inventory address. Raises CommandError when none does."""
    rc, out, err = transport.run(node, uplink_script(node.address), timeout=60)
    dev = out.strip().split("@")[0] if rc == 0 else ""
    if not dev:
        raise sh.CommandError([node.name, "ip -o -4 addr show"], rc or 1,
                              err.strip() or f"no interface holds the node's inventory address {node.address}")
    return dev


def apply(transport: Transport, nodes: Sequence[Node], sc: Scenario,
          remember: Callable[[dict[str, str]], None]) -> dict:
    """Put `sc` on every node's uplink; the manifest's `netem` object (readback per node). `remember(applied)` is
    called with {node: device} before each node is touched. On any failure the nodes done are reverted first; a
    kernel without the qdisc raises Unsupported naming the node, its device and tc's message."""
    if sc.untouched:
        return manifest_object(sc, "none", "")
    if sc.scope != "all":
        raise Unsupported(f"unsupported: link condition {sc.name!r} with scope {sc.scope}: on clusters this version "
                          "applies scope all (every node's uplink) only; scope inter-group is the testbed's")
    applied: dict[str, str] = {}
    try:
        for node in nodes:
            dev = uplink(transport, node)
            applied[node.name] = dev
            remember(dict(applied))
            script = render_script(render_apply(sc, dev))
            rc, out, err = transport.run(node, script, sudo=True, timeout=120)
            if rc != 0:
                text = (err or out).strip()
                if any(m in text.lower() for m in _MISSING):
                    lines = script.splitlines()
                    line = next((x for x in lines if " netem " in x), lines[-1]) if sc.impaired else lines[-1]
                    raise Unsupported(f"unsupported: link condition {sc.name!r}: the kernel of node {node.name} "
                                      f"cannot carry it (`{line}`: "
                                      f"{text.splitlines()[-1] if text else 'exit ' + str(rc)})")
                raise sh.CommandError([node.name, *script.splitlines()], rc, text)
    except BaseException:
        revert(transport, nodes, applied)
        remember({})
        raise
    return manifest_object(sc, MECHANISM if sc.impaired else "none", readback(transport, nodes, applied))


def readback(transport: Transport, nodes: Sequence[Node], applied: dict[str, str]) -> str:
    """`tc -s qdisc show` of each shaped uplink, under a `## node/dev` line."""
    out = []
    for node in nodes:
        dev = applied.get(node.name)
        if dev:
            rc, text, err = transport.run(node, render_script(render_readback(dev)), sudo=True, timeout=60)
            out.append(f"## {node.name}/{dev}\n{(text if rc == 0 else err).strip()}")
    return "\n".join(out)


def problem(transport: Transport, nodes: Sequence[Node], applied: dict[str, str], sc: dict) -> str | None:
    """Why the applied condition is no longer in force on some node (its qdisc gone), or None."""
    for node in nodes:
        dev = applied.get(node.name)
        if not dev:
            continue
        rc, text, err = transport.run(node, ["tc", "qdisc", "show", "dev", dev], sudo=True, timeout=60)
        if rc != 0:
            return f"cannot read the qdiscs of {node.name}/{dev}: {(err or text).strip()}"
        why = qdisc_problem(text, f"{node.name}/{dev}", rate=bool(sc.get("rate_mbit")),
                            netem=any(sc.get(k) for k in ("delay_ms", "jitter_ms", "loss_pct")))
        if why:
            return why
    return None


def revert(transport: Transport, nodes: Sequence[Node], applied: dict[str, str]) -> list[str]:
    """Delete the root qdisc of each shaped uplink (its classes and netem go with it); idempotent: a qdisc already
    gone is fine. Returns what was removed, `node/dev`."""
    removed = []
    for node in nodes:
        dev = applied.get(node.name)
        if not dev:
            continue
        rc, out, err = transport.run(node, render_script(render_revert(dev)), sudo=True, timeout=60)
        text = (err or out).lower()
        if rc == 0:
            removed.append(f"link condition on {node.name}/{dev}")
        elif "cannot delete qdisc with handle of zero" not in text and "no such file" not in text and \
                "invalid handle" not in text:
            raise sh.CommandError([node.name, *render_revert(dev)[0]], rc, (err or out).strip())
    return removed
