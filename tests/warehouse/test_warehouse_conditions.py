"""Link conditions, tuning, validity and resources (docs/results-layout.md, last section) on the fixture raw data:
expectations computed here from the fixture's manifests and resources.json files, independently of the models."""
from __future__ import annotations

import json

import duckdb
import pytest

import fixture_manifests as fx


def q(path, sql, *params):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def _invalid_manifest():
    (m,) = [m for m in fx.iperf3_manifests() if m.get("is_valid") is False]
    return m


# ---- staging: new fields, defaults for old manifests ------------------------------------------------------------

def test_staging_parses_netem_tuning_validity(fixture_warehouse):
    rows = q(fixture_warehouse, """
        select netem_scenario, netem_mechanism, netem_delay_ms, netem_jitter_ms, netem_loss_pct, netem_rate_mbit,
               netem_scope
        from stg_edgebench__runs where netem_scenario = 'edg10' group by all""")
    e = fx.NETEM["edg10"]
    assert rows == [("edg10", "tc-netem", e["delay_ms"], e["jitter_ms"], e["loss_pct"], e["rate_mbit"], "all")]
    # lcl has no rate limit: null = unlimited
    assert q(fixture_warehouse, "select distinct netem_rate_mbit from stg_edgebench__runs "
                                "where netem_scenario = 'lcl'") == [(None,)]
    m = _invalid_manifest()
    ((profile, requested, readback, unsupported, mtu, is_valid, reason),) = q(fixture_warehouse, """
        select tuning_profile, tuning_requested, tuning_readback, tuning_unsupported, tuning_mtu, is_valid,
               invalid_reason from stg_edgebench__runs where run_id = ?""", m["run_id"])
    assert (profile, mtu, is_valid, reason) == ("kernel_optimizations", 8950, False, fx.INVALID_REASON)
    assert json.loads(requested)["net.core.rmem_max"] == 67108864
    assert json.loads(readback)["net.core.rmem_max"] == 212992
    assert "vm.swappiness" in json.loads(unsupported)


def test_old_manifests_default_correctly(fixture_warehouse):
    old = [m for m in fx.fixture_manifests() if "is_valid" not in m]
    assert len(old) > 10 and all("netem" not in m and "tuning" not in m for m in old)
    rows = q(fixture_warehouse, f"""
        select distinct netem_scenario, netem_mechanism, netem_delay_ms, tuning_profile, tuning_mtu, is_valid,
               invalid_reason, tuning_requested
        from stg_edgebench__runs where raw_key in ({', '.join('?' * len(old))})""", *[fx.key(m) for m in old])
    assert rows == [("none", "none", None, "default_settings", None, True, None, None)]


def test_every_fact_mart_carries_conditions_and_validity(fixture_warehouse):
    for table in ("fct_iperf3_runs", "fct_dds_latency", "fct_dds_throughput", "fct_http_runs", "fct_http_requests",
                  "fct_http_kpi_compliance", "fct_resource_usage"):
        cols = {r[0] for r in q(fixture_warehouse, f"describe {table}")}
        assert {"substrate", "netem_scenario", "tuning_profile", "is_valid", "invalid_reason"} <= cols, table


# ---- validity: visible in fct, out of comparisons ----------------------------------------------------------------

def test_invalid_run_visible_in_fct_but_out_of_comparisons(fixture_warehouse):
    m = _invalid_manifest()
    assert q(fixture_warehouse, """select status, is_valid, invalid_reason, throughput_mbps from fct_iperf3_runs
                                   where not is_valid""") == [("ok", False, fx.INVALID_REASON, 3000.0)]
    # cmp_iperf3_vs_host: the two valid runs only (9000 / 9500 host); the invalid 3000 Mbit/s would drag it down
    ((n, tput, overhead),) = q(fixture_warehouse, """
        select n_runs, throughput_mbps, overhead_pct from cmp_iperf3_vs_host
        where cni = 'antrea' and tuning_profile = 'kernel_optimizations' and protocol = 'tcp'""")
    assert (n, tput) == (2, 9000.0) and overhead == pytest.approx((9500 - 9000) / 9500 * 100)
    ((n_eff,),) = q(fixture_warehouse, """select n_runs from cmp_tuning_vs_host where cni = 'antrea'
                                          and tuning_profile = 'kernel_optimizations' and protocol = 'tcp'""")
    assert n_eff == 2
    # resources: the invalid run's samples are in fct_resource_usage, not in the comparison
    assert q(fixture_warehouse, "select count(*) from fct_resource_usage where run_id = ?", m["run_id"]) == [(3,)]
    assert q(fixture_warehouse, """select distinct n_runs from cmp_resources_vs_host where cni = 'antrea'
                                   and tuning_profile = 'kernel_optimizations' and protocol = 'tcp'""") == [(2,)]


def test_invalid_dds_and_http_runs_out_of_comparisons(tmp_path):
    """An invalid DDS and an invalid HTTP run (readback mismatch) do not reach dds/cmp_http_vs_host."""
    from edgebench.results import warehouse

    dds = [m for m in fx.dds_manifests() if m["params"]["mode"] == "latency" and m["length_bytes"] == 64
           and m["params"]["reliability"] == "reliable" and m["cni"] in ("host", "flannel")]
    http = [m for m in fx.http_manifests() if m["params"]["service"] == "payload-recv" and m["length_bytes"] == 1000]
    bad_dds = json.loads(json.dumps([m for m in dds if m["cni"] == "flannel"][0]))
    bad_http = json.loads(json.dumps([m for m in http if m["cni"] == "flannel"][0]))
    for m in (bad_dds, bad_http):
        fx.with_conditions(m, invalid_reason=fx.INVALID_REASON)
    ms = [m for m in dds + http if m["run_id"] not in (bad_dds["run_id"], bad_http["run_id"])] + [bad_dds, bad_http]
    root = fx.write_tree(tmp_path / "raw", ms)
    wh = tmp_path / "wh.duckdb"
    warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True)
    assert q(wh, "select count(*) from fct_dds_latency where not is_valid") == [(1,)]
    assert q(wh, "select count(*) from fct_http_runs where not is_valid") == [(1,)]
    assert q(wh, "select count(*) from fct_http_requests where not is_valid") == [(fx.HTTP_REQUESTS,)]
    assert q(wh, "select n_runs from cmp_dds_vs_host where cni = 'flannel'") == [(1,)]
    assert q(wh, "select n_runs from cmp_http_vs_host where cni = 'flannel'") == [(1,)]


# ---- tuning efficiency ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("profile, protocol, expected, host_mtu", [
    ("default_settings", "tcp", fx.EFF_DEFAULT_TCP_ANTREA, 1500),
    ("default_settings", "udp", fx.EFF_DEFAULT_UDP_ANTREA, 1500),
    ("kernel_optimizations", "tcp", fx.EFF_KOPT_TCP_ANTREA, 9000),
    ("kernel_optimizations", "udp", fx.EFF_KOPT_UDP_ANTREA, 9000),
])
def test_throughput_efficiency_known_values(fixture_warehouse, profile, protocol, expected, host_mtu):
    ((mtu, h_mtu, eff, lat_eff),) = q(fixture_warehouse, """
        select tuning_mtu, host_tuning_mtu, throughput_efficiency_pct, latency_efficiency_pct
        from cmp_tuning_vs_host
        where substrate = 'local' and workload = 'iperf3' and cni = 'antrea' and tuning_profile = ?
          and protocol = ? and netem_scenario = 'none'""", profile, protocol)
    assert eff == pytest.approx(expected) and lat_eff is None
    assert (mtu, h_mtu) == ((8950, 9000) if profile == "kernel_optimizations" else (1450, 1500))
    assert h_mtu == host_mtu


def test_efficiency_independent_of_fixture_constants(fixture_warehouse):
    """Recompute every iperf3 efficiency from the manifests (ok + valid runs, same profile / netem / protocol /
    length, host baseline = smallest host MTU >= the CNI's)."""
    groups = {}
    for m in fx.iperf3_manifests():
        if m["status"] != "ok" or not m.get("is_valid", True) or m["substrate"] != "local" or m["sweep_id"] != fx.SWEEP:
            continue
        mtu = (m.get("tuning") or {}).get("mtu", m["mtu"])
        k = (m["netem_scenario"], m["tuning_profile"], m["protocol"], m["length_bytes"])
        groups.setdefault(k, {}).setdefault((m["cni"], m["cni_mode"], mtu), []).append(
            m["metrics"]["throughput_mbps"])
    expected = {}
    for k, cfgs in groups.items():
        hosts = sorted((mtu, _mean(v)) for (cni, _, mtu), v in cfgs.items() if cni == "host")
        for (cni, mode, mtu), v in cfgs.items():
            host = next((h for hm, h in hosts if hm >= mtu), None)
            expected[k + (cni, mode)] = _mean(v) / host * 100 if host else None
    rows = q(fixture_warehouse, """select netem_scenario, tuning_profile, protocol, length_bytes, cni, cni_mode,
                                          throughput_efficiency_pct
                                   from cmp_tuning_vs_host where substrate = 'local' and workload = 'iperf3'""")
    got = {r[:6]: r[6] for r in rows}
    assert got.keys() == expected.keys()
    for k, v in expected.items():
        assert got[k] == pytest.approx(v), k


# ---- resources ------------------------------------------------------------------------------------------------------

def test_resource_usage_known_values(fixture_warehouse):
    with_res = [m for m in fx.fixture_manifests() if "resources.json" in m["raw_files"]]
    n_rows = sum(len({(s["component"], s["name"]) for s in fx.resource_samples(m)}) for m in with_res)
    assert q(fixture_warehouse, "select count(*) from fct_resource_usage") == [(n_rows,)]
    assert q(fixture_warehouse, "select count(*) from stg_edgebench__resource_samples") == [
        (sum(len(fx.resource_samples(m)) for m in with_res),)]
    m = next(m for m in with_res if m["cni"] == "flannel" and m["protocol"] == "udp")
    s = fx.resource_samples(m)
    for component, name in (("system", "system"), ("workload", "iperf3-server"), ("workload", "iperf3-client")):
        mine = [x for x in s if (x["component"], x["name"]) == (component, name)]
        idle = _mean(x["cpu_pct"] for x in mine if x["phase"] == "idle")
        run = _mean(x["cpu_pct"] for x in mine if x["phase"] == "run")
        rss_idle = _mean(x["rss_mb"] for x in mine if x["phase"] == "idle" and x["rss_mb"] is not None)
        rss_run = _mean(x["rss_mb"] for x in mine if x["phase"] == "run" and x["rss_mb"] is not None)
        ((c_idle, c_run, c_delta, r_idle, r_run, r_delta, n_idle, n_run, tput),) = q(fixture_warehouse, """
            select cpu_idle_pct, cpu_run_pct, cpu_delta_pct, rss_idle_mb, rss_run_mb, rss_delta_mb, n_idle_samples,
                   n_run_samples, throughput_mbps
            from fct_resource_usage where run_id = ? and component = ? and name = ?""", m["run_id"], component, name)
        assert c_idle == pytest.approx(idle) and c_run == pytest.approx(run)
        assert c_delta == pytest.approx(run - (idle or 0))  # the client did not run while idle: counts 0
        assert r_run == pytest.approx(rss_run) and r_delta == pytest.approx(rss_run - (rss_idle or 0))
        assert (r_idle is None) == (rss_idle is None)
        assert (n_idle, n_run) == (sum(x["phase"] == "idle" for x in mine), sum(x["phase"] == "run" for x in mine))
        assert tput == m["metrics"]["throughput_mbps"]
    # the flannel udp system delta: run 35 x 1.5 = 52.5 % vs idle 3 %
    ((delta,),) = q(fixture_warehouse, "select cpu_delta_pct from fct_resource_usage where run_id = ? "
                                       "and component = 'system'", m["run_id"])
    assert delta == pytest.approx(fx.RES_RUN_SYSTEM_CPU["flannel"] * 1.5 - _mean(fx.RES_IDLE_SYSTEM_CPU))


def test_resource_usage_by_cni_known_values(fixture_warehouse):
    runs = [m for m in fx.iperf3_manifests() if "resources.json" in m["raw_files"] and m["cni"] == "flannel"
            and m["protocol"] == "tcp" and m["status"] == "ok"]
    per_run = []
    for m in runs:
        wl = [x for x in fx.resource_samples(m) if x["component"] == "workload"]
        names = {x["name"] for x in wl}
        run_cpu = sum(_mean(x["cpu_pct"] for x in wl if x["name"] == n and x["phase"] == "run") for n in names)
        idle_cpu = sum(_mean(x["cpu_pct"] for x in wl if x["name"] == n and x["phase"] == "idle") or 0 for n in names)
        per_run.append((run_cpu, idle_cpu, m["metrics"]["throughput_mbps"]))
    ((n, cpu_run, cpu_idle, cpu_delta, tput, names),) = q(fixture_warehouse, """
        select n_runs, cpu_run_pct, cpu_idle_pct, cpu_delta_pct, throughput_mbps, names from cmp_resources_vs_host
        where cni = 'flannel' and protocol = 'tcp' and component = 'workload'""")
    assert n == len(runs) == 3 and names == "iperf3-client, iperf3-server"
    assert cpu_run == pytest.approx(_mean(r[0] for r in per_run))
    assert cpu_idle == pytest.approx(_mean(r[1] for r in per_run))
    assert cpu_delta == pytest.approx(_mean(r[0] - r[1] for r in per_run))
    assert tput == pytest.approx(_mean(r[2] for r in per_run))
    # CNIs cost more system CPU than the host for the same tcp load (fixture: flannel 35 % vs host 20 %)
    ((host_sys, flannel_sys),) = q(fixture_warehouse, """
        select max(cpu_run_pct) filter (where cni = 'host'), max(cpu_run_pct) filter (where cni = 'flannel')
        from cmp_resources_vs_host where component = 'system' and protocol = 'tcp' and workload = 'iperf3'
          and netem_scenario = 'none' and tuning_profile = 'default_settings'""")
    assert flannel_sys > host_sys


# ---- link conditions --------------------------------------------------------------------------------------------

def test_edg10_visibly_slower(fixture_warehouse):
    rows = dict(q(fixture_warehouse, """
        select netem_scenario, avg(response_p50_ms) from fct_http_runs
        where cni = 'cilium' and status = 'ok' and is_valid group by 1"""))
    assert rows["edg10"] > rows["lcl"] + 10 > rows["none"] + 10
    rtt = dict(q(fixture_warehouse, """select netem_scenario, avg(mean_rtt_us) from fct_iperf3_runs
                                       where cni = 'cilium' group by 1"""))
    assert rtt["edg10"] > rtt["lcl"] > rtt["none"]
    # comparisons match on the scenario: the edg10 cilium row is compared with the edg10 host runs only
    ((host,),) = q(fixture_warehouse, """select host_throughput_mbps from cmp_iperf3_vs_host
                                        where cni = 'cilium' and netem_scenario = 'edg10'""")
    assert host == _mean(fx.NETEM_IPERF3[("host", "edg10")])


# ---- a tree without resources.json (and old manifests only) ----------------------------------------------------

def test_tree_without_resources_builds(tmp_path):
    from edgebench.results import warehouse

    # the untouched-condition runs, the new-style ones turned back into older manifests (no netem / tuning /
    # is_valid, no resources.json); the condition runs are left out
    ms = []
    for m in fx.fixture_manifests():
        if (m["netem_scenario"], m["tuning_profile"]) != ("none", "default_settings") or m["cni"] in ("antrea",
                                                                                                     "cilium"):
            continue
        m = {k: v for k, v in m.items() if k not in ("netem", "tuning", "is_valid", "invalid_reason")}
        m["raw_files"] = [f for f in m["raw_files"] if f != "resources.json"]
        ms.append(m)
    root = fx.write_tree(tmp_path / "raw", ms)
    assert not list(root.rglob("resources.json"))
    wh = tmp_path / "wh.duckdb"
    warehouse.build(warehouse_path=wh, raw_root=str(root), quiet=True)
    for t in ("stg_edgebench__resource_samples", "fct_resource_usage", "cmp_resources_vs_host"):
        assert q(wh, f"select count(*) from {t}") == [(0,)], t
    # old manifests only: everything valid, untouched link, default settings; efficiency still computed
    assert q(wh, "select distinct is_valid, netem_scenario, tuning_profile from int_runs__deduplicated") == [
        (True, "none", "default_settings")]
    ((eff,),) = q(wh, """select throughput_efficiency_pct from cmp_tuning_vs_host where workload = 'iperf3'
                         and cni = 'calico' and cni_mode = 'vxlan' and protocol = 'tcp'""")
    assert eff == pytest.approx(7500 / 9000 * 100)
    # DDS latency efficiency = host p50 / cni p50 x 100 (manifest metrics, ok + valid runs)
    def p50(cni):
        return _mean(m["metrics"]["latency_p50_us"] for m in ms if m["workload"] == "dds" and m["cni"] == cni
                     and m["status"] == "ok" and m["params"]["mode"] == "latency" and m["length_bytes"] == 64
                     and m["params"]["reliability"] == "reliable" and m["params"]["security"] == "none")
    ((lat_eff,),) = q(wh, """select latency_efficiency_pct from cmp_tuning_vs_host where workload = 'dds'
                             and dds_mode = 'latency' and cni = 'flannel' and length_bytes = 64
                             and reliability = 'reliable' and security = 'none'""")
    assert lat_eff == pytest.approx(p50("host") / p50("flannel") * 100) and lat_eff < 100
