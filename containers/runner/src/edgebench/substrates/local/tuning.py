"""Node tuning on the local testbed: the profiles resolved and rendered by tuning.py, applied to what a network
namespace can carry, read back, and reverted from a snapshot. See tuning.py for the rules."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping, Sequence

from edgebench import sh
from edgebench.plan.tuning import (norm_value, as_text, common_value, ethtool_keys, ethtool_unsupported, ethtool_values,
                     matches, parse_ethtool_features, parse_ethtool_rings,
                     profile, requested, target_value)

Runner = Callable[..., str]


def _nsx(ns: str, argv: Sequence[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv]


def _host_sysctl(key: str) -> str | None:
    try:
        return norm_value(Path("/proc/sys", *key.split(".")).read_text())
    except OSError:
        return None


# prints "<path>\t<value>" per readable /proc/sys file and "<path>\t" alone for a missing one: a whole profile's
# sysctls of one namespace read by one process (a process per key was most of tune-nodes' time)
_READ_SYSCTLS = ('for f; do if [ -r "$f" ]; then printf "%s\t" "$f"; tr "\t\n" "  " < "$f"; echo; '
                 'else printf "%s\t\n" "$f"; fi; done')


def _ns_sysctls(ns: str, keys: Sequence[str]) -> dict[str, str | None]:
    """The values of `keys` inside namespace `ns` (None for a key the namespace does not have), in one process."""
    if not keys:
        return {}
    paths = {"/proc/sys/" + k.replace(".", "/"): k for k in keys}
    out = sh.run(_nsx(ns, ["sh", "-c", _READ_SYSCTLS, "sh", *paths]), check=False)
    got: dict[str, str | None] = dict.fromkeys(keys)
    for line in out.splitlines():
        path, _, value = line.partition("\t")
        if path in paths and value.strip():
            got[paths[path]] = norm_value(value)
    return got


def _ns_sysctl(ns: str, key: str) -> str | None:
    return _ns_sysctls(ns, [key])[key]


def _ns_write(ns: str, settings: Mapping[str, str]) -> dict[str, str]:
    """Write sysctls inside `ns`, all in one process; if that fails, key by key to name the one that failed.
    Returns {key: error} for the failed writes."""
    if not settings:
        return {}
    good, err = sh.ok(_nsx(ns, ["sysctl", "-qw", *(f"{k}={v}" for k, v in settings.items())]))
    if good:
        return {}
    failed = {}
    for k, v in settings.items():
        good, err = sh.ok(_nsx(ns, ["sysctl", "-qw", f"{k}={v}"]))
        if not good:
            failed[k] = err
    return failed


@lru_cache(maxsize=None)
def namespace_support(key: str, value: str) -> str | None:
    """None if `key` can be set per network namespace, else the reason. Only net.* keys are tried, and only in
    a scratch namespace; a write that shows up on the host is undone at once and reported."""
    if not key.startswith("net."):
        return "global sysctl (not per network namespace): not applied on the local testbed"
    ns = f"ebn-probe-tune-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    sh.run(["ip", "netns", "add", ns])
    try:
        if _ns_sysctl(ns, key) is None:
            return "not available inside a network namespace on this kernel (global sysctl)"
        host_before = _host_sysctl(key)
        current = _ns_sysctl(ns, key)
        target = target_value(value, current)
        good, err = sh.ok(_nsx(ns, ["sysctl", "-w", f"{key}={target}"]))
        after = _ns_sysctl(ns, key)
        host_after = _host_sysctl(key)
        if host_after != host_before and host_before is not None:
            sh.ok(["sysctl", "-qw", f"{key}={host_before}"])  # restore: it is global after all
            return "global sysctl (a write inside a namespace changed the host): not applied"
        if not good or not matches(target, after):
            # e.g. net.core.rmem_max on 6.x: visible but read-only (0444) outside the initial namespace, and
            # procps sysctl still exits 0 on EINVAL, hence the read-back
            why = err.splitlines()[-1] if err and "error" in err.lower() or "invalid" in (err or "").lower() else \
                f"wrote {target}, reads {after}"
            return f"read-only inside a network namespace (global sysctl): {why}"
        return None
    finally:
        sh.ok(["ip", "netns", "del", ns])


def _state_file(namespaces: Sequence[str]) -> Path:
    key = hashlib.sha1("\n".join(namespaces).encode()).hexdigest()[:12]
    return Path(os.environ.get("EDGEBENCH_RUN_DIR", "/run/edgebench")) / "tuning" / f"{key}.json"


def _read_features(ns: str, dev: str) -> dict[str, str]:
    return parse_ethtool_features(sh.run(_nsx(ns, ["ethtool", "-k", dev]), check=False))


def _read_rings(ns: str, dev: str) -> dict[str, dict[str, str]]:
    return parse_ethtool_rings(sh.run(_nsx(ns, ["ethtool", "-g", dev]), check=False))


def _read_mtu(ns: str, dev: str) -> int | None:
    out = sh.run(["ip", "-n", ns, "-j", "link", "show", "dev", dev], check=False)
    try:
        return int(json.loads(out)[0]["mtu"])
    except (ValueError, IndexError, KeyError):
        return None


def _current(ns: str, dev: str, keys: Sequence[str]) -> dict[str, str]:
    """The values in force in `ns` of snapshot keys (a sysctl name, `ethtool.<feature>` or `ethtool.ring.<ring>` of
    `dev`); keys that cannot be read are left out. What apply_local snapshots and revert_and_verify reads again."""
    sysctls = [k for k in keys if not k.startswith("ethtool.")]
    out = {k: v for k, v in _ns_sysctls(ns, sysctls).items() if v is not None} if sysctls else {}
    want_features, want_rings = ethtool_keys(keys)
    out.update(ethtool_values(keys, _read_features(ns, dev) if want_features else {},
                              _read_rings(ns, dev)["current"] if want_rings else {}))
    return out


def _readback(namespaces: Sequence[str], dev: str, req: Mapping[str, str],
              unsupported: Mapping[str, str]) -> dict[str, str | None]:
    """One value per setting: the common value over the namespaces, or 'mixed: ns=v, ...'."""
    per: dict[str, dict[str, str | None]] = {}
    feats = {ns: _read_features(ns, dev) for ns in namespaces} if any(k.startswith("ethtool.") for k in req) else {}
    rings = {ns: _read_rings(ns, dev) for ns in namespaces} if any(k.startswith("ethtool.ring.") for k in req) else {}
    sysctl_keys = [k for k in req if k not in unsupported and k != "mtu" and not k.startswith("ethtool.")]
    sysctls = {ns: _ns_sysctls(ns, sysctl_keys) for ns in namespaces}
    for key in req:
        if key in unsupported or key == "mtu":
            continue
        vals: dict[str, str | None] = {}
        for ns in namespaces:
            if key.startswith("ethtool.ring."):
                vals[ns] = rings[ns]["current"].get(key.rsplit(".", 1)[1])
            elif key.startswith("ethtool."):
                v = feats[ns].get(key.split(".", 1)[1])
                vals[ns] = v.split()[0] if v else None
            else:
                vals[ns] = sysctls[ns][key]
        per[key] = vals
    return {key: common_value(vals) for key, vals in per.items()}


def apply_local(node_namespaces: Sequence[str], pod_namespaces: Sequence[str], profile_name: str,
                dev: str = "eth0", pod_dev: str = "eth0", runner: Runner = sh.run) -> dict:
    """Apply what the namespaces can carry; returns the manifest `tuning` object. sysctls go to every node and
    pod namespace (each has its own TCP stack), ethtool settings to `dev`/`pod_dev` (the veth ends). MTU
    profiles are applied by the testbed at build time (see mtu_for); here the pod MTU is only read back."""
    p = profile(profile_name)
    req = requested(profile_name)
    namespaces = [*node_namespaces, *pod_namespaces]
    unsupported: dict[str, str] = {k: f"host setting: {why}; not applied on the local testbed"
                                   for k, why in p["host"].items()}
    for key, value in p["sysctl"].items():
        reason = namespace_support(key, as_text(value))
        if reason:
            unsupported[key] = reason
    snapshot: dict[str, dict[str, str]] = {}
    state_file = _state_file(namespaces)
    state_file.parent.mkdir(parents=True, exist_ok=True)
    # snapshot first (also for settings we will skip per device)
    keys = [k for k in p["sysctl"] if k not in unsupported] + \
        [f"ethtool.{f}" for f in (p["ethtool"] or {}).get("features") or {}] + \
        [f"ethtool.ring.{r}" for r in (p["ethtool"] or {}).get("ring") or {}]
    for ns in namespaces:
        snapshot[ns] = _current(ns, dev if ns in node_namespaces else pod_dev, keys)
    state = {"profile": profile_name, "dev": dev, "pod_dev": pod_dev, "node_namespaces": list(node_namespaces),
             "pod_namespaces": list(pod_namespaces), "snapshot": snapshot}
    state_file.write_text(json.dumps(state, indent=1))

    for ns in namespaces:
        d = dev if ns in node_namespaces else pod_dev
        writes = {key: target_value(as_text(value), snapshot[ns].get(key))
                  for key, value in p["sysctl"].items() if key not in unsupported}
        for key, err in _ns_write(ns, writes).items():
            unsupported[key] = f"write failed in {ns}: {err}"
        feats = p["ethtool"].get("features") or {}
        for f, v in feats.items():
            key = f"ethtool.{f}"
            if key in unsupported:
                continue
            good, err = sh.ok(_nsx(ns, ["ethtool", "-K", d, f, as_text(v)]))
            cur = _read_features(ns, d).get(f, "")
            if not good and ethtool_unsupported(err) or "[fixed]" in cur and not matches(as_text(v), cur.split()[0]):
                unsupported[key] = f"{d} ({ns}): {err or cur}"
        ring = p["ethtool"].get("ring") or {}
        if ring:
            rings = _read_rings(ns, d)
            args: list[str] = []
            for r, v in ring.items():
                mx = rings["max"].get(r)
                if not mx or mx.lower() in ("n/a", "0"):
                    unsupported[f"ethtool.ring.{r}"] = f"{d} ({ns}) has no {r} ring setting"
                    continue
                args += [r, str(min(int(v), int(mx)))]
                if int(mx) < int(v):
                    unsupported[f"ethtool.ring.{r}"] = f"{d} ({ns}) maximum is {mx}: set to {mx}"
            if args:
                good, err = sh.ok(_nsx(ns, ["ethtool", "-G", d, *args]))
                if not good:
                    for r in ring:
                        unsupported.setdefault(f"ethtool.ring.{r}", f"{d} ({ns}): {err}")
    readback = _readback(namespaces, dev, req, unsupported) if len({dev, pod_dev}) == 1 else \
        {**_readback(list(node_namespaces), dev, req, unsupported),
         **{k: v for k, v in _readback(list(pod_namespaces), pod_dev, req, unsupported).items()}}
    mtu_ns = pod_namespaces[0] if pod_namespaces else (node_namespaces[0] if node_namespaces else None)
    mtu = _read_mtu(mtu_ns, pod_dev if pod_namespaces else dev) if mtu_ns else None
    if "mtu" in req:
        # the pod MTU is profile MTU minus the datapath overhead; what counts is the LAN/uplink MTU
        readback["mtu"] = str(_read_mtu(node_namespaces[0], dev)) if node_namespaces else None
    return {"profile": profile_name, "requested": req, "readback": readback, "unsupported": unsupported,
            "mtu": mtu}


def revert_local(node_namespaces: Sequence[str], pod_namespaces: Sequence[str]) -> dict[str, dict[str, str]]:
    """Restore the snapshot taken by apply_local (namespaces that are gone are skipped); returns it."""
    namespaces = [*node_namespaces, *pod_namespaces]
    sf = _state_file(namespaces)
    if not sf.exists():
        return {}
    state = json.loads(sf.read_text())
    existing = set(sh.run(["ip", "netns", "list"], check=False).split())
    for ns, snap in state["snapshot"].items():
        if ns not in existing:
            continue
        d = state["dev"] if ns in state["node_namespaces"] else state["pod_dev"]
        for key, val in snap.items():
            if key.startswith("ethtool.ring."):
                sh.ok(_nsx(ns, ["ethtool", "-G", d, key.rsplit(".", 1)[1], val]))
            elif key.startswith("ethtool."):
                sh.ok(_nsx(ns, ["ethtool", "-K", d, key.split(".", 1)[1], val]))
        _ns_write(ns, {k: v for k, v in snap.items() if not k.startswith("ethtool.")})
    sf.unlink(missing_ok=True)
    return state["snapshot"]


def revert_and_verify(node_namespaces: Sequence[str], pod_namespaces: Sequence[str]) -> list[str]:
    """revert_local, then read every reverted setting again: the settings that do not read back as they were before
    the profile was applied ('ns key: now X, was Y'); [] also when no profile was applied."""
    sf = _state_file([*node_namespaces, *pod_namespaces])
    if not sf.exists():
        return []
    state = json.loads(sf.read_text())
    snapshot = revert_local(node_namespaces, pod_namespaces)
    problems = []
    for ns, snap in snapshot.items():
        now = _current(ns, state["dev"] if ns in state["node_namespaces"] else state["pod_dev"], list(snap))
        problems += [f"{ns} {k}: now {now.get(k)}, was {v}" for k, v in snap.items()
                     if norm_value(str(now.get(k))) != norm_value(v)]
    return problems
