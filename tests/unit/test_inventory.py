"""Inventory validation (edgebench.substrates.clusters.inventory): the lab overlay's format, one clear SpecError per problem."""
from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml

from edgebench.substrates.clusters import inventory
from edgebench.errors import SpecError

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "kustomize" / "overlays" / "lab" / "inventory.yaml"
GOOD = {"target": "lab", "nodes": [
    {"name": "pi-server-1", "address": "192.0.2.11", "arch": "arm64", "role": "server", "user": "edgebench"},
    {"name": "pi-agent-1", "address": "192.0.2.12", "arch": "arm64", "role": "agent", "user": "edgebench"},
    {"name": "x86-agent-1", "address": "192.0.2.21", "arch": "amd64", "role": "agent", "user": "edgebench", "port": 22},
]}


def test_lab_example_loads():
    inv = inventory.load(LAB)
    assert inv.target == "lab"
    assert inv.server.name == "pi-server-1"
    assert [n.name for n in inv.agents] == ["pi-agent-1", "x86-agent-1"]
    assert inv.arches == {"arm64", "amd64"}
    assert inv.node("x86-agent-1").port == 22


def test_configmap_mount_directory(tmp_path, monkeypatch):
    (tmp_path / "inventory.yaml").write_text(LAB.read_text())
    assert inventory.load(tmp_path).nodes == inventory.load(LAB).nodes  # a ConfigMap mount is a directory
    monkeypatch.setenv("EDGEBENCH_INVENTORY", str(tmp_path))
    assert inventory.load().target == "lab"


def test_missing_file_names_the_options(tmp_path):
    with pytest.raises(SpecError, match="--inventory"):
        inventory.load(tmp_path / "nope.yaml")


def _mutate(fn):
    doc = copy.deepcopy(GOOD)
    fn(doc)
    return doc


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["nodes"][1].update(name="pi-server-1"), r"node 'pi-server-1'.*duplicate node name"),
    (lambda d: d["nodes"][2].update(address="192.0.2.12"), r"node 'x86-agent-1'.*duplicate address 192.0.2.12"),
    (lambda d: d["nodes"][1].update(arch="armhf"), r"node 'pi-agent-1'.*`arch` 'armhf'.*64-bit"),
    (lambda d: d["nodes"][0].update(role="agent"), r"no node has role `server`"),
    (lambda d: d["nodes"][1].update(role="server"), r"all have role `server`"),
    (lambda d: d["nodes"][2].update(address="192.0.2.300"), r"node 'x86-agent-1'.*`address` '192.0.2.300'"),
    (lambda d: d["nodes"][2].update(address="bad host!"), r"`address` 'bad host!'"),
    (lambda d: d["nodes"][2].update(port=70000), r"node 'x86-agent-1'.*`port` 70000"),
    (lambda d: d["nodes"][2].update(port="22"), r"`port` '22'"),
    (lambda d: d["nodes"][1].update(name="Pi_Agent"), r"`name` 'Pi_Agent'"),
    (lambda d: d["nodes"][1].pop("user"), r"node 'pi-agent-1'.*field `user` is required"),
    (lambda d: d["nodes"][1].update(password="x"), r"unknown field\(s\) password"),
    (lambda d: d.update(target="Lab Target"), r"`target`"),
    (lambda d: d.update(nodes=[]), r"`nodes` must be a non-empty list"),
    (lambda d: d.update(extra=1), r"unknown field\(s\) extra"),
])
def test_invalid_inventories(mutate, message):
    with pytest.raises(SpecError, match=message):
        inventory.parse(_mutate(mutate), "inv.yaml")


def test_dns_and_ipv6_addresses_are_accepted():
    doc = _mutate(lambda d: (d["nodes"][1].update(address="pi-1.lab.example"),
                             d["nodes"][2].update(address="2001:db8::21")))
    inv = inventory.parse(doc)
    assert inv.node("x86-agent-1").address == "2001:db8::21"


def test_bad_yaml():
    with pytest.raises(SpecError, match="not valid YAML"):
        inventory.loads("nodes: [", "x.yaml")


def _key(tmp_path, mode):
    k = tmp_path / "id_ed25519"
    k.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----\n")
    os.chmod(k, mode)
    return k


def test_ssh_key_resolution(tmp_path):
    k = _key(tmp_path, 0o600)
    assert inventory.ssh_key_path(k, env={}) == k
    assert inventory.ssh_key_path(None, env={"EDGEBENCH_SSH_KEY": str(k)}) == k


def test_ssh_key_unreadable(tmp_path):
    """Root reads any file, so the check runs as user nobody (setpriv) against a key nobody may not read."""
    import subprocess
    import sys

    import tempfile

    d = Path(tempfile.mkdtemp(dir="/tmp"))  # traversable by nobody, unlike pytest's 0700 tmp root
    d.chmod(0o755)
    k = _key(d, 0o600)
    code = ("from edgebench.substrates.clusters import inventory\n"
            f"inventory.ssh_key_path({str(k)!r}, env={{}})\n")
    try:
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                               code], capture_output=True, text=True, cwd="/")
    finally:
        import shutil

        shutil.rmtree(d)
    assert proc.returncode != 0 and "not readable" in proc.stderr, proc.stderr


def test_world_readable_key_is_refused(tmp_path):
    with pytest.raises(SpecError, match="accessible by others.*chmod 600"):
        inventory.ssh_key_path(_key(tmp_path, 0o644), env={})


def test_group_readable_own_key_is_refused(tmp_path):
    with pytest.raises(SpecError, match="too open"):
        inventory.ssh_key_path(_key(tmp_path, 0o640), env={})


def test_missing_key_names_the_sources(tmp_path):
    with pytest.raises(SpecError, match="--ssh-key.*EDGEBENCH_SSH_KEY.*edgebench-ssh-key"):
        inventory.ssh_key_path(tmp_path / "none", env={})


def test_key_inside_the_repository_is_refused(tmp_path):
    k = REPO / "tests" / "data" / ".tmp_test_key"
    try:
        k.write_text("x")
        os.chmod(k, 0o600)
        with pytest.raises(SpecError, match="inside the repository"):
            inventory.ssh_key_path(k, env={})
    finally:
        k.unlink(missing_ok=True)


def test_lab_example_yaml_is_what_the_docs_say():
    doc = yaml.safe_load(LAB.read_text())
    assert set(doc) == {"target", "nodes"}


# ---------------------------------------------------------------------------------------------- member clusters
TWO = REPO / "tests" / "data" / "intercluster" / "inventory-two-clusters.yaml"


def test_inventory_without_cluster_fields_is_one_cluster():
    inv = inventory.parse(GOOD)
    assert inv.clusters == [1] and all(n.cluster == 1 and n.gateway is False for n in inv.nodes)
    assert inv.member(1).nodes == inv.nodes and list(inv.members()) == [1]
    assert inv.gateway_node(1).name == "pi-agent-1"  # no gateway marked: the first agent
    with pytest.raises(SpecError, match="cluster 2 has no server.*`cluster: 2`"):
        inv.require_two_clusters()
    with pytest.raises(SpecError, match="no node belongs to cluster 2"):
        inv.member(2)


def test_two_cluster_inventory():
    inv = inventory.load(TWO)
    inv.require_two_clusters()
    assert inv.clusters == [1, 2]
    m1, m2 = inv.member(1), inv.member(2)
    assert [n.name for n in m1.nodes] == ["c1-server", "c1-worker"] and m1.server.name == "c1-server"
    assert [n.name for n in m2.nodes] == ["c2-server", "c2-worker"] and m2.server.name == "c2-server"
    assert m2.agents == [inv.node("c2-worker")]
    assert inv.server.name == "c1-server"  # the whole inventory's server is cluster 1's
    assert inv.gateway_node(1).name == "c1-worker" and inv.gateway_node(2).address == "192.0.2.41"
    assert {c: [n.name for n in i.nodes] for c, i in inv.members().items()} == {
        1: ["c1-server", "c1-worker"], 2: ["c2-server", "c2-worker"]}


def test_gateway_flag_overrides_the_first_agent():
    doc = _mutate(lambda d: d["nodes"][2].update(gateway=True))
    assert inventory.parse(doc).gateway_node(1).name == "x86-agent-1"
    server_only = {"target": "x", "nodes": [dict(GOOD["nodes"][0])]}
    assert inventory.parse(server_only).gateway_node(1).name == "pi-server-1"


def _two(fn=None):
    doc = yaml.safe_load(TWO.read_text())
    if fn:
        fn(doc)
    return doc


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["nodes"][2].update(cluster=3), r"node 'c2-server'.*`cluster` 3 must be 1 or 2"),
    (lambda d: d["nodes"][2].update(cluster="2"), r"node 'c2-server'.*`cluster` '2' must be 1 or 2"),
    (lambda d: d["nodes"][2].update(cluster=True), r"node 'c2-server'.*`cluster` True must be 1 or 2"),
    (lambda d: d["nodes"][1].update(gateway="yes"), r"node 'c1-worker'.*`gateway` 'yes' must be true or false"),
    (lambda d: d["nodes"][2].update(role="agent"), r"no node of cluster 2 has role `server`"),
    (lambda d: d["nodes"][3].update(role="server"), r"'c2-server', 'c2-worker' of cluster 2 all have role `server`"),
    (lambda d: d["nodes"][3].update(address="192.0.2.21"), r"node 'c2-worker'.*duplicate address 192.0.2.21"),
])
def test_invalid_member_clusters(mutate, message):
    with pytest.raises(SpecError, match=message):
        inventory.parse(_two(mutate), "inv.yaml")


def test_cluster_2_only_servers_are_checked_per_cluster():
    """One server per member: a server in each cluster is fine, the old single-cluster messages are unchanged."""
    inventory.parse(_two())
    with pytest.raises(SpecError, match=r"^inv.yaml: no node has role `server` \(one node"):
        inventory.parse(_mutate(lambda d: d["nodes"][0].update(role="agent")), "inv.yaml")
