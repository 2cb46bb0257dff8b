"""The portal's Emulation vs real page: data/emulation.py directly, and the page through AppTest, on a small warehouse
holding only the mart cmp_emulation_vs_real (rows written here, so the expected values are known)."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from data.common import connect
from data.emulation import emulation_rows, verdict_counts

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
PAGE = "app_pages/emulation.py"
COLUMNS = ("cni, cni_mode, datapath, netem_scenario, tuning_profile, cpu_class, is_host_baseline, workload, metric, "
           "protocol, path, placement, length_bytes, real_lab, real_distributions, testbed_n, testbed_mean, testbed_sd, real_n, "
           "real_mean, real_sd, ratio, ratio_ci_low, ratio_ci_high, margin, difference_pct, verdict")
ROWS = [
    ("flannel", "vxlan", "bridge-vxlan", "none", "default_settings", "none", False, "iperf3", "throughput_mbps", "tcp",
     "pod-to-pod", "cross-node", 131072, "lab-local", "kubeadm", 3, 1000.0, 10.0, 3, 1002.0, 5.0, 0.998, 0.97, 1.03, 0.1, -0.2,
     "model holds"),
    ("flannel", "host-gw", "bridge-routed", "none", "default_settings", "none", False, "iperf3", "throughput_mbps",
     "tcp", "pod-to-pod", "cross-node", 131072, "lab-local", "kubeadm", 3, 1000.0, 10.0, 3, 500.0, 5.0, 2.0, 1.9, 2.1, 0.1, 100.0,
     "model differs"),
    ("kube-router", "bgp", "bridge-routed", "none", "default_settings", "none", False, "dds", "latency_p50_us", "udp",
     "pod-to-pod", "cross-node", 64, "pi-lab", "kubeadm", 3, 50.0, 10.0, 3, 55.0, 30.0, 0.91, 0.5, 1.6, 0.1, -9.0,
     "inconclusive"),
]


NORM_COLUMNS = ("cni, cni_mode, datapath, netem_scenario, tuning_profile, cpu_class, workload, metric, config, real_lab, "
                "testbed_n, testbed_host_n, testbed_overhead_pct, testbed_overhead_ci95_pct, testbed_verdict, real_n, "
                "real_host_n, real_overhead_pct, real_overhead_ci95_pct, real_verdict, overhead_gap_pts, decided_both, "
                "verdicts_agree, n_modes, kendall_tau")
CFG = "tcp pod-to-pod cross-node 131072 B duration 10 bitrate -"
NORM_ROWS = [
    ("flannel", "vxlan", "bridge-vxlan", "none", "default_settings", "none", "iperf3", "throughput_mbps", CFG,
     "lab-local", 3, 3, 24.0, 3.0, "worse", 3, 3, 30.0, 5.0, "worse", -6.0, True, True, 2, -1.0),
    ("cilium", "vxlan", "bpf-vxlan", "none", "default_settings", "none", "iperf3", "throughput_mbps", CFG,
     "lab-local", 3, 3, 20.0, 3.0, "worse", 3, 3, 44.0, 6.0, "worse", -24.0, True, True, 2, -1.0),
    ("flannel", "vxlan", "bridge-vxlan", "none", "default_settings", "none", "http", "response_p50_ms", "echo",
     "lab-local", 3, 3, 1.0, 4.0, "inconclusive", 3, 3, 3.0, 2.0, "worse", 2.0, False, None, 1, None),
]


def _values(rows) -> str:
    return ", ".join("(" + ", ".join("null" if v is None else repr(v).lower() if isinstance(v, bool) else repr(v)
                                     for v in row) + ")" for row in rows)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("wh-emulation") / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(f"create table cmp_emulation_vs_real as select * from (values {_values(ROWS)}) as t({COLUMNS})")
        con.execute(f"create table cmp_emulation_overhead as select * from (values {_values(NORM_ROWS)}) "
                    f"as t({NORM_COLUMNS})")
    return path


def test_each_substrate_against_its_own_host_says_how_the_testbed_fared(warehouse):
    from data.emulation import fared_lines, normalized_rows

    with connect(warehouse) as con:
        df = normalized_rows(con)
    assert df["workload"].tolist() == ["http", "iperf3", "iperf3"]  # by lab, workload, metric, configuration, CNI
    assert df["agree"].tolist() == ["not both decided", "yes", "yes"]
    assert df["testbed_text"].tolist()[2] == "+24.0% [+-3.0] worse"
    lines = fared_lines(df)
    # the two modes' verdicts agree, but they come out in the reverse order: the testbed's ranking differs
    assert lines[1] == ("iperf3 throughput_mbps against lab-local: differs - decided on both substrates in 2 of 2, "
                        "the same verdict in 2 of 2; overhead gap median 15.0 points (largest 24.0); CNI order tau "
                        "-1.00 over 1 configuration(s)")
    assert lines[0].startswith("http response_p50_ms against lab-local: not yet - decided on both substrates in 0 of 1")


def test_rows_carry_n_interval_and_the_size_of_a_difference(warehouse):
    with connect(warehouse) as con:
        df = emulation_rows(con)
    assert df["n"].tolist() == ["3 / 3"] * 3
    assert df["real_lab"].tolist() == ["lab-local", "lab-local", "pi-lab"]  # each real lab on its own
    by = dict(zip(df["cni_label"], df["verdict_text"]))
    assert by == {"flannel:vxlan": "model holds", "flannel:host-gw": "model differs by +100.0%",
                  "kube-router:bgp": "inconclusive"}
    assert verdict_counts(df) == {"model holds": 1, "model differs": 1, "inconclusive": 1}
    assert df.loc[df["cni_label"] == "flannel:vxlan", "ci"].item() == "0.970-1.030"


def test_the_page_shows_the_table_with_the_lab_banner(warehouse, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(warehouse))
    at = AppTest.from_file(APP, default_timeout=30)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("local lab" in w.value for w in at.warning)
    df = at.dataframe[0].value
    assert len(df) == 3 and "real_lab" in df.columns
    at.multiselect[0].set_value(["iperf3"]).run()
    assert len(at.dataframe[0].value) == 2
    assert any(h.value == "Each against its own host" for h in at.subheader)
    assert any("differs - decided on both substrates in 2 of 2" in m.value for m in at.markdown)


def test_the_testbed_holds_only_when_agreement_decided_share_gap_and_order_all_meet_the_bar():
    from edgebench.results.report import emulation as emu

    def row(cni, t, r, tv="worse", rv="worse", tau=1.0, cfg="c"):
        decided = tv in emu.DECIDED and rv in emu.DECIDED
        return {"real_lab": "lab", "workload": "iperf3", "metric": "throughput_mbps", "config": cfg, "cni": cni,
                "overhead_gap_pts": t - r, "decided_both": decided, "verdicts_agree": tv == rv if decided else None,
                "kendall_tau": tau, "n_modes": 3}

    holds = [row("a", 20, 25), row("b", 10, 12), row("c", 5, 6, "equivalent", "equivalent")]
    assert emu.fared(holds)[0]["outcome"] == "holds"
    assert emu.fared(holds[:2] + [row("c", 5, 6, "equivalent", "worse")])[0]["outcome"] == "differs"
    assert emu.fared([row("a", 20, 45), row("b", 10, 32), row("c", 5, 30)])[0]["outcome"] == "not yet"  # gap 20+
    assert emu.fared([row("a", 20, 25, "inconclusive"), row("b", 10, 12, "inconclusive"), row("c", 5, 6)]
                     )[0]["outcome"] == "not yet"  # 1 of 3 decided on both
    assert emu.fared([row(c, 1, 1, tau=-0.3) for c in "ab"])[0]["outcome"] == "differs"  # the order flips


def test_the_rank_agreement_carries_its_interval_over_configurations_and_the_bench_reports_the_bar():
    import sys
    from edgebench.results.report import emulation as emu

    def row(cni, cfg, tau, gap=5.0, tv="worse", rv="worse"):
        return {"real_lab": "lab", "workload": "iperf3", "metric": "throughput_mbps", "config": cfg, "cni": cni,
                "overhead_gap_pts": gap, "decided_both": True, "verdicts_agree": tv == rv, "kendall_tau": tau,
                "n_modes": 2}

    rows = [row(c, cfg, tau) for cfg, tau in (("x", 1.0), ("y", 1 / 3), ("z", -1 / 3)) for c in "ab"]
    (f,) = emu.fared(rows)
    # mean 1/3, sd 2/3 over 3 configurations: t(2) = 4.303 -> half-width 4.303 * (2/3) / sqrt(3)
    assert f["kendall_tau"] == pytest.approx(1 / 3) and f["configs_ranked"] == 3
    assert f["kendall_tau_ci95"] == pytest.approx(4.303 * (2 / 3) / 3 ** 0.5, rel=1e-3)
    assert "tau +0.33 [-1.00, +1.00] over 3 configuration(s)" in emu.sentence(f)
    (one,) = emu.fared(rows[:2])
    assert one["kendall_tau_ci95"] is None and "[" not in emu.sentence(one)

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import bench_emulation
    out = {r.name: r for r in bench_emulation._rows_of(f, "lab, iperf3")}
    assert out["lab, iperf3: decided on both substrates"].value == 1.0
    assert out["lab, iperf3: the same verdict where both decide"].ok is True
    assert out["lab, iperf3: overhead gap testbed - real, median"].value == 5.0
    tau_row = out["lab, iperf3: CNI order, Kendall's tau"]
    assert tau_row.value == pytest.approx(1 / 3) and tau_row.ok is False
    rows[0]["verdicts_agree"] = False
    (g,) = emu.fared(rows)
    assert bench_emulation._rows_of(g, "l")[1].value == pytest.approx(5 / 6)
