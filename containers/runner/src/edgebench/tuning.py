"""Node tuning profiles (seed 003's optimization levels, tuned profiles, RTI's DDS settings, MTU variants).

Profiles live in catalog/tuning.yaml. Two halves:

* Real nodes (pure rendering, run later over SSH / nsenter): `render_snapshot`, `render_apply`, `render_readback`,
  `render_revert` return argv lists. sysctls via `sysctl -w`, offloads and rings via `ethtool -K/-G` (an
  "Operation not supported" answer means unsupported, see `ethtool_unsupported`), tuned profiles via
  `tuned-adm profile X` / `tuned-adm off`.
* Local testbed (`apply_local` / `revert_local`): only what a network namespace can carry. A sysctl counts as
  supported when it is a net.* key that exists in a fresh scratch namespace (`ebn-probe-*`), can be written
  there, and writing it there leaves the host's value unchanged; everything else (vm.*, kernel.*, global net
  keys, host settings such as the cpu governor) is recorded in `unsupported` with the reason and never
  written. The host's own settings are never touched. ethtool settings go to `eth0` of every node and pod
  namespace (veth ends). The settings are snapshotted first and `revert_local` restores them.

The manifest `tuning` object: {profile, requested, readback, unsupported, mtu}; `validate` turns it into
(is_valid, reason): invalid when a setting in requested minus unsupported reads back differently.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import sh
from .catalog import _load
from .errors import SpecError

ETHTOOL_FEATURES = {  # short name -> `ethtool -k` long name
    "gro": "generic-receive-offload",
    "tso": "tcp-segmentation-offload",
    "gso": "generic-segmentation-offload",
    "lro": "large-receive-offload",
    "rx": "rx-checksumming",
    "tx": "tx-checksumming",
    "sg": "scatter-gather",
}
_NOT_SUPPORTED = re.compile(r"operation not supported|not supported|cannot change|fixed", re.I)


def catalog() -> dict[str, Any]:
    return _load("tuning.yaml")["profiles"]


def profile_names() -> list[str]:
    return list(catalog())


@lru_cache(maxsize=None)
def profile(name: str) -> dict[str, Any]:
    """The profile with its includes merged: {name, description, tuned, sysctl, ethtool, host, mtu}."""
    profiles = catalog()
    if name not in profiles:
        raise SpecError(f"unknown tuning profile {name!r}; choose one of {', '.join(profiles)}")
    entry = profiles[name]
    merged: dict[str, Any] = {"name": name, "description": entry.get("description", ""), "tuned": entry.get("tuned"),
                              "sysctl": {}, "ethtool": {}, "host": {}, "mtu": entry.get("mtu")}
    for inc in entry.get("include", []):
        sub = profile(inc)
        for key in ("sysctl", "host"):
            merged[key].update(sub[key])
    merged["sysctl"].update(entry.get("sysctl") or {})
    merged["host"].update(entry.get("host") or {})
    merged["ethtool"] = dict(entry.get("ethtool") or {})
    return merged


def mtu_for(profile_name: str, datapath_overhead: int) -> int | None:
    """Pod MTU for an MTU profile (`mtu-9000`, overhead 50 for VXLAN -> 8950); None for other profiles (keep
    the CNI's default). The LAN / node uplinks get `lan_mtu_for`."""
    mtu = profile(profile_name)["mtu"]
    return None if mtu is None else int(mtu) - int(datapath_overhead)


def lan_mtu_for(profile_name: str) -> int | None:
    """Node uplink / LAN bridge MTU for an MTU profile, else None."""
    mtu = profile(profile_name)["mtu"]
    return None if mtu is None else int(mtu)


def _str(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def requested(profile_name: str) -> dict[str, str]:
    """Flat {setting: value}: sysctl keys, `ethtool.<feature>`, `ethtool.ring.<rx|tx>`, host settings, `mtu`."""
    p = profile(profile_name)
    out = {k: _str(v) for k, v in p["sysctl"].items()}
    for feat, val in (p["ethtool"].get("features") or {}).items():
        out[f"ethtool.{feat}"] = _str(val)
    for ring, val in (p["ethtool"].get("ring") or {}).items():
        out[f"ethtool.ring.{ring}"] = _str(val)
    for k, v in p["host"].items():
        out[k] = v
    if p["mtu"] is not None:
        out["mtu"] = str(p["mtu"])
    return out


# values --------------------------------------------------------------------------------------------------
def _norm(v: Any) -> str:
    return " ".join(str(v).split())


def target_value(want: str, current: str | None) -> str:
    """What to write: `>=N` raises to N only if the current value is lower."""
    if want.startswith(">="):
        n = int(want[2:])
        try:
            return str(max(n, int(_norm(current or "0"))))
        except ValueError:
            return str(n)
    return want


def matches(want: str, got: str | None) -> bool:
    if got is None:
        return False
    if want.startswith(">="):
        try:
            return int(_norm(got)) >= int(want[2:])
        except ValueError:
            return False
    return _norm(want) == _norm(got)


# rendering for real nodes (pure) --------------------------------------------------------------------------
def render_snapshot(profile_name: str, dev: str) -> list[list[str]]:
    """Commands whose output is the state to restore later (run before apply)."""
    p = profile(profile_name)
    cmds: list[list[str]] = []
    if p["tuned"]:
        cmds.append(["tuned-adm", "active"])
    cmds += [["sysctl", "-n", k] for k in p["sysctl"]]
    if p["ethtool"].get("features"):
        cmds.append(["ethtool", "-k", dev])
    if p["ethtool"].get("ring"):
        cmds.append(["ethtool", "-g", dev])
    if p["mtu"] is not None:
        cmds.append(["ip", "-j", "link", "show", "dev", dev])
    return cmds


def render_readback(profile_name: str, dev: str) -> list[list[str]]:
    cmds = render_snapshot(profile_name, dev)
    if profile(profile_name)["tuned"]:
        cmds.append(["tuned-adm", "verify"])
    return cmds


def render_apply(profile_name: str, dev: str, current: Mapping[str, str] | None = None) -> list[list[str]]:
    """Apply commands. A tuned profile is applied by tuned-adm alone (it sets its sysctls itself); custom
    profiles by sysctl -w / ethtool / ip link. `current` (sysctl values from the snapshot) resolves `>=N`."""
    p = profile(profile_name)
    if p["tuned"]:
        return [["tuned-adm", "profile", p["tuned"]]]
    cmds = [["sysctl", "-w", f"{k}={target_value(_str(v), (current or {}).get(k))}"] for k, v in p["sysctl"].items()]
    feats = p["ethtool"].get("features") or {}
    if feats:
        cmds.append(["ethtool", "-K", dev, *[x for f, v in feats.items() for x in (f, _str(v))]])
    ring = p["ethtool"].get("ring") or {}
    if ring:
        cmds.append(["ethtool", "-G", dev, *[x for r, v in ring.items() for x in (r, _str(v))]])
    if p["mtu"] is not None:
        cmds.append(["ip", "link", "set", "dev", dev, "mtu", str(p["mtu"])])
    return cmds


def render_revert(profile_name: str, dev: str, snapshot: Mapping[str, str]) -> list[list[str]]:
    """Restore the snapshot: {sysctl key: old value, 'ethtool.gro': 'off', 'ethtool.ring.rx': '256', 'mtu': ..,
    'tuned': previous active profile or ''}. For tuned profiles: back to the previous profile, or `tuned-adm off`."""
    p = profile(profile_name)
    if p["tuned"]:
        prev = snapshot.get("tuned") or ""
        return [["tuned-adm", "profile", prev]] if prev and prev != p["tuned"] else [["tuned-adm", "off"]]
    cmds = [["sysctl", "-w", f"{k}={snapshot[k]}"] for k in p["sysctl"] if k in snapshot]
    feats = [(f, snapshot[f"ethtool.{f}"]) for f in (p["ethtool"].get("features") or {}) if f"ethtool.{f}" in snapshot]
    if feats:
        cmds.append(["ethtool", "-K", dev, *[x for f, v in feats for x in (f, v)]])
    ring = [(r, snapshot[f"ethtool.ring.{r}"]) for r in (p["ethtool"].get("ring") or {})
            if f"ethtool.ring.{r}" in snapshot]
    if ring:
        cmds.append(["ethtool", "-G", dev, *[x for r, v in ring for x in (r, v)]])
    if p["mtu"] is not None and "mtu" in snapshot:
        cmds.append(["ip", "link", "set", "dev", dev, "mtu", snapshot["mtu"]])
    return cmds


def parse_tuned_active(text: str) -> str:
    """`tuned-adm active` -> profile name, '' when none ('No current active profile.')."""
    m = re.search(r"Current active profile:\s*(\S+)", text)
    return m.group(1) if m else ""


def parse_ethtool_features(text: str) -> dict[str, str]:
    """`ethtool -k` -> {short name: 'on'|'off'} for the features we know ('[fixed]' kept as a suffix)."""
    longs = {v: k for k, v in ETHTOOL_FEATURES.items()}
    out = {}
    for line in text.splitlines():
        name, _, rest = line.strip().partition(":")
        if name in longs and rest.strip():
            out[longs[name]] = rest.strip()
    return out


def parse_ethtool_rings(text: str) -> dict[str, dict[str, str]]:
    """`ethtool -g` -> {'max': {'rx': '4096', ...}, 'current': {...}}."""
    out: dict[str, dict[str, str]] = {"max": {}, "current": {}}
    section = None
    for line in text.splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            section = "max"
        elif low.startswith("current hardware settings"):
            section = "current"
        elif section and ":" in line:
            k, _, v = line.partition(":")
            k = k.strip().lower()
            if k in ("rx", "tx"):
                out[section][k] = v.strip()
    return out


def ethtool_unsupported(stderr: str) -> bool:
    """True if ethtool's answer means the device cannot do it ('Operation not supported', '[fixed]')."""
    return bool(_NOT_SUPPORTED.search(stderr or ""))


# local testbed ------------------------------------------------------------------------------------------
Runner = Callable[..., str]


def _nsx(ns: str, argv: Sequence[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv]


def _host_sysctl(key: str) -> str | None:
    try:
        return _norm(Path("/proc/sys", *key.split(".")).read_text())
    except OSError:
        return None


def _ns_sysctl(ns: str, key: str) -> str | None:
    good, _ = sh.ok(_nsx(ns, ["test", "-e", "/proc/sys/" + key.replace(".", "/")]))
    if not good:
        return None
    out = sh.run(_nsx(ns, ["sysctl", "-n", key]), check=False)
    return _norm(out) if out.strip() else None


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


def _readback(namespaces: Sequence[str], dev: str, req: Mapping[str, str],
              unsupported: Mapping[str, str]) -> dict[str, str | None]:
    """One value per setting: the common value over the namespaces, or 'mixed: ns=v, ...'."""
    per: dict[str, dict[str, str | None]] = {}
    feats = {ns: _read_features(ns, dev) for ns in namespaces} if any(k.startswith("ethtool.") for k in req) else {}
    rings = {ns: _read_rings(ns, dev) for ns in namespaces} if any(k.startswith("ethtool.ring.") for k in req) else {}
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
                vals[ns] = _ns_sysctl(ns, key)
        per[key] = vals
    out: dict[str, str | None] = {}
    for key, vals in per.items():
        distinct = set(vals.values())
        out[key] = distinct.pop() if len(distinct) == 1 else "mixed: " + ", ".join(f"{n}={v}" for n, v in vals.items())
    return out


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
        reason = namespace_support(key, _str(value))
        if reason:
            unsupported[key] = reason
    snapshot: dict[str, dict[str, str]] = {}
    state_file = _state_file(namespaces)
    state_file.parent.mkdir(parents=True, exist_ok=True)
    # snapshot first (also for settings we will skip per device)
    for ns in namespaces:
        snap: dict[str, str] = {}
        for key in p["sysctl"]:
            if key not in unsupported:
                cur = _ns_sysctl(ns, key)
                if cur is not None:
                    snap[key] = cur
        if p["ethtool"]:
            d = dev if ns in node_namespaces else pod_dev
            feats = _read_features(ns, d)
            for f in p["ethtool"].get("features") or {}:
                if f in feats:
                    snap[f"ethtool.{f}"] = feats[f].split()[0]
            rings = _read_rings(ns, d)["current"]
            for r in p["ethtool"].get("ring") or {}:
                if r in rings:
                    snap[f"ethtool.ring.{r}"] = rings[r]
        snapshot[ns] = snap
    state = {"profile": profile_name, "dev": dev, "pod_dev": pod_dev, "node_namespaces": list(node_namespaces),
             "pod_namespaces": list(pod_namespaces), "snapshot": snapshot}
    state_file.write_text(json.dumps(state, indent=1))

    for ns in namespaces:
        d = dev if ns in node_namespaces else pod_dev
        for key, value in p["sysctl"].items():
            if key in unsupported:
                continue
            good, err = sh.ok(_nsx(ns, ["sysctl", "-qw", f"{key}={target_value(_str(value), snapshot[ns].get(key))}"]))
            if not good:
                unsupported[key] = f"write failed in {ns}: {err}"
        feats = p["ethtool"].get("features") or {}
        for f, v in feats.items():
            key = f"ethtool.{f}"
            if key in unsupported:
                continue
            good, err = sh.ok(_nsx(ns, ["ethtool", "-K", d, f, _str(v)]))
            cur = _read_features(ns, d).get(f, "")
            if not good and ethtool_unsupported(err) or "[fixed]" in cur and not matches(_str(v), cur.split()[0]):
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


def validate(tuning: Mapping[str, Any] | None) -> tuple[bool, str | None]:
    """(is_valid, reason): invalid when a setting in requested minus unsupported reads back differently."""
    if not tuning:
        return True, None
    req = tuning.get("requested") or {}
    unsupported = tuning.get("unsupported") or {}
    readback = tuning.get("readback") or {}
    bad = [f"{k}: requested {v}, read back {readback.get(k)}" for k, v in req.items()
           if k not in unsupported and not matches(str(v), None if readback.get(k) is None else str(readback.get(k)))]
    if bad:
        return False, "tuning not in force: " + "; ".join(bad)
    return True, None


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
            else:
                sh.ok(_nsx(ns, ["sysctl", "-qw", f"{key}={val}"]))
    sf.unlink(missing_ok=True)
    return state["snapshot"]
