"""The portal's latency-under-load page: its queries (edgebench.results.report.marts.reports) directly, and the page
through AppTest, on a small warehouse holding only the mart cmp_loaded_latency_vs_idle (rows written here, so the
expected values are known)."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from data.common import connect
from edgebench.results.report import verdict as V
from edgebench.results.report.marts.reports import (loaded_latency_available, loaded_latency_comparison,
                                                    loaded_latency_conditions, loaded_latency_probes,
                                                    loaded_latency_sizes, loaded_latency_substrates)

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
PAGE = "app_pages/loaded_latency.py"

COLUMNS = ("substrate, distribution, netem_scenario, tuning_profile, cni, cni_mode, datapath, probe, length_bytes, "
           "is_host_baseline, idle_n_runs, loaded_n_runs, idle_p50_us, loaded_p50_us, p50_inflation_us, "
           "p50_inflation_ci95_us, p50_verdict, idle_p99_us, loaded_p99_us, p99_inflation_us, p99_inflation_ci95_us, "
           "p99_verdict, host_p99_inflation_us, bulk_sent_mbps")
ROWS = [
    # the verdicts are the one rule's on these numbers (lower = better, margin 5 % of the idle value): e.g. flannel's
    # p99 +60 +- 5 us against 4.5 us (5 % of 90) is worse, and so is every other row with an interval
    # the host baseline and one CNI mode, DDS probe, 64 B, on the testbed without netem / tuning
    ("local", "none", "none", "default_settings", "host", "host", "host", "dds", 64, True, 3, 3,
     50.0, 60.0, 10.0, 2.0, "worse", 80.0, 100.0, 20.0, 4.0, "worse", 20.0, 9000.0),
    ("local", "none", "none", "default_settings", "flannel", "vxlan", "bridge-vxlan", "dds", 64, False, 3, 3,
     55.0, 75.0, 20.0, 3.0, "worse", 90.0, 150.0, 60.0, 5.0, "worse", 20.0, 7000.0),
    # another condition and another probe / payload; one run a side: no interval, 'n < 2'
    ("local", "none", "delay-10ms", "default_settings", "flannel", "vxlan", "bridge-vxlan", "dds", 64, False, 1, 1,
     10055.0, 10075.0, 20.0, None, "n < 2", 10090.0, 10150.0, 60.0, None, "n < 2", None, 50.0),
    ("local", "none", "none", "default_settings", "flannel", "vxlan", "bridge-vxlan", "http", 1000, False, 2, 2,
     300.0, 400.0, 100.0, 10.0, "worse", 500.0, 900.0, 400.0, 30.0, "worse", None, 6000.0),
    ("kind", "kind", "none", "default_settings", "flannel", "vxlan", "bridge-vxlan", "dds", 64, False, 2, 2,
     60.0, 70.0, 10.0, 1.0, "worse", 95.0, 120.0, 25.0, 2.0, "worse", None, 5000.0),
]


def test_the_rows_verdicts_are_the_rules():
    """The hand-written rows carry what the one rule (edgebench.results.report.verdict) says on their numbers."""
    names = [c.strip() for c in COLUMNS.split(",")]
    for row in ROWS:
        r = dict(zip(names, row))
        for p in ("p50", "p99"):
            assert r[f"{p}_verdict"] == V.decide(r[f"{p}_inflation_us"], r[f"{p}_inflation_ci95_us"],
                                                 r["loaded_n_runs"], r["idle_n_runs"], r[f"idle_{p}_us"], False,
                                                 V.margin_pct("latency")), (row, p)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("wh-loaded") / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(f"""create table cmp_loaded_latency_vs_idle as select * from (values
            {", ".join("(" + ", ".join("null" if v is None else repr(v).lower() if isinstance(v, bool) else
                                       repr(v) for v in row) + ")" for row in ROWS)}) as t({COLUMNS})""")
    return path


@pytest.fixture
def con(warehouse):
    c = connect(warehouse)
    yield c
    c.close()


def test_the_choices_are_what_the_mart_holds(con):
    assert loaded_latency_available(con)
    assert loaded_latency_substrates(con) == ["kind", "local"]
    assert loaded_latency_probes(con, "local") == ["dds", "http"]
    assert loaded_latency_sizes(con, "local", "dds") == [64]
    assert loaded_latency_conditions(con, "local", "dds", 64) == ["delay-10ms / default_settings / none",
                                                                  "none / default_settings / none"]


def test_the_comparison_puts_the_host_baseline_first(con):
    df = loaded_latency_comparison(con, "local", "dds", 64, "none / default_settings / none")
    assert df["cni_mode"].tolist() == ["host:host", "flannel:vxlan"]
    assert df["is_host_baseline"].tolist() == [True, False]
    assert df.loc[1, ["p99_inflation_us", "p99_inflation_ci95_us", "p99_verdict", "host_p99_inflation_us"]].tolist() \
        == [60.0, 5.0, "worse", 20.0]
    assert loaded_latency_comparison(con, "local", "dds", 64, "delay-10ms / default_settings / none")[
        "cni_mode"].tolist() == ["flannel:vxlan"]


def test_a_warehouse_without_the_mart(tmp_path):
    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    with connect(path) as c:
        assert not loaded_latency_available(c)


def test_the_page_shows_the_selected_comparison(warehouse, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(warehouse))
    at = AppTest.from_file(APP, default_timeout=30)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.selectbox[0].value == "kind"  # substrates in order
    at.selectbox[0].set_value("local").run()
    assert [s.value for s in at.selectbox] == ["local", "dds", 64, "delay-10ms / default_settings / none"]
    at.selectbox[3].set_value("none / default_settings / none").run()
    df = at.dataframe[0].value
    assert df["cni_mode"].tolist() == ["host:host", "flannel:vxlan"]
    assert "is_host_baseline" not in df.columns
