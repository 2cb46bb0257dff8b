"""Adaptive repetitions (-p repetitions=auto, sweep/adaptive.py): each variant of a CNI cell stops once its comparison
with the host baseline is decided by the one rule, or cannot be within max-repetitions; the host measures a variant
while a cell needs it; max-repetitions ends the rest; the parameters are validated and the dry run says the
range."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from edgebench.cli import app as cli_app
from edgebench.plan import spec
from edgebench.plan.cells import expand_checked
from edgebench.sweep import adaptive


def _sweep(**extra):
    raw = {"substrate": "local", "cnis": '["host","flannel:vxlan","flannel:host-gw"]', "workloads": '["iperf3:tcp"]',
           "repetitions": "auto", "min-repetitions": "2", "max-repetitions": "4", "duration": "1", **extra}
    return spec.from_parameters(raw, source="test")


def _docs(cell, values):
    return [{"cell_id": cell.cell_id, "status": "ok", "workload": "iperf3", "protocol": "tcp", "path": "pod-to-pod",
             "placement": "cross-node", "length_bytes": 131072, "params": {}, "repetition": r,
             "metrics": {"throughput_mbps": v}} for r, v in enumerate(values, 1)]


def test_auto_plans_the_maximum_and_validates():
    s = _sweep()
    assert s.values["adaptive"] and s.values["repetitions"] == 4
    assert not spec.from_parameters({"cnis": '["host"]'}, source="t").values["adaptive"]
    with pytest.raises(spec.SpecError, match=r"min-repetitions \(5\) is above max-repetitions \(4\)"):
        _sweep(**{"min-repetitions": "5"})


def _udp(cell, values):
    return [{**d, "protocol": "udp", "length_bytes": 1300, "metrics": {"throughput_mbps": v}}
            for d, v in zip(_docs(cell, values), values)]


def test_decided_variants_stop_and_the_host_waits_for_the_rest():
    s = _sweep()
    cells, _ = expand_checked(s)
    host, vxlan, hostgw = cells
    tcp = adaptive._variant(_docs(host, [1])[0])
    docs = {host.cell_id: _docs(host, [1000, 1010]),
            vxlan.cell_id: _docs(vxlan, [700, 705]),        # 30 % worse, tight: decided after 2 rounds
            hostgw.cell_id: _docs(hostgw, [900, 1100])}     # wide: undecided
    active = {0: {tcp}, 1: {tcp}, 2: {tcp}}
    out = adaptive.stops(cells, docs, active, rnd=2, min_r=2, max_r=4)
    assert set(out) == {1} and out[1][tcp].startswith("decided after 2 rounds: worse (paired, n=2)")
    # before min-repetitions nothing stops
    assert adaptive.stops(cells, docs, active, rnd=1, min_r=2, max_r=4) == {}
    # at the maximum the undecided cell stops too, and then the host, which no cell needs any more
    out = adaptive.stops(cells, docs, {0: {tcp}, 1: set(), 2: {tcp}}, rnd=4, min_r=2, max_r=4)
    assert set(out) == {0, 2} and out[2][tcp] == "max-repetitions (4) reached: inconclusive"


def test_variants_of_one_cell_stop_one_by_one_and_the_host_keeps_only_what_is_needed():
    s = _sweep()
    cells, _ = expand_checked(s)
    host, vxlan, _ = cells
    tcp, udp = adaptive._variant(_docs(host, [1])[0]), adaptive._variant(_udp(host, [1])[0])
    docs = {host.cell_id: _docs(host, [1000, 1010, 990]) + _udp(host, [500, 520, 480]),
            vxlan.cell_id: _docs(vxlan, [700, 705, 698]) + _udp(vxlan, [470, 540, 480])}  # tcp decided, udp not
    out = adaptive.stops(cells, docs, {0: {tcp, udp}, 1: {tcp, udp}}, rnd=3, min_r=2, max_r=10)
    assert list(out[1]) == [tcp] and out[1][tcp].startswith("decided after 3 rounds: worse")
    # the host stops tcp (no cell needs it any more) and goes on with udp
    assert list(out[0]) == [tcp]


def test_a_comparison_that_max_repetitions_cannot_decide_stops_as_futile():
    s = _sweep()
    cells, _ = expand_checked(s)
    host, vxlan, _ = cells
    tcp = adaptive._variant(_docs(host, [1])[0])
    # about 4 % apart with a spread of about 40 %: neither apart nor within the 5 % margin at 4 rounds
    docs = {host.cell_id: _docs(host, [1000, 600, 1400]), vxlan.cell_id: _docs(vxlan, [1500, 1000, 460])}
    out = adaptive.stops(cells, docs, {0: {tcp}, 1: {tcp}}, rnd=3, min_r=2, max_r=4)
    assert out[1][tcp].startswith("futile after 3 rounds: inconclusive")
    # a close call with a small spread is not futile: more rounds may decide it
    docs = {host.cell_id: _docs(host, [1000, 1020, 980]), vxlan.cell_id: _docs(vxlan, [960, 1010, 930])}
    assert adaptive.stops(cells, docs, {0: {tcp}, 1: {tcp}}, rnd=3, min_r=2, max_r=10) == {}


def test_a_variant_with_nothing_to_judge_stops_at_the_minimum():
    s = _sweep()
    cells, _ = expand_checked(s)
    host, vxlan, _ = cells
    tcp = adaptive._variant(_docs(host, [1])[0])
    failed = [{**d, "status": "failed", "metrics": None} for d in _docs(vxlan, [1, 1])]
    out = adaptive.stops(cells, {host.cell_id: _docs(host, [1000, 1010]), vxlan.cell_id: failed},
                         {0: {tcp}, 1: {tcp}}, rnd=2, min_r=2, max_r=4)
    assert out[1][tcp].startswith("nothing to judge after 2 rounds")


def test_dry_run_says_the_range():
    res = CliRunner().invoke(cli_app, ["sweep", "workflows/sweep.yaml", "--local", "--dry-run",
                                       "-p", 'cnis=["host","flannel:vxlan"]', "-p", 'workloads=["iperf3:tcp"]',
                                       "-p", "repetitions=auto", "-p", "max-repetitions=6"])
    assert res.exit_code == 0, res.output
    assert "between 18 and 36 runs (repetitions=auto: 3 to 6 rounds" in " ".join(res.output.split())
