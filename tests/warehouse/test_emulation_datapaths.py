"""The emulation marts meet the testbed and a real lab on the CNI mode, not on the datapath's label: the testbed's
label says how it models the mode (Cilium's ptp-* became ebpf-* with the eBPF forwarding), the lab's is the CNI's."""
import duckdb

import fixture_manifests as fx


def test_a_relabelled_testbed_model_still_meets_the_lab(tmp_path):
    db = fx.substrate_iperf3_warehouse(tmp_path, [("local", "none", 1000.0, 0.70, ("cilium", "vxlan", "ebpf-vxlan")),
                                                  ("ssh", "kubeadm", 800.0, 0.60, ("cilium", "vxlan", "ptp-vxlan"))])
    with duckdb.connect(str(db), read_only=True) as con:
        overhead = con.execute("select cni, datapath, real_datapath, testbed_overhead_pct, real_overhead_pct "
                               "from cmp_emulation_overhead where workload = 'iperf3'").fetchall()
        hosts = con.execute("select testbed_host_value, real_host_value, testbed_diff, real_diff "
                            "from cmp_emulation_overhead where workload = 'iperf3'").fetchall()
        ratio = con.execute("select datapath, real_datapath from cmp_emulation_vs_real "
                            "where workload = 'iperf3' and cni = 'cilium'").fetchall()
    assert len(overhead) == 1, overhead
    cni, dp, real_dp, t, r = overhead[0]
    assert (cni, dp, real_dp) == ("cilium", "ebpf-vxlan", "ptp-vxlan")
    assert abs(t - 30.0) < 0.5 and abs(r - 40.0) < 0.5
    assert ratio == [("ebpf-vxlan", "ptp-vxlan")]
    # each side's host and the mode's difference from it, in Mbps (what report --emulation's last column says)
    th, rh, td, rd = hosts[0]
    assert abs(th - 1000.0) < 5 and abs(rh - 800.0) < 5 and abs(td + 300.0) < 5 and abs(rd + 320.0) < 5


def _three_modes(tmp_path, testbed: tuple, real: tuple) -> tuple[list, dict]:
    """cmp_emulation_overhead's iperf3 rows of flannel vxlan, kube-router bgp and cilium vxlan at these shares of
    their host's throughput (testbed, then real): the rows (cni first) and {cni: the rest}."""
    modes = [("flannel", "vxlan", "bridge-vxlan"), ("kube-router", "bgp", "bridge-routed"),
             ("cilium", "vxlan", "ebpf-vxlan")]
    db = fx.substrate_iperf3_warehouse(tmp_path, [("local", "none", 1000.0, x, m) for x, m in zip(testbed, modes)] +
                                       [("ssh", "kubeadm", 800.0, x, m) for x, m in zip(real, modes)])
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select cni, testbed_verdict, real_verdict, testbed_overhead_pct, real_overhead_pct, "
                           "n_modes, kendall_tau from cmp_emulation_overhead where workload = 'iperf3' "
                           "order by cni").fetchall()
    return rows, {r[0]: r[1:] for r in rows}


def test_modes_equivalent_to_their_host_are_tied_in_the_rank_agreement(tmp_path):
    """Two modes equivalent to the host on both substrates whose point estimates come out in reverse order do not
    count as a flipped ranking: by the one rule neither differs from its host, so their order is noise. The third,
    worse on both, still ranks against them."""
    rows, got = _three_modes(tmp_path, (0.9995, 0.999, 0.70), (0.999, 0.9995, 0.60))
    assert set(got) == {"cilium", "flannel", "kube-router"}, rows
    assert got["flannel"][:2] == ("equivalent", "equivalent") and got["kube-router"][:2] == ("equivalent", "equivalent")
    # the point estimates of the two equivalent modes are in reverse order on the two substrates
    assert (got["flannel"][2] < got["kube-router"][2]) != (got["flannel"][3] < got["kube-router"][3])
    assert got["cilium"][:2] == ("worse", "worse")
    # tau-b: the tied pair counts on neither side; the two pairs with cilium agree -> 2 / sqrt(2 * 2) = 1
    assert {r[5] for r in rows} == {3} and all(abs(r[6] - 1.0) < 1e-9 for r in rows), rows


def test_modes_the_one_rule_cannot_tell_apart_are_tied_in_the_rank_agreement(tmp_path):
    """Two modes both worse than their host, 1 point apart on each substrate in reverse order: the one rule judges
    the difference of their overheads equivalent (within the margin), so they are tied on both sides and the flip is
    not a disagreement; the third mode, 20 points away, still ranks against both. Without the rule tau would be
    (1 + 1 - 1) / 3 = 0.33."""
    rows, got = _three_modes(tmp_path, (0.80, 0.79, 0.60), (0.79, 0.80, 0.60))
    assert all(v[:2] == ("worse", "worse") for v in got.values()), rows
    assert (got["flannel"][2] < got["kube-router"][2]) != (got["flannel"][3] < got["kube-router"][3])
    assert {r[5] for r in rows} == {3} and all(abs(r[6] - 1.0) < 1e-9 for r in rows), rows
