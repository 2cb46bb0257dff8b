"""The iptables chains a real node carries beside its CNI's datapath, built in every testbed node so that a packet
pays for the rules it passes as it does on a real node (issue 43: on the local lab's kube-router node 4 % of a UDP
sender's samples were in nft_do_chain; the testbed had no filter chain at all).

The sets, as captured with iptables-save on the local lab's kubeadm v1.33 nodes (iptables 1.8.9, nf_tables backend;
docs/lab-vs-testbed.md, "The nodes' chains"); the cnis.yaml mode's `local.chains` names the CNI's set:

  kubelet      filter: KUBE-FIREWALL (drop non-loopback sources to 127/8) from INPUT and OUTPUT. Every node.
  kube-proxy   filter: KUBE-PROXY-FIREWALL, KUBE-NODEPORTS, KUBE-EXTERNAL-SERVICES, KUBE-SERVICES jumps (most only
               for new connections) from INPUT, FORWARD and OUTPUT, and KUBE-FORWARD (drop invalid, accept the
               masquerade mark, accept established). Where kube-proxy runs: not beside a CNI mode that replaces it
               (cni_installs.yaml kube_proxy_replacement).
  flannel      filter: FLANNEL-FWD (accept from and to the cluster's pod CIDR) from FORWARD.
  kube-router  filter: KUBE-ROUTER-INPUT/-FORWARD/-OUTPUT first in their hooks, a KUBE-POD-FW-<hash> chain per pod
               of the node (stateful accept, invalid drop, the default network policy, log and reject the rest),
               KUBE-NWPLCY-DEFAULT, and FORWARD's accept rules for the node's uplink and the pod bridge.
  cilium       raw: CILIUM_PRE_raw / CILIUM_OUTPUT_raw (notrack for proxy traffic); mangle: CILIUM_PRE_mangle (a
               socket lookup per packet entering the node: the transparent-proxy mark) and CILIUM_POST_mangle;
               filter: CILIUM_INPUT / CILIUM_FORWARD / CILIUM_OUTPUT.

Left out: the nat tables' chains (a NAT chain is walked by a connection's first packet only; the testbed's service
DNAT stays datapath.py's or service_proxy.py's), kube-proxy's nfacct match on invalid packets (it needs an nfacct
object; the rule keeps its conntrack test), kube-router's `-m physdev --physdev-is-bridged` twin of each per-pod
jump (the physdev match loads br_netfilter on a kernel built with modules, which would change every bridge of the
machine for the rest of the sweep; the plain jump before it stays) and the cilium agent's pod-interface names (the
testbed's ptp pods' host veths, cali<i><j>, stand for lxc+).

Each set goes in with one `iptables-restore --noflush` per node and table set; a set the kernel or the tools cannot
build (no iptables-restore, a match module missing) is left out of every node and recorded in the cell's state with
the message, never replaced by another.
"""

from __future__ import annotations

import base64
import hashlib

from edgebench import sh
from edgebench.plan import catalog
from edgebench.plan.catalog import CniMode

POD_NET = "10.244.0.0/16"  # the cluster's pod CIDR (datapath.pod_cidr: a /24 per node in it)
SETS = ("kubelet", "kube-proxy", "flannel", "kube-router", "cilium")


def sets_for(cm: CniMode, service_proxy: str = "dnat") -> list[str]:
    """The chain sets a kubeadm node running this CNI mode carries: kubelet's; kube-proxy's unless the mode replaces
    it or the cell's service proxy (service_proxy.py) is one without these chains (kube-proxy's nftables mode keeps
    its own table; none runs no kube-proxy); and the mode's own (`local.chains`)."""
    out = ["kubelet"]
    if not catalog.replaces_kube_proxy(cm.cni, cm.mode, "kubeadm") and service_proxy not in ("nftables", "none"):
        out.append("kube-proxy")
    own = cm.local.get("chains")
    if own:
        if own not in SETS:
            raise ValueError(f"cnis.yaml {cm.key}: local.chains {own!r} is not one of {', '.join(SETS)}")
        out.append(own)
    return out


def _pod_chain(pod: str) -> str:
    return "KUBE-POD-FW-" + base64.b32encode(hashlib.sha256(pod.encode()).digest()).decode()[:16]


def rules(sets: list[str], *, pods: list[str], bridge: str, pod_ifs: str, service_cidr: str) -> str:
    """The iptables-restore input of these sets for one node (`pods`: its pod addresses; `bridge`: its pod bridge;
    `pod_ifs`: an interface pattern for its pods' host-side veths), hooks in the order a real node lists them."""
    tables: dict[str, dict[str, list[str]]] = {"raw": {}, "mangle": {}, "filter": {}}
    hooks: dict[tuple[str, str], list[str]] = {}

    def chain(table: str, name: str, *body: str) -> None:
        tables[table].setdefault(name, []).extend(f"-A {name} {r}" for r in body)

    def hook(table: str, builtin: str, *body: str) -> None:
        hooks.setdefault((table, builtin), []).extend(f"-A {builtin} {r}" for r in body)

    new = "-m conntrack --ctstate NEW"
    if "kube-router" in sets:  # its netpol jumps come first in each filter hook
        chain("filter", "KUBE-NWPLCY-DEFAULT", "-j MARK --set-xmark 0x10000/0x10000")
        fwd, inp, out = [], [f"-d {service_cidr} -j RETURN",
                             "-p tcp -m addrtype --dst-type LOCAL -m multiport --dports 30000:32767 -j RETURN",
                             "-p udp -m addrtype --dst-type LOCAL -m multiport --dports 30000:32767 -j RETURN"], []
        for ip in pods:
            pc = _pod_chain(ip)
            chain("filter", pc, "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
                  "-m conntrack --ctstate INVALID -j DROP",
                  f"-d {ip}/32 -m addrtype --src-type LOCAL -j ACCEPT",
                  f"-s {ip}/32 -j KUBE-NWPLCY-DEFAULT", f"-d {ip}/32 -j KUBE-NWPLCY-DEFAULT",
                  "-m mark ! --mark 0x10000/0x10000 -m limit --limit 10/min --limit-burst 10 -j NFLOG --nflog-group 100",
                  "-m mark ! --mark 0x10000/0x10000 -j REJECT --reject-with icmp-port-unreachable",
                  "-j MARK --set-xmark 0x0/0x10000", "-j MARK --set-xmark 0x20000/0x20000")
            fwd += [f"-d {ip}/32 -j {pc}", f"-s {ip}/32 -j {pc}"]  # (its physdev twins: see the module's doc)
            inp.append(f"-s {ip}/32 -j {pc}")
            out += [f"-d {ip}/32 -j {pc}", f"-s {ip}/32 -j {pc}"]
        accept = "-m mark --mark 0x20000/0x20000 -j ACCEPT"
        chain("filter", "KUBE-ROUTER-FORWARD", *fwd, accept)
        chain("filter", "KUBE-ROUTER-INPUT", *inp, accept)
        chain("filter", "KUBE-ROUTER-OUTPUT", *out, accept)
        hook("filter", "INPUT", "-j KUBE-ROUTER-INPUT")
        hook("filter", "FORWARD", "-j KUBE-ROUTER-FORWARD", "-o eth0 -j ACCEPT", f"-o {bridge} -j ACCEPT",
             f"-i {bridge} -j ACCEPT")
        hook("filter", "OUTPUT", "-j KUBE-ROUTER-OUTPUT")
    if "cilium" in sets:  # its feeders come first too
        chain("raw", "CILIUM_PRE_raw", "-m mark --mark 0x200/0xf00 -j CT --notrack")
        chain("raw", "CILIUM_OUTPUT_raw", *(f"-o {dev} -m mark --mark {m} -j CT --notrack"
                                            for m in ("0xa00/0xfffffeff", "0x800/0xe00")
                                            for dev in (pod_ifs, "cilium_host")))
        hook("raw", "PREROUTING", "-j CILIUM_PRE_raw")
        hook("raw", "OUTPUT", "-j CILIUM_OUTPUT_raw")
        chain("mangle", "CILIUM_PRE_mangle", "! -o lo -m socket --transparent -m mark ! --mark 0xe00/0xf00 "
              "-m mark ! --mark 0x800/0xf00 -j MARK --set-xmark 0x200/0xffffffff")
        chain("mangle", "CILIUM_POST_mangle")
        hook("mangle", "PREROUTING", "-j CILIUM_PRE_mangle")
        hook("mangle", "POSTROUTING", "-j CILIUM_POST_mangle")
        chain("filter", "CILIUM_FORWARD", "-o cilium_host -j ACCEPT", "-i cilium_host -j ACCEPT",
              f"-i {pod_ifs} -j ACCEPT", "-i cilium_net -j ACCEPT")
        chain("filter", "CILIUM_INPUT", "-m mark --mark 0x200/0xf00 -j ACCEPT")
        chain("filter", "CILIUM_OUTPUT", "-m mark --mark 0xa00/0xe00 -j ACCEPT", "-m mark --mark 0x800/0xe00 -j ACCEPT",
              "-m mark ! --mark 0xe00/0xf00 -m mark ! --mark 0xd00/0xf00 -m mark ! --mark 0x400/0xf00 "
              "-m mark ! --mark 0xa00/0xe00 -m mark ! --mark 0x800/0xe00 -m mark ! --mark 0xf00/0xf00 "
              "-j MARK --set-xmark 0xc00/0xf00")
        hook("filter", "INPUT", "-j CILIUM_INPUT")
        hook("filter", "FORWARD", "-j CILIUM_FORWARD")
        hook("filter", "OUTPUT", "-j CILIUM_OUTPUT")
    if "kube-proxy" in sets:
        for name in ("KUBE-PROXY-FIREWALL", "KUBE-NODEPORTS", "KUBE-EXTERNAL-SERVICES", "KUBE-SERVICES"):
            chain("filter", name)
        chain("filter", "KUBE-FORWARD", "-m conntrack --ctstate INVALID -j DROP",
              "-m mark --mark 0x4000/0x4000 -j ACCEPT", "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT")
        hook("filter", "INPUT", f"{new} -j KUBE-PROXY-FIREWALL", "-j KUBE-NODEPORTS",
             f"{new} -j KUBE-EXTERNAL-SERVICES")
        hook("filter", "FORWARD", f"{new} -j KUBE-PROXY-FIREWALL", "-j KUBE-FORWARD", f"{new} -j KUBE-SERVICES",
             f"{new} -j KUBE-EXTERNAL-SERVICES")
        hook("filter", "OUTPUT", f"{new} -j KUBE-PROXY-FIREWALL", f"{new} -j KUBE-SERVICES")
    if "flannel" in sets:
        chain("filter", "FLANNEL-FWD", f"-s {POD_NET} -j ACCEPT", f"-d {POD_NET} -j ACCEPT")
        hook("filter", "FORWARD", "-j FLANNEL-FWD")
    if "kubelet" in sets:  # last in INPUT and OUTPUT
        chain("filter", "KUBE-FIREWALL", "! -s 127.0.0.0/8 -d 127.0.0.0/8 -m conntrack ! --ctstate "
              "RELATED,ESTABLISHED,DNAT -j DROP")
        hook("filter", "INPUT", "-j KUBE-FIREWALL")
        hook("filter", "OUTPUT", "-j KUBE-FIREWALL")
    text = []
    for table, chains in tables.items():
        body = [r for rs in chains.values() for r in rs] + [r for (t, _), rs in hooks.items() if t == table for r in rs]
        if chains or body:
            text += [f"*{table}", *(f":{c} - [0:0]" for c in chains), *body, "COMMIT"]
    return "\n".join(text) + "\n"


def install(tb, cm: CniMode, *, nodes: list[int], pods: dict[int, list[str]], bridge: str, pod_ifs: str,
            service_cidr: dict[int, str], service_proxy: str = "dnat") -> dict[str, str]:
    """Build the mode's sets in these nodes of testbed `tb`; returns {set: "built"} or {set: "left out: why"}."""
    wanted = sets_for(cm, service_proxy)
    if sh.which("iptables-restore") is None:
        return {s: "left out: iptables-restore is not installed (apt-get install iptables)" for s in wanted}
    out = {}
    for s in wanted:
        texts = {i: rules([s], pods=pods.get(i, []), bridge=bridge, pod_ifs=pod_ifs, service_cidr=service_cidr[i])
                 for i in nodes}
        why = None
        for i in nodes:
            try:
                tb._run(["ip", "netns", "exec", tb.node_ns(i), "iptables-restore", "-w", "--noflush"], input=texts[i])
            except sh.CommandError as exc:
                why = "; ".join(sh.error_lines(exc.stderr)) or f"exit {exc.returncode}"
                break
        if why:  # the set goes from every node: a node never carries half of one
            for i in nodes:
                _flush(tb, tb.node_ns(i), texts[i])
            out[s] = f"left out: iptables-restore: {why}"
        else:
            out[s] = "built"
    return out


def _flush(tb, ns: str, text: str) -> None:
    """Take one set's chains out of a node again (its hooks' jumps first, then its own chains)."""
    table = None
    for line in text.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith("-A ") and table:
            tb._run(["ip", "netns", "exec", ns, "iptables", "-w", "-t", table, "-D", *line[3:].split()], check=False)
    for line in text.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":") and table:
            tb._run(["ip", "netns", "exec", ns, "iptables", "-w", "-t", table, "-X", line[1:].split()[0]], check=False)
