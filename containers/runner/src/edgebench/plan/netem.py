"""Link conditions: delay, jitter, loss (netem) and rate limits on each node's uplink.

Scenarios come from catalog/netem.yaml (Table IV of seed 001 plus rate presets) or are given as custom dicts.
Every value applies PER NODE INTERFACE, on egress: apply the scenario to every node and a node-to-node round trip
gets 2 x delay_ms, two independent jitter draws, and loss on each direction (one-way loss = loss_pct, round-trip
loss = 1-(1-loss_pct/100)^2, about twice loss_pct).

Two halves:

* Rendering for real nodes (pure functions, run later over SSH / nsenter): `render_apply`, `render_readback`,
  `render_revert` return argv lists; `render_script` joins them into shell lines.
    - scope `all`: `tc qdisc replace dev X root netem delay Dms Jms distribution normal loss P% limit L`; with a
      rate, htb is the root (class 1:1 at the rate) and netem its leaf (handle 10:), so the shaper never
      reorders (netem alone reorders packets when jitter exceeds the inter-packet gap).
    - scope `inter-group` (only traffic to given peers): prio root with netem on band 1:3 and u32 filters to the
      peers' node IPs / pod CIDRs (install-facts F); with a rate, htb root whose class 1:1 (rate, netem leaf)
      gets the filtered traffic while everything else goes out unshaped (htb's direct queue).
* Local testbed (netem_local: `apply_local` / `readback_local` / `revert_local`): the kernel is probed in a scratch namespace
  (`ebn-probe-*`). With sch_netem the rendered tc commands run in each node namespace (`tc-netem`). Without it,
  `userspace-nfqueue`: a netfilter rule in the node namespace queues the uplink's egress packets to NFQUEUE and
  `edgebench-netem-emu` (containers/netem-emulator, Go) holds each packet for delay + jitter*N(0,1) (clipped at
  0, packet order kept) or drops it with probability loss_pct. Rate limits use htb in both cases.
  The rule is native nftables (`queue`) when the kernel has nft_queue, else iptables-nft's NFQUEUE target
  (nftables' xt compat; `iptables` package), IPv4 only.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from edgebench.plan.catalog import load
from edgebench.errors import SpecError

SCOPES = ("all", "inter-group")
MECHANISMS = ("none", "tc-netem", "userspace-nfqueue")
EMULATOR = "edgebench-netem-emu"
QUEUE_NUM = 7
NFT_TABLE = "edgebench_netem"
IPT_CHAIN = "EDGEBENCH-NETEM"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_CUSTOM_KEYS = ("delay_ms", "jitter_ms", "loss_pct", "rate_mbit", "scope")


@dataclass(frozen=True)
class Scenario:
    name: str
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    rate_mbit: float | None = None
    scope: str = "all"

    @property
    def impaired(self) -> bool:
        """Delay, jitter or loss to emulate (needs netem or the userspace emulator)."""
        return self.delay_ms > 0 or self.jitter_ms > 0 or self.loss_pct > 0

    @property
    def untouched(self) -> bool:
        return not self.impaired and self.rate_mbit is None


# catalog -------------------------------------------------------------------------------------------------
def catalog() -> dict[str, Any]:
    return load("netem.yaml")


def scenario_names() -> list[str]:
    return list(catalog()["scenarios"])


def display_order(names) -> list[str]:
    """Scenario names for a chart axis or a table: the catalog's in catalog order (none, lcl, edg2.5 ... edg20),
    then any other (custom, or with a rate such as edg10@100mbit) by name."""
    known = scenario_names()
    present = list(dict.fromkeys(names))
    return [n for n in known if n in present] + sorted(n for n in present if n not in known)


def rate_presets() -> dict[str, float]:
    return {k: float(v["rate_mbit"]) for k, v in catalog()["rates"].items()}


def _number(name: str, key: str, value: Any, lo: float, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise SpecError(f"netem scenario {name!r}: {key} must be a number, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        rng = f">= {lo:g}" if hi is None else f"between {lo:g} and {hi:g}"
        raise SpecError(f"netem scenario {name!r}: {key} must be {rng}, got {value!r}")
    return float(value)


def _rate(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        presets = rate_presets()
        if value not in presets:
            raise SpecError(f"netem scenario {name!r}: unknown rate {value!r}; choose one of "
                            f"{', '.join(presets)} or give rate_mbit as a number")
        return presets[value]
    rate = _number(name, "rate_mbit", value, 0)
    if rate <= 0:
        raise SpecError(f"netem scenario {name!r}: rate_mbit must be > 0 (or null for unlimited), got {value!r}")
    return rate


def resolve(name: str, custom: Mapping[str, Any] | None = None, scope: str | None = None) -> Scenario:
    """A catalog scenario (`edg10`), a catalog scenario with a rate preset (`edg10@100mbit`), or, with `custom`
    ({delay_ms, jitter_ms, loss_pct, rate_mbit[, scope]}), a custom scenario called `name`.
    Raises SpecError with one clear message on anything invalid."""
    if not isinstance(name, str) or not name:
        raise SpecError(f"netem scenario name must be a non-empty string, got {name!r}")
    scenarios = catalog()["scenarios"]
    if custom is not None:
        if not isinstance(custom, Mapping):
            raise SpecError(f"netem scenario {name!r}: a custom scenario is a mapping of {', '.join(_CUSTOM_KEYS)}")
        if not _NAME.match(name) or "@" in name:
            raise SpecError(f"netem scenario name {name!r}: use letters, digits, '.', '_' or '-' (max 63)")
        if name in scenarios:
            raise SpecError(f"netem scenario {name!r} is a catalog scenario; give the custom scenario another name")
        unknown = sorted(set(custom) - set(_CUSTOM_KEYS))
        if unknown:
            raise SpecError(f"netem scenario {name!r}: unknown key(s) {', '.join(unknown)}; "
                            f"allowed: {', '.join(_CUSTOM_KEYS)}")
        sc = Scenario(
            name=name,
            delay_ms=_number(name, "delay_ms", custom.get("delay_ms", 0), 0, 60_000),
            jitter_ms=_number(name, "jitter_ms", custom.get("jitter_ms", 0), 0, 60_000),
            loss_pct=_number(name, "loss_pct", custom.get("loss_pct", 0), 0, 100),
            rate_mbit=_rate(name, custom.get("rate_mbit")),
            scope=custom.get("scope", "all"),
        )
    else:
        base, _, rate = name.partition("@")
        if base not in scenarios:
            raise SpecError(f"unknown netem scenario {base!r}; choose one of {', '.join(scenarios)} "
                            f"(optionally @{'/@'.join(rate_presets())}) or give a custom scenario")
        entry = scenarios[base]
        sc = Scenario(name=name, delay_ms=float(entry["delay_ms"]), jitter_ms=float(entry["jitter_ms"]),
                      loss_pct=float(entry["loss_pct"]), rate_mbit=_rate(name, rate) if rate else None)
    if scope is not None:
        sc = replace(sc, scope=scope)
    if sc.scope not in SCOPES:
        raise SpecError(f"netem scenario {name!r}: scope must be one of {', '.join(SCOPES)}, got {sc.scope!r}")
    return sc


# rendering (pure) ----------------------------------------------------------------------------------------
def fmt_number(x: float) -> str:
    """5.0 -> '5', 1.25 -> '1.25', 0.08 -> '0.08'."""
    return f"{x:.6f}".rstrip("0").rstrip(".")


def limit_for(sc: Scenario, mtu: int = 1500) -> int:
    """netem queue limit: at least rate x (delay + 3 jitter) / MTU packets (rate: 10 Gbit/s if unlimited)."""
    rate_bps = (sc.rate_mbit or 10_000) * 1e6
    need = rate_bps * (sc.delay_ms + 3 * sc.jitter_ms) / 1000 / (mtu * 8)
    return max(int(catalog().get("min_limit", 10000)), int(math.ceil(need)))


def netem_params(sc: Scenario) -> list[str]:
    """The arguments after `netem`: delay D [J distribution normal] [loss P%] limit L."""
    args: list[str] = []
    if sc.delay_ms > 0 or sc.jitter_ms > 0:
        args += ["delay", f"{fmt_number(sc.delay_ms)}ms"]
        if sc.jitter_ms > 0:
            args += [f"{fmt_number(sc.jitter_ms)}ms", "distribution", "normal"]
    if sc.loss_pct > 0:
        args += ["loss", f"{fmt_number(sc.loss_pct)}%"]
    return args + ["limit", str(limit_for(sc))]


def _htb_class(dev: str, rate_mbit: float) -> list[str]:
    burst = max(32768, int(rate_mbit * 1e6 / 8 / 1000))  # at least 1 ms worth of bytes
    rate = f"{fmt_number(rate_mbit)}mbit"
    return ["tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", rate, "ceil", rate,
            "burst", str(burst), "cburst", str(burst)]


def _u32_filters(dev: str, peers: Sequence[str], flowid: str) -> list[list[str]]:
    out = []
    for peer in peers:
        cidr = peer if "/" in peer else f"{peer}/32"
        out.append(["tc", "filter", "add", "dev", dev, "parent", "1:0", "protocol", "ip", "prio", "1", "u32",
                    "match", "ip", "dst", cidr, "flowid", flowid])
    return out


def render_apply(sc: Scenario, dev: str, peers: Sequence[str] | None = None,
                 impair: bool = True) -> list[list[str]]:
    """tc commands (argv lists) that put `sc` on `dev`'s egress. `peers` (node IPs, pod CIDRs) is required for
    scope inter-group. impair=False renders only the rate part (for the userspace emulator path)."""
    impaired = sc.impaired and impair
    if not impaired and sc.rate_mbit is None:
        return []
    if sc.scope == "inter-group":
        if not peers:
            raise SpecError(f"netem scenario {sc.name!r}: scope inter-group needs the peers' node IPs / pod CIDRs")
        if sc.rate_mbit is None:
            return [["tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "prio", "bands", "3"],
                    ["tc", "qdisc", "add", "dev", dev, "parent", "1:3", "handle", "30:", "netem", *netem_params(sc)],
                    *_u32_filters(dev, peers, "1:3")]
        # no `default`: unclassified traffic leaves through htb's direct queue, unshaped
        cmds = [["tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb"], _htb_class(dev, sc.rate_mbit)]
        if impaired:
            cmds.append(["tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "netem",
                         *netem_params(sc)])
        return cmds + _u32_filters(dev, peers, "1:1")
    if sc.rate_mbit is None:
        return [["tc", "qdisc", "replace", "dev", dev, "root", "netem", *netem_params(sc)]]
    cmds = [["tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1"],
            _htb_class(dev, sc.rate_mbit)]
    if impaired:
        cmds.append(["tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "netem", *netem_params(sc)])
    return cmds


def render_readback(dev: str, scope: str = "all") -> list[list[str]]:
    cmds = [["tc", "-s", "qdisc", "show", "dev", dev]]
    if scope == "inter-group":
        cmds += [["tc", "-s", "class", "show", "dev", dev], ["tc", "filter", "show", "dev", dev]]
    return cmds


def render_revert(dev: str) -> list[list[str]]:
    """Deleting the root qdisc removes classes, filters and netem children with it."""
    return [["tc", "qdisc", "del", "dev", dev, "root"]]


def qdisc_problem(qdiscs: str, where: str, *, netem: bool, rate: bool) -> str | None:
    """Why a shaped device's qdiscs (`tc qdisc show dev DEV`) no longer carry the condition applied to it, or None:
    a netem qdisc where the kernel's netem emulates the impairment (`netem`), an htb rate limit where the condition
    has a rate (`rate`). `where` names the device in the message (node/dev)."""
    if netem and "netem" not in qdiscs:
        return f"no netem qdisc on {where}"
    if rate and "htb" not in qdiscs:
        return f"no htb rate limit on {where}"
    return None


def render_script(cmds: Sequence[Sequence[str]], prefix: Sequence[str] = ()) -> str:
    """Shell lines for SSH / nsenter, e.g. prefix=('sudo',) or ('nsenter', '-t', '1', '-n', '--')."""
    return "".join(shlex.join([*prefix, *c]) + "\n" for c in cmds)


def manifest_object(sc: Scenario, mechanism: str, readback: str) -> dict:
    """The manifest's `netem` object."""
    return {"scenario": sc.name, "mechanism": mechanism, "delay_ms": sc.delay_ms, "jitter_ms": sc.jitter_ms,
            "loss_pct": sc.loss_pct, "rate_mbit": sc.rate_mbit, "scope": sc.scope, "readback": readback}
