"""cmp_resources_efficiency on the fixture warehouse (CPU per Gbit/s and per 1,000 DDS messages/s, beside the host
network's), recomputed here from fct_resource_usage and the runs, and `edgebench report --efficiency`."""
from __future__ import annotations

import json
import statistics
from collections import defaultdict

import duckdb
import pytest
from typer.testing import CliRunner

from edgebench.cli import app


def q(path, sql, *params):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def test_cpu_per_gbit_is_the_mean_of_per_run_ratios_beside_the_host(fixture_warehouse):
    rows = q(fixture_warehouse, """
        select u.run_id, u.substrate, coalesce(u.distribution, '-'), u.netem_scenario, u.tuning_profile, u.cni,
               u.cni_mode, u.protocol, u.path, u.placement, u.length_bytes,
               u.cpu_run_pct, u.throughput_mbps
        from fct_resource_usage u
        where u.workload = 'iperf3' and u.component = 'workload' and u.status = 'ok' and u.is_valid
          and u.intercluster = 'none' and coalesce(u.service_proxy, 'default') = 'default'
          and coalesce(u.cpu_class, 'none') = 'none' and u.throughput_mbps > 0""")
    assert rows, "the fixture has iperf3 runs with resource samples"
    per_run: dict = defaultdict(float)
    rate: dict = {}
    for run_id, *key, cpu, mbps in rows:
        per_run[(tuple(key), run_id)] += cpu
        rate[(tuple(key), run_id)] = mbps / 1000
    groups: dict = defaultdict(list)
    for (key, run_id), cpu in per_run.items():
        groups[key].append(cpu / rate[(key, run_id)])
    got = {tuple(r[:10]): r[10:] for r in q(fixture_warehouse, """
        select substrate, coalesce(distribution, '-'), netem_scenario, tuning_profile, cni, cni_mode, protocol, path,
               placement, length_bytes, n_runs, cpu_per_unit_pct,
               rate_unit, host_cpu_per_unit_pct, cpu_per_unit_vs_host
        from cmp_resources_efficiency where workload = 'iperf3' and component = 'workload'""")}
    assert set(got) == set(groups)
    for key, ratios in groups.items():
        n, mean, unit, host, vs_host = got[key]
        assert (n, unit) == (len(ratios), "Gbit/s") and mean == pytest.approx(statistics.mean(ratios))
        host_key = (*key[:4], "host", "host", *key[6:])
        if host_key in groups:
            assert host == pytest.approx(statistics.mean(groups[host_key]))
            assert vs_host == pytest.approx(mean / host)


def test_report_efficiency_and_emulation_read_the_warehouse(fixture_warehouse):
    res = CliRunner().invoke(app, ["report", "--efficiency", "--component", "workload", "--json", "--warehouse",
                                   str(fixture_warehouse)], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert rows and {r["component"] for r in rows} == {"workload"} and all(r["n_runs"] >= 1 for r in rows)
    res = CliRunner().invoke(app, ["report", "--efficiency", "--warehouse", str(fixture_warehouse)],
                             env={"COLUMNS": "250"})
    assert res.exit_code == 0 and "CPU efficiency" in res.output and "Gbit/s" in res.output, res.output
    # --emulation read the warehouse through a function warehouse.py no longer has (AttributeError)
    res = CliRunner().invoke(app, ["report", "--emulation", "--warehouse", str(fixture_warehouse)],
                             env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
