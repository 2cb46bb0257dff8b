"""DDS and HTTP models on the fixture raw data: expectations computed here, independently, from the fixture's
per-sample files (dds-samples.json, http-requests.json) rather than from the warehouse's own logic."""
from __future__ import annotations

import json
import statistics
from collections import defaultdict

import duckdb
import pytest

import fixture_manifests as fx
from edgebench.results.report import verdict as V


def q(path, sql, *params):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def _weighted_p90(samples):
    """The run's p90 by the contract: count-weighted mean of the per-second p90s."""
    total = sum(s["latency_count"] for s in samples)
    return sum(s["latency_p90_us"] * s["latency_count"] for s in samples) / total


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs)


def _quantile_linear(values, p):
    """Linear interpolation between closest ranks (numpy's default), written out."""
    v = sorted(values)
    pos = (len(v) - 1) * p
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def _dds(cni, mode, **params):
    return [m for m in fx.dds_manifests() if m["cni"] == cni and m["params"]["mode"] == mode
            and m["status"] == "ok" and all(m["params"].get(k, m.get(k)) == v for k, v in params.items())]


def _http(cni, service, length):
    return [m for m in fx.http_manifests()
            if (m["cni"], m["params"]["service"], m["length_bytes"]) == (cni, service, length)]


# ---- DDS ------------------------------------------------------------------------------------------------------

def test_dds_row_counts(fixture_warehouse):
    n_lat = sum(1 for m in fx.dds_manifests() if m["params"]["mode"] == "latency")
    assert q(fixture_warehouse, "select count(*) from fct_dds_latency") == [(n_lat,)]
    assert q(fixture_warehouse, "select count(*) from fct_dds_throughput") == [(fx.N_DDS_RUNS - n_lat,)]
    n_samples = sum(len(fx.dds_samples(m)) for m in fx.dds_manifests())
    assert q(fixture_warehouse, "select count(*) from int_dds__samples") == [(n_samples,)]


@pytest.mark.parametrize("length, reliability", [(64, "reliable"), (1024, "reliable"), (64, "best-effort")])
def test_latency_p90_overhead_pct_known_value(fixture_warehouse, length, reliability):
    cond = dict(length_bytes=length, reliability=reliability, transport="unicast", security="none")
    host = _mean(_weighted_p90(fx.dds_samples(m)) for m in _dds("host", "latency", **cond))
    flannel = _mean(_weighted_p90(fx.dds_samples(m)) for m in _dds("flannel", "latency", **cond))
    rows = q(fixture_warehouse, """
        select n_runs, latency_p90_us, host_latency_p90_us, latency_p90_overhead_pct, discovery, host_discovery
        from cmp_dds_vs_host
        where substrate = 'local' and dds_mode = 'latency' and cni = 'flannel' and length_bytes = ?
          and reliability = ? and security = 'none'""", length, reliability)
    ((n, p90, host_p90, overhead, discovery, host_discovery),) = rows
    assert n == 2 and p90 == pytest.approx(flannel) and host_p90 == pytest.approx(host)
    assert overhead == pytest.approx((flannel - host) / host * 100)  # positive = slower than host (Table II)
    assert overhead > 0
    # discovery is not matched: the host baseline discovers by multicast, flannel/vxlan uses static peers
    assert (discovery, host_discovery) == ("static-peers", "multicast")


def test_throughput_overhead_known_value(fixture_warehouse):
    for k in (1, 4):
        cond = dict(transport="unicast", subscribers=k)
        tput = lambda ms: _mean(  # noqa: E731  (sum over subscribers per second, mean over seconds)
            sum(s["throughput_mbps"] for s in fx.dds_samples(m)) / fx.DDS_DURATION_S for m in ms)
        host, flannel = tput(_dds("host", "throughput", **cond)), tput(_dds("flannel", "throughput", **cond))
        ((t, h, overhead),) = q(fixture_warehouse, """
            select throughput_mbps, host_throughput_mbps, throughput_overhead_pct from cmp_dds_vs_host
            where dds_mode = 'throughput' and cni = 'flannel' and transport = 'unicast' and subscribers = ?""", k)
        assert t == pytest.approx(flannel) and h == pytest.approx(host)
        assert overhead == pytest.approx((host - flannel) / host * 100)
    # multicast has a host row but no flannel one (bridge-vxlan carries no multicast in the fixtures)
    assert q(fixture_warehouse, """select cni, subscribers from cmp_dds_vs_host
                                   where transport = 'multicast' order by subscribers""") == [("host", 1), ("host", 4)]


def test_dds_unsupported_visible_but_out_of_comparisons(fixture_warehouse):
    rows = q(fixture_warehouse, """select cni, security, status, error, latency_p90_us from fct_dds_latency
                                   where status <> 'ok'""")
    assert rows == [("calico", "auth-encrypt", "unsupported",
                     "unsupported: ddsperf was built without DDS Security (no auth-encrypt plugins)", None)]
    assert q(fixture_warehouse, "select count(*) from cmp_dds_vs_host where security = 'auth-encrypt'") == [(0,)]


# ---- HTTP -----------------------------------------------------------------------------------------------------

def test_http_row_counts(fixture_warehouse):
    n_requests = sum(len(fx.http_requests(m)) for m in fx.http_manifests())
    assert n_requests == (fx.N_HTTP_RUNS - 1) * fx.HTTP_REQUESTS
    assert q(fixture_warehouse, "select count(*) from fct_http_requests") == [(n_requests,)]
    assert q(fixture_warehouse, "select count(*) from fct_http_runs") == [(fx.N_HTTP_RUNS,)]
    # one row per ok run x use case of its kpis_ms
    assert q(fixture_warehouse, "select count(*) from fct_http_kpi_compliance") == [
        ((fx.N_HTTP_RUNS - 1) * len(fx.HTTP_KPIS_MS),)]


def test_http_percentiles_from_requests(fixture_warehouse):
    for m in fx.http_manifests():
        reqs = fx.http_requests(m)
        if not reqs:
            continue
        ok = [r["response_ms"] for r in reqs if 200 <= r["status"] < 300]
        ((n, n_err, p50, p90, p99, mean, mx),) = q(fixture_warehouse, """
            select n_requests, n_errors, response_p50_ms, response_p90_ms, response_p99_ms, response_mean_ms,
                   response_max_ms from fct_http_runs where run_id = ?""", m["run_id"])
        assert (n, n_err) == (len(reqs), len(reqs) - len(ok))
        assert p50 == pytest.approx(_quantile_linear(ok, 0.5))
        assert p90 == pytest.approx(_quantile_linear(ok, 0.9))
        assert p99 == pytest.approx(_quantile_linear(ok, 0.99))
        assert mean == pytest.approx(_mean(ok)) and mx == pytest.approx(max(ok))


def test_http_non_200_request_counted_as_error(fixture_warehouse):
    cni, service, length, rep, seq, status = fx.HTTP_NON_200
    rows = q(fixture_warehouse, """select seq, http_status, is_error from fct_http_requests
                                   where is_error""")
    assert rows == [(seq, status, True)]
    assert q(fixture_warehouse, """select n_errors from fct_http_runs where cni = ? and service = ?
                                   and length_bytes = ? and repetition = ?""", cni, service, length, rep) == [(1,)]


def test_kpi_shares_known_values(fixture_warehouse):
    expected = {}
    for m in fx.http_manifests():
        reqs = fx.http_requests(m)
        for use_case, kpi in m["params"]["kpis_ms"].items():
            if reqs:
                beyond = sum(1 for r in reqs if r["response_ms"] > kpi or not 200 <= r["status"] < 300)
                p90 = _quantile_linear([r["response_ms"] for r in reqs if 200 <= r["status"] < 300], 0.9)
                expected[(m["run_id"], use_case)] = (kpi, beyond / len(reqs), p90 > kpi)
    rows = q(fixture_warehouse, """select run_id, use_case, kpi_ms, share_beyond_kpi, is_p90_beyond_kpi
                                   from fct_http_kpi_compliance""")
    got = {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows}
    assert got.keys() == expected.keys()
    for k, (kpi, share, p90_beyond) in expected.items():
        assert got[k][0] == kpi and got[k][1] == pytest.approx(share) and got[k][2] == p90_beyond
    # the fixture's slow flannel static-reply run breaches the 100 ms boundary at p90: 6 of 40 requests beyond
    (m,) = [m for m in _http("flannel", "static-reply", 0) if m["repetition"] == 1]
    assert got[(m["run_id"], "vehicle-decision-assist")] == (100.0, pytest.approx(6 / 40), True)
    # boundaries come from the data: exactly the distinct values of params.kpis_ms
    assert q(fixture_warehouse, "select distinct kpi_ms from fct_http_kpi_compliance order by 1") == [
        (float(v),) for v in sorted(set(fx.HTTP_KPIS_MS.values()))]
    shares = json.loads(q(fixture_warehouse, "select share_beyond_kpi from fct_http_runs where run_id = ?",
                          m["run_id"])[0][0])
    assert shares["vehicle-decision-assist"] == pytest.approx(6 / 40)


def test_http_failed_run_visible_but_out_of_comparisons(fixture_warehouse):
    cni, service, length, rep, error = fx.HTTP_FAILED
    rows = q(fixture_warehouse, """select cni, service, repetition, error, n_requests, response_p90_ms
                                   from fct_http_runs where status = 'failed'""")
    assert rows == [(cni, service, rep, error, 0, None)]
    assert q(fixture_warehouse, """select n_runs from cmp_http_vs_host
                                   where cni = ? and service = ?""", cni, service) == [(1,)]


def test_http_overhead_known_value(fixture_warehouse):
    def mean_p90(ms):
        return _mean(_quantile_linear([r["response_ms"] for r in fx.http_requests(m) if r["status"] == 200], 0.9)
                     for m in ms if m["status"] == "ok")
    host = mean_p90(_http("host", "payload-echo", 1000000))
    flannel = mean_p90(_http("flannel", "payload-echo", 1000000))
    ((overhead,),) = q(fixture_warehouse, """select response_p90_overhead_pct from cmp_http_vs_host
                                             where cni = 'flannel' and service = 'payload-echo'
                                               and length_bytes = 1000000""")
    assert overhead == pytest.approx((flannel - host) / host * 100)


# ---- a sweep without DDS / HTTP files -------------------------------------------------------------------------

def test_iperf3_only_tree_builds_with_empty_dds_http_models(iperf3_only_warehouse):
    counts = {t: q(iperf3_only_warehouse, f"select count(*) from {t}")[0][0] for t in (
        "stg_edgebench__dds_samples", "stg_edgebench__http_requests", "fct_dds_latency", "fct_dds_throughput",
        "cmp_dds_vs_host", "fct_http_requests", "fct_http_runs", "fct_http_kpi_compliance",
        "cmp_http_vs_host")}
    assert set(counts.values()) == {0}, counts
    assert q(iperf3_only_warehouse, "select count(*) from fct_iperf3_runs") == [(fx.N_IPERF3_RUNS,)]


def test_samples_beside_a_superseded_manifest_are_ignored(tmp_path):
    """A DDS run rerun under an older sweep directory: only the winning manifest's samples count."""
    from edgebench.results import warehouse

    ms = fx.iperf3_manifests()[:1] + fx.dds_manifests()[:1]
    old = json.loads(json.dumps(ms[1]))
    old["sweep_id"], old["finished_at"] = "fixture-sweep-0", "2026-01-01T00:00:00Z"
    root = fx.write_tree(tmp_path / "raw", ms + [old])
    warehouse.build(warehouse_path=tmp_path / "wh.duckdb", raw_root=str(root), quiet=True)
    per_run = defaultdict(int)
    for r in q(tmp_path / "wh.duckdb", "select sweep_id from int_dds__samples"):
        per_run[r[0]] += 1
    assert dict(per_run) == {fx.SWEEP: len(fx.dds_samples(ms[1]))}
    assert q(tmp_path / "wh.duckdb", "select count(*) from stg_edgebench__dds_samples") == [
        (2 * len(fx.dds_samples(ms[1])),)]


# ---- HTTP verdicts: time resolution and 95% intervals (fixture_manifests.VERDICT_GROUPS) ------------------------

T95 = {2: 4.302652729911275, 1: 12.706204736174704}  # t(0.975, df), from statistics tables


def _quantile_run(reqs, p):
    return _quantile_linear([r["response_ms"] for r in reqs], p)


def _expected_verdict(cni_vals, host_vals, cni_res, host_res):
    """The verdict by the one rule (edgebench.results.report.verdict), from the per-run values: Welch's 95% interval of
    cni - host, judged against the latency margin (5 % of the host mean), never below the coarser resolution."""
    def sd(vals):
        return statistics.stdev(vals) if len(vals) >= 2 else None

    diff = _mean(cni_vals) - _mean(host_vals)
    ci = V.welch_ci95(len(cni_vals), sd(cni_vals), len(host_vals), sd(host_vals))
    return V.decide(diff, ci, len(cni_vals), len(host_vals), _mean(host_vals), False, V.margin_pct("latency"),
                    max(cni_res, host_res))


def _equal_spreads(sd):
    """Both sides with the same (non-zero) spread and run count: Welch-Satterthwaite's df is a whole number."""
    return sd[0] and sd[1] and abs(sd[0] - sd[1]) < 1e-9 * sd[1]


def test_http_verdicts(verdict_warehouse):
    runs = defaultdict(list)  # (length, cni) -> [(p50, p90, resolution)]
    for m, reqs in fx.verdict_runs():
        res = (m["metrics"] or {}).get("resolution_ms", 0.1)  # no field: recorded with hey before it existed
        runs[(m["length_bytes"], m["cni"])].append((_quantile_run(reqs, 0.5), _quantile_run(reqs, 0.9), res))
    rows = q(verdict_warehouse, """
        select length_bytes, cni, n_runs, host_n_runs, response_p50_ms, host_response_p50_ms, response_p50_ci95_ms,
               host_response_p50_ci95_ms, response_p90_ci95_ms, resolution_ms, host_resolution_ms,
               response_p50_verdict, verdict, response_p50_overhead_pct, response_p90_overhead_pct, load_clients,
               response_p50_diff_ci95_ms
        from cmp_http_vs_host order by length_bytes, cni""")
    lengths = {length: group for group, (length, _) in fx.VERDICT_GROUPS.items()}
    assert len(rows) == sum(len(cnis) for _, cnis in fx.VERDICT_GROUPS.values())
    for (length, cni, n, host_n, p50, host_p50, ci50, host_ci50, ci90, res, host_res, v50, v90, pct50, pct90,
         clients, diff_ci50) in rows:
        group = lengths[length]
        mine, host = runs[(length, cni)], runs[(length, "host")]
        assert (n, host_n) == (len(mine), len(host))
        assert p50 == pytest.approx(_mean(r[0] for r in mine)) and host_p50 == pytest.approx(_mean(r[0] for r in host))
        if n >= 2:
            assert ci50 == pytest.approx(T95[n - 1] * statistics.stdev(r[0] for r in mine) / n ** 0.5, rel=1e-3)
        else:
            assert ci50 is None and ci90 is None
        if cni != "host":  # Welch's interval of the difference, from the per-run p50s (none with one run a side)
            sd = [statistics.stdev(r[0] for r in side) if len(side) >= 2 else None for side in (mine, host)]
            welch = V.welch_ci95(len(mine), sd[0], len(host), sd[1])
            if welch is None:
                assert diff_ci50 is None, cni
            elif not _equal_spreads(sd):  # equal spreads: test_http_difference_interval_at_a_whole_df
                assert diff_ci50 == pytest.approx(welch, rel=1e-9, abs=1e-12), cni
        assert res == max(r[2] for r in mine) and host_res == max(r[2] for r in host)
        assert clients == fx.VERDICT_GROUPS[group][1][cni][0].replace("legacy", "hey")
        expected = fx.VERDICT_EXPECTED[(group, cni)]
        assert (v50, v90) == expected, (group, cni)
        if cni != "host":  # the designed verdicts are what the rule gives
            for k, v in ((0, v50), (1, v90)):
                assert v == _expected_verdict([r[k] for r in mine], [r[k] for r in host], res, host_res), (cni, k)
        # every row with a host baseline carries its percentage (the verdict, not a null, speaks to resolution)
        if v50 == "baseline":
            assert pct50 == 0 and pct90 == 0
        else:
            host_p90 = _mean(r[1] for r in host)
            assert pct50 == pytest.approx((p50 - host_p50) / host_p50 * 100)
            assert pct90 == pytest.approx((_mean(r[1] for r in mine) - host_p90) / host_p90 * 100)
    # the bug report's case: hey's 0.1 ms steps on both sides; p50 0.15 vs 0.10 ms reads +50 %, but the margin is
    # hey's step (0.1 ms > 5 % of 0.1 ms): 0.05 +- 0 lies within +-0.1, equivalent; the p90 (0.2 vs 0.1, +100 %) is
    # one whole step, 0.1 +- 0, on the margin's edge and so within it: equivalent as well
    ((v50, pct50, v90, pct90, margin, method),) = q(verdict_warehouse, """
        select response_p50_verdict, response_p50_overhead_pct, verdict, response_p90_overhead_pct,
               verdict_margin_pct, verdict_method
        from cmp_http_vs_host where length_bytes = 1000 and cni = 'flannel'""")
    assert (v50, v90, margin, method) == ("equivalent", "equivalent", 5.0, "welch")
    assert pct50 == pytest.approx(50.0) and pct90 == pytest.approx(100.0)
    # resolution reaches the run mart too: fortio runs 0.001 ms, hey runs 0.1 (also without the field)
    assert q(verdict_warehouse, """select load_client, resolution_ms, count(*) from fct_http_runs
                                   group by all order by 1""") == [("fortio", 0.001, 13), ("hey", 0.1, 9)]


def test_http_difference_interval_at_a_whole_df(verdict_warehouse):
    """calico vs host at 60 B: 3 runs a side, each with sd 0.001 ms: Welch-Satterthwaite df = (2v)^2 / (2 v^2 / 2)
    = 4 exactly (floating point may give 3.9999999999999996: the floor keeps it whole, in SQL and Python), so the
    half-width is t(4) x sqrt(2 x 0.001^2 / 3) = 2.776 x 0.000816 = 0.00227 ms."""
    runs = defaultdict(list)
    for m, reqs in fx.verdict_runs():
        if m["length_bytes"] == 60:
            runs[m["cni"]].append(_quantile_run(reqs, 0.5))
    mine, host = runs["calico"], runs["host"]
    welch = V.welch_ci95(3, statistics.stdev(mine), 3, statistics.stdev(host))
    assert welch == pytest.approx(2.776 * (2 * 0.001 ** 2 / 3) ** 0.5, rel=1e-6)
    ((ci,),) = q(verdict_warehouse, """select response_p50_diff_ci95_ms from cmp_http_vs_host
                                       where length_bytes = 60 and cni = 'calico'""")
    assert ci == pytest.approx(welch, rel=1e-6)


def test_batching_is_in_the_grain_of_the_dds_comparisons(tmp_path):
    """dds-batching=off runs (params.batching = "off") reach the per-run marts with batching = 'off'; runs without
    the field (all stored before it existed) read 'on'; the comparisons keep the two apart (batching is in their
    grain), and an unbatched CNI run is compared only with an unbatched host run."""
    import copy

    from edgebench.results import warehouse

    base = [m for m in fx.dds_manifests() if m["params"]["mode"] == "throughput" and m["params"]["subscribers"] == 1
            and m["params"]["transport"] == "unicast" and m["status"] == "ok"]
    off = []
    for m in base:
        if m["cni"] != "flannel":
            continue
        o = copy.deepcopy(m)
        o["run_id"] = m["run_id"][:-3] + "0ff"
        o["params"]["batching"] = "off"
        o["metrics"] = {**m["metrics"], "throughput_mbps": m["metrics"]["throughput_mbps"] / 10}
        off.append(o)
    assert base and off
    path = tmp_path / "wh.duckdb"
    warehouse.build(warehouse_path=path, raw_root=str(fx.write_tree(tmp_path / "raw", base + off)), quiet=True)
    per_run = dict(q(path, "select run_id, batching from fct_dds_throughput"))
    assert per_run == {**{m["run_id"]: "on" for m in base}, **{m["run_id"]: "off" for m in off}}
    rows = {r[0]: r[1:] for r in q(path, "select batching, n_runs, throughput_mbps, host_n_runs from cmp_dds_vs_host "
                                         "where cni = 'flannel'")}
    on = [m["metrics"]["throughput_mbps"] for m in base if m["cni"] == "flannel"]
    assert set(rows) == {"on", "off"}
    assert rows["on"][0] == len(on) and rows["on"][1] == pytest.approx(_mean(on)) and rows["on"][2]
    assert rows["off"][0] == len(off) and rows["off"][1] == pytest.approx(_mean(on) / 10)
    assert rows["off"][2] is None  # no unbatched host run: no baseline, never the batched host's
