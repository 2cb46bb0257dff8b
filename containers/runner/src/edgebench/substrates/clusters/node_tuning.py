"""Node tuning on a cluster's nodes (the ssh substrate: a Pi lab, the local lab, its VM nodes): a profile of
catalog/tuning.yaml applied on every node as root over the transport with plan/tuning.py's commands for real nodes,
read back, and reverted from a snapshot taken before anything changed.

- sysctls: `sysctl -w` on each node, each read back at once. net.* keys are the node's network namespace; vm.* and
  kernel.* its kernel's, and a node that shares its kernel (the local lab's nspawn nodes) refuses those writes, or
  (net.core.rmem_max on the lab) takes them and keeps the machine's value: each such key is recorded unsupported
  with the node's message or what it reads back, as the testbed records a key its namespaces do not carry.
- ethtool features and rings on the node's uplink (the interface holding its inventory address, link.uplink); a
  device that cannot do it is recorded unsupported; a ring above the NIC's maximum is set to the maximum, said so.
- a tuned profile (`tuned:`): `tuned-adm profile NAME` where every node has tuned-adm (it sets the profile's sysctls
  and host settings; `tuned-adm verify` reads the host settings back). Where a node has none, the profile's sysctls
  are written as above and its host settings (CPU governor, PM QoS, THP, ...) are recorded unsupported, naming the
  nodes without tuned-adm.
- an MTU profile: unsupported unless every uplink already has that MTU. A CNI derives its pods' MTU from the uplink
  when it is installed, before tune-nodes; this version does not change the MTU of a running cluster.

The snapshot of each node is written to the provider's state (`remember`) before the node is changed, so a revert
after a crash, or the next provision's teardown, finds it."""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

from edgebench.plan.tuning import (as_text, common_value, ethtool_keys, ethtool_unsupported, ethtool_values, matches,
                                   norm_value,
                                   parse_ethtool_features, parse_ethtool_rings, parse_tuned_active, profile,
                                   render_apply, render_revert, requested, ring_clamp)
from edgebench.substrates.base import Unsupported
from edgebench.substrates.clusters.inventory import Node
from edgebench.substrates.clusters.link import uplink
from edgebench.substrates.clusters.transport import Transport

TIMEOUT = 120


def _run(transport: Transport, node: Node, argv: Sequence[str]) -> tuple[int, str, str]:
    return transport.run(node, list(argv), sudo=True, timeout=TIMEOUT)


def _message(rc: int, out: str, err: str) -> str:
    text = (err or out).strip()
    return text.splitlines()[-1] if text else f"exit {rc}"


def _read(transport: Transport, node: Node, dev: str, keys: Sequence[str]) -> dict[str, str]:
    """The values in force on the node of snapshot keys (a sysctl, `ethtool.<feature>`, `ethtool.ring.<ring>`, `mtu`);
    a key that cannot be read is left out."""
    got: dict[str, str] = {}
    for key in keys:
        if key.startswith("ethtool.") or key == "mtu":
            continue
        rc, out, _ = _run(transport, node, ["sysctl", "-n", key])
        if rc == 0 and out.strip():
            got[key] = norm_value(out)
    want_features, want_rings = ethtool_keys(keys)
    feats: dict[str, str] = {}
    if want_features:
        rc, out, _ = _run(transport, node, ["ethtool", "-k", dev])
        feats = parse_ethtool_features(out) if rc == 0 else {}
    got.update(ethtool_values(keys, feats, _rings(transport, node, dev)["current"] if want_rings else {}))
    if "mtu" in keys:
        rc, out, _ = _run(transport, node, ["ip", "-j", "link", "show", "dev", dev])
        try:
            got["mtu"] = str(int(json.loads(out)[0]["mtu"]))
        except (ValueError, IndexError, KeyError, TypeError):
            pass
    return got


def _rings(transport: Transport, node: Node, dev: str) -> dict[str, dict[str, str]]:
    rc, out, _ = _run(transport, node, ["ethtool", "-g", dev])
    return parse_ethtool_rings(out) if rc == 0 else {"max": {}, "current": {}}


def _keys(p: Mapping[str, Any]) -> list[str]:
    """The snapshot keys of a profile: the sysctls, features and rings apply may change on a node."""
    return [*p["sysctl"], *(f"ethtool.{f}" for f in p["ethtool"].get("features") or {}),
            *(f"ethtool.ring.{r}" for r in p["ethtool"].get("ring") or {})]


def _has_tuned_adm(transport: Transport, node: Node) -> bool:
    rc, out, _ = transport.run(node, "command -v tuned-adm\n", sudo=True, timeout=TIMEOUT)
    return rc == 0 and bool(out.strip())


def _command_keys(cmd: Sequence[str], req: Mapping[str, str]) -> list[str]:
    """The requested settings an apply command carries (to record which failed)."""
    if cmd[0] == "sysctl":
        return [cmd[-1].split("=", 1)[0]]
    if cmd[:2] == ["ethtool", "-K"]:
        return [f"ethtool.{f}" for f in cmd[3::2]]
    if cmd[:2] == ["ethtool", "-G"]:
        return [f"ethtool.ring.{r}" for r in cmd[3::2]]
    if cmd[0] == "tuned-adm":  # tuned sets the sysctls and host settings itself
        return [k for k in req if not k.startswith("ethtool.") and k != "mtu"]
    return list(req)


def apply(transport: Transport, nodes: Sequence[Node], profile_name: str,
          remember: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Apply the profile on every node; the manifest's `tuning` object (profile, requested, readback, unsupported).
    `remember(state)` is called with {"profile", "nodes": {name: {"dev", "tuned_adm", "snapshot"}}} before each node
    is changed. A setting a node refuses is recorded unsupported; any other failure reverts the nodes done first."""
    p = profile(profile_name)
    req = requested(profile_name)
    if not req:
        return {"profile": profile_name, "requested": {}, "readback": {}, "unsupported": {}}
    devs = {n.name: uplink(transport, n) for n in nodes}
    if p["mtu"] is not None:
        now = {n.name: _read(transport, n, devs[n.name], ["mtu"]).get("mtu") for n in nodes}
        if any(v != str(p["mtu"]) for v in now.values()):
            raise Unsupported(f"unsupported: tuning profile {profile_name!r} sets the node MTU to {p['mtu']}: the CNI "
                              "took its pods' MTU from the uplink when it was installed, and this version does not "
                              "change the MTU of a running cluster (uplinks now: "
                              f"{', '.join(f'{n}/{devs[n]} {v}' for n, v in now.items())})")
    without = [n.name for n in nodes if not _has_tuned_adm(transport, n)] if p["tuned"] else []
    tuned_adm = bool(p["tuned"]) and not without
    why_not = (f"not applied: no tuned-adm on {', '.join(without)} (the profile's sysctls are written with sysctl -w)"
               if without else "applied only by tuned-adm, which this profile does not use")
    unsupported: dict[str, str] = {} if tuned_adm else {k: f"host setting: {why}; {why_not}"
                                                        for k, why in p["host"].items()}
    state: dict[str, Any] = {"profile": profile_name, "nodes": {}}
    try:
        for node in nodes:
            dev = devs[node.name]
            snapshot = _read(transport, node, dev, _keys(p))
            if tuned_adm:
                rc, out, _ = _run(transport, node, ["tuned-adm", "active"])
                snapshot["tuned"] = parse_tuned_active(out) if rc == 0 else ""
            state["nodes"][node.name] = {"dev": dev, "tuned_adm": tuned_adm, "snapshot": snapshot}
            remember(json.loads(json.dumps(state)))
            ring_max = _rings(transport, node, dev)["max"] if p["ethtool"].get("ring") else None
            for r, v in (p["ethtool"].get("ring") or {}).items():
                to = ring_clamp(as_text(v), (ring_max or {}).get(r))
                if to is None:
                    unsupported[f"ethtool.ring.{r}"] = f"{node.name}/{dev} has no {r} ring setting"
                elif to != as_text(v):
                    unsupported[f"ethtool.ring.{r}"] = f"{node.name}/{dev} maximum is {to}: set to {to}"
            for cmd in render_apply(profile_name, dev, snapshot, tuned_adm=tuned_adm, ring_max=ring_max):
                if cmd[:2] == ["ip", "link"]:  # the MTU: already in force on every uplink (checked above)
                    continue
                rc, out, err = _run(transport, node, cmd)
                if rc == 0 and cmd[0] == "sysctl":  # a write the node's namespace does not keep is not applied
                    key, value = cmd[-1].split("=", 1)
                    held = _read(transport, node, dev, [key]).get(key)
                    if not matches(value, held):
                        unsupported.setdefault(key, f"{node.name}: `{' '.join(cmd)}` exited 0 but the node reads "
                                               f"back {held} (a setting its network namespace does not keep)")
                if rc == 0:
                    continue
                why = _message(rc, out, err)
                if cmd[0] == "ethtool" and rc != 127 and not ethtool_unsupported(why):
                    raise Unsupported(f"unsupported: tuning profile {profile_name!r} on {node.name}/{dev}: "
                                      f"`{' '.join(cmd)}`: {why}")
                for k in _command_keys(cmd, req):
                    unsupported.setdefault(k, f"{node.name}: `{' '.join(cmd)}`: {why}")
    except BaseException:
        revert(transport, nodes, state)
        remember({})
        raise
    return {"profile": profile_name, "requested": req, "unsupported": unsupported,
            "readback": readback(transport, nodes, state, req, unsupported)}


def readback(transport: Transport, nodes: Sequence[Node], state: Mapping[str, Any], req: Mapping[str, str],
             unsupported: Mapping[str, str]) -> dict[str, str | None]:
    """One value per requested setting: the common value over the nodes, or 'mixed: node=value, ...' (validate
    then makes the runs invalid). Host settings applied by tuned-adm read back as requested where `tuned-adm verify`
    passes on the node, else as its answer."""
    host = set(profile(state["profile"])["host"])
    keys = [k for k in req if k not in unsupported and k != "mtu"]
    per: dict[str, dict[str, str | None]] = {k: {} for k in keys}
    for node in nodes:
        st = (state.get("nodes") or {}).get(node.name)
        if not st:
            continue
        got: dict[str, str | None] = dict(_read(transport, node, st["dev"], [k for k in keys if k not in host]))
        if host & set(keys):
            rc, out, err = _run(transport, node, ["tuned-adm", "verify"])
            got.update({k: req[k] if rc == 0 else f"tuned-adm verify: {_message(rc, out, err)}"
                        for k in host & set(keys)})
        for key in keys:
            per[key][node.name] = got.get(key)
    out: dict[str, str | None] = {key: common_value(vals) for key, vals in per.items()}
    if "mtu" in req and "mtu" not in unsupported:  # apply refused any other MTU than the one in force
        out["mtu"] = req["mtu"]
    return out


def revert(transport: Transport, nodes: Sequence[Node], state: Mapping[str, Any]) -> list[str]:
    """Restore each node's snapshot (plan/tuning.py's render_revert: tuned-adm's previous profile or off, else the
    sysctls, features and rings as they were). Idempotent; returns what was restored, `tuning <profile> on <node>`."""
    done = []
    name = state.get("profile")
    for node in nodes:
        st = (state.get("nodes") or {}).get(node.name)
        if not st or not name:
            continue
        for cmd in render_revert(name, st["dev"], st.get("snapshot") or {}, tuned_adm=bool(st.get("tuned_adm"))):
            _run(transport, node, cmd)
        done.append(f"tuning {name} on {node.name}")
    return done


def problem(transport: Transport, nodes: Sequence[Node], state: Mapping[str, Any]) -> list[str]:
    """After revert: the settings that do not read back as they were before the profile ('node key: now X, was Y')."""
    out = []
    for node in nodes:
        st = (state.get("nodes") or {}).get(node.name)
        if not st:
            continue
        snap = {k: v for k, v in (st.get("snapshot") or {}).items() if k != "tuned"}
        now = _read(transport, node, st["dev"], list(snap))
        out += [f"{node.name} {k}: now {now.get(k)}, was {v}" for k, v in snap.items()
                if norm_value(str(now.get(k))) != norm_value(v)]
    return out
