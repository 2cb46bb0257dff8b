"""`-p select=[...]` (plan/selection.py): a sweep plans only the runs of its grid that match one of the conditions;
`edgebench papers run` sets it from the claims a preset measures."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgebench.errors import SpecError
from edgebench.plan import selection, spec
from edgebench.plan.cells import expand_checked, runs_for

REPO = Path(__file__).resolve().parents[2]
SECURITY = REPO / "workflows/presets/seed-000-dds-security.testbed.yaml"


def _load(path, **params):
    return spec.load(path, {k.replace("_", "-"): v for k, v in params.items()}, substrate="local")


def _runs(s):
    cells, skipped = expand_checked(s)
    return [r for c in cells for r in runs_for(s, c)], skipped


def test_select_keeps_the_matching_runs_with_the_full_grid_s_ids_and_skips_empty_cells():
    full = _load(SECURITY, sweep_id="x")
    cond = [{"cni": "kube-router", "security": "auth-encrypt", "dds_mode": "throughput", "length_bytes": [64, "256"]}]
    part = _load(SECURITY, sweep_id="x", select=json.dumps(cond))
    every, _ = _runs(full)
    chosen, skipped = _runs(part)
    # 2 payloads x 2 subscriber counts x 3 repetitions, and no flannel:ipsec cell set up for nothing
    assert len(chosen) == 12 and {r.cell.cni for r in chosen} == {"kube-router"}
    assert all(r.params["mode"] == "throughput" and r.length_bytes in (64, 256) for r in chosen)
    assert {r.run_id for r in chosen} <= {r.run_id for r in every}
    assert [(c.cni, why) for c, why in skipped] == [("flannel", "none of its runs is selected (select)")]
    # a second condition adds its runs (one of them is enough)
    more = _load(SECURITY, sweep_id="x", select=json.dumps([*cond, {"cni": "flannel", "dds_mode": "latency",
                                                                       "length_bytes": 64}]))
    assert len(_runs(more)[0]) == 12 + 2 * 3


def test_select_at_its_default_changes_no_sweep_id_and_plans_every_run():
    plain, default = _load(SECURITY), _load(SECURITY, select="[]")
    assert plain.sweep_id == default.sweep_id
    assert len(_runs(default)[0]) == len(_runs(plain)[0]) == 180
    assert _load(SECURITY, select='[{"cni": "host"}]').sweep_id != plain.sweep_id


def test_select_fields_are_the_marts_names():
    s = _load(REPO / "workflows/presets/seed-001-intercluster.testbed.yaml")
    cells, _ = expand_checked(s)
    run = next(r for c in cells for r in runs_for(s, c) if c.intercluster.startswith("skupper"))
    f = selection.run_fields(run)
    assert (f["intercluster_tool"], f["is_baseline"], f["is_host_baseline"], f["service"]) == (
        "skupper", False, False, run.params["service"])
    assert selection.matches(f, {"is_baseline": "false", "length_bytes": [str(run.length_bytes)]})
    assert not selection.matches(f, {"reliability": "reliable"})  # an HTTP run holds no DDS reliability


def test_every_run_parameter_of_every_workload_is_a_field():
    s = spec.load(REPO / "workflows/sweep.yaml", {
        "workloads": '["iperf3:tcp","iperf3:udp","sockperf:tcp","dds:latency","dds:throughput","http:payload-echo",'
                     '"loaded-latency:dds","loaded-latency:http"]',
        "dds-batching": '["off"]', "dds-ping-timeouts": '["200"]', "cnis": '["host"]'}, substrate="local")
    keys = {k for c in expand_checked(s)[0] for r in runs_for(s, c) for k in r.params}
    assert keys - {"kpis_ms"} <= set(selection.RUN_PARAMS)


@pytest.mark.parametrize("value, words", [
    ("{}", "JSON list"), ("[{}]", "non-empty object"), ('[{"colour": "blue"}]', "unknown field(s) colour"),
    ('[{"cni": []}]', "non-empty list"), ('[{"cni": {"a": 1}}]', "non-empty list"), ("nope", "JSON list")])
def test_a_bad_select_is_refused_with_one_message(value, words):
    with pytest.raises(SpecError, match=r"select") as exc:
        _load(SECURITY, select=value)
    assert words in str(exc.value)
