"""Node tuning on a cluster's nodes (substrates/clusters/node_tuning.py through ClusterProvider, the ssh substrate):
each node's settings read and remembered before it changes, the profile written as root, read back, the refused
settings recorded unsupported with the node's message, tuned-adm where every node has it, MTU profiles refused on a
running cluster, and everything restored by the cell's revert or, after a crash, its teardown. The nodes are
simulated: a sysctl table, an uplink's features, rings and MTU per node."""
from __future__ import annotations

import json
import shlex

import pytest
from test_clusters import _provider

from edgebench.plan import tuning
from edgebench.substrates.base import Unsupported

RINGS = "Ring parameters for eth0:\nPre-set maximums:\nRX:\t\t{max}\nTX:\t\t{max}\nCurrent hardware settings:\n" \
        "RX:\t\t{rx}\nTX:\t\t{tx}\n"


class Nodes:
    """A transport whose nodes keep state: `sysctl -n/-w`, `ethtool -k/-K/-g/-G`, `ip -j link`, tuned-adm."""

    def __init__(self, names, read_only=("vm.", "kernel."), tuned=False, ring_max="4096", mtu=1500):
        self.sysctl = {n: {"net.core.rmem_max": "212992", "net.core.wmem_max": "212992",
                           "net.ipv4.tcp_window_scaling": "1", "net.ipv4.tcp_sack": "1",
                           "net.ipv4.tcp_max_syn_backlog": "512", "net.core.somaxconn": "4096",
                           "vm.dirty_ratio": "20", "vm.dirty_background_ratio": "10", "vm.swappiness": "60"}
                       for n in names}
        self.features = {n: {"gro": "off", "tso": "on"} for n in names}
        self.rings = {n: {"rx": "256", "tx": "256"} for n in names}
        self.read_only, self.tuned, self.ring_max, self.mtu = read_only, tuned, ring_max, mtu
        self.active = {n: "balanced" for n in names}
        self.calls: list[tuple[str, str, bool]] = []

    def put_file(self, *a, **k):
        raise AssertionError("tuning copies no file")

    def run(self, node, command, sudo=False, timeout=900):
        text = command if isinstance(command, str) else shlex.join(command)
        self.calls.append((node.name, text, sudo))
        n = node.name
        if "ip -o -4 addr show" in text:
            return 0, "eth0\n", ""
        if text.startswith("command -v tuned-adm"):
            return (0, "/usr/sbin/tuned-adm\n", "") if self.tuned else (1, "", "")
        argv = list(command) if not isinstance(command, str) else shlex.split(command)
        if argv[:2] == ["sysctl", "-n"]:
            v = self.sysctl[n].get(argv[2])
            return (0, v + "\n", "") if v is not None else (255, "", f"sysctl: cannot stat /proc/sys/{argv[2]}")
        if argv[:2] == ["sysctl", "-w"]:
            key, value = argv[2].split("=", 1)
            if key.startswith(self.read_only):
                return 255, "", f'sysctl: setting key "{key}": Read-only file system'
            self.sysctl[n][key] = value
            return 0, f"{key} = {value}\n", ""
        if argv[:2] == ["ethtool", "-k"]:
            return 0, "".join(f"{tuning.ETHTOOL_FEATURES[f]}: {v}\n" for f, v in self.features[n].items()), ""
        if argv[:2] == ["ethtool", "-K"]:
            self.features[n].update(zip(argv[3::2], argv[4::2]))
            return 0, "", ""
        if argv[:2] == ["ethtool", "-g"]:
            return 0, RINGS.format(max=self.ring_max, **self.rings[n]), ""
        if argv[:2] == ["ethtool", "-G"]:
            self.rings[n].update(zip(argv[3::2], argv[4::2]))
            return 0, "", ""
        if argv[:3] == ["ip", "-j", "link"]:
            return 0, json.dumps([{"ifname": "eth0", "mtu": self.mtu}]), ""
        if argv[:2] == ["tuned-adm", "active"]:
            return 0, f"Current active profile: {self.active[n]}\n", ""
        if argv[:2] == ["tuned-adm", "profile"]:
            self.active[n] = argv[2]
            ours = tuning.profile(argv[2])["sysctl"] if argv[2] in tuning.profile_names() else {}
            for k, v in ours.items():
                self.sysctl[n][k] = tuning.target_value(tuning.as_text(v), self.sysctl[n].get(k))
            return 0, "", ""
        if argv[:2] == ["tuned-adm", "verify"]:
            return 0, "Verification succeeded, current system settings match the preset profile.\n", ""
        raise AssertionError(f"unexpected command on {n}: {text}")


def _setup(tmp_path, **kw):
    p, _, _ = _provider(tmp_path)
    nodes = Nodes([n.name for n in p.inventory.nodes], **kw)
    p.transport = nodes
    return p, nodes


def _state(tmp_path):
    return json.loads((tmp_path / "cluster.json").read_text()).get("tuning")


def test_a_profile_goes_on_every_node_as_root_reads_back_and_comes_off_again(tmp_path):
    p, nodes = _setup(tmp_path)
    before = json.loads(json.dumps(nodes.sysctl))
    obj = p.apply_tuning("kernel_optimizations")
    assert obj["requested"] == tuning.requested("kernel_optimizations") and obj["unsupported"] == {}
    assert obj["readback"]["net.core.rmem_max"] == "16777216" and obj["readback"]["net.ipv4.tcp_sack"] == "0"
    assert tuning.validate(obj) == (True, None)
    writes = [c for c in nodes.calls if c[1].startswith("sysctl -w")]
    assert {c[0] for c in writes} == {n.name for n in p.inventory.nodes} and all(c[2] for c in writes)
    state = _state(tmp_path)
    assert set(state["nodes"]) == {n.name for n in p.inventory.nodes}
    assert state["nodes"][p.inventory.nodes[0].name]["snapshot"]["net.ipv4.tcp_sack"] == "1"
    p.revert_conditions()
    assert nodes.sysctl == before
    assert _state(tmp_path) == {} and any(x.startswith("tuning kernel_optimizations on") for x in p.log)
    assert not [x for x in p.log if x.startswith("tuning not restored")]


def test_a_key_the_node_refuses_is_unsupported_with_its_words_and_the_rest_applies(tmp_path):
    p, nodes = _setup(tmp_path)
    obj = p.apply_tuning("latency-performance")  # tuned profile, no tuned-adm on the nodes: sysctls + host unsupported
    first = p.inventory.nodes[0].name
    assert obj["unsupported"]["vm.dirty_ratio"].startswith(f"{first}: `sysctl -w vm.dirty_ratio=10`: ")
    assert "Read-only file system" in obj["unsupported"]["vm.dirty_ratio"]
    assert "no tuned-adm on" in obj["unsupported"]["cpu_governor"]
    assert tuning.validate(obj) == (True, None)  # nothing in force that was not asked


def test_tuned_adm_applies_a_tuned_profile_where_every_node_has_it_and_restores_the_previous_one(tmp_path):
    p, nodes = _setup(tmp_path, read_only=(), tuned=True)
    obj = p.apply_tuning("network-throughput")
    assert set(nodes.active.values()) == {"network-throughput"}
    assert not any(c[1].startswith("sysctl -w") for c in nodes.calls)  # tuned-adm wrote them
    assert obj["unsupported"] == {} and obj["readback"]["cpu_governor"] == obj["requested"]["cpu_governor"]
    assert obj["readback"]["net.core.somaxconn"] == "4096"  # ">=2048" kept the higher value
    assert tuning.validate(obj) == (True, None)
    p.revert_conditions()
    assert set(nodes.active.values()) == {"balanced"}


def test_rings_are_clamped_to_the_nic_and_features_set(tmp_path):
    p, nodes = _setup(tmp_path, ring_max="1024")
    obj = p.apply_tuning("nic_optimizations")
    assert set(nodes.features[p.inventory.nodes[1].name].values()) == {"on"}
    assert {r["rx"] for r in nodes.rings.values()} == {"1024"}
    assert "maximum is 1024" in obj["unsupported"]["ethtool.ring.rx"]
    assert obj["readback"]["ethtool.gro"] == "on" and tuning.validate(obj) == (True, None)
    p.revert_conditions()
    assert {r["rx"] for r in nodes.rings.values()} == {"256"} and {f["gro"] for f in nodes.features.values()} == {"off"}


def test_a_write_the_node_does_not_keep_is_unsupported_with_what_it_reads_back(tmp_path):
    """As on the local lab's nspawn nodes: `sysctl -w net.core.rmem_max=...` exits 0 and the machine's value stays."""
    p, nodes = _setup(tmp_path)
    last = p.inventory.nodes[-1].name
    plain = nodes.run

    def run(node, command, sudo=False, timeout=900):  # the last node keeps its old socket buffer cap
        if node.name == last and not isinstance(command, str) and list(command)[:2] == ["sysctl", "-w"] \
                and command[2].startswith("net.core.rmem_max"):
            return 0, "", ""
        return plain(node, command, sudo=sudo, timeout=timeout)

    nodes.run = run
    obj = p.apply_tuning("kernel_optimizations")
    assert obj["unsupported"]["net.core.rmem_max"] == (
        f"{last}: `sysctl -w net.core.rmem_max=16777216` exited 0 but the node reads back 212992 (a setting its "
        "network namespace does not keep)")
    assert "net.core.rmem_max" not in obj["readback"] and tuning.validate(obj) == (True, None)


def test_a_setting_that_drifts_after_apply_makes_the_runs_invalid(tmp_path):
    from edgebench.substrates.clusters import node_tuning

    p, nodes = _setup(tmp_path)
    obj = p.apply_tuning("kernel_optimizations")
    assert tuning.validate(obj) == (True, None)
    last = p.inventory.nodes[-1].name
    nodes.sysctl[last]["net.core.rmem_max"] = "212992"  # something on the node set it back between runs
    state = _state(tmp_path)
    again = {**obj, "readback": node_tuning.readback(p.transport, p.inventory.nodes, state, obj["requested"],
                                                     obj["unsupported"])}
    assert again["readback"]["net.core.rmem_max"].startswith("mixed: ")
    valid, reason = tuning.validate(again)
    assert not valid and "net.core.rmem_max" in reason


def test_an_mtu_profile_is_refused_on_a_running_cluster_unless_already_in_force(tmp_path):
    p, nodes = _setup(tmp_path)
    with pytest.raises(Unsupported, match="does not change the MTU of a running cluster"):
        p.apply_tuning("mtu-9000")
    assert not any(c[1].startswith(("ip link set", "sysctl -w")) for c in nodes.calls)
    obj = p.apply_tuning("mtu-1500")
    assert obj["readback"]["mtu"] == "1500" and tuning.validate(obj) == (True, None)


def test_a_crash_after_apply_is_restored_by_the_teardown(tmp_path):
    p, nodes = _setup(tmp_path)
    before = json.loads(json.dumps(nodes.sysctl))
    p.apply_tuning("kernel_optimizations")
    p2, _ = _setup(tmp_path)  # a new process for the teardown phase: the state file is all it has
    p2.transport = nodes
    removed = p2.teardown()
    assert nodes.sysctl == before and any(x.startswith("tuning kernel_optimizations on") for x in removed)


def test_default_settings_changes_nothing(tmp_path):
    p, nodes = _setup(tmp_path)
    obj = p.apply_tuning("default_settings")
    assert obj == {"profile": "default_settings", "requested": {}, "readback": {}, "unsupported": {}}
    assert nodes.calls == []


def test_one_reading_of_ethtool_keys_for_namespaces_and_nodes():
    """plan/tuning.ethtool_values: the testbed's namespaces and a cluster's nodes read snapshot keys the same way."""
    keys = ["net.core.rmem_max", "ethtool.gro", "ethtool.tso", "ethtool.ring.rx", "ethtool.ring.tx"]
    assert tuning.ethtool_keys(keys) == (True, True) and tuning.ethtool_keys(keys[:1]) == (False, False)
    feats = tuning.parse_ethtool_features("Features for eth0:\ngeneric-receive-offload: on\n"
                                          "tcp-segmentation-offload: off [fixed]\n")
    rings = tuning.parse_ethtool_rings("Pre-set maximums:\nRX:\t4096\nTX:\t4096\nCurrent hardware settings:\n"
                                       "RX:\t256\nTX:\t512\n")["current"]
    got = tuning.ethtool_values(keys, feats, rings)
    assert got == {"ethtool.gro": "on", "ethtool.tso": "off", "ethtool.ring.rx": "256", "ethtool.ring.tx": "512"}
    assert tuning.ethtool_values(keys, {}, {}) == {}
