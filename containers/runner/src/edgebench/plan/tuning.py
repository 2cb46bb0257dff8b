"""Node tuning profiles (seed 003's optimization levels, tuned profiles, RTI's DDS settings, MTU variants).

Profiles live in catalog/tuning.yaml. Two halves:

* Real nodes (pure rendering, run over SSH by substrates/clusters/node_tuning.py): `render_snapshot`,
  `render_apply`, `render_readback`, `render_revert` return argv lists. sysctls via `sysctl -w`, offloads and rings via `ethtool -K/-G` (an
  "Operation not supported" answer means unsupported, see `ethtool_unsupported`), tuned profiles via
  `tuned-adm profile X` / `tuned-adm off`.
* Local testbed (tuning_local: `apply_local` / `revert_local`): only what a network namespace can carry. A sysctl counts as
  supported when it is a net.* key that exists in a fresh scratch namespace (`ebn-probe-*`), can be written
  there, and writing it there leaves the host's value unchanged; everything else (vm.*, kernel.*, global net
  keys, host settings such as the cpu governor) is recorded in `unsupported` with the reason and never
  written. The host's own settings are never touched. ethtool settings go to `eth0` of every node and pod
  namespace (veth ends). The settings are snapshotted first and `revert_local` restores them.

The manifest `tuning` object: {profile, requested, readback, unsupported, mtu}; `validate` turns it into
(is_valid, reason): invalid when a setting in requested minus unsupported reads back differently.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Mapping, Sequence

from edgebench.plan.catalog import load
from edgebench.errors import SpecError

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
    return load("tuning.yaml")["profiles"]


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


def as_text(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def requested(profile_name: str) -> dict[str, str]:
    """Flat {setting: value}: sysctl keys, `ethtool.<feature>`, `ethtool.ring.<rx|tx>`, host settings, `mtu`."""
    p = profile(profile_name)
    out = {k: as_text(v) for k, v in p["sysctl"].items()}
    for feat, val in (p["ethtool"].get("features") or {}).items():
        out[f"ethtool.{feat}"] = as_text(val)
    for ring, val in (p["ethtool"].get("ring") or {}).items():
        out[f"ethtool.ring.{ring}"] = as_text(val)
    for k, v in p["host"].items():
        out[k] = v
    if p["mtu"] is not None:
        out["mtu"] = str(p["mtu"])
    return out


# values --------------------------------------------------------------------------------------------------
def norm_value(v: Any) -> str:
    return " ".join(str(v).split())


def target_value(want: str, current: str | None) -> str:
    """What to write: `>=N` raises to N only if the current value is lower."""
    if want.startswith(">="):
        n = int(want[2:])
        try:
            return str(max(n, int(norm_value(current or "0"))))
        except ValueError:
            return str(n)
    return want


def matches(want: str, got: str | None) -> bool:
    if got is None:
        return False
    if want.startswith(">="):
        try:
            return int(norm_value(got)) >= int(want[2:])
        except ValueError:
            return False
    return norm_value(want) == norm_value(got)


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


def render_apply(profile_name: str, dev: str, current: Mapping[str, str] | None = None, tuned_adm: bool = True,
                 ring_max: Mapping[str, str] | None = None) -> list[list[str]]:
    """Apply commands. A tuned profile is applied by tuned-adm alone (it sets its sysctls itself), or with
    `tuned_adm` False by its sysctls; custom profiles by sysctl -w / ethtool / ip link. `current` (sysctl values from
    the snapshot) resolves `>=N`; `ring_max` (`ethtool -g`'s pre-set maximums) clamps a ring to what the NIC takes."""
    p = profile(profile_name)
    if p["tuned"] and tuned_adm:
        return [["tuned-adm", "profile", p["tuned"]]]
    cmds = [["sysctl", "-w", f"{k}={target_value(as_text(v), (current or {}).get(k))}"] for k, v in p["sysctl"].items()]
    feats = p["ethtool"].get("features") or {}
    if feats:
        cmds.append(["ethtool", "-K", dev, *[x for f, v in feats.items() for x in (f, as_text(v))]])
    ring = {r: ring_clamp(as_text(v), (ring_max or {}).get(r)) for r, v in (p["ethtool"].get("ring") or {}).items()}
    ring = {r: v for r, v in ring.items() if v is not None}
    if ring:
        cmds.append(["ethtool", "-G", dev, *[x for r, v in ring.items() for x in (r, v)]])
    if p["mtu"] is not None:
        cmds.append(["ip", "link", "set", "dev", dev, "mtu", str(p["mtu"])])
    return cmds


def ring_clamp(want: str, maximum: str | None) -> str | None:
    """The ring size to set: `want`, or the NIC's maximum where it is lower; None where the device has no such ring
    (`ethtool -g` says n/a or 0). Without a maximum read, `want` as asked."""
    if maximum is None:
        return want
    if maximum.strip().lower() in ("n/a", "0", ""):
        return None
    return str(min(int(want), int(maximum)))


def render_revert(profile_name: str, dev: str, snapshot: Mapping[str, str], tuned_adm: bool = True) -> list[list[str]]:
    """Restore the snapshot: {sysctl key: old value, 'ethtool.gro': 'off', 'ethtool.ring.rx': '256', 'mtu': ..,
    'tuned': previous active profile or ''}. For tuned profiles applied by tuned-adm: back to the previous profile,
    or `tuned-adm off`."""
    p = profile(profile_name)
    if p["tuned"] and tuned_adm:
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


def common_value(per_node: Mapping[str, str | None]) -> str | None:
    """One readback value over nodes (or namespaces): the value they share, else 'mixed: node=value, ...' (which
    `validate` then finds not in force)."""
    distinct = set(per_node.values())
    return distinct.pop() if len(distinct) == 1 else "mixed: " + ", ".join(f"{n}={v}" for n, v in per_node.items())


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


def ethtool_keys(keys: Sequence[str]) -> tuple[bool, bool]:
    """Do these snapshot keys hold (offload features, rings)? What has to be read with `ethtool -k` / `-g`."""
    return (any(k.startswith("ethtool.") and not k.startswith("ethtool.ring.") for k in keys),
            any(k.startswith("ethtool.ring.") for k in keys))


def ethtool_values(keys: Sequence[str], features: Mapping[str, str], rings: Mapping[str, str]) -> dict[str, str]:
    """The values of snapshot keys `ethtool.<feature>` and `ethtool.ring.<ring>` in parsed `ethtool -k` features and
    `ethtool -g` current rings, on a namespace of the testbed or a cluster's node alike; a key not read is left out."""
    out = {k: features[k[8:]].split()[0] for k in keys
           if k.startswith("ethtool.") and not k.startswith("ethtool.ring.") and features.get(k[8:], "").split()}
    out.update({k: rings[k[13:]] for k in keys if k.startswith("ethtool.ring.") and k[13:] in rings})
    return out


def ethtool_unsupported(stderr: str) -> bool:
    """True if ethtool's answer means the device cannot do it ('Operation not supported', '[fixed]')."""
    return bool(_NOT_SUPPORTED.search(stderr or ""))


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
