"""The workload registry: each plug-in declares what the rest of edgebench builds from it."""
from __future__ import annotations

from pathlib import Path

import pytest

from edgebench import workloads
from edgebench.sweep import phases
from edgebench.plan import spec

REPO = Path(__file__).resolve().parents[2]
NAMES = list(workloads.REGISTRY)


def test_registry_finds_the_workloads_in_phase_order():
    assert NAMES[:4] == ["iperf3", "dds", "http", "sockperf"]
    assert "run-workloads" in phases.PHASES  # one phase runs every registered workload, in this order


@pytest.mark.parametrize("name", NAMES)
def test_each_workload_names_files_that_exist(name):
    w = workloads.REGISTRY[name]
    assert w.variants and w.tools
    assert (REPO / "analytics/models/staging" / f"{w.staging_model}.sql").is_file()
    assert (REPO / "analytics/models/marts" / f"{w.mart}.sql").is_file()
    assert (REPO / "analytics/models/marts" / f"{w.mart}.yml").is_file()
    assert (REPO / "app/app_pages" / f"{w.page}.py").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_each_workload_declares_parameters_with_valid_defaults(name):
    for p in workloads.REGISTRY[name].params:
        assert p.name.startswith(f"{name}-"), f"{p.name}: a workload's parameters carry its name as prefix"
        assert p.help and spec.PARAMS[p.name] is p
        p.parse(p.name, p.default)  # the declared default is valid


def test_parameter_names_are_unique_across_core_and_workloads():
    names = [p.name for p in (*spec.CORE_PARAMS, *workloads.params(), *spec.LATE_PARAMS)]
    assert len(names) == len(set(names)) == len(spec.PARAMS)


def test_a_parameter_of_a_workload_not_run_does_not_change_the_sweep_id():
    base = {"cnis": '["host"]', "workloads": '["iperf3:tcp"]'}
    a = spec.from_parameters(base)
    b = spec.from_parameters({**base, "dds-payloads": '["128"]'})
    c = spec.from_parameters({**base, "iperf3-lengths": '["64K"]'})
    assert a.sweep_id == b.sweep_id != c.sweep_id


def test_dds_ping_timeout_other_than_ddsperfs_runs_on_edgebench_ddsrr(monkeypatch, dds_ctx):
    """seed 000 Fig. 6's 200 ms ping timeout: ddsperf's is fixed at 1 s, so the run goes to edgebench's own pinger
    with that timeout (and says so in its params); the default (1000) adds nothing to a run's params, so the ids of
    every earlier DDS run stay."""
    from edgebench.plan import spec as S
    from edgebench.plan.workload_plans import PLANS

    s = S.from_parameters({"substrate": "local", "cnis": '["host"]', "workloads": '["dds:latency","dds:throughput"]',
                           "dds-payloads": '["64"]', "dds-reliability": '["best-effort"]',
                           "dds-ping-timeouts": '["1000","200"]'}, source="t")
    from edgebench.plan.dimensions import cells

    cell = cells(s.sweep_id, "local", "none", s.values)[0]
    lat = PLANS["dds"].expand(s.values, cell, 1, "latency")
    tput = PLANS["dds"].expand(s.values, cell, 1, "throughput")
    assert [r.params.get("ping_timeout_ms") for r in lat] == [None, 200]
    assert all("ping_timeout_ms" not in r.params for r in tput)  # throughput runs have no pings
    assert "ping-timeout=200ms" in PLANS["dds"].describe(lat[1])

    from edgebench.drivers import ddsperf, ddsrr

    asked = []
    monkeypatch.setattr(ddsrr, "measure", lambda pub, subs, **kw: asked.append(("ddsrr", len(subs), kw)) or
                        ({}, {"latency_p90_us": 1.0}, None))
    monkeypatch.setattr(ddsperf, "measure", lambda pub, subs, **kw: asked.append(("ddsperf", len(subs), kw)) or
                        ({}, {"latency_p90_us": 1.0}, None))
    raw, metrics, error, params = workloads.get("dds").measure(dds_ctx, lat[1])
    assert error is None and params["pinger"] == "edgebench-ddsrr"
    assert asked[-1][0] == "ddsrr" and asked[-1][1] == 1 and asked[-1][2]["timeout_ms"] == 200
    _, _, _, params = workloads.get("dds").measure(dds_ctx, lat[0])
    assert asked[-1][0] == "ddsperf" and "pinger" not in params  # 1000 ms, one subscriber: ddsperf as before
    with pytest.raises(Exception, match="dds-ping-timeouts"):
        S.from_parameters({"dds-ping-timeouts": '["0"]'}, source="t")


def test_ddsperf_ping_timeouts_are_counted_from_its_running_total():
    """ddsperf prints "ping timed out" at most once a second, with the total so far: the total counts, not the
    lines."""
    from edgebench.drivers.ddsperf.scan import scan_text as _scan

    text = ("[1234] 1.000 ping timed out (total 1 times) ... sending new ping\n"
            "[1234] 2.000 ping timed out (total 7 times) ... sending new ping\n")
    assert _scan(text).ping_timeouts == 7
    assert _scan("[1234] 1.000 ping timed out ... sending new ping\n").ping_timeouts == 1
