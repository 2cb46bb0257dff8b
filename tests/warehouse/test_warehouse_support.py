"""Issue 47 in the warehouse, on a small synthetic raw tree (FIXTURE DATA, not measurements): runs on namespace
nodes, on x86 and arm64 VM nodes (emulated CPUs) and on the testbed. The emulated-CPU runs are in fct_runs (with
cpu_emulated, node_kind, node_arches) but in no comparison mart: the same tree without them builds the same cmp_*
marts row for row. fct_cni_support and the read API (marts/support.py) give the functional matrix."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import fixture_manifests as fx
from conftest import _built_once, _warehouse_of
from edgebench.plan import catalog
from edgebench.results.report.marts import path_fetcher
from edgebench.results.report.marts.support import NEVER, support_json, support_matrix, support_table

LAB = "lab-local"
WG_REASON = ("unsupported: flannel:wireguard needs the kernel's wireguard module: modprobe: FATAL: Module wireguard "
             "not found in directory /lib/modules/6.18.44-fc-v857")
KUBEADM_TIMEOUT = ("kubeadm init: error execution phase wait-control-plane: failed while waiting for the control plane "
                   "to start: kube-apiserver check failed at https://10.77.0.31:6443/livez")
ARM_FAIL = "the artifact source http://10.77.0.1:8089 lacks what the cell needs for lab-va1 (arm64): flannel"

NODES = {  # node kind -> the cell's nodes (name, arch, cpu, kernel, kind)
    "namespace": [("lab-cp", "amd64", "native", "6.18.44-fc-v857", "namespace"),
                  ("lab-w1", "amd64", "native", "6.18.44-fc-v857", "namespace")],
    "vm-x86": [("lab-cp", "amd64", "native", "6.18.44-fc-v857", "namespace"),
               ("lab-vx1", "amd64", "emulated", "6.1.0-50-cloud-amd64", "vm-x86")],
    "vm-arm64": [("lab-va1", "arm64", "emulated", "6.1.0-50-arm64", "vm-arm64"),
                 ("lab-va2", "arm64", "emulated", "6.1.0-50-arm64", "vm-arm64")],
}
# (sweep, node kind or testbed, cni, mode, datapath, [(status, throughput or error)])
SERIES = [
    ("sup-ns", "namespace", "host", "host", "host", [("ok", 5000.0), ("ok", 5100.0), ("ok", 4900.0)]),
    ("sup-ns", "namespace", "flannel", "vxlan", "bridge-vxlan", [("ok", 4000.0), ("ok", 4100.0), ("ok", 3900.0)]),
    ("sup-ns", "namespace", "flannel", "wireguard", "bridge-wireguard", [("unsupported", WG_REASON)]),
    ("sup-tb", "testbed", "host", "host", "host", [("ok", 9000.0), ("ok", 9100.0)]),
    ("sup-tb", "testbed", "flannel", "vxlan", "bridge-vxlan", [("ok", 7000.0), ("ok", 7100.0)]),
]
EMULATED = [  # the same cells on VM nodes: throughputs of an emulated CPU (they would move every mean they entered)
    ("sup-vm", "vm-x86", "host", "host", "host", [("ok", 50.0), ("ok", 55.0)]),
    ("sup-vm", "vm-x86", "flannel", "vxlan", "bridge-vxlan", [("ok", 45.0), ("failed", "iperf3: timed out")]),
    ("sup-vm", "vm-x86", "flannel", "wireguard", "bridge-wireguard", [("failed", KUBEADM_TIMEOUT)]),
    ("sup-vm-arm", "vm-arm64", "flannel", "vxlan", "bridge-vxlan", [("failed", ARM_FAIL)]),
]


def _runs(series) -> list[dict]:
    out = []
    for sweep, kind, cni, mode, datapath, results in series:
        tb = kind == "testbed"
        for rep, (status, value) in enumerate(results, start=1):
            m = fx.manifest(substrate="local" if tb else "ssh", distribution="none" if tb else "kubeadm", cni=cni,
                            cni_mode=mode, datapath=datapath, protocol="tcp", repetition=rep, status=status,
                            value=value, sweep_id=sweep)
            m["cell_id"] = f"c-{sweep}-{cni}-{mode}"[:24]
            m["run_id"] = f"r-{sweep}-{cni}-{mode}-{rep}"
            if not tb:
                nodes = [dict(zip(("name", "arch", "cpu", "kernel", "kind"), n)) for n in NODES[kind]]
                m["environment"]["cluster"] = {
                    "target": LAB, "nodes": len(nodes), "shared_kernel": kind == "namespace",
                    "node_kind": kind, "node_list": nodes,
                    "cpu": "emulated" if any(n["cpu"] == "emulated" for n in nodes) else "native"}
            out.append(m)
    return out


def manifests(with_emulated: bool = True) -> list[dict]:
    return _runs(SERIES + (EMULATED if with_emulated else []))


def _build(directory: Path, with_emulated: bool) -> None:
    _warehouse_of(fx.write_tree(directory / "raw", manifests(with_emulated)), directory)


@pytest.fixture(scope="session")
def support_warehouse(tmp_path_factory) -> Path:
    return _built_once(tmp_path_factory, "wh-support", lambda d: _build(d, True)) / "warehouse.duckdb"


@pytest.fixture(scope="module")
def native_warehouse(tmp_path_factory) -> Path:
    return _built_once(tmp_path_factory, "wh-support-native", lambda d: _build(d, False)) / "warehouse.duckdb"


def q(path, sql, *params):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def test_emulated_cpu_runs_are_in_fct_runs_with_their_nodes(support_warehouse):
    rows = q(support_warehouse, """select sweep_id, cni_mode, cpu_emulated, node_kind, node_arches, node_kinds, is_valid,
                                          invalid_reason from fct_runs where repetition = 1 order by sweep_id, cni, cni_mode""")
    got = {(r[0], r[1]): r[2:] for r in rows}
    reason = "emulated CPU (a VM node under qemu TCG): shows what works, never how fast"
    assert got[("sup-vm", "vxlan")] == (True, "vm-x86", "amd64", "namespace,vm-x86", False, reason)
    assert got[("sup-vm-arm", "vxlan")] == (True, "vm-arm64", "arm64", "vm-arm64", False, reason)
    assert got[("sup-ns", "vxlan")] == (False, "namespace", "amd64", "namespace", True, None)
    assert got[("sup-tb", "vxlan")] == (False, "testbed", None, None, True, None)
    n_emulated = sum(len(r) for *_, r in EMULATED)
    assert q(support_warehouse, "select count(*) from fct_runs where cpu_emulated")[0][0] == n_emulated


def test_old_ssh_runs_without_nodes_fall_back_on_the_shared_kernel(tmp_path):
    """A manifest from before issue 47 (environment.cluster without node_kind / cpu): namespace if shared_kernel,
    else machine; never emulated."""
    ms = _runs([("old", "namespace", "host", "host", "host", [("ok", 1.0)]),
                ("old-pi", "namespace", "flannel", "vxlan", "bridge-vxlan", [("ok", 1.0)])])
    ms[0]["environment"]["cluster"] = {"target": LAB, "nodes": 3, "shared_kernel": True}
    ms[1]["environment"]["cluster"] = {"target": "pi", "nodes": 3, "shared_kernel": False}
    _warehouse_of(fx.write_tree(tmp_path / "raw", ms), tmp_path)
    assert q(tmp_path / "warehouse.duckdb", "select sweep_id, node_kind, cpu_emulated, is_valid from fct_runs "
             "order by 1") == [("old", "namespace", False, True), ("old-pi", "machine", False, True)]


def test_no_comparison_mart_holds_an_emulated_cpu_run(support_warehouse, native_warehouse):
    """Every cmp_* mart is the same with and without the emulated-CPU runs; the iperf3 comparison on the lab holds
    the namespace runs alone (n 3 a side, their mean), so the runs would show if they leaked."""
    with duckdb.connect(str(support_warehouse), read_only=True) as con:
        marts = [r[0] for r in con.execute("select table_name from information_schema.tables "
                                           "where table_name like 'cmp\\_%' escape '\\' order by 1").fetchall()]
    assert {"cmp_iperf3_vs_host", "cmp_emulation_vs_real", "cmp_distributions", "cmp_tuning_vs_host"} <= set(marts)
    for mart in marts:
        a = q(support_warehouse, f"select * from {mart} order by all")
        b = q(native_warehouse, f"select * from {mart} order by all")
        assert a == b, f"{mart} differs when emulated-CPU runs are in the raw tree"
    row = q(support_warehouse, "select n_runs, throughput_mbps, host_n_runs from cmp_iperf3_vs_host "
            "where lab = ? and cni = 'flannel' and cni_mode = 'vxlan'", LAB)
    assert row == [(3, pytest.approx(4000.0), 3)]
    assert q(support_warehouse, "select count(*) from cmp_emulation_vs_real")[0][0] > 0  # testbed vs the lab: compared


def test_fct_cni_support_per_mode_and_node_kind(support_warehouse):
    rows = q(support_warehouse, "select cni, cni_mode, node_kind, support, n_runs, n_ok, ok_sweeps, reason "
             "from fct_cni_support order by 1, 2, 3")
    assert rows == [
        ("flannel", "vxlan", "namespace", "works", 3, 3, "sup-ns", None),
        ("flannel", "vxlan", "testbed", "works", 2, 2, "sup-tb", None),
        ("flannel", "vxlan", "vm-arm64", "fails", 1, 0, None, ARM_FAIL),
        ("flannel", "vxlan", "vm-x86", "works", 2, 1, "sup-vm", None),  # one ok run is enough
        ("flannel", "wireguard", "namespace", "unsupported", 1, 0, None, WG_REASON),
        ("flannel", "wireguard", "vm-x86", "fails", 1, 0, None, KUBEADM_TIMEOUT),
        ("host", "host", "namespace", "works", 3, 3, "sup-ns", None),
        ("host", "host", "testbed", "works", 2, 2, "sup-tb", None),
        ("host", "host", "vm-x86", "works", 2, 2, "sup-vm", None),
    ]


def test_the_matrix_lists_every_catalog_mode_and_says_never_tried(support_warehouse):
    matrix = support_matrix(path_fetcher(support_warehouse))
    modes = [(r["cni"], r["cni_mode"]) for r in matrix["rows"]]
    assert modes == [(c, m) for c, info in catalog.cnis().items() for m in info["modes"]]
    assert [c["kind"] for c in matrix["columns"]] == ["namespace", "vm-x86", "vm-arm64", "machine", "testbed"]
    table = {r["CNI mode"]: r for r in support_table(matrix)}
    wg = table["flannel:wireguard"]
    assert wg["namespace node (shared kernel)"].startswith("unsupported: flannel:wireguard needs the kernel's wireguard")
    assert wg["x86 VM (stock kernel)"].startswith("fails: kubeadm init: error execution phase wait-control-plane")
    assert wg["x86 VM (stock kernel)"].endswith("[nodes: namespace,vm-x86]")  # filed under the VM, mixed nodes
    assert wg["arm64 VM"] == wg["real machine lab"] == wg["testbed"] == NEVER
    assert table["flannel:vxlan"]["x86 VM (stock kernel)"].startswith("works (n 1 of 2; sup-vm)")
    assert table["flannel:vxlan"]["arm64 VM"] == f"fails: {ARM_FAIL}"
    cells = len(matrix["rows"]) * len(matrix["columns"])
    assert matrix["counts"] == {"works": 6, "fails": 2, "unsupported": 1, NEVER: cells - 9}
    as_json = support_json(matrix)
    assert len(as_json) == cells and json.dumps(as_json, default=str)
    assert {(e["cni"], e["cni_mode"], e["node_kind"]): e["support"] for e in as_json}[
        ("calico", "bgp", "namespace")] == NEVER


def test_report_support_prints_the_matrix_and_its_json(support_warehouse):
    from typer.testing import CliRunner

    from edgebench.cli import app

    res = CliRunner().invoke(app, ["report", "--support", "--warehouse", str(support_warehouse)],
                             env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "Functional support: CNI mode x node kind" in text
    assert "works (n 1 of 2; sup-vm)" in text and "never tried" in text
    n_modes = sum(len(info["modes"]) for info in catalog.cnis().values())
    assert f"{n_modes} CNI modes x 5 node kinds: 6 works, 2 fails, 1 unsupported, {n_modes * 5 - 9} never tried" in text
    res = CliRunner().invoke(app, ["report", "--support", "--json", "--warehouse", str(support_warehouse)])
    assert res.exit_code == 0, res.output
    entries = json.loads(res.output)
    got = {(e["cni"], e["cni_mode"], e["node_kind"]): e for e in entries}
    assert got[("flannel", "wireguard", "namespace")]["support"] == "unsupported"
    assert got[("flannel", "wireguard", "namespace")]["reason"] == WG_REASON
    assert got[("flannel", "vxlan", "vm-arm64")]["node_arches"] == "arm64"
    assert got[("cilium", "vxlan", "vm-x86")]["support"] == NEVER


def test_a_clusters_dds_run_stored_before_the_leftovers_were_stopped_is_invalid(tmp_path):
    """A cluster's DDS run without params.leftovers_stopped (stored before a DDS run stopped the ddsperf earlier runs
    left in the pods, workloads/dds.py) is out of every comparison with the reason; the same run with it, a testbed
    run and an imported one are not."""
    import copy

    base = next(m for m in fx.dds_manifests() if m["status"] == "ok" and m["params"]["mode"] == "latency")
    ms = []
    for sweep, substrate, marker, imported in (("dds-old", "ssh", False, False), ("dds-new", "ssh", True, False),
                                               ("dds-tb", "local", False, False), ("dds-imp", "ssh", False, True),
                                               ("dds-fix", "ssh", False, False)):
        m = copy.deepcopy(base)
        m.update(sweep_id=sweep, substrate=substrate, distribution="kubeadm" if substrate == "ssh" else "none",
                 run_id=f"r-{sweep}", cell_id=f"c-{sweep}")
        if marker:
            m["params"]["leftovers_stopped"] = True
        if imported:
            m["imported"] = {"tool": "ddsperf"}
        if sweep == "dds-fix":  # made by the commit that stopped the leftovers before runs recorded it
            m["environment"]["edgebench_commit"] = "49b3ef818e999fcc3609ec7232992566a0858626"
        ms.append(m)
    _warehouse_of(fx.write_tree(tmp_path / "raw", ms), tmp_path)
    got = dict((r[0], r[1:]) for r in q(tmp_path / "warehouse.duckdb",
                                        "select sweep_id, is_valid, invalid_reason from fct_runs"))
    reason = ("a DDS run on a cluster stored before leftover responders were stopped between runs (pongs and "
              "subscribers of earlier runs still ran in its pods)")
    assert got == {"dds-old": (False, reason), "dds-new": (True, None), "dds-tb": (True, None),
                   "dds-imp": (True, None), "dds-fix": (True, None)}
