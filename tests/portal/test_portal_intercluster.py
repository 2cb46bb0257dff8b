"""The portal's inter-cluster tools page: data/intercluster.py directly, and the page through AppTest, on the
inter-cluster fixture warehouse (fixture_manifests IC_*)."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from data.common import BASELINE_COLOR, LOCAL_BANNER, connect
from data.intercluster import (intercluster_chart, intercluster_comparison, intercluster_diff_table,
                               intercluster_limits, intercluster_models, intercluster_netem_order,
                               intercluster_series)
from edgebench.results.report.marts.http import INTERCLUSTER, http_kpi_shares, http_problem_runs, http_response_boxes
import fixture_manifests as fx

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
PAGE = "app_pages/intercluster.py"
SKUPPER, SUBMARINER = "skupper:amqp (emulated)", "submariner:vxlan (kernel)"


@pytest.fixture
def con(intercluster_warehouse):
    c = connect(intercluster_warehouse)
    yield c
    c.close()


@pytest.fixture
def page(intercluster_warehouse, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(intercluster_warehouse))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    return at


def frame(at, column):
    """The first dataframe on the page that has `column` (None if there is none)."""
    return next((d.value for d in [*at.dataframe, *at.table] if column in d.value.columns), None)


def chart_spec(at) -> str:
    (chart,) = at.get("vega_lite_chart")
    return chart.proto.spec


def chart_data(at) -> list:
    """The chart's datasets (they travel beside the spec, as Arrow) as DataFrames."""
    import pyarrow as pa

    (chart,) = at.get("vega_lite_chart")
    return [pa.ipc.open_stream(d.data.data).read_all().to_pandas() for d in chart.proto.datasets]


# ---- data/intercluster.py ------------------------------------------------------------------------------------

def test_queries(con):
    assert INTERCLUSTER.substrates(con) == ["local"]
    assert INTERCLUSTER.values(con, "local", "cni") == ["flannel"]  # host runs never cross clusters
    df = intercluster_comparison(con, "local", cni="flannel", service=fx.IC_SERVICE)
    assert set(df["label"]) == {"none (one cluster)", SKUPPER, SUBMARINER, "clusterlink:mtls (emulated)"}
    one = df[df["length_bytes"] == 1000]
    assert one["netem_scenario"].tolist()[0] == "none" and one["netem_scenario"].tolist()[-1] == "edg10"
    assert one.iloc[0]["label"] == "none (one cluster)"  # the baseline first within a scenario
    assert intercluster_series(df)[0] == "none (one cluster)"
    assert intercluster_netem_order(["x", "edg20", "edg10", "lcl", "edg2.5", "none", "edg5", "edg15", "a"]) == [
        "none", "lcl", "edg2.5", "edg5", "edg10", "edg15", "edg20", "a", "x"]
    assert intercluster_models(df) == {SKUPPER: fx.IC_SKUPPER_MODEL,
                                           "clusterlink:mtls (emulated)": fx.IC_CLUSTERLINK_MODEL}
    with pytest.raises(ValueError):
        intercluster_comparison(con, "local", bogus="x; drop table y")


def test_chart_layers_baseline_style_and_limits(con):
    df = intercluster_comparison(con, "local", cni="flannel")
    spec = intercluster_chart(df[df["length_bytes"] == 1000]).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["point", "errorbar", "text", "rule", "text"]
    color = spec["layer"][0]["encoding"]["color"]["scale"]
    # the none baseline in the grey the host baseline has on the CNI and resources pages
    assert color["domain"][0] == "none (one cluster)" and color["range"][0] == BASELINE_COLOR
    assert BASELINE_COLOR not in color["range"][1:]
    assert spec["layer"][0]["encoding"]["x"]["sort"] == ["none", "edg10"]
    lim = intercluster_limits(df)
    assert lim["limit_ms"].tolist() == [100.0, 1000.0]
    assert lim["label"].tolist() == ["vehicle assist 100 ms", "remote maintenance 1000 ms"]


def test_diff_table_text(con):
    df = intercluster_comparison(con, "local", cni="flannel")
    table = intercluster_diff_table(df[df["length_bytes"] == 1000]).set_index(["netem_scenario", "label"])
    assert table.loc[("none", "none (one cluster)"), "vs_none_ms"] == "0 (baseline)"
    row = df[(df["length_bytes"] == 1000) & (df["netem_scenario"] == "none") & (df["label"] == SKUPPER)].iloc[0]
    assert table.loc[("none", SKUPPER), "vs_none_ms"] == (
        f"{row['response_p50_diff_ms']:+.3f} ± {row['response_p50_diff_ci95_ms']:.3f} ms")
    assert table.loc[("none", "clusterlink:mtls (emulated)"), "vs_none_ms"].endswith("(no CI: n < 2)")
    assert table.loc[("none", "clusterlink:mtls (emulated)"), "verdict"] == "n < 2"


# ---- the page -------------------------------------------------------------------------------------------------

def test_page_is_registered_and_renders(page):
    at = page
    assert at.title[0].value == "Inter-cluster tools"
    assert at.selectbox(key="ic_substrate").value == "local"
    assert at.selectbox(key="ic_cni").value == "flannel"
    assert at.selectbox(key="ic_payload").value == 1000
    assert any(LOCAL_BANNER in w.value for w in at.warning)
    spec = chart_spec(at)
    # the two limits as rules, labelled; 95% CI error bars; n per bar; the emulated label in the legend
    assert '"rule"' in spec and '"errorbar"' in spec and '"ci_low_ms"' in spec and '"n_text"' in spec
    assert SKUPPER in spec and "none (one cluster)" in spec and BASELINE_COLOR in spec
    points, limits = chart_data(at)
    assert limits.to_dict("list") == {"limit_ms": [100.0, 1000.0],
                                      "label": ["vehicle assist 100 ms", "remote maintenance 1000 ms"]}
    assert set(points["n_text"]) == {"n=3", "n=1"} and set(points["length_bytes"]) == {1000}
    assert (points["ci_low_ms"] < points["response_p50_ms"]).sum() == (points["n_runs"] >= 2).sum()


def test_page_labels_emulated_tools_and_says_what_was_modelled(page):
    warnings = [w.value for w in page.warning]
    skupper = [w for w in warnings if SKUPPER in w]
    assert len(skupper) == 1 and "not the tool" in skupper[0] and fx.IC_SKUPPER_MODEL in skupper[0]
    assert any("clusterlink:mtls (emulated)" in w and fx.IC_CLUSTERLINK_MODEL in w for w in warnings)
    diff = frame(page, "vs_none_ms")
    assert {SKUPPER, "clusterlink:mtls (emulated)"} <= set(diff["label"])
    assert not (set(diff["label"]) & {"skupper:amqp", "clusterlink:mtls"})  # never under the tool's bare name
    assert SKUPPER in set(frame(page, "pct_requests_over_vehicle_assist")["label"])


def test_page_difference_table_carries_n_ci_and_verdict(page):
    diff = frame(page, "vs_none_ms").set_index(["netem_scenario", "label"])
    assert {"n_runs", "none_n_runs", "response_p50_ci95_ms", "none_response_p50_ci95_ms", "vs_none_pct",
            "verdict"} <= set(diff.columns)
    assert diff.loc[("none", "none (one cluster)"), "verdict"] == "baseline"
    assert diff.loc[("none", SKUPPER), "verdict"] == "worse"
    assert diff.loc[("none", SKUPPER), "n_runs"] == fx.IC_REPS
    skupper = diff.loc[("none", SKUPPER), "vs_none_ms"]
    assert " ± " in skupper and skupper.startswith("+") and skupper.endswith(" ms")
    # submariner:vxlan 1000 B at netem none: +0.14 +- 0.16 ms holds 0 and reaches beyond the margin (0.059 ms =
    # 5 % of 1.19): inconclusive (test_warehouse_intercluster recomputes it from the runs)
    assert diff.loc[("none", SUBMARINER), "verdict"] == "inconclusive"
    # inconclusive is marked in the table (the verdict cells are styled)
    (styled,) = [d for d in page.dataframe if "vs_none_ms" in d.value.columns]
    assert "fff3b0" in str(styled.proto)
    assert any("95% CI" in c.value for c in page.caption)


def test_page_problem_runs(page):
    problems = frame(page, "error")
    assert problems[["status", "label"]].values.tolist() == [["failed", "clusterlink:mtls (emulated)"],
                                                             ["unsupported", "submariner:wireguard (kernel)"]]


def test_payload_and_tool_filters_change_what_is_drawn(page):
    at = page
    before = chart_data(at)[0]
    at.selectbox(key="ic_payload").set_value(1000000).run()
    assert not at.exception
    after = chart_data(at)[0]
    assert set(before["length_bytes"]) == {1000} and set(after["length_bytes"]) == {1000000}
    assert after["response_p50_ms"].min() > before["response_p50_ms"].max()
    assert "clusterlink" not in chart_spec(at)  # clusterlink was only measured with 1000 B
    diff = frame(at, "vs_none_ms").set_index(["netem_scenario", "label"])
    assert set(diff.index.get_level_values("label")) == {"none (one cluster)", SKUPPER, SUBMARINER}

    at.multiselect(key="ic_tools").set_value([SUBMARINER]).run()
    assert not at.exception
    spec = chart_spec(at)
    assert SKUPPER not in spec and SUBMARINER in spec and "none (one cluster)" in spec
    assert set(chart_data(at)[0]["label"]) == {"none (one cluster)", SUBMARINER}
    assert not any(SKUPPER in w.value for w in at.warning)  # no model caption for a tool not shown


def test_one_x_value_is_a_table_not_a_chart(page):
    at = page
    at.selectbox(key="ic_payload").set_value(10000).run()  # submariner:vxlan only, netem none only, no none runs
    assert not at.exception
    assert not at.get("vega_lite_chart")
    assert any("a table instead of a chart" in c.value for c in at.caption)
    table = frame(at, "response_p50_ci95_ms")
    assert table["label"].tolist() == [SUBMARINER] and table["n_runs"].tolist() == [2]
    assert frame(at, "vs_none_ms")["verdict"].tolist() == ["no baseline"]
    assert any("No none runs" in c.value for c in at.caption)


def test_page_without_tool_runs(fixture_warehouse, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(fixture_warehouse))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("no HTTP runs across an inter-cluster tool" in i.value for i in at.info)


def test_page_missing_warehouse(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(tmp_path / "nothing.duckdb"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("make sweep" in i.value for i in at.info)


def test_http_page_keeps_to_one_cluster(con, intercluster_warehouse, monkeypatch):
    """The HTTP page's CNI-vs-host view must not mix runs across tools into flannel's one-cluster numbers."""
    boxes = http_response_boxes(con, "local", service=fx.IC_SERVICE, netem_scenario="none")
    one_cluster = [m for m in fx.intercluster_manifests()
                   if "intercluster" not in m and m["status"] == "ok"]
    assert boxes["n"].sum() == sum(len(fx.intercluster_requests(m)) for m in one_cluster)
    shares = http_kpi_shares(con, "local", service=fx.IC_SERVICE, netem_scenario="none")
    assert shares.set_index(["variant", "length_bytes"]).loc[("flannel / vxlan", 1000), "n_runs"] == 3
    assert http_problem_runs(con, "local").empty  # the failed / unsupported runs are across tools
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(intercluster_warehouse))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/http.py").run()
    assert not at.exception
