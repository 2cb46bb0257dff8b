"""Inter-cluster tools in the warehouse (fixture_manifests IC_*): staging defaults for old manifests, the emulated
label, and cmp_intercluster_vs_none against a hand computation from the fixture's own http-requests.json."""
from __future__ import annotations

import json
import statistics
from collections import defaultdict

import duckdb
import pytest

import fixture_manifests as fx
from edgebench.results import warehouse
from edgebench.results.report.marts import summaries
from edgebench.results.report import verdict as V

# two-sided 95% Student t, t(0.975, df), from statistics tables
T95 = {1: 12.706204736174704, 2: 4.302652729911275, 3: 3.182446305284263}
KEY = ("substrate", "distribution", "cni", "cni_mode", "tuning_profile", "netem_scenario", "intercluster",
       "length_bytes")


def q(path, sql, *params):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def dicts(path, sql, *params):
    with duckdb.connect(str(path), read_only=True) as con:
        cur = con.execute(sql, list(params))
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


def quantile(values, p):
    """Linear interpolation between closest ranks (numpy's default, DuckDB's quantile_cont), written out."""
    v = sorted(values)
    pos = (len(v) - 1) * p
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def ci95(values):
    n = len(values)
    return None if n < 2 else T95[n - 1] * statistics.stdev(values) / n ** 0.5


def _entry(m):
    return m.get("intercluster", "none")


def _key(m):
    return (m["substrate"], m["distribution"], m["cni"], m["cni_mode"], m["tuning_profile"],
            m.get("netem", {}).get("scenario", m["netem_scenario"]), _entry(m), m["length_bytes"])


def expected_rows() -> dict[tuple, dict]:
    """cmp_intercluster_vs_none computed by hand from the fixture runs: per configuration the run medians, pooled
    request quantiles, the none baseline, the difference with its Welch interval, the verdict and limit shares."""
    vehicle, remote = fx.IC_LIMITS_MS["vehicle assist"], fx.IC_LIMITS_MS["remote maintenance"]
    groups, resolutions = defaultdict(list), defaultdict(list)
    for m in fx.intercluster_manifests():
        if m["status"] == "ok" and m["cni"] != "host":
            groups[_key(m)].append(fx.intercluster_requests(m))
            resolutions[_key(m)].append(m["metrics"].get("resolution_ms", 0.1))  # no field: hey's 0.1 ms
    rows = {}
    for k, runs in groups.items():
        medians = [quantile([r["response_ms"] for r in reqs], 0.5) for reqs in runs]
        pooled = [r["response_ms"] for reqs in runs for r in reqs]
        rows[k] = {"n_runs": len(runs), "n_requests": len(pooled), "medians": medians,
                   "resolution_ms": max(resolutions[k]),
                   "request_median_ms": quantile(pooled, 0.5), "request_p95_ms": quantile(pooled, 0.95),
                   "response_p50_ms": statistics.mean(medians), "response_p50_ci95_ms": ci95(medians),
                   "share_requests_over_vehicle_assist": sum(t > vehicle for t in pooled) / len(pooled),
                   "share_requests_over_remote_maintenance": sum(t > remote for t in pooled) / len(pooled),
                   "share_runs_median_over_vehicle_assist": sum(x > vehicle for x in medians) / len(medians),
                   "share_runs_median_over_remote_maintenance": sum(x > remote for x in medians) / len(medians)}
    for k, row in rows.items():
        base = rows.get(k[:6] + ("none",) + k[7:])
        row["none"] = base
        if k[6] == "none":
            row["verdict"], row["diff"], row["diff_ci"], row["pct"] = "baseline", 0.0, None, 0.0
            row["runs_to_decide"] = None
            continue
        if base is None:
            row["verdict"], row["diff"], row["diff_ci"], row["pct"] = "no baseline", None, None, None
            row["runs_to_decide"] = None
            continue
        diff = row["response_p50_ms"] - base["response_p50_ms"]
        n, n0 = row["n_runs"], base["n_runs"]
        sd, sd0 = (statistics.stdev(r["medians"]) if r["n_runs"] >= 2 else None for r in (row, base))
        # the one rule (edgebench.results.report.verdict): Welch's interval of tool - none (Welch-Satterthwaite df),
        # lower = better, the latency margin never below the coarser resolution (every fixture run is fortio's)
        welch = V.welch_ci95(n, sd, n0, sd0)
        verdict = V.decide(diff, welch, n, n0, base["response_p50_ms"], False, V.margin_pct("latency"),
                           max(row["resolution_ms"], base["resolution_ms"]))
        row.update(verdict=verdict, diff=diff, diff_ci=welch, pct=diff / base["response_p50_ms"] * 100,
                   runs_to_decide=V.runs_to_decide(verdict, diff, welch, min(n, n0), base["response_p50_ms"],
                                                   V.margin_pct("latency"),
                                                   max(row["resolution_ms"], base["resolution_ms"])))
    return rows


@pytest.fixture(scope="module")
def mart(intercluster_warehouse):
    rows = dicts(intercluster_warehouse, "select * from cmp_intercluster_vs_none")
    return {tuple(r[c] for c in KEY): r for r in rows}


# ---- staging ----------------------------------------------------------------------------------------------------

def test_old_manifests_come_out_as_none_baseline(intercluster_warehouse, fixture_warehouse):
    old = [m for m in fx.intercluster_manifests() if "intercluster" not in m]
    assert len(old) == 3 + 3 * len(fx.IC_PAYLOADS)  # host + none runs under netem none
    rows = q(intercluster_warehouse, f"""
        select distinct intercluster, intercluster_tool, intercluster_mode, intercluster_implementation, is_emulated,
               intercluster_model, intercluster_detail
        from stg_edgebench__runs where raw_key in ({', '.join('?' * len(old))})""", *[fx.key(m) for m in old])
    assert rows == [("none", "none", "none", "baseline", False, None, None)]
    # every manifest of the main fixture predates the dimension
    assert q(fixture_warehouse, """select distinct intercluster, intercluster_tool, intercluster_mode,
                                          intercluster_implementation, is_emulated from stg_edgebench__runs""") == [
        ("none", "none", "none", "baseline", False)]
    # and the old none runs are the baseline of the tools measured under netem none
    ((n,),) = q(intercluster_warehouse, """select none_n_runs from cmp_intercluster_vs_none
                                           where intercluster = 'skupper:amqp' and netem_scenario = 'none'
                                             and length_bytes = 1000""")
    assert n == fx.IC_REPS


def test_emulated_runs_carry_flag_and_model(intercluster_warehouse):
    rows = q(intercluster_warehouse, """
        select distinct intercluster, intercluster_tool, intercluster_mode, intercluster_implementation, is_emulated,
               intercluster_model, intercluster_version, intercluster_cable_driver
        from stg_edgebench__runs where workload = 'http' order by 1""")
    assert rows == [
        ("clusterlink:mtls", "clusterlink", "mtls", "emulated", True, fx.IC_CLUSTERLINK_MODEL, "v0.4.0", None),
        ("none", "none", "none", "baseline", False, None, None, None),
        ("skupper:amqp", "skupper", "amqp", "emulated", True, fx.IC_SKUPPER_MODEL, "1.7.3", None),
        ("submariner:vxlan", "submariner", "vxlan", "kernel", False, None, "0.18.0", "vxlan"),
        ("submariner:wireguard", "submariner", "wireguard", "kernel", False, None, "0.18.0", "wireguard")]
    mart = q(intercluster_warehouse, """select distinct intercluster, is_emulated, intercluster_model
                                        from cmp_intercluster_vs_none where is_emulated""")
    assert sorted(mart) == [("clusterlink:mtls", True, fx.IC_CLUSTERLINK_MODEL),
                            ("skupper:amqp", True, fx.IC_SKUPPER_MODEL)]
    detail = json.loads(q(intercluster_warehouse, """select any_value(intercluster_detail) from stg_edgebench__runs
                                                     where intercluster = 'skupper:amqp'""")[0][0])
    assert detail["gateways"] == ["c1-gw", "c2-gw"] and detail["implementation"] == "emulated"


# ---- the mart against the hand computation ------------------------------------------------------------------------

def test_mart_rows_are_the_hand_computed_configurations(mart):
    expected = expected_rows()
    assert set(mart) == set(expected)
    # the host-network runs are not part of it; unsupported / failed runs never count
    assert not any(k[2] == "host" for k in mart)
    assert all(k[6] != "submariner:wireguard" for k in mart)
    assert mart[("local", "none", "flannel", "vxlan", "default_settings", "none", "clusterlink:mtls", 1000)][
        "n_runs"] == 1


def test_mart_numbers_match_hand_computation(mart):
    for k, exp in expected_rows().items():
        row = mart[k]
        assert row["n_runs"] == exp["n_runs"] and row["n_requests"] == exp["n_requests"], k
        assert row["n_errors"] == 0
        for col in ("request_median_ms", "request_p95_ms", "response_p50_ms"):
            assert row[col] == pytest.approx(exp[col], rel=1e-9), (k, col)
        if exp["response_p50_ci95_ms"] is None:
            assert row["response_p50_ci95_ms"] is None
        else:  # the macro's t table has 3 decimals
            assert row["response_p50_ci95_ms"] == pytest.approx(exp["response_p50_ci95_ms"], rel=1e-3), k
        for col in ("share_requests_over_vehicle_assist", "share_requests_over_remote_maintenance",
                    "share_runs_median_over_vehicle_assist", "share_runs_median_over_remote_maintenance"):
            assert row[col] == pytest.approx(exp[col]), (k, col)
        assert (row["vehicle_assist_limit_ms"], row["remote_maintenance_limit_ms"]) == (100.0, 1000.0)
        assert row["is_baseline"] == (k[6] == "none")
        assert row["verdict"] == exp["verdict"], k
        assert row["runs_to_decide"] == exp["runs_to_decide"], k
        assert (row["verdict_margin_pct"], row["verdict_method"]) == (5.0, "welch"), k
        base = exp["none"]
        if base is None:
            assert row["none_n_runs"] is None and row["response_p50_diff_ms"] is None
            assert row["response_p50_diff_pct"] is None
            continue
        assert row["none_n_runs"] == base["n_runs"] and row["none_n_requests"] == base["n_requests"]
        assert row["none_response_p50_ms"] == pytest.approx(base["response_p50_ms"])
        assert row["none_request_median_ms"] == pytest.approx(base["request_median_ms"])
        assert row["none_request_p95_ms"] == pytest.approx(base["request_p95_ms"])
        assert row["response_p50_diff_ms"] == pytest.approx(exp["diff"], abs=1e-9)
        assert row["response_p50_diff_pct"] == pytest.approx(exp["pct"], abs=1e-9)
        if exp["diff_ci"] is None:
            assert row["response_p50_diff_ci95_ms"] is None and row["response_p50_diff_ci95_pct"] is None
        else:
            assert row["response_p50_diff_ci95_ms"] == pytest.approx(exp["diff_ci"], rel=1e-3)
            assert row["response_p50_diff_ci95_pct"] == pytest.approx(
                exp["diff_ci"] / base["response_p50_ms"] * 100, rel=1e-3)


def test_fixture_exercises_every_verdict_and_the_limits(mart):
    """The fixture is designed so the hand computation above is not vacuous."""
    verdicts = {r["verdict"] for r in mart.values()}
    assert {"baseline", "worse", "inconclusive", "no baseline", "n < 2"} <= verdicts, verdicts
    skupper_1mb_edg10 = mart[("local", "none", "flannel", "vxlan", "default_settings", "edg10", "skupper:amqp",
                              1000000)]
    assert 0 < skupper_1mb_edg10["share_requests_over_vehicle_assist"] < 1
    assert skupper_1mb_edg10["share_runs_median_over_vehicle_assist"] > 0
    assert skupper_1mb_edg10["verdict"] == "worse"
    # baseline rows: the none runs themselves, differences 0, and they count the tools compared against them
    for r in mart.values():
        if r["is_baseline"]:
            assert (r["response_p50_diff_ms"], r["response_p50_diff_pct"], r["verdict"]) == (0, 0, "baseline")
            assert r["n_tools"] >= 2 and r["none_n_runs"] == r["n_runs"]


def test_verdict_vocabulary_is_the_projects(intercluster_warehouse):
    got = {r[0] for r in q(intercluster_warehouse, "select distinct verdict from cmp_intercluster_vs_none")}
    assert got <= {"baseline", "equivalent", "better", "worse", "inconclusive", "no baseline", "n < 2"}
    assert {r[0] for r in q(intercluster_warehouse, "select distinct verdict_method from cmp_intercluster_vs_none")
            } == {"welch"}


# ---- one-cluster marts keep to one cluster --------------------------------------------------------------------------

def test_one_cluster_comparisons_ignore_runs_across_tools(intercluster_warehouse):
    # flannel/vxlan at netem none, 1000 B: 3 one-cluster runs; 3 + 3 + 1 more across tools must not count
    rows = q(intercluster_warehouse, """select cni, n_runs, host_n_runs from cmp_http_vs_host
                                        where netem_scenario = 'none' and length_bytes = 1000 order by cni""")
    assert rows == [("flannel", fx.IC_REPS, 3), ("host", 3, 3)]
    # the run-level facts keep every run, labelled
    assert q(intercluster_warehouse, """select intercluster, count(*) from fct_http_runs
                                        group by 1 order by 1""") == [
        ("clusterlink:mtls", 2), ("none", 3 + 2 * 2 * fx.IC_REPS), ("skupper:amqp", 4 * fx.IC_REPS),
        ("submariner:vxlan", 4 * fx.IC_REPS + 2), ("submariner:wireguard", 1)]
    cols = {r[0] for r in q(intercluster_warehouse, "describe fct_http_requests")}
    assert {"intercluster", "intercluster_implementation", "is_emulated", "intercluster_model"} <= cols


def test_unsupported_and_failed_visible_in_facts(intercluster_warehouse):
    rows = q(intercluster_warehouse, """select intercluster, status, error from fct_http_runs where status <> 'ok'
                                        order by 1""")
    assert rows == [("clusterlink:mtls", "failed", fx.IC_FAILED), ("submariner:wireguard", "unsupported",
                                                                      fx.IC_UNSUPPORTED)]


# ---- the summary -------------------------------------------------------------------------------------------------

def test_intercluster_summary_and_cli_section(intercluster_warehouse, monkeypatch, capsys):
    rows = summaries.intercluster_summary(intercluster_warehouse)
    assert rows and all(r["n_runs"] >= 1 and r["verdict"] for r in rows)
    first = rows[0]
    assert (first["netem_scenario"], first["intercluster"], first["verdict"]) == ("none", "none", "baseline")
    # netem none before edg10 within a configuration, the baseline first within a scenario
    one = [r for r in rows if r["length_bytes"] == 1000]
    assert [r["netem_scenario"] for r in one] == sorted((r["netem_scenario"] for r in one),
                                                        key=["none", "edg10"].index)
    assert all(one[i]["is_baseline"] or not one[i + 1]["is_baseline"] or
               one[i]["netem_scenario"] != one[i + 1]["netem_scenario"] for i in range(len(one) - 1))

    from typer.testing import CliRunner

    from edgebench.cli import app

    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(intercluster_warehouse))
    monkeypatch.setenv("COLUMNS", "250")
    result = CliRunner().invoke(app, ["summary", "intercluster"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "skupper:amqp (emulated)" in text and "submariner:vxlan (kernel)" in text
    assert "none (one cluster)" in text and "±95% CI" in text
    # the verdicts as phrases (results.report.verdict.describe): clusterlink's one run has no interval
    assert "inconclusive, " in text and "no baseline" in text and "worse by " in text
    # the verdict column wraps in the table: the phrase's words, cell by cell
    words = " ".join(w for line in text.splitlines() for w in line.replace("│", " ").split())
    assert "inconclusive:" in words and "fewer than 2 runs" in words and "(n 1/3," in words
    assert "a model of the tool's data plane, not the tool" in text and fx.IC_SKUPPER_MODEL[:40] in text
    assert CliRunner().invoke(app, ["summary", "nonsense"]).exit_code != 0


def test_summary_without_tool_runs(fixture_warehouse):
    assert summaries.intercluster_summary(fixture_warehouse) == []


# ---- a manifest whose inter-cluster fields are wrong fails the build ------------------------------------------------

def test_bad_intercluster_fields_fail_the_build(tmp_path):
    ms = [m for m in fx.intercluster_manifests() if m.get("intercluster") == "skupper:amqp"][:2]
    ms[0]["intercluster"], ms[0]["intercluster_tool"] = "skupper:quic", "skupper"      # unknown entry
    ms[1]["intercluster_detail"]["model"] = None                                        # emulated, model unknown
    root = tmp_path / "raw"
    for m in ms:
        p = root / fx.key(m)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(m))
    with pytest.raises(warehouse.WarehouseError) as exc:
        warehouse.build(warehouse_path=tmp_path / "wh.duckdb", raw_root=str(root), quiet=True)
    text = str(exc.value)
    assert "intercluster: accepted_values" in text and "skupper:quic" in text
    assert "assert_intercluster_fields_agree" in text
