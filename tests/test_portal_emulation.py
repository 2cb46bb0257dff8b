"""The portal's Emulation vs real page: data/emulation.py directly, and the page through AppTest, on a small warehouse
holding only the mart cmp_emulation_vs_real (rows written here, so the expected values are known)."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from data.common import connect
from data.emulation import emulation_rows, verdict_counts

APP = str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py")
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


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("wh-emulation") / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(f"""create table cmp_emulation_vs_real as select * from (values
            {", ".join("(" + ", ".join(repr(v).lower() if isinstance(v, bool) else repr(v) for v in row) + ")"
                       for row in ROWS)}) as t({COLUMNS})""")
    return path


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
