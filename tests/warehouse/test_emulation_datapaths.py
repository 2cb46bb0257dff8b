"""The emulation marts meet the testbed and a real lab on the CNI mode, not on the datapath's label: the testbed's
label says how it models the mode (Cilium's ptp-* became ebpf-* with the eBPF forwarding), the lab's is the CNI's."""
import duckdb

import fixture_manifests as fx
from edgebench.results import warehouse


def test_a_relabelled_testbed_model_still_meets_the_lab(tmp_path):
    runs = fx.substrate_iperf3_runs([("local", "none", 1000.0, 0.70, ("cilium", "vxlan", "ebpf-vxlan")),
                                      ("ssh", "kubeadm", 800.0, 0.60, ("cilium", "vxlan", "ptp-vxlan"))])
    root = fx.write_version_tree(tmp_path / "raw", runs)
    db = tmp_path / "warehouse.duckdb"
    warehouse.build(warehouse_path=db, raw_root=str(root), quiet=True)
    with duckdb.connect(str(db), read_only=True) as con:
        overhead = con.execute("select cni, datapath, real_datapath, testbed_overhead_pct, real_overhead_pct "
                               "from cmp_emulation_overhead where workload = 'iperf3'").fetchall()
        ratio = con.execute("select datapath, real_datapath from cmp_emulation_vs_real "
                            "where workload = 'iperf3' and cni = 'cilium'").fetchall()
    assert len(overhead) == 1, overhead
    cni, dp, real_dp, t, r = overhead[0]
    assert (cni, dp, real_dp) == ("cilium", "ebpf-vxlan", "ptp-vxlan")
    assert abs(t - 30.0) < 0.5 and abs(r - 40.0) < 0.5
    assert ratio == [("ebpf-vxlan", "ptp-vxlan")]
