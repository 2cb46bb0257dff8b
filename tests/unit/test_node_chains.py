"""substrates/local/node_chains.py: which iptables chains a testbed node carries per CNI mode, and the
iptables-restore text that builds them (no root needed; tests/host/test_testbed.py builds them in namespaces)."""
from __future__ import annotations

import pytest

from edgebench.plan.catalog import resolve_cni
from edgebench.substrates.local import node_chains


@pytest.mark.parametrize("entry, sets", [
    ("host", ["kubelet", "kube-proxy", "flannel"]),  # the lab's kubeadm host cells run flannel
    ("flannel:vxlan", ["kubelet", "kube-proxy", "flannel"]),
    ("kube-router:bgp", ["kubelet", "kube-proxy", "kube-router"]),
    ("cilium:vxlan", ["kubelet", "cilium"]),  # replaces kube-proxy: no KUBE-FORWARD on its nodes
    ("calico:bgp", ["kubelet", "kube-proxy"]),  # Felix's chains were never captured: not invented
])
def test_each_mode_carries_the_kubelets_kube_proxys_unless_replaced_and_its_own(entry, sets):
    assert node_chains.sets_for(resolve_cni(entry)) == sets


def test_kube_proxys_chains_follow_the_cells_service_proxy():
    cm = resolve_cni("flannel:vxlan")
    assert "kube-proxy" in node_chains.sets_for(cm, "iptables") and "kube-proxy" in node_chains.sets_for(cm, "ipvs")
    assert node_chains.sets_for(cm, "nftables") == node_chains.sets_for(cm, "none") == ["kubelet", "flannel"]


def _blocks(text):
    out, table = {}, None
    for line in text.splitlines():
        if line.startswith("*"):
            table = line[1:]
            out[table] = []
        elif line != "COMMIT":
            out[table].append(line)
    return out


def test_the_restore_text_orders_the_hooks_as_a_real_node_lists_them():
    pods = ["10.244.1.11", "10.244.1.12"]
    text = node_chains.rules(["kubelet", "kube-proxy", "kube-router"], pods=pods, bridge="kube-bridge",
                             pod_ifs="veth+", service_cidr="10.96.0.0/16")
    filt = _blocks(text)["filter"]
    hook = {h: [ln.split(" -j ")[-1] for ln in filt if ln.startswith(f"-A {h} ")] for h in ("INPUT", "FORWARD", "OUTPUT")}
    assert hook["FORWARD"][:4] == ["KUBE-ROUTER-FORWARD", "ACCEPT", "ACCEPT", "ACCEPT"]  # netpol first
    assert hook["FORWARD"][4:] == ["KUBE-PROXY-FIREWALL", "KUBE-FORWARD", "KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES"]
    assert hook["INPUT"][0] == "KUBE-ROUTER-INPUT" and hook["INPUT"][-1] == "KUBE-FIREWALL"  # the kubelet's last
    assert hook["OUTPUT"] == ["KUBE-ROUTER-OUTPUT", "KUBE-PROXY-FIREWALL", "KUBE-SERVICES", "KUBE-FIREWALL"]
    pod_chains = [ln[1:].split()[0] for ln in filt if ln.startswith(":KUBE-POD-FW-")]
    assert len(pod_chains) == len(set(pod_chains)) == 2  # one per pod of the node
    # every chain a rule jumps to is declared in the same table, and every rule's chain is declared or built in
    declared = {ln[1:].split()[0] for ln in filt if ln.startswith(":")} | {"INPUT", "FORWARD", "OUTPUT"}
    targets = {ln.split(" -j ")[-1].split()[0] for ln in filt if " -j " in ln}
    assert targets - {"ACCEPT", "DROP", "RETURN", "MARK", "REJECT", "NFLOG"} <= declared
    assert {ln.split()[1] for ln in filt if ln.startswith("-A ")} <= declared
    assert "-d 10.96.0.0/16 -j RETURN" in " ".join(filt)  # the cell's own service range
    assert "nat" not in _blocks(text)  # nat chains are left out (a connection's first packet only)


def test_cilium_feeds_raw_and_mangle_and_names_the_testbeds_pod_veths():
    text = node_chains.rules(["kubelet", "cilium"], pods=[], bridge="cni0", pod_ifs="cali+",
                             service_cidr="10.96.0.0/16")
    blocks = _blocks(text)
    assert set(blocks) == {"raw", "mangle", "filter"}
    assert "-A PREROUTING -j CILIUM_PRE_mangle" in blocks["mangle"]
    assert any("-m socket --transparent" in ln for ln in blocks["mangle"])
    assert "-A CILIUM_FORWARD -i cali+ -j ACCEPT" in blocks["filter"]
    assert not any("KUBE-FORWARD" in ln for ln in blocks["filter"])


def test_a_chains_name_the_module_does_not_know_is_refused():
    import dataclasses
    cm = resolve_cni("flannel:vxlan")
    bad = dataclasses.replace(cm, local={**cm.local, "chains": "felix"})
    with pytest.raises(ValueError, match="local.chains 'felix'"):
        node_chains.sets_for(bad)


class _FakeTestbed:
    """Records the commands node_chains runs; `iptables-restore` fails in `failing_node` for `failing_text`."""

    def __init__(self, failing_node=None, failing_text=""):
        self.calls, self.failing_node, self.failing_text = [], failing_node, failing_text

    @staticmethod
    def node_ns(i):
        return f"fake-n{i}"

    def _run(self, argv, check=True, input=None):
        from edgebench import sh
        self.calls.append((list(argv), input))
        if "iptables-restore" in argv and argv[3] == self.node_ns(self.failing_node or 0) \
                and self.failing_text in (input or ""):
            raise sh.CommandError(argv, 2, "iptables-restore v1.8.9 (nf_tables): Couldn't load match `socket'")
        return ""


def test_a_set_the_kernel_cannot_build_is_left_out_of_every_node_and_recorded(monkeypatch):
    from edgebench import sh
    monkeypatch.setattr(sh, "which", lambda tool: f"/usr/sbin/{tool}")
    tb = _FakeTestbed(failing_node=2, failing_text="--transparent")
    out = node_chains.install(tb, resolve_cni("cilium:vxlan"), nodes=[1, 2], pods={1: [], 2: []}, bridge="cni0",
                              pod_ifs="cali+", service_cidr={1: "10.96.0.0/16", 2: "10.96.0.0/16"})
    assert out["kubelet"] == "built"
    assert out["cilium"].startswith("left out: iptables-restore: ") and "socket" in out["cilium"]
    # node 1 had taken the set before node 2 refused it: its rules and chains are taken out again
    undone = [argv for argv, _ in tb.calls if argv[3] == "fake-n1" and argv[4] == "iptables"]
    assert any("-D" in a and "CILIUM_PRE_mangle" in a for a in undone)
    assert any("-X" in a and "CILIUM_FORWARD" in a for a in undone)
    assert not any(argv[3] == "fake-n1" and "KUBE-FIREWALL" in " ".join(argv) for argv, _ in tb.calls
                   if argv[4] == "iptables")  # the kubelet's set, built, is left alone


def test_without_iptables_restore_every_set_is_recorded_left_out(monkeypatch):
    from edgebench import sh
    monkeypatch.setattr(sh, "which", lambda tool: None)
    tb = _FakeTestbed()
    out = node_chains.install(tb, resolve_cni("flannel:vxlan"), nodes=[1], pods={1: []}, bridge="cni0",
                              pod_ifs="veth+", service_cidr={1: "10.96.0.0/16"})
    assert set(out) == {"kubelet", "kube-proxy", "flannel"} and tb.calls == []
    assert all(v.startswith("left out: iptables-restore is not installed") for v in out.values())
