"""The workload registry: each plug-in declares what the rest of edgebench builds from it."""
from __future__ import annotations

from pathlib import Path

import pytest

from edgebench import workloads
from edgebench.sweep import phases
from edgebench.plan import spec

REPO = Path(__file__).resolve().parents[1]
NAMES = list(workloads.REGISTRY)


def test_registry_finds_the_workloads_in_phase_order():
    assert NAMES[:3] == ["iperf3", "dds", "http"]
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
