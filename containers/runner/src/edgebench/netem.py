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
* Local testbed (`apply_local` / `readback_local` / `revert_local`): the kernel is probed in a scratch namespace
  (`ebn-probe-*`). With sch_netem the rendered tc commands run in each node namespace (`tc-netem`). Without it,
  `userspace-nfqueue`: a netfilter rule in the node namespace queues the uplink's egress packets to NFQUEUE and
  `edgebench-netem-emu` (containers/netem-emulator, Go) holds each packet for delay + jitter*N(0,1) (clipped at
  0, packet order kept) or drops it with probability loss_pct. Rate limits use htb in both cases.
  The rule is native nftables (`queue`) when the kernel has nft_queue, else iptables-nft's NFQUEUE target
  (nftables' xt compat; `iptables` package), IPv4 only.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import signal
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import sh
from .catalog import _load
from .errors import EdgebenchError, SpecError

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
    return _load("netem.yaml")


def scenario_names() -> list[str]:
    return list(catalog()["scenarios"])


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
def _fmt(x: float) -> str:
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
        args += ["delay", f"{_fmt(sc.delay_ms)}ms"]
        if sc.jitter_ms > 0:
            args += [f"{_fmt(sc.jitter_ms)}ms", "distribution", "normal"]
    if sc.loss_pct > 0:
        args += ["loss", f"{_fmt(sc.loss_pct)}%"]
    return args + ["limit", str(limit_for(sc))]


def _htb_class(dev: str, rate_mbit: float) -> list[str]:
    burst = max(32768, int(rate_mbit * 1e6 / 8 / 1000))  # at least 1 ms worth of bytes
    rate = f"{_fmt(rate_mbit)}mbit"
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


def render_script(cmds: Sequence[Sequence[str]], prefix: Sequence[str] = ()) -> str:
    """Shell lines for SSH / nsenter, e.g. prefix=('sudo',) or ('nsenter', '-t', '1', '-n', '--')."""
    return "".join(shlex.join([*prefix, *c]) + "\n" for c in cmds)


# local testbed --------------------------------------------------------------------------------------------
Runner = Callable[..., str]


def _state_dir() -> Path:
    return Path(os.environ.get("EDGEBENCH_RUN_DIR", "/run/edgebench")) / "netem"


def _state_file(ns: str) -> Path:
    return _state_dir() / f"{ns}.json"


def _nsx(ns: str, argv: Sequence[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv]


@lru_cache(maxsize=1)
def probe_netem() -> str | None:
    """None if the kernel has sch_netem, else the reason (tried in a scratch namespace `ebn-probe-*`)."""
    ns = f"ebn-probe-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    sh.run(["ip", "netns", "add", ns])
    try:
        sh.run(["ip", "-n", ns, "link", "add", "pv0", "type", "veth", "peer", "name", "pv1"])
        good, err = sh.ok(_nsx(ns, ["tc", "qdisc", "add", "dev", "pv0", "root", "netem", "delay", "1ms"]))
        return None if good else f"kernel has no sch_netem (`tc qdisc add ... netem`: {err})"
    finally:
        sh.ok(["ip", "netns", "del", ns])


def mechanism_for(sc: Scenario) -> str:
    if not sc.impaired:
        return "none"
    return "tc-netem" if probe_netem() is None else "userspace-nfqueue"


def _peers_for(ns: str, scope_peers: Mapping[str, Sequence[str]] | Sequence[str] | None) -> list[str] | None:
    if scope_peers is None:
        return None
    if isinstance(scope_peers, Mapping):
        return list(scope_peers.get(ns, []))
    return list(scope_peers)


def _run_all(ns: str, cmds: Sequence[Sequence[str]], runner: Runner) -> None:
    for c in cmds:
        runner(_nsx(ns, c))


def _emulator_path() -> str:
    path = sh.which(EMULATOR)
    if not path:
        raise EdgebenchError(
            f"this kernel has no sch_netem and the userspace emulator `{EMULATOR}` is not built: run "
            f"`make tools` (cd containers/netem-emulator && go build -o $EDGEBENCH_TOOLS/{EMULATOR} .)")
    return path


def _start_emulator(ns: str, sc: Scenario, report: Path, queue: int, seed: int | None) -> subprocess.Popen:
    argv = _nsx(ns, [_emulator_path(), "-queue", str(queue), "-delay-ms", _fmt(sc.delay_ms),
                     "-jitter-ms", _fmt(sc.jitter_ms), "-loss-pct", _fmt(sc.loss_pct),
                     "-limit", str(limit_for(sc)), "-report", str(report)])
    if seed is not None:
        argv[-2:-2] = ["-seed", str(seed)]
    report.unlink(missing_ok=True)
    errlog = report.with_suffix(".err")
    with open(errlog, "w") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EdgebenchError(f"{EMULATOR} in {ns} exited ({proc.returncode}): "
                                 f"{errlog.read_text().strip() or 'no error output'}")
        try:
            if json.loads(report.read_text()).get("ready"):
                return proc
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    proc.kill()
    raise EdgebenchError(f"{EMULATOR} in {ns} did not bind NFQUEUE {queue} within 5 s")


def _install_rule(ns: str, dev: str, peers: list[str] | None, queue: int, runner: Runner) -> str:
    """Queue `dev`'s egress to NFQUEUE `queue`; returns the rule backend used (`nft` or `iptables-nft`)."""
    match = f'oifname "{dev}"'
    if peers:
        match += " ip daddr { " + ", ".join(peers) + " }"
    rules = (f"add table inet {NFT_TABLE}\n"
             f"add chain inet {NFT_TABLE} egress {{ type filter hook postrouting priority 300; policy accept; }}\n"
             f"add rule inet {NFT_TABLE} egress {match} queue num {queue}\n")
    good, _ = sh.ok(_nsx(ns, ["nft", "list", "tables"]))  # nft present?
    if good:
        try:
            runner(_nsx(ns, ["nft", "-f", "-"]), input=rules)
            return "nft"
        except sh.CommandError:
            sh.ok(_nsx(ns, ["nft", "delete", "table", "inet", NFT_TABLE]))  # kernel lacks nft_queue
    if not sh.which("iptables"):
        raise EdgebenchError("the kernel has no nftables `queue` expression (nft_queue) and `iptables` "
                             "(iptables-nft, for the NFQUEUE target) is not installed: apt-get install iptables")
    ipt = ["iptables", "-w", "-t", "mangle"]
    runner(_nsx(ns, [*ipt, "-N", IPT_CHAIN]))
    for peer in peers or [None]:
        runner(_nsx(ns, [*ipt, "-A", IPT_CHAIN, "-o", dev, *(["-d", peer] if peer else []),
                         "-j", "NFQUEUE", "--queue-num", str(queue)]))
    runner(_nsx(ns, [*ipt, "-A", "POSTROUTING", "-j", IPT_CHAIN]))
    return "iptables-nft"


def _remove_rules(ns: str, mangle_created: bool) -> None:
    sh.ok(_nsx(ns, ["nft", "delete", "table", "inet", NFT_TABLE]))
    if sh.which("iptables"):
        ipt = ["iptables", "-w", "-t", "mangle"]
        while sh.ok(_nsx(ns, [*ipt, "-D", "POSTROUTING", "-j", IPT_CHAIN]))[0]:
            pass
        sh.ok(_nsx(ns, [*ipt, "-F", IPT_CHAIN]))
        sh.ok(_nsx(ns, [*ipt, "-X", IPT_CHAIN]))
    if mangle_created:
        # iptables-nft leaves its (now empty) table behind; drop it if we created it and nothing else is in it
        out = sh.run(_nsx(ns, ["nft", "list", "table", "ip", "mangle"]), check=False)
        if out and not any(line.strip() and not line.strip().startswith(("table", "chain", "type", "}", "#"))
                           for line in out.splitlines()):
            sh.ok(_nsx(ns, ["nft", "delete", "table", "ip", "mangle"]))


def _is_emulator(pid: int) -> bool:
    try:
        return EMULATOR in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def _stop_pid(pid: int, timeout: float = 3.0) -> None:
    if not _is_emulator(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)  # our child: reap it
            if done:
                return
        except ChildProcessError:
            if not Path(f"/proc/{pid}").exists() or _zombie(pid):
                return
        time.sleep(0.02)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _emulator_pids(ns: str) -> list[int]:
    out = sh.run(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in out.split() if p.isdigit() and _is_emulator(int(p))]


def _has_table(ns: str, family: str, table: str) -> bool:
    out = sh.run(_nsx(ns, ["nft", "list", "tables"]), check=False) if sh.which("nft") else ""
    return f"table {family} {table}" in out


def _readback_ns(ns: str, dev: str, scope: str, state: Mapping[str, Any] | None) -> str:
    parts = []
    for c in render_readback(dev, scope):
        parts.append(f"$ {shlex.join(c)}\n{sh.run(_nsx(ns, c), check=False).rstrip()}")
    if state and state.get("mechanism") == "userspace-nfqueue":
        backend = state.get("rule_backend")
        cmd = ["nft", "list", "table", "inet", NFT_TABLE] if backend == "nft" else \
            ["iptables", "-w", "-t", "mangle", "-S", IPT_CHAIN, "-v"]
        parts.append(f"$ {shlex.join(cmd)}\n{sh.run(_nsx(ns, cmd), check=False).rstrip()}")
        report = Path(state["report"])
        alive = _is_emulator(int(state["pid"]))
        text = report.read_text().rstrip() if report.exists() else "(no report)"
        parts.append(f"# {EMULATOR} pid {state['pid']} {'running' if alive else 'NOT RUNNING'}\n{text}")
    return "\n".join(parts)


def manifest_object(sc: Scenario, mechanism: str, readback: str) -> dict:
    """The manifest's `netem` object."""
    return {"scenario": sc.name, "mechanism": mechanism, "delay_ms": sc.delay_ms, "jitter_ms": sc.jitter_ms,
            "loss_pct": sc.loss_pct, "rate_mbit": sc.rate_mbit, "scope": sc.scope, "readback": readback}


def apply_local(node_namespaces: Sequence[str], dev: str, scenario: Scenario | str,
                scope_peers: Mapping[str, Sequence[str]] | Sequence[str] | None = None, *,
                seed: int | None = None, queue: int = QUEUE_NUM, runner: Runner = sh.run) -> dict:
    """Put `scenario` on `dev`'s egress in every node namespace; returns the manifest `netem` object.

    scope_peers: for scope inter-group, the destinations to impair: {namespace: [node IP or CIDR, ...]} or one
    list for all nodes (a scenario with scope all but scope_peers given becomes inter-group). Anything left by an
    earlier apply is reverted first. On failure everything applied so far is reverted. seed (userspace emulator
    only; node k gets seed + k) makes the loss/jitter draws reproducible, for tests."""
    sc = resolve(scenario) if isinstance(scenario, str) else scenario
    if scope_peers is not None and sc.scope == "all":
        sc = replace(sc, scope="inter-group")
    revert_local(node_namespaces, dev)
    mechanism = mechanism_for(sc)
    if sc.untouched:
        return manifest_object(sc, "none", "")
    _state_dir().mkdir(parents=True, exist_ok=True)
    readbacks = []
    try:
        for idx, ns in enumerate(node_namespaces):
            peers = _peers_for(ns, scope_peers)
            state: dict[str, Any] = {"ns": ns, "dev": dev, "scenario": asdict(sc), "mechanism": mechanism}
            _state_file(ns).write_text(json.dumps(state))  # so revert_local finds partial work
            if mechanism == "userspace-nfqueue":
                _run_all(ns, render_apply(sc, dev, peers, impair=False), runner)  # the rate part (htb)
                state["mangle_created"] = not _has_table(ns, "ip", "mangle")
                report = _state_dir() / f"{ns}.report.json"
                proc = _start_emulator(ns, sc, report, queue, None if seed is None else seed + idx)
                state.update(pid=proc.pid, report=str(report))
                _state_file(ns).write_text(json.dumps(state))
                state["rule_backend"] = _install_rule(ns, dev, peers, queue, runner)
                _state_file(ns).write_text(json.dumps(state))
            else:
                _run_all(ns, render_apply(sc, dev, peers), runner)
            readbacks.append(f"## {ns}\n{_readback_ns(ns, dev, sc.scope, state)}")
    except BaseException:
        revert_local(node_namespaces, dev)
        raise
    return manifest_object(sc, mechanism, "\n".join(readbacks))


def readback_local(node_namespaces: Sequence[str], dev: str) -> str:
    """What is in force now (qdisc counters, rule counters, the emulator's report): call it after a run."""
    out = []
    for ns in node_namespaces:
        sf = _state_file(ns)
        state = json.loads(sf.read_text()) if sf.exists() else None
        scope = (state or {}).get("scenario", {}).get("scope", "all")
        out.append(f"## {ns}\n{_readback_ns(ns, dev, scope, state)}")
    return "\n".join(out)


def check_local(node_namespaces: Sequence[str], dev: str) -> str | None:
    """None if the applied condition is still in force everywhere, else why not (e.g. the emulator died)."""
    for ns in node_namespaces:
        sf = _state_file(ns)
        if not sf.exists():
            continue
        state = json.loads(sf.read_text())
        if state.get("mechanism") == "userspace-nfqueue" and not _is_emulator(int(state.get("pid", 0))):
            return f"netem emulator in {ns} is not running"
        qdisc = sh.run(_nsx(ns, ["tc", "qdisc", "show", "dev", dev]), check=False)
        sc = state.get("scenario", {})
        if state.get("mechanism") == "tc-netem" and "netem" not in qdisc:
            return f"no netem qdisc on {ns}/{dev}"
        if sc.get("rate_mbit") and "htb" not in qdisc:
            return f"no htb rate limit on {ns}/{dev}"
    return None


def revert_local(node_namespaces: Sequence[str], dev: str) -> None:
    """Remove qdiscs, rules and emulators from every node namespace (idempotent; namespaces that are gone are
    skipped). Order: rule first (packets stop being queued), then the emulator (it releases what it holds)."""
    existing = set(sh.run(["ip", "netns", "list"], check=False).split())
    for ns in node_namespaces:
        sf = _state_file(ns)
        state = json.loads(sf.read_text()) if sf.exists() else {}
        if ns in existing:
            _remove_rules(ns, bool(state.get("mangle_created")))
            pids = set(_emulator_pids(ns))
        else:
            pids = set()
        if state.get("pid"):
            pids.add(int(state["pid"]))
        for pid in pids:
            _stop_pid(pid)
        if ns in existing:
            sh.ok(_nsx(ns, render_revert(dev)[0]))
        sf.unlink(missing_ok=True)
        for suffix in (".report.json", ".report.err"):
            (_state_dir() / f"{ns}{suffix}").unlink(missing_ok=True)
