"""Adaptive repetitions (-p repetitions=auto, sweep/adaptive.py): a CNI cell stops once every comparison with its host
baseline is decided by the one rule; the host goes on while a cell needs it; max-repetitions ends the rest; the
parameters are validated and the dry run says the range."""
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


def test_decided_cells_stop_and_the_host_waits_for_the_rest():
    s = _sweep()
    cells, _ = expand_checked(s)
    host, vxlan, hostgw = cells
    docs = {host.cell_id: _docs(host, [1000, 1010]),
            vxlan.cell_id: _docs(vxlan, [700, 705]),        # 30 % worse, tight: decided after 2 rounds
            hostgw.cell_id: _docs(hostgw, [900, 1100])}     # wide: undecided
    out = adaptive.stops(cells, docs, {0, 1, 2}, rnd=2, min_r=2, max_r=4)
    assert set(out) == {1} and out[1].startswith("all comparisons decided after 2 rounds: 1 worse")
    # before min-repetitions nothing stops
    assert adaptive.stops(cells, docs, {0, 1, 2}, rnd=1, min_r=2, max_r=4) == {}
    # at the maximum the undecided cell stops too, and then the host, which no cell needs any more
    out = adaptive.stops(cells, docs, {0, 2}, rnd=4, min_r=2, max_r=4)
    assert set(out) == {0, 2} and "max-repetitions (4) reached with comparisons undecided: 1 inconclusive" in out[2]


def test_dry_run_says_the_range():
    res = CliRunner().invoke(cli_app, ["sweep", "workflows/sweep.yaml", "--local", "--dry-run",
                                       "-p", 'cnis=["host","flannel:vxlan"]', "-p", 'workloads=["iperf3:tcp"]',
                                       "-p", "repetitions=auto", "-p", "max-repetitions=6"])
    assert res.exit_code == 0, res.output
    assert "between 18 and 36 runs (repetitions=auto: 3 to 6 rounds" in " ".join(res.output.split())
