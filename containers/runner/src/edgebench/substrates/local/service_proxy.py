"""Service proxies on the local testbed: the kernel state each kube-proxy mode writes for a ClusterIP service, built
in every node namespace (catalog/service_proxies.yaml). This is the part of a Kubernetes distribution the testbed
models: which proxy implements services (iptables, nftables or IPVS kube-proxy, or none where the CNI replaces it).

  dnat      edgebench's plain rule in table ip edgebench_svc (datapath.py; the default, unchanged)
  iptables  nat chains KUBE-SERVICES -> KUBE-SVC-<hash> (statistic probability per endpoint) -> KUBE-SEP-<hash>
            (DNAT), KUBE-MARK-MASQ / KUBE-POSTROUTING masquerade (iptables-restore, the host's iptables backend)
  nftables  table ip kube-proxy: services chain with a verdict map on ip daddr . meta l4proto . th dport,
            service-<hash> chains choosing an endpoint with numgen, endpoint-<hash> chains that DNAT
  ipvs      dummy kube-ipvs0 holding the ClusterIPs, IPVS virtual services with masquerading real servers
            (ipvsadm), KUBE-POSTROUTING masquerade; needs ip_vs in the kernel, probed, never assumed
  none      nothing: the CNI's eBPF load balancer replaces kube-proxy; in the modes with the testbed's socket load
            balancer (sock_lb.py, Cilium's) a pod reaches a service by it alone, elsewhere pod-to-service runs are
            unsupported

Every builder takes the Testbed (its _ns / node_ns / nodes) and raises Unsupported with the reason where the kernel
or a tool is missing. Rule shapes follow kube-proxy's proxiers (sources kp-iptables, kp-nftables, kp-ipvs).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Sequence

from edgebench import sh
from edgebench.plan import catalog
from edgebench.substrates.base import Unsupported

POD_CIDR = "10.244.0.0/16"  # every node's pod CIDR is a /24 in it (datapath.pod_cidr); kube-proxy's clusterCIDR
MASQ_MARK = "0x4000"
NFT_TABLE = "kube-proxy"
SERVICE = "edgebench/svc"  # namespace/name of the one service pod-to-service runs use
MODES = tuple(catalog.service_proxies()["modes"])


def _hash(text: str) -> str:
    """kube-proxy's chain suffix: base32 of sha256, 16 characters."""
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:16]


def _nodes(tb, cluster: int | None = None) -> list[int]:
    return tb.cluster_nodes(cluster) if cluster else list(range(1, tb.nodes + 1))


# ---- checks (no side effects outside a scratch namespace) ----------------------------------------------------------
def _ipvs_reason(prefix: str) -> str | None:
    """None if this kernel has IPVS and ipvsadm can program it, else why not (probed in a scratch namespace)."""
    if sh.which("modprobe"):
        loaded, err = sh.ok(["modprobe", "ip_vs"])
    else:
        loaded, err = False, "modprobe is not installed"
    ns = f"{prefix}-probe"
    sh.ok(["ip", "netns", "del", ns])
    sh.run(["ip", "netns", "add", ns])
    try:
        present, _ = sh.ok(["ip", "netns", "exec", ns, "test", "-e", "/proc/net/ip_vs"])
        if not present:
            why = err.strip().splitlines()[-1] if (not loaded and err.strip()) else "no /proc/net/ip_vs"
            return f"kernel has no IPVS (ip_vs module: `modprobe ip_vs`: {why}; /proc/net/ip_vs is absent)"
        if not sh.which("ipvsadm"):
            return "the kernel has IPVS but ipvsadm is not installed (it programs the virtual services here)"
        good, err = sh.ok(["ip", "netns", "exec", ns, "ipvsadm", "-A", "-t", "192.0.2.1:80", "-s", "rr"])
        if not good:
            return f"IPVS cannot be programmed here (`ipvsadm -A -t 192.0.2.1:80 -s rr`: {err.strip()})"
        good, err = sh.ok(["ip", "netns", "exec", ns, "ip", "link", "add", "kube-ipvs0", "type", "dummy"])
        if not good:
            return f"kernel has no dummy interfaces for kube-ipvs0 ({err.strip()})"
        return None
    finally:
        sh.ok(["ip", "netns", "del", ns])


def _iptables_reason() -> str | None:
    for tool in ("iptables", "iptables-restore"):
        if not sh.which(tool):
            return f"{tool} is not installed (kube-proxy's iptables mode writes its rules with it)"
    return None


def never_measured(mode: str, cm: catalog.CniMode, path: str) -> bool:
    """Whether a run of `path` in a cell with service proxy `mode` is recorded unsupported on every testbed, before
    anything is measured (check: none where the CNI mode does not replace kube-proxy; add_service: pod-to-service
    under none). What depends on the machine's kernel (IPVS) is not known here."""
    return mode == "none" and (path == "pod-to-service" or not catalog.replaces_kube_proxy(cm.cni, cm.mode))


def check(tb, mode: str, cm: catalog.CniMode) -> None:
    """Raise Unsupported if the testbed cannot build `mode` for the cell's CNI mode here."""
    if mode not in MODES:
        raise Unsupported(f"unknown service proxy {mode!r}; known: {', '.join(MODES)}")
    if mode == "none" and never_measured(mode, cm, "pod-to-pod"):
        raise Unsupported(f"unsupported: service proxy none: {cm.key} does not replace kube-proxy, so no cluster runs it without a "
                          "service proxy (none is a cell only for CNI modes with kube_proxy_replacement)")
    reason = {"iptables": _iptables_reason, "ipvs": lambda: _ipvs_reason(tb.prefix) or _iptables_reason()}.get(
        mode, lambda: None)()
    if reason:
        raise Unsupported(f"unsupported: service proxy {mode}: {reason}")  # as Testbed.check words a datapath


# ---- install: the mode's fixed structure in every node ---------------------------------------------------------------
_IPT_BASE = [
    ":KUBE-SERVICES - [0:0]", ":KUBE-POSTROUTING - [0:0]", ":KUBE-MARK-MASQ - [0:0]", ":KUBE-NODEPORTS - [0:0]",
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
    f"-A KUBE-MARK-MASQ -j MARK --set-xmark {MASQ_MARK}/{MASQ_MARK}",
    f"-A KUBE-POSTROUTING -m mark ! --mark {MASQ_MARK}/{MASQ_MARK} -j RETURN",
    f"-A KUBE-POSTROUTING -j MARK --set-xmark {MASQ_MARK}/0x0",
    '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully',
]
_IPT_NODEPORTS = ('-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last '
                  'rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS')

_NFT_BASE = [
    f"add table ip {NFT_TABLE}",
    f"add chain ip {NFT_TABLE} mark-for-masquerade",
    f"add rule ip {NFT_TABLE} mark-for-masquerade mark set mark or {MASQ_MARK}",
    f"add chain ip {NFT_TABLE} masquerading",
    f"add rule ip {NFT_TABLE} masquerading mark and {MASQ_MARK} == 0 return",
    f"add rule ip {NFT_TABLE} masquerading mark set mark xor {MASQ_MARK}",
    f"add rule ip {NFT_TABLE} masquerading masquerade fully-random",
    f"add chain ip {NFT_TABLE} services",
    f"add chain ip {NFT_TABLE} nat-prerouting {{ type nat hook prerouting priority dstnat; }}",
    f"add rule ip {NFT_TABLE} nat-prerouting jump services",
    f"add chain ip {NFT_TABLE} nat-output {{ type nat hook output priority -100; }}",
    f"add rule ip {NFT_TABLE} nat-output jump services",
    f"add chain ip {NFT_TABLE} nat-postrouting {{ type nat hook postrouting priority srcnat; }}",
    f"add rule ip {NFT_TABLE} nat-postrouting jump masquerading",
    f"add map ip {NFT_TABLE} service-ips {{ type ipv4_addr . inet_proto . inet_service : verdict; }}",
    f"add rule ip {NFT_TABLE} services ip daddr . meta l4proto . th dport vmap @service-ips",
]


def _ipt_restore(tb, ns: str, lines: Sequence[str]) -> None:
    tb._ns(ns, "iptables-restore", "-w", "--noflush", input="*nat\n" + "\n".join(lines) + "\nCOMMIT\n")


def install(tb, mode: str, cm: catalog.CniMode) -> dict[str, Any]:
    """Build the mode's fixed structure in every node (after check()); returns {"mode", "readback"}."""
    check(tb, mode, cm)
    for i in _nodes(tb):
        ns = tb.node_ns(i)
        if mode in ("iptables", "ipvs"):
            _ipt_restore(tb, ns, [*_IPT_BASE, _IPT_NODEPORTS])
        if mode == "nftables":
            tb._ns(ns, "nft", "-f", "-", input="\n".join(_NFT_BASE) + "\n")
        if mode == "ipvs":
            tb._ip(ns, "link", "add", "kube-ipvs0", "type", "dummy")
            tb._ns(ns, "sysctl", "-qw", "net.ipv4.vs.conntrack=1")
    return {"mode": mode, "readback": readback(tb, mode)}


def readback(tb, mode: str) -> str:
    """What node 1 holds for the mode (the rules as the kernel lists them)."""
    ns = tb.node_ns(1)
    argv = {"dnat": ["nft", "list", "table", "ip", "edgebench_svc"],
            "iptables": ["iptables", "-w", "-t", "nat", "-S"],
            "nftables": ["nft", "list", "table", "ip", NFT_TABLE],
            "ipvs": ["ipvsadm", "-Ln"]}.get(mode)
    if not argv:
        return ""
    out = tb._run(["ip", "netns", "exec", ns, *argv], check=False) or ""
    if mode == "iptables":
        out = "\n".join(line for line in out.splitlines() if "KUBE-" in line)
    return out.strip()


# ---- services ---------------------------------------------------------------------------------------------------------
def add_service(tb, mode: str, cluster_ip: str, port: int, backends: Sequence[Any], cm_key: str = "",
                cluster: int | None = None) -> None:
    """ClusterIP:port -> backends (TCP and UDP) in the mode's shape, in every node of `cluster` (default: all)."""
    if mode == "none":
        raise Unsupported(f"service proxy none: {cm_key or 'the CNI'} replaces kube-proxy with an eBPF service load "
                          "balancer its agent loads; the testbed runs no CNI software, so it has no ClusterIP to dial")
    builder = {"iptables": _ipt_service, "nftables": _nft_service, "ipvs": _ipvs_service}[mode]
    for i in _nodes(tb, cluster):
        builder(tb, tb.node_ns(i), cluster_ip, port, [b.ip for b in backends])


def _ipt_service(tb, ns: str, cluster_ip: str, port: int, endpoints: list[str]) -> None:
    lines: list[str] = []
    rules: list[str] = []
    for proto in ("tcp", "udp"):
        name = f"{SERVICE}:p{port}-{proto}"
        svc = f"KUBE-SVC-{_hash(name + proto)}"
        lines.append(f":{svc} - [0:0]")
        rules.append(f'-A KUBE-SERVICES -d {cluster_ip}/32 -p {proto} -m comment --comment "{name} cluster IP" '
                     f"-m {proto} --dport {port} -j {svc}")
        rules.append(f'-A {svc} ! -s {POD_CIDR} -d {cluster_ip}/32 -p {proto} -m comment --comment "{name} cluster '
                     f'IP" -m {proto} --dport {port} -j KUBE-MARK-MASQ')
        n = len(endpoints)
        for k, ep in enumerate(endpoints):
            sep = f"KUBE-SEP-{_hash(name + proto + ep)}"
            lines.append(f":{sep} - [0:0]")
            pick = f"-m statistic --mode random --probability {1 / (n - k):.10f} " if k < n - 1 else ""
            rules.append(f'-A {svc} -m comment --comment "{name} -> {ep}:{port}" {pick}-j {sep}')
            rules.append(f'-A {sep} -s {ep}/32 -m comment --comment "{name}" -j KUBE-MARK-MASQ')
            rules.append(f'-A {sep} -p {proto} -m comment --comment "{name}" -m {proto} -j DNAT '
                         f"--to-destination {ep}:{port}")
    # kube-proxy keeps the nodeports jump last in KUBE-SERVICES: re-declaring the chain flushes it, then all again
    existing = [r for r in _ipt_chain_rules(tb, ns, "KUBE-SERVICES") if "KUBE-NODEPORTS" not in r]
    _ipt_restore(tb, ns, [":KUBE-SERVICES - [0:0]", *lines, *existing, *rules, _IPT_NODEPORTS])


def _ipt_chain_rules(tb, ns: str, chain: str) -> list[str]:
    out = tb._run(["ip", "netns", "exec", ns, "iptables", "-w", "-t", "nat", "-S", chain], check=False) or ""
    return [line for line in out.splitlines() if line.startswith("-A ")]


def _nft_service(tb, ns: str, cluster_ip: str, port: int, endpoints: list[str]) -> None:
    t = NFT_TABLE
    cmds = []
    for proto in ("tcp", "udp"):
        name = f"{SERVICE}:p{port}-{proto}"
        svc = f"service-{_hash(name + proto)[:8]}-edgebench-svc-{proto}-p{port}"
        cmds += [f"add chain ip {t} {svc}",
                 f"add rule ip {t} {svc} ip daddr {cluster_ip} {proto} dport {port} ip saddr != {POD_CIDR} "
                 "jump mark-for-masquerade"]
        picks = []
        for k, ep in enumerate(endpoints):
            chain = f"endpoint-{_hash(name + proto + ep)[:8]}-edgebench-svc-{proto}-p{port}__{ep}-{port}".replace(".", "_")
            cmds += [f"add chain ip {t} {chain}",
                     f"add rule ip {t} {chain} ip saddr {ep} jump mark-for-masquerade",
                     f"add rule ip {t} {chain} meta l4proto {proto} dnat to {ep}:{port}"]
            picks.append(f"{k} : goto {chain}")
        cmds += [f"add rule ip {t} {svc} numgen random mod {len(endpoints)} vmap {{ {', '.join(picks)} }}",
                 f"add element ip {t} service-ips {{ {cluster_ip} . {proto} . {port} : goto {svc} }}"]
    tb._ns(ns, "nft", "-f", "-", input="\n".join(cmds) + "\n")


def _ipvs_service(tb, ns: str, cluster_ip: str, port: int, endpoints: list[str]) -> None:
    tb._ip(ns, "addr", "replace", f"{cluster_ip}/32", "dev", "kube-ipvs0")
    for proto, flag in (("tcp", "-t"), ("udp", "-u")):
        tb._ns(ns, "ipvsadm", "-A", flag, f"{cluster_ip}:{port}", "-s", "rr")
        for ep in endpoints:
            tb._ns(ns, "ipvsadm", "-a", flag, f"{cluster_ip}:{port}", "-r", f"{ep}:{port}", "-m")
        # kube-proxy marks service traffic from outside the pod network (and hairpin) for masquerading
        _ipt_restore(tb, ns, [f"-I KUBE-SERVICES ! -s {POD_CIDR} -d {cluster_ip}/32 -p {proto} -m {proto} "
                              f"--dport {port} -j KUBE-MARK-MASQ"])


def flush(tb, mode: str) -> None:
    """Remove every service of the mode (its fixed structure stays)."""
    for i in _nodes(tb):
        ns = tb.node_ns(i)
        if mode in ("iptables", "ipvs"):
            out = tb._run(["ip", "netns", "exec", ns, "iptables", "-w", "-t", "nat", "-S"], check=False) or ""
            chains = [line.split()[1] for line in out.splitlines()
                      if line.startswith("-N KUBE-SVC-") or line.startswith("-N KUBE-SEP-")]
            if out.strip():
                _ipt_restore(tb, ns, [":KUBE-SERVICES - [0:0]", *[f":{c} - [0:0]" for c in chains],
                                      *[f"-X {c}" for c in chains], _IPT_NODEPORTS])
        if mode == "nftables":
            tb._run(["ip", "netns", "exec", ns, "nft", "delete", "table", "ip", NFT_TABLE], check=False)
            tb._ns(ns, "nft", "-f", "-", input="\n".join(_NFT_BASE) + "\n")
        if mode == "ipvs":
            tb._run(["ip", "netns", "exec", ns, "ipvsadm", "-C"], check=False)
            tb._run(["ip", "-n", ns, "addr", "flush", "dev", "kube-ipvs0"], check=False)
