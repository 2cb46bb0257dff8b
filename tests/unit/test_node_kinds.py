"""Issue 47: what nodes a real cluster's cell used. The inventory's `cpu` field (native / emulated, vm.py writes
emulated for its VM nodes), the preflight's per-node record (arch, cpu, kernel release, kind) and the cell's kind,
and that the record reaches the cell's state also when the cell is unsupported. Offline: a FakeTransport."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from edgebench.errors import SpecError
from edgebench.results.records.manifest import Cluster, ClusterNode
from edgebench.substrates.clusters import inventory
from edgebench.substrates.clusters.install import preflight
from edgebench.substrates.clusters.provider import ClusterProvider
from edgebench.substrates.clusters.transport import FakeTransport

REPO = Path(__file__).resolve().parents[2]
BOOT_A = "6f1c0e2a-0000-4000-8000-00000000000a"


def _inv(*extra: dict) -> inventory.Inventory:
    nodes = [{"name": "lab-cp", "address": "10.77.0.11", "arch": "amd64", "role": "server", "user": "edgebench"},
             {"name": "lab-w1", "address": "10.77.0.12", "arch": "amd64", "role": "agent", "user": "edgebench"},
             *extra]
    return inventory.parse({"target": "lab-local", "nodes": nodes}, "test")


VX1 = {"name": "lab-vx1", "address": "10.77.0.31", "arch": "amd64", "role": "agent", "user": "edgebench",
       "cpu": "emulated"}
VA1 = {"name": "lab-va1", "address": "10.77.0.41", "arch": "arm64", "role": "agent", "user": "edgebench",
       "cpu": "emulated"}


def _transport(answers: dict[str, str]) -> FakeTransport:
    """Each node answers the preflight probe with its boot id and kernel release."""
    t = FakeTransport()
    real = t.run

    def run(node, command, sudo=False, timeout=900):
        if command == preflight.BOOT_ID:
            return 0, answers[node.name], ""
        return real(node, command, sudo, timeout)
    t.run = run
    return t


def test_cpu_defaults_to_native_and_a_bad_value_names_the_node_and_the_allowed_values():
    inv = _inv(VX1)
    assert [n.cpu for n in inv.nodes] == ["native", "native", "emulated"]
    with pytest.raises(SpecError) as e:
        _inv(dict(VX1, cpu="tcg"))
    assert "lab-vx1" in str(e.value) and "'tcg'" in str(e.value) and "native, emulated" in str(e.value)


def test_vm_py_writes_cpu_emulated_and_keeps_its_comment():
    spec = importlib.util.spec_from_file_location("lab_vm_kinds", REPO / "scripts" / "lab-local" / "vm.py")
    vm = importlib.util.module_from_spec(spec)
    sys.modules["lab_vm_kinds"] = vm
    spec.loader.exec_module(vm)
    text = vm.merge_inventory(None, vm.nodes_of(vm.parse_spec("x86:1,arm64:1")))
    assert all("# VM node (" in ln for ln in text.splitlines() if "name: lab-v" in ln)
    inv = inventory.loads(text, "test")
    assert [(n.name, n.arch, n.cpu) for n in inv.nodes] == [("lab-vx1", "amd64", "emulated"),
                                                           ("lab-va1", "arm64", "emulated")]


def test_the_preflight_records_each_node_and_the_cell_s_kind():
    kernel_ns, kernel_vm = "6.18.44-fc-v857", "6.1.0-50-cloud-amd64"
    inv = _inv(VX1, VA1)
    found = preflight.probe(_transport({"lab-cp": f"{BOOT_A}\n{kernel_ns}\n", "lab-w1": f"{BOOT_A}\n{kernel_ns}\n",
                                        "lab-vx1": f"vx1-boot\n{kernel_vm}\n", "lab-va1": "va1-boot\n6.1.0-50-arm64\n"}),
                            inv)
    rec = preflight.nodes_record(inv, found, local_boot=None)
    assert rec["node_kind"] == "vm-arm64" and rec["cpu"] == "emulated"
    assert [(n["name"], n["arch"], n["cpu"], n["kernel"], n["kind"]) for n in rec["node_list"]] == [
        ("lab-cp", "amd64", "native", kernel_ns, "namespace"), ("lab-w1", "amd64", "native", kernel_ns, "namespace"),
        ("lab-vx1", "amd64", "emulated", kernel_vm, "vm-x86"), ("lab-va1", "arm64", "emulated", "6.1.0-50-arm64",
                                                                "vm-arm64")]
    assert set(rec) <= set(Cluster.__annotations__)
    assert all(set(n) <= set(ClusterNode.__annotations__) for n in rec["node_list"])


@pytest.mark.parametrize("boots,local,kinds,kind", [
    ({"lab-cp": "b1", "lab-w1": "b2"}, None, ["machine", "machine"], "machine"),  # a Pi lab: a kernel per node
    ({"lab-cp": "b1", "lab-w1": "b1"}, None, ["namespace", "namespace"], "namespace"),  # one kernel for both
    ({"lab-cp": "b1", "lab-w1": "b2"}, "b1", ["namespace", "machine"], "machine"),  # lab-cp: the runner's kernel
])
def test_native_nodes_are_namespace_nodes_when_they_share_a_kernel_else_machines(boots, local, kinds, kind):
    inv = _inv()
    rec = preflight.nodes_record(inv, {n: (b, None) for n, b in boots.items()}, local_boot=local)
    assert [n["kind"] for n in rec["node_list"]] == kinds
    assert rec["node_kind"] == kind and rec["cpu"] == "native"


def test_a_vm_node_beside_a_namespace_node_files_the_cell_under_the_vm_and_the_namespace_node_stays_one():
    inv = _inv(VX1)
    rec = preflight.nodes_record(inv, {"lab-cp": ("b1", None), "lab-w1": ("b1", None), "lab-vx1": ("b1", None)},
                                 local_boot=None)  # even a (wrong) equal boot id: the emulated CPU decides
    assert rec["node_kind"] == "vm-x86"
    assert [n["kind"] for n in rec["node_list"]] == ["namespace", "namespace", "vm-x86"]


def test_provisioning_keeps_the_record_of_the_nodes_for_the_runs(tmp_path):
    """The preflight's record of the nodes is kept by the provider (ClusterProvider.lab_record), which the phases put
    on every run of the cell, also an unsupported or failed one (phases._record_lab)."""
    t = _transport({"lab-cp": f"{BOOT_A}\n6.18\n", "lab-w1": f"{BOOT_A}\n6.18\n", "lab-vx1": "other\n6.1.0\n"})
    t.respond("cat /etc/kubernetes/admin.conf", yaml.safe_dump(
        {"clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443"}}], "users": [], "contexts": []}))
    p = ClusterProvider("ssh", "kubeadm", "flannel", "vxlan", tmp_path, inventory=_inv(VX1), transport=t,
                        local=lambda *a, **k: "", fetch=lambda url: "", cell_id="c-test")
    assert p.lab_record() is None  # not probed yet
    p.provision()
    lab = p.lab_record()
    assert lab["shared_kernel"] is False and lab["cpu"] == "emulated" and lab["node_kind"] == "vm-x86"
    assert [n["kernel"] for n in lab["node_list"]] == ["6.18", "6.18", "6.1.0"]


class _Provider:
    """A provider whose preflight recorded VM nodes; then the cell is unsupported (or provisioning fails)."""

    LAB = {"target": "lab-local", "nodes": 2, "shared_kernel": False, "node_kind": "vm-arm64", "cpu": "emulated",
           "node_list": [{"name": "lab-va1", "arch": "arm64", "cpu": "emulated", "kernel": "6.1.0-50-arm64",
                          "kind": "vm-arm64"}]}

    def __init__(self, fail: bool = False):
        self.fail = fail

    def provision(self):
        if self.fail:
            raise RuntimeError("kubeadm init: wait-control-plane: context deadline exceeded")

    def lab_record(self):
        return dict(self.LAB)

    def install_cni(self, cm):
        from edgebench.substrates.base import Unsupported
        raise Unsupported("unsupported: flannel:wireguard needs wireguard on every node")


def _ctx(tmp_path, provider):
    from edgebench.plan import spec
    from edgebench.plan.cells import expand
    from edgebench.sweep.phases import CellContext

    sweep = spec.load(REPO / "workflows" / "sweep.yaml", {"cnis": '["flannel:wireguard"]', "workloads": '["iperf3:tcp"]',
                                                           "repetitions": "1", "sweep-id": "nodes-1"}, substrate="local")
    return CellContext(sweep, expand(sweep)[0], workdir=tmp_path / "work", results=tmp_path / "out",
                       provider=provider, log=lambda m: None)


def _stored(tmp_path) -> list[dict]:
    import json
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "out").rglob("manifest.json"))]


def test_the_runs_of_an_unsupported_cell_carry_its_nodes(tmp_path):
    from edgebench.sweep import phases

    ctx = _ctx(tmp_path, _Provider())
    phases.provision_cluster(ctx)
    phases.install_cni(ctx)
    phases.run_workload(ctx, "iperf3")
    docs = _stored(tmp_path)
    assert docs and all(d["status"] == "unsupported" for d in docs)
    assert all(d["environment"]["cluster"] == _Provider.LAB for d in docs)


def test_the_runs_of_a_cell_whose_provisioning_failed_carry_its_nodes(tmp_path):
    from edgebench.sweep import phases

    ctx = _ctx(tmp_path, _Provider(fail=True))
    with pytest.raises(RuntimeError):
        phases.provision_cluster(ctx)
    phases.collect_results(ctx, reason="provisioning failed")
    docs = _stored(tmp_path)
    assert docs and all(d["status"] == "failed" and d["error"] == "provisioning failed" for d in docs)
    assert all(d["environment"]["cluster"]["node_kind"] == "vm-arm64" for d in docs)
    assert all(d["environment"]["tools"] is not None for d in docs)
