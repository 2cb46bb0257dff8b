"""Link conditions on the local testbed: the scenarios resolved and rendered by netem.py, applied in each node
namespace (tc netem where the kernel has sch_netem, else the userspace NFQUEUE emulator), read back, checked and
reverted. See netem.py for what a scenario means."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
import uuid
from dataclasses import asdict, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from edgebench import sh
from edgebench.errors import EdgebenchError
from edgebench.substrates.local import processes
from edgebench.plan.netem import (EMULATOR, IPT_CHAIN, NFT_TABLE, QUEUE_NUM, Scenario, fmt_number, limit_for, manifest_object,
                    qdisc_problem, render_apply, render_readback, render_revert, resolve)

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
    argv = _nsx(ns, [_emulator_path(), "-queue", str(queue), "-delay-ms", fmt_number(sc.delay_ms),
                     "-jitter-ms", fmt_number(sc.jitter_ms), "-loss-pct", fmt_number(sc.loss_pct),
                     "-limit", str(limit_for(sc)), "-report", str(report)])
    if seed is not None:
        argv[-2:-2] = ["-seed", str(seed)]
    report.unlink(missing_ok=True)
    errlog = report.with_suffix(".err")
    with open(errlog, "w") as err:
        proc = sh.popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
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
            if not processes.running(pid):
                return
        time.sleep(0.02)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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
        why = qdisc_problem(qdisc, f"{ns}/{dev}", netem=state.get("mechanism") == "tc-netem",
                            rate=bool(state.get("scenario", {}).get("rate_mbit")))
        if why:
            return why
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
