"""Link conditions on a cluster's nodes (substrates/clusters/link.py through ClusterProvider, the ssh substrate):
the testbed's tc commands on each node's uplink over the transport, readback, the check between runs, revert, a
kernel without sch_netem recorded unsupported with tc's message (never emulated), and the revert of a condition a
dead run left behind."""
from __future__ import annotations

import json

import pytest
from test_clusters import _provider

from edgebench.plan import netem
from edgebench.substrates.base import Unsupported
from edgebench.substrates.clusters import link
from edgebench.substrates.clusters.transport import Call

UNKNOWN = "Error: Specified qdisc kind is unknown."


def _uplinks(t, dev="eth0"):
    t.respond("ip -o -4 addr show", f"{dev}\n")


def _tc(t, node=None):
    return [c for c in t.calls if "tc " in c.text and "ip -o -4" not in c.text and (node is None or c.node == node)]


def test_a_delay_goes_on_every_node_s_uplink_as_root_and_comes_off_again(tmp_path):
    p, t, _ = _provider(tmp_path)
    _uplinks(t, "end0@if5")
    t.respond("qdisc show", "qdisc netem 8001: root refcnt 2 limit 10000 delay 10ms")
    sc = netem.resolve("custom", custom={"delay_ms": 10, "loss_pct": 1})
    obj = p.apply_netem(sc)
    names = [n.name for n in p.inventory.nodes]
    applied = [c for c in _tc(t) if "qdisc replace" in c.text]
    assert [c.node for c in applied] == names and all(c.sudo for c in applied)
    assert all("tc qdisc replace dev end0 root netem delay 10ms loss 1% limit" in c.text for c in applied)
    assert obj["mechanism"] == "tc-netem" and obj["delay_ms"] == 10 and obj["loss_pct"] == 1
    assert obj["readback"].count("delay 10ms") == len(names) and f"## {names[0]}/end0" in obj["readback"]
    state = json.loads((tmp_path / "cluster.json").read_text())["netem"]
    assert state["applied"] == {n: "end0" for n in names}
    assert p.conditions_problem() is None  # every qdisc show answers netem
    p.revert_conditions()
    deleted = [c for c in _tc(t) if "qdisc del" in c.text]
    assert [c.node for c in deleted] == names and all("tc qdisc del dev end0 root" in c.text for c in deleted)
    assert p.netem_readback() == "" and p.conditions_problem() is None  # nothing applied any more


def test_a_qdisc_gone_between_runs_is_said(tmp_path):
    p, t, _ = _provider(tmp_path)
    _uplinks(t)
    p.apply_netem(netem.resolve("custom", custom={"delay_ms": 5}))
    t.responses.insert(0, ("tc qdisc show dev eth0", (0, "qdisc fq_codel 0: root", "")))
    assert p.conditions_problem() == f"no netem qdisc on {p.inventory.nodes[0].name}/eth0"


def test_a_rate_alone_needs_no_netem(tmp_path):
    p, t, _ = _provider(tmp_path)
    _uplinks(t)
    obj = p.apply_netem(netem.resolve("custom", custom={"rate_mbit": 100}))
    texts = [c.text for c in _tc(t)]
    assert obj["mechanism"] == "none" and obj["rate_mbit"] == 100
    assert any("htb default 1" in x for x in texts) and not any(" netem " in x for x in texts)


def test_a_kernel_without_netem_makes_the_cell_unsupported_with_tc_s_words_and_leaves_nothing(tmp_path):
    p, t, _ = _provider(tmp_path)
    _uplinks(t)
    first, second = (n.name for n in p.inventory.nodes[:2])
    plain = t.run

    def run(node, command, sudo=False, timeout=900):  # the second node's kernel has no sch_netem
        if node.name == second and isinstance(command, str) and " netem " in command:
            t.calls.append(Call(node.name, command, sudo))
            return 2, "", UNKNOWN
        return plain(node, command, sudo=sudo, timeout=timeout)

    t.run = run
    with pytest.raises(Unsupported) as err:
        p.apply_netem(netem.resolve("custom", custom={"delay_ms": 10}))
    msg = str(err.value)
    assert f"node {second}" in msg and UNKNOWN in msg and "netem delay 10ms" in msg
    assert any("qdisc del dev eth0 root" in c.text for c in _tc(t, first))  # reverted where it was applied
    assert not any("qdisc" in c.text for c in _tc(t, p.inventory.nodes[2].name))  # never reached
    assert json.loads((tmp_path / "cluster.json").read_text())["netem"]["applied"] == {}


def test_scope_inter_group_is_the_testbed_s_and_says_so(tmp_path):
    p, t, _ = _provider(tmp_path)
    with pytest.raises(Unsupported, match="scope inter-group"):
        p.apply_netem(netem.resolve("custom", custom={"delay_ms": 10}, scope="inter-group"))
    assert not _tc(t)


def test_an_untouched_scenario_runs_nothing(tmp_path):
    p, t, _ = _provider(tmp_path)
    assert p.apply_netem(netem.resolve("custom", custom={}))["mechanism"] == "none"
    assert not t.calls


def test_the_next_teardown_reverts_what_a_dead_run_left(tmp_path):
    p, t, _ = _provider(tmp_path)
    _uplinks(t)
    p.apply_netem(netem.resolve("custom", custom={"delay_ms": 10}))
    t.calls.clear()
    removed = p.teardown()  # the run died: no revert_conditions, the next provision's teardown finds the state
    names = [n.name for n in p.inventory.nodes]
    assert [c.node for c in _tc(t) if "qdisc del" in c.text] == names
    assert all(f"link condition on {n}/eth0" in removed for n in names)


def test_no_interface_with_the_inventory_address_is_an_error_that_names_it(tmp_path):
    p, t, _ = _provider(tmp_path)
    node = p.inventory.nodes[0]
    with pytest.raises(Exception, match=f"no interface holds the node's inventory address {node.address}"):
        link.uplink(t, node)


def test_the_uplink_script_finds_the_address_exactly():
    import subprocess

    script = link.uplink_script("10.0.0.1")
    text = ("2: eth0    inet 10.0.0.11/24 brd 10.0.0.255 scope global eth0\\n"
            "3: end0    inet 10.0.0.1/24 brd 10.0.0.255 scope global end0\\n")
    fake = script.replace("ip -o -4 addr show", f"printf '{text}'")
    assert subprocess.run(["sh", "-c", fake], capture_output=True, text=True).stdout == "end0\n"


def test_http_s_client_and_server_are_pinned_on_clusters_as_on_the_testbed(tmp_path, monkeypatch):
    """The client on the first CPU its pod may use, the server on the second of its pod's, with taskset inside the
    pod; read once; not with EDGEBENCH_PIN_CPUS=0 or a pod on one CPU."""
    from edgebench.substrates.clusters.workload_pods import cpu_list

    assert cpu_list("0-2,5\n") == [0, 1, 2, 5] and cpu_list("3") == [3] and cpu_list("") == []
    p, t, k = _provider(tmp_path)
    p.provision()
    from edgebench.plan.catalog import resolve_cni

    p.install_cni(resolve_cni("flannel:vxlan"))
    asked = []
    plain = p.local

    def local(argv, input=None, check=True):
        if "Cpus_allowed_list" in " ".join(argv):
            asked.append(argv)
            return "0-3\n" if cpod in argv else "2-3\n"
        return plain(argv, input=input, check=check)

    p.local = local
    cpod = p.client("cross-node").pod
    assert cpod != p.server("cross-node").pod
    assert p.pinning() == {"client_cpu": 0, "server_cpu": 3}
    assert p.pinning() == {"client_cpu": 0, "server_cpu": 3} and len(asked) == 2  # read once
    client = p.pin(p.client("cross-node"), "client")
    assert client.cmd(["fortio", "load"])[-6:] == ["--", "taskset", "-c", "0", "fortio", "load"]
    assert p.pin(p.server("cross-node"), "server").cpu == 3
    assert "taskset" not in p.client("cross-node").cmd(["iperf3"])  # unpinned endpoints stay as they were
    monkeypatch.setenv("EDGEBENCH_PIN_CPUS", "0")
    assert p.pinning() is None and p.pin(client, "client") is client
    monkeypatch.delenv("EDGEBENCH_PIN_CPUS")
    p._pinned = None
    p.local = lambda argv, input=None, check=True: "1\n" if "Cpus_allowed_list" in " ".join(argv) else plain(argv)
    assert p.pinning() is None  # a pod on one CPU: unpinned


def test_readiness_waits_are_longer_where_a_node_s_cpu_is_emulated(tmp_path):
    """A qemu TCG node: the CNI's --timeout= and the workload pods' 300 s wait, EMULATED_WAIT_FACTOR times; a
    native cluster keeps them."""
    import dataclasses

    from edgebench.substrates.clusters.provider import EMULATED_WAIT_FACTOR, scaled_waits

    assert scaled_waits(["kubectl", "rollout", "status", "--timeout=600s"], 4)[-1] == "--timeout=2400s"
    assert scaled_waits(["x", "--timeout=5m", "--timeout-seconds=3"], 2) == ["x", "--timeout=10m", "--timeout-seconds=3"]
    assert scaled_waits(["--timeout=600s"], 1) == ["--timeout=600s"]
    p, t, k = _provider(tmp_path)
    assert p.wait_factor == 1
    p.inventory = dataclasses.replace(p.inventory, nodes=tuple(dataclasses.replace(n, cpu="emulated")
                                                               for n in p.inventory.nodes))
    assert p.wait_factor == EMULATED_WAIT_FACTOR > 1
    p.provision()
    from edgebench.plan.catalog import resolve_cni

    p.install_cni(resolve_cni("flannel:vxlan"))
    waits = [x for x in k.texts() if " wait " in f" {x} " and "--timeout=" in x]
    assert any(f"--timeout={300 * EMULATED_WAIT_FACTOR}s" in x and "edgebench.io/workload=true" in x for x in waits)
    assert any(f"--timeout={600 * EMULATED_WAIT_FACTOR}s" in x and "nodes --all" in x for x in waits), waits


@pytest.mark.parametrize("qdiscs,netem_on,rate,why", [
    ("qdisc htb 1: root\nqdisc netem 10: parent 1:10", True, True, None),
    ("qdisc htb 1: root", True, True, "no netem qdisc on n1/eth0"),
    ("qdisc netem 10: root", True, True, "no htb rate limit on n1/eth0"),
    ("qdisc htb 1: root", False, True, None),  # the userspace emulator impairs; htb carries the rate
    ("qdisc fq_codel 0: root", False, False, None),
])
def test_one_rule_says_which_qdisc_is_gone(qdiscs, netem_on, rate, why):
    """The rule both substrates' checks use (the cluster's link.problem, the testbed's check_local)."""
    assert netem.qdisc_problem(qdiscs, "n1/eth0", netem=netem_on, rate=rate) == why
