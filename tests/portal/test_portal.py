"""The Streamlit portal: data.py directly, and every page through streamlit.testing AppTest."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data.cni_datapaths import throughput_chart
from data.common import BASELINE_COLOR, LOCAL_BANNER, connect
from data.dds import dds_line_chart, dds_overhead_table, dds_transport_table, overhead_cell
from data.http import http_overhead_table, http_vs_host_text, response_chart
from data.resources import resource_long
from data.tuning import tuning_heatmap_frame
from edgebench.results.report.marts.dds import DDS, dds_overhead, dds_problem_runs
from edgebench.results.report.marts.http import (OUTLIERS_PER_BOX, http_kpis, http_overhead, http_response_boxes,
                                                 http_response_outliers)
from edgebench.results.report.marts.iperf3 import IPERF3, cmp_tuning_vs_host, overhead, problem_runs, resource_usage
from edgebench.results.report.marts.runs import invalid_runs, netem_metric, netem_scenarios, run_counts, sweeps
import fixture_manifests as fx

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
CNI_PAGE = "app_pages/cni_datapaths.py"


@pytest.fixture
def con(fixture_warehouse):
    c = connect(fixture_warehouse)
    yield c
    c.close()


@pytest.fixture
def app(fixture_warehouse, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(fixture_warehouse))
    return AppTest.from_file(APP, default_timeout=30)


# ---- data.py ----------------------------------------------------------------------------------------------------

def test_connection_is_read_only(con):
    with pytest.raises(Exception, match="read-only"):
        con.execute("create table x (i int)")


def test_overview_queries(con):
    counts = run_counts(con)
    assert counts["runs"].sum() == fx.N_MANIFESTS - 1
    sweep_rows = sweeps(con)
    assert set(sweep_rows["sweep_id"]) == {fx.SWEEP}  # the older duplicate was superseded
    assert sweep_rows.loc[0, ["failed", "unsupported"]].tolist() == [2, 2]  # iperf3 + http failed; iperf3 + dds unsupported


def test_substrates_and_options(con):
    assert IPERF3.substrates(con) == ["local", "kind"]  # most runs first
    assert IPERF3.values(con, "local", "protocol") == ["tcp", "udp"]
    assert IPERF3.values(con, "local", "length_bytes") == [fx.UDP_LEN, fx.TCP_LEN]
    assert IPERF3.values(con, "local", "length_bytes", protocol="udp") == [fx.UDP_LEN]


def test_overhead_never_mixes_substrates(con):
    df = overhead(con, "local", protocol="tcp")
    assert set(df["substrate"]) == {"local"} and df.iloc[0]["variant"] == "host / host"
    assert df.set_index("variant").loc["flannel / vxlan", "overhead_pct"] == pytest.approx(
        fx.OVERHEAD_LOCAL_TCP_FLANNEL)
    assert (df["ci_low_mbps"] <= df["throughput_mbps"]).all()
    assert overhead(con, "kind", protocol="tcp")["host_throughput_mbps"].isna().all()
    with pytest.raises(ValueError):
        overhead(con, "local", cni="x; drop table y")


def test_problem_runs_and_chart(con):
    problems = problem_runs(con, "local", protocol="tcp")
    assert problems[["status", "error"]].values.tolist() == [["unsupported", "unsupported: kernel has no ipip"]]
    spec = throughput_chart(overhead(con, "local", protocol="udp")).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["bar", "errorbar", "rule"]


# ---- pages ------------------------------------------------------------------------------------------------------

def frame(at, column):
    """The first table on the page that has `column` (None if there is none): interactive (st.dataframe) or static
    (st.table: ui.table draws short plain frames so)."""
    return next((d.value for d in [*at.dataframe, *at.table] if column in d.value.columns), None)


def test_overview_page(app):
    at = app.run()
    assert not at.exception
    assert at.title[0].value == "edgebench"
    assert [m.value for m in at.metric][:2] == ["1", str(fx.N_MANIFESTS - 1)]
    assert any(LOCAL_BANNER in w.value for w in at.warning)
    assert frame(at, "sweep_id")["sweep_id"].tolist() == [fx.SWEEP]
    # the fixture has no real lab: the testbed's answers say they have not been checked against real CNIs
    checked = [m.value for m in at.markdown if m.value.startswith("**Checked against real CNIs**")]
    assert checked and "not yet" in checked[0]


def test_cni_page_renders_local_with_banner_and_chart(app):
    at = app.run()
    at.switch_page(CNI_PAGE).run()
    assert not at.exception
    assert at.selectbox(key="substrate").value == "local"
    assert any(LOCAL_BANNER in w.value for w in at.warning)
    (chart,) = at.get("vega_lite_chart")
    assert '"errorbar"' in chart.proto.spec and "host baseline" in chart.proto.spec
    table = frame(at, "overhead_pct")
    assert table["variant"].tolist()[0] == "host / host"
    assert table.set_index("variant").loc["flannel / vxlan", "overhead_pct"] == pytest.approx(
        fx.OVERHEAD_LOCAL_TCP_FLANNEL)
    assert frame(at, "error")["status"].tolist() == ["unsupported"]


def test_cni_page_filters_change_rows(app):
    at = app.run()
    at.switch_page(CNI_PAGE).run()
    at.selectbox(key="protocol").set_value("udp").run()
    assert not at.exception
    table = frame(at, "overhead_pct")
    assert table.set_index("variant").loc["flannel / vxlan", "overhead_pct"] == pytest.approx(
        fx.OVERHEAD_LOCAL_UDP_FLANNEL)
    assert frame(at, "error")["status"].tolist() == ["failed"]

    at.selectbox(key="substrate").set_value("kind").run()
    assert not at.exception
    assert not any(LOCAL_BANNER in w.value for w in at.warning)
    table = frame(at, "overhead_pct")
    assert table["variant"].tolist() == ["flannel / vxlan"] and table["overhead_pct"].isna().all()
    assert any("No host-network baseline" in c.value for c in at.caption)


@pytest.mark.parametrize("page", [None, CNI_PAGE])
def test_missing_warehouse_message(page, tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(tmp_path / "nothing.duckdb"))
    at = AppTest.from_file(APP, default_timeout=30).run()
    if page:
        at.switch_page(page).run()
    assert not at.exception
    assert any("make sweep" in i.value for i in at.info)


# ---- DDS and HTTP pages ---------------------------------------------------------------------------------------

DDS_PAGE, HTTP_PAGE = "app_pages/dds.py", "app_pages/http.py"


def test_dds_queries(con):
    assert DDS.substrates(con) == ["local"]
    # most successful runs first: security 'none' is the default, not the unsupported auth-encrypt
    assert DDS.values(con, "local", "security") == ["none", "auth-encrypt"]
    df = dds_overhead(con, "local", security="none")
    table = dds_overhead_table(df[(df["dds_mode"] == "latency") & (df["reliability"] == "reliable")],
                               "latency_p90_overhead_pct")
    assert sorted(table["variant"]) == ["calico / bgp", "flannel / vxlan"] and list(table.columns)[1:] == [
        "64 B", "1024 B"]
    problems = dds_problem_runs(con, "local", security="auth-encrypt")
    assert problems["status"].tolist() == ["unsupported"]
    with pytest.raises(ValueError):
        dds_overhead(con, "local", cni="x; drop table y")


def test_http_queries(con):
    kpis = http_kpis(con, "local", service="static-reply")
    assert sorted(kpis["kpi_ms"].unique()) == sorted({float(v) for v in fx.HTTP_KPIS_MS.values()})
    boxes = http_response_boxes(con, "local", service="static-reply")
    outliers = http_response_outliers(con, "local", service="static-reply")
    spec = response_chart(boxes, outliers, kpis).to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["rule", "bar", "tick"] + (["point"] if len(outliers) else []) + ["rule", "text"]
    # the host baseline is grey, as on every page
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert dict(zip(scale["domain"], scale["range"]))["host / host"] == BASELINE_COLOR


def test_http_box_statistics_equal_the_requests(con):
    """The warehouse's box statistics recomputed here from every request: quartiles by linear interpolation, the
    whiskers at the most extreme request within 1.5 IQR, the requests beyond them (all of them: fewer than the cap)."""
    import statistics

    rows = con.execute("""select cni || ' / ' || cni_mode, length_bytes, response_ms from fct_http_requests
                          where substrate = 'local' and status = 'ok' and not is_error and intercluster = 'none'
                          and service = 'payload-echo'""").fetchall()
    groups: dict = {}
    for variant, length, ms in rows:
        groups.setdefault((variant, length), []).append(ms)
    boxes = http_response_boxes(con, "local", service="payload-echo").set_index(["variant", "length_bytes"])
    outliers = http_response_outliers(con, "local", service="payload-echo")
    assert sorted(boxes.index) == sorted(groups) and len(groups) >= 2
    n_beyond = 0
    for key, ms in groups.items():
        q1, med, q3 = statistics.quantiles(ms, n=4, method="inclusive")
        lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        b = boxes.loc[key]
        assert b["n"] == len(ms)
        assert (b["q1"], b["median"], b["q3"]) == pytest.approx((q1, med, q3))
        assert b["whisker_lo"] == pytest.approx(min(x for x in ms if x >= lo))
        assert b["whisker_hi"] == pytest.approx(max(x for x in ms if x <= hi))
        beyond = sorted(x for x in ms if x < lo or x > hi)
        assert b["n_outliers"] == len(beyond) < OUTLIERS_PER_BOX
        mine = outliers[(outliers["variant"] == key[0]) & (outliers["length_bytes"] == key[1])]
        assert sorted(mine["response_ms"]) == pytest.approx(beyond)
        n_beyond += len(beyond)
    assert n_beyond > 0, "the fixture should have requests beyond the whiskers somewhere"


def test_dds_page_renders_with_banner_and_tables(app):
    at = app.run()
    at.switch_page(DDS_PAGE).run()
    assert not at.exception
    assert at.selectbox(key="dds_substrate").value == "local"
    assert any(LOCAL_BANNER in w.value for w in at.warning)
    assert len(at.get("vega_lite_chart")) == 3
    table = frame(at, "64 B")
    assert sorted(table["variant"]) == ["calico / bgp", "flannel / vxlan"]
    # CNIs are slower than host in the fixtures; every cell carries its interval, verdict and n (CNI/host)
    assert all(float(c.split()[0]) > 0 and " ± " in c and c.endswith("(n 2/2)") for c in table["64 B"])
    assert any("95% interval" in c.value for c in at.caption)
    # the detail (every configuration with its host baseline) only on demand, then one row per configuration
    assert frame(at, "host_latency_p90_us") is None
    at.toggle(key="dds_detail").set_value(True).run()
    detail = frame(at, "host_latency_p90_us")
    assert not at.exception and detail is not None and len(detail) > len(table)


def test_dds_overhead_cell_is_the_marts_row(con):
    df = dds_overhead(con, "local", security="none")
    lat = df[(df["dds_mode"] == "latency") & (df["reliability"] == "reliable")]
    table = dds_overhead_table(lat, "latency_p90_overhead_pct")
    row = lat[(lat["cni"] == "flannel") & (lat["length_bytes"] == 64)].iloc[0]
    assert row["verdict"] in ("worse", "better", "equivalent", "inconclusive")
    assert table.loc[table["variant"] == "flannel / vxlan", "64 B"].iloc[0] == (
        f"{row['latency_p90_overhead_pct']:.1f} ± {row['latency_p90_overhead_ci95_pct']:.1f} {row['verdict']} (n 2/2)")
    assert overhead_cell(12.34, float("nan"), "n < 2", 1, 3) == "12.3 n < 2 (n 1/3)"


def test_dds_scaling_with_one_subscriber_count_is_a_table(con):
    df = dds_overhead(con, "local", security="none")
    four = df[(df["dds_mode"] == "throughput") & (df["subscribers"] == 4)]
    table = dds_transport_table(four)
    assert table["variant"].tolist() == ["host / host", "flannel / vxlan"]  # the baseline first
    assert set(table.columns) == {"variant", "payload (B)", "unicast Mbit/s", "multicast Mbit/s"}
    host = four[(four["cni"] == "host") & (four["transport"] == "multicast")].iloc[0]
    assert table["multicast Mbit/s"].iloc[0] == (
        f"{host['throughput_mbps']:.1f} ± {host['throughput_ci95_mbps']:.1f} (n {host['n_runs']})")
    # the line charts colour the host baseline in the baseline grey, as every page does
    spec = dds_line_chart(df[df["dds_mode"] == "throughput"], "subscribers", "throughput_mbps", "transport",
                          "t", "y", "x").to_dict()
    scale = spec["encoding"]["color"]["scale"]
    assert scale["domain"][0] == "host / host" and scale["range"][0] == BASELINE_COLOR


def test_dds_page_filters_change_what_is_shown(app):
    at = app.run()
    at.switch_page(DDS_PAGE).run()
    at.selectbox(key="dds_reliability").set_value("best-effort").run()
    assert not at.exception
    assert frame(at, "64 B")["variant"].tolist() == ["flannel / vxlan"]  # only flannel ran best-effort
    at.selectbox(key="dds_security").set_value("auth-encrypt").run()
    assert not at.exception
    assert any("No successful latency runs" in i.value for i in at.info)
    problems = frame(at, "error")
    assert problems["status"].tolist() == ["unsupported"] and "DDS Security" in problems["error"][0]


def test_http_page_renders_with_kpi_lines(app):
    at = app.run()
    at.switch_page(HTTP_PAGE).run()
    assert not at.exception
    assert any(LOCAL_BANNER in w.value for w in at.warning)
    (chart,) = at.get("vega_lite_chart")
    # KPI rules drawn at kpi_ms (their values travel as a dataset; test_http_queries checks they come from the data)
    assert '"whisker_hi"' in chart.proto.spec and '"q3"' in chart.proto.spec and '"kpi_ms"' in chart.proto.spec
    shares = frame(at, "pct_beyond_kpi")
    assert set(shares["use_case"]) == set(fx.HTTP_KPIS_MS)


def test_http_page_service_filter_changes_rows(app):
    at = app.run()
    at.switch_page(HTTP_PAGE).run()
    at.selectbox(key="http_service").set_value("static-reply").run()
    assert not at.exception
    shares = frame(at, "pct_beyond_kpi").set_index(["variant", "use_case"])
    # flannel static-reply: one ok run with 6 of 40 requests beyond 100 ms (the other run failed)
    assert shares.loc[("flannel / vxlan", "vehicle-decision-assist"), "pct_beyond_kpi"] == pytest.approx(15.0)
    assert shares.loc[("flannel / vxlan", "vehicle-decision-assist"), "n_runs_p90_beyond"] == 1
    assert frame(at, "error")["status"].tolist() == ["failed"]


def test_http_overhead_table_on_the_fixtures(con):
    table = http_overhead_table(http_overhead(con, "local", service="payload-echo"))
    first = table[table["length_bytes"] == 1000].iloc[0]  # host baseline first, as on the CNI page
    assert first["variant"] == "host / host" and first["p90_vs_host"] == "0.0 %" and first["p90_verdict"] == "baseline"
    flannel = table[(table["length_bytes"] == 1000000) & (table["variant"] == "flannel / vxlan")].iloc[0]
    # the fixtures' hey-era runs carry no resolution_ms: 0.1 ms assumed; flannel is 40 % slower, far above it
    assert flannel["resolution_us"] == pytest.approx(100) and flannel["p90_vs_host"].startswith("+")
    assert flannel["n_runs"] == 2 and flannel["host_n_runs"] == 2


def test_http_verdicts_in_the_table(verdict_warehouse):
    with connect(verdict_warehouse) as c:
        df = http_overhead(c, "local", service="payload-echo")
    table = http_overhead_table(df).set_index(["length_bytes", "variant"])
    # hey (100 us steps) against fortio's host baseline: (0.2 - 0.101) / 0.101 = +98.0 %; the margin is hey's step,
    # 0.1 ms, and +0.099 +- 0.0025 ms reaches past it, excluding 0: worse (fixture_manifests.VERDICT_GROUPS)
    row = table.loc[(60, "kube-router / bgp")]
    assert (row["p50_vs_host"], row["p50_verdict"], row["resolution_us"]) == ("+98.0 %", "worse", pytest.approx(100))
    assert table.loc[(60, "calico / vxlan"), "p50_vs_host"] == "+19.8 %"
    assert table.loc[(60, "calico / vxlan"), "p90_verdict"] == "worse"
    assert table.loc[(60, "cilium / vxlan"), "p50_verdict"] == "better"
    assert table.loc[(60, "flannel / vxlan"), "p50_verdict"] == "inconclusive"  # +0.009 +- 0.124 ms
    assert table.loc[(60, "host / host"), "p50_vs_host"] == "0.0 %"
    assert table.loc[(60, "weave / fastdp"), "p50_verdict"] == "n < 2"  # one run: no interval
    assert table.loc[(60, "weave / fastdp"), "p50_vs_host"] == "+198.0 %"  # the overhead is still shown
    # hey on both sides: half a step at p50 (+50 %), one whole step at p90 (+100 %), both within the 0.1 ms margin
    hey = table.loc[(1000, "flannel / vxlan")]
    assert (hey["p50_vs_host"], hey["p90_vs_host"]) == ("+50.0 %", "+100.0 %")
    assert (hey["p50_verdict"], hey["p90_verdict"]) == ("equivalent", "equivalent")
    # what the overhead column shows is the percentage whatever the verdict
    assert http_vs_host_text(12.34, "equivalent", 0.1, 0.1) == "+12.3 %"
    assert http_vs_host_text(None, None, 0.001, None) == "no host baseline"


def test_http_page_shows_the_verdicts_at_the_resolution(verdict_warehouse, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(verdict_warehouse))
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page(HTTP_PAGE).run()
    assert not at.exception
    table = frame(at, "p50_vs_host")
    assert "+98.0 %" in set(table["p50_vs_host"]) and not table["p50_vs_host"].str.contains("resolution").any()
    assert {"worse", "better", "equivalent", "inconclusive", "n < 2"} <= set(table["p50_verdict"])
    assert {"n_runs", "host_n_runs", "response_p50_ci95_ms", "resolution_us", "p50_verdict",
            "p90_verdict"} <= set(table.columns)
    assert table.iloc[0]["variant"] == "host / host"


@pytest.mark.parametrize("page, text", [(DDS_PAGE, "no DDS runs"), (HTTP_PAGE, "no HTTP runs")])
def test_dds_http_pages_without_rows(page, text, iperf3_only_warehouse, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(iperf3_only_warehouse))
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page(page).run()
    assert not at.exception
    assert any(text in i.value for i in at.info)


@pytest.mark.parametrize("page", [DDS_PAGE, HTTP_PAGE])
def test_dds_http_missing_warehouse_message(page, tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(tmp_path / "nothing.duckdb"))
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page(page).run()
    assert not at.exception
    assert any("make sweep" in i.value for i in at.info)


# ---- link conditions, tuning, resources pages -------------------------------------------------------------------

NETEM_PAGE, TUNING_PAGE, RES_PAGE = "app_pages/link_conditions.py", "app_pages/tuning.py", "app_pages/resources.py"


def test_conditions_queries(con):
    scen = netem_scenarios(con, "local", tuning_profile="default_settings")
    assert list(dict.fromkeys(scen["netem_scenario"])) == ["none", "lcl", "edg10"]  # untouched first, then delay
    edg10 = scen[scen["netem_scenario"] == "edg10"].iloc[0]
    assert (edg10["netem_delay_ms"], edg10["netem_rate_mbit"]) == (10.0, 100.0)
    df = netem_metric(con, "local", "http_p90", tuning_profile="default_settings")
    cil = df[(df["variant"] == "cilium / vxlan")].set_index("netem_scenario")["value"]
    assert cil["edg10"] > cil["lcl"] > cil["none"]
    with pytest.raises(ValueError):
        netem_metric(con, "local", "x; drop table y")
    eff = cmp_tuning_vs_host(con, "local", workload="iperf3", protocol="tcp", netem_scenario="none")
    cells = tuning_heatmap_frame(eff, "throughput_efficiency_pct", by_mtu=False).set_index(["variant", "column"])
    assert cells.loc[("antrea / geneve", "kernel_optimizations"), "value"] == pytest.approx(fx.EFF_KOPT_TCP_ANTREA)
    assert "host / host" not in cells.index.get_level_values(0)
    inv = invalid_runs(con, "local")
    assert inv[["cni", "invalid_reason"]].values.tolist() == [["antrea", fx.INVALID_REASON]]
    res = resource_usage(con, "local", workload="iperf3", protocol="udp", netem_scenario="none",
                         tuning_profile="default_settings")
    assert set(res["component"]) == {"system", "workload"}
    assert set(resource_long(res)["phase"]) == {"idle", "run"}


def test_link_conditions_page_renders_and_metric_changes(app):
    at = app.run()
    at.switch_page(NETEM_PAGE).run()
    assert not at.exception
    assert at.selectbox(key="netem_substrate").value == "local"
    assert any(LOCAL_BANNER in w.value for w in at.warning)
    scen = frame(at, "netem_delay_ms")
    assert set(scen["netem_scenario"]) == {"none", "lcl", "edg10"}
    (chart,) = at.get("vega_lite_chart")
    assert '"line"' in chart.proto.spec and '"log"' in chart.proto.spec
    table = frame(at, "edg10")
    assert list(table.columns) == ["variant", "none", "lcl", "edg10"]
    cil = table.set_index("variant").loc["cilium / vxlan"]
    assert cil["none"] > cil["lcl"] > cil["edg10"]  # throughput falls with delay and rate limit
    # the invalid run is a kernel_optimizations run: not in the default_settings selection
    assert any("None for this selection" in s.value for s in at.success)

    at.selectbox(key="netem_metric").set_value("http_p50").run()
    assert not at.exception
    assert "payload-echo 10000 B" in at.selectbox(key="netem_detail").value
    table = frame(at, "edg10").set_index("variant")
    assert table.loc["cilium / vxlan", "edg10"] > table.loc["cilium / vxlan", "none"] + 15  # ~ 2 x 10 ms

    at.selectbox(key="netem_tuning_profile").set_value("kernel_optimizations").run()
    assert not at.exception
    assert frame(at, "invalid_reason")["invalid_reason"].tolist() == [fx.INVALID_REASON]


def test_tuning_page_heatmap_and_mtu_filter(app):
    at = app.run()
    at.switch_page(TUNING_PAGE).run()
    assert not at.exception
    assert any(LOCAL_BANNER in w.value for w in at.warning)
    (chart,) = at.get("vega_lite_chart")
    assert '"rect"' in chart.proto.spec and "kernel_optimizations" in chart.proto.spec
    detail = frame(at, "throughput_efficiency_pct")
    antrea = detail[detail["variant"] == "antrea / geneve"].set_index("tuning_profile")
    assert antrea.loc["default_settings", "throughput_efficiency_pct"] == pytest.approx(fx.EFF_DEFAULT_TCP_ANTREA)
    assert antrea.loc["kernel_optimizations", "throughput_efficiency_pct"] == pytest.approx(fx.EFF_KOPT_TCP_ANTREA)
    assert frame(at, "invalid_reason")["invalid_reason"].tolist() == [fx.INVALID_REASON]

    at.selectbox(key="tuning_mtu").set_value(8950).run()
    assert not at.exception
    detail = frame(at, "throughput_efficiency_pct")
    assert detail["variant"].tolist() == ["antrea / geneve"] and detail["host_tuning_mtu"].tolist() == [9000]


def test_resources_page_idle_vs_run_and_component(app):
    at = app.run()
    at.switch_page(RES_PAGE).run()
    assert not at.exception
    assert any(LOCAL_BANNER in w.value for w in at.warning)
    assert at.selectbox(key="res_workload").value == "iperf3"
    assert len(at.get("vega_lite_chart")) == 3  # CPU, RAM, throughput
    table = frame(at, "cpu_run_pct").set_index("variant")
    assert table.loc["flannel / vxlan", "cpu_run_pct"] > table.loc["host / host", "cpu_run_pct"]  # system first
    eff = frame(at, "cpu_per_unit_pct")  # CPU per Gbit/s beside the host's, with n
    assert eff is not None and set(eff["rate_unit"]) == {"Gbit/s"} and (eff["n_runs"] > 0).all()
    host = eff[eff["variant"] == "host / host"].iloc[0]
    assert host["cpu_per_unit_vs_host"] == pytest.approx(1.0)
    flannel = eff[eff["variant"] == "flannel / vxlan"].iloc[0]
    assert flannel["cpu_per_unit_vs_host"] == pytest.approx(flannel["cpu_per_unit_pct"] / flannel["host_cpu_per_unit_pct"])

    at.radio(key="res_component").set_value("workload").run()
    assert not at.exception
    table = frame(at, "cpu_run_pct").set_index("variant")
    assert table.loc["flannel / vxlan", "names"] == "iperf3-client, iperf3-server"
    assert table.loc["flannel / vxlan", "cpu_idle_pct"] == pytest.approx(0.1)  # only the server runs while idle


@pytest.mark.parametrize("page", [NETEM_PAGE, TUNING_PAGE, RES_PAGE])
def test_condition_pages_missing_warehouse_message(page, tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(tmp_path / "nothing.duckdb"))
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page(page).run()
    assert not at.exception
    assert any("make sweep" in i.value for i in at.info)


def test_resources_page_without_samples(iperf3_only_warehouse, monkeypatch):
    """A warehouse whose runs stored no resources.json (kind-only selection is not needed: use a tree without)."""
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(iperf3_only_warehouse))
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page(RES_PAGE).run()
    assert not at.exception


# ---- Papers page --------------------------------------------------------------------------------------------------

PAPERS_PAGE = "app_pages/papers.py"


def test_papers_page_shows_ours_beside_published_and_the_claims(app):
    at = app.run()
    at.switch_page(PAPERS_PAGE).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="paper_id").value == "000"
    # the reproduction scorecard on top: a row per paper and substrate, and what would decide the undecided claims
    card = at.table[0].value
    assert {p for p, _ in card.index} == {f"seed {p}" for p in ("000", "001", "002", "003", "004")}
    assert card.loc[("seed 000", "local"), "numbers printed / comparable / measured"].endswith("/ 44 / 3")
    assert frame(at, "to decide") is None  # on demand: neither sent nor drawn until asked for
    at.toggle(key="paper_undecided").set_value(True).run()
    undecided = frame(at, "to decide")
    assert len(undecided) == card["cannot tell"].sum() and undecided["to decide"].str.contains("preset|edgebench "
                                                                                            "sweep|argo submit").all()
    assert any(LOCAL_BANNER in w.value for w in at.warning)
    assert any("not the paper's hardware" in w.value for w in at.warning)
    table_1, table_2 = (d.value for d in [*at.dataframe, *at.table] if "published %" in d.value.columns)
    assert len(table_1) == len(table_2) == 20  # every cell of Tables I and II, measured or not
    numbers = pd.concat([table_1, table_2])
    measured = numbers[numbers["ours %"].notna()]
    assert sorted(measured["payload (B)"]) == [64, 1024, 1024]  # Table II at 64/1024 B, Table I at 1024 B
    assert measured["± 95% CI"].notna().all() and set(measured["n (CNI/host)"]) == {"2/2"}
    # Table II has two measured payloads: a chart; Table I one: its table only
    assert len(at.get("vega_lite_chart")) == 1
    claims = frame(at, "outcome")
    tally = next(m.value for m in at.markdown if m.value.startswith("**agrees**"))
    assert len(claims) == 24 and sum(int(n) for n in re.findall(r"\*\* (\d+)", tally)) == 24
    at.selectbox(key="paper_id").set_value("003").run()
    assert not at.exception
    assert set(frame(at, "outcome")["claim"]) == {f"003-{i:02d}" for i in range(1, 16)}


def test_papers_page_for_a_paper_the_fixtures_barely_measured(app):
    at = app.run()
    at.switch_page(PAPERS_PAGE).run()
    at.selectbox(key="paper_id").set_value("001").run()  # the fixtures hold no inter-cluster tool runs
    assert not at.exception
    claims = frame(at, "outcome")
    assert set(claims["outcome"]) == {"cannot tell", "not testable"}
    assert claims[claims["outcome"] == "cannot tell"]["evidence"].str.contains("no measured row matches").all()
