"""Adaptive repetitions aimed at comparisons (sweep/aim.py, `-p aim=[...]`): a variant stops when the claim
comparisons it is a side of are settled, one no comparison uses at min-repetitions, the host while a cell needs it;
claims become aimed comparisons only where the runs themselves can judge them."""
from __future__ import annotations

import json

import pytest

from edgebench.errors import SpecError
from edgebench.plan import spec
from edgebench.plan.cells import expand_checked
from edgebench.sweep import adaptive, aim, papers_run

HOSTGW = {"cni": "flannel", "cni_mode": "host-gw"}
VXLAN = {"cni": "flannel", "cni_mode": "vxlan"}
CLAIM = {"left": HOSTGW, "right": VXLAN, "metric": "throughput_mbps"}


def _sweep(aimed=(CLAIM,)):
    return spec.from_parameters({"substrate": "local", "cnis": '["host","flannel:vxlan","flannel:host-gw"]',
                                 "workloads": '["iperf3:tcp"]', "repetitions": "auto", "min-repetitions": "2",
                                 "max-repetitions": "6", "aim": json.dumps(list(aimed))}, source="test")


def _docs(cell, values, protocol="tcp"):
    return [{"cell_id": cell.cell_id, "status": "ok", "workload": "iperf3", "protocol": protocol,
             "path": "pod-to-pod", "placement": "cross-node", "length_bytes": 131072, "params": {},
             "cni": cell.cni, "cni_mode": cell.cni_mode, "repetition": r, "metrics": {"throughput_mbps": v}}
            for r, v in enumerate(values, 1)]


def test_the_parameter_is_validated_and_neutral_at_its_default():
    assert _sweep().values["aim"] == [CLAIM]
    plain = spec.from_parameters({"cnis": '["host"]'}, source="t")
    assert plain.values["aim"] == [] and plain.sweep_id == spec.from_parameters(
        {"cnis": '["host"]', "aim": "[]"}, source="t").sweep_id
    with pytest.raises(SpecError, match="comparison 1 needs non-empty objects left and right and a metric"):
        spec.from_parameters({"aim": '[{"left": {"cni": "flannel"}, "right": {}, "metric": "x"}]'}, source="t")
    with pytest.raises(SpecError, match="unknown key"):
        spec.from_parameters({"aim": json.dumps([{**CLAIM, "side": 1}])}, source="t")
    with pytest.raises(SpecError, match="must be a JSON list"):
        spec.from_parameters({"aim": "{"}, source="t")


def test_a_variant_stops_when_its_claim_is_decided_not_when_its_host_comparison_is():
    cells, _ = expand_checked(_sweep())
    host, vxlan, hostgw = cells
    tcp = adaptive._variant(_docs(host, [1])[0])
    # both far from the host (decided against it), but host-gw against vxlan is still open after 2 rounds
    docs = {host.cell_id: _docs(host, [1000, 1001]), vxlan.cell_id: _docs(vxlan, [600, 605]),
            hostgw.cell_id: _docs(hostgw, [606, 601])}
    active = {0: {tcp}, 1: {tcp}, 2: {tcp}}
    assert adaptive.stops(cells, docs, active, rnd=2, min_r=2, max_r=6, aim=[CLAIM]) == {}
    # without the aim both would stop on the host: that is what the aim replaces
    assert set(adaptive.stops(cells, docs, active, rnd=2, min_r=2, max_r=6)) == {0, 1, 2}
    # once host-gw is clearly ahead of vxlan, both sides stop, and the host with them
    docs = {host.cell_id: _docs(host, [1000, 1000, 1000]), vxlan.cell_id: _docs(vxlan, [600, 602, 601]),
            hostgw.cell_id: _docs(hostgw, [800, 801, 799])}
    out = adaptive.stops(cells, docs, active, rnd=3, min_r=2, max_r=6, aim=[CLAIM])
    assert set(out) == {0, 1, 2}
    assert out[2][tcp].startswith("every aimed comparison it is a side of is done after 3 rounds: aim 1: better")
    assert not out[2][tcp].bounded  # decided: a later session with a higher max-repetitions keeps the stop


def test_a_variant_no_claim_uses_stops_at_the_minimum_and_the_host_waits_for_the_rest():
    only_udp = {**CLAIM, "filters": {"protocol": "udp"}}
    cells, _ = expand_checked(_sweep([only_udp]))
    host, vxlan, hostgw = cells
    tcp, udp = adaptive._variant(_docs(host, [1])[0]), adaptive._variant(_docs(host, [1], "udp")[0])
    docs = {c.cell_id: _docs(c, [900, 950]) + _docs(c, [500, 540] if c is vxlan else [560, 480], "udp")
            for c in cells}
    active = {0: {tcp, udp}, 1: {tcp, udp}, 2: {tcp, udp}}
    out = adaptive.stops(cells, docs, active, rnd=2, min_r=2, max_r=6, aim=[only_udp])
    assert out[1] == {tcp: "no aimed comparison uses it: stopped at min-repetitions (2)"}
    assert list(out[2]) == [tcp] and list(out[0]) == [tcp]  # udp goes on: its comparison is open
    # at max-repetitions everything still open stops
    out = adaptive.stops(cells, docs, {0: {udp}, 1: {udp}, 2: {udp}}, rnd=6, min_r=2, max_r=6, aim=[only_udp])
    assert set(out) == {0, 1, 2} and "max-repetitions (6) reached" in out[1][udp]
    assert out[1][udp].bounded  # it rests on max-repetitions (runner.stop_holds lifts it under a higher one)


def test_runs_pair_where_everything_but_the_subjects_keys_is_the_same():
    multicast = {"left": {"transport": "multicast"}, "right": {"transport": "unicast"}, "metric": "throughput_mbps",
                 "filters": {"dds_mode": "throughput"}}

    def dds(cell, transport, size, value, rep):
        return {"cell_id": cell, "status": "ok", "workload": "dds", "protocol": "udp", "path": "pod-to-pod",
                "placement": "cross-node", "length_bytes": size, "cni": "flannel", "cni_mode": "vxlan",
                "datapath": "bridge-vxlan", "repetition": rep, "metrics": {"throughput_mbps": value},
                "params": {"mode": "throughput", "transport": transport, "discovery": "x" + transport}}

    docs = [dds("c1", t, size, v, r) for r in (1, 2) for t, v in (("multicast", 80), ("unicast", 100))
            for size in (64, 1024)]
    docs.append({**dds("c1", "multicast", 64, 80, 3), "params": {"mode": "latency", "transport": "multicast"}})
    gs = aim.groups([multicast], docs, adaptive._variant)
    assert len(gs) == 2  # one comparison per payload; the latency run is filtered out
    for g in gs:
        assert g["comparison"].n_a == 2 and g["comparison"].n_b == 2 and len(g["members"]) == 2


def test_claims_become_aimed_comparisons_only_where_runs_can_judge_them():
    row = {"metric": "throughput_mbps", "left_subject": "cni=flannel;cni_mode=host-gw", "comparator": ">",
           "right_subject": "cni=flannel;cni_mode=vxlan", "tolerance_pct": "",
           "filters": '{"dds_mode": "throughput", "length_bytes": [64, 256]}'}
    assert aim.from_claim(row) == {"left": HOSTGW, "right": VXLAN, "metric": "throughput_mbps",
                                   "filters": {"dds_mode": "throughput", "length_bytes": [64, 256]}}
    assert aim.from_claim({**row, "comparator": "~", "tolerance_pct": "10"})["tolerance_pct"] == 10.0
    assert aim.from_claim({**row, "metric": "throughput_efficiency_pct"}) is None  # the mart derives it
    assert aim.from_claim({**row, "right_subject": "1000"}) is None               # a threshold, not a subject
    assert aim.from_claim({**row, "filters": '{"is_baseline": false}'}) is None   # no run holds it
    task = papers_run.PresetTask("p.testbed.yaml", [("000", "a"), ("000", "b")])
    assert task.aim({("000", "a"): row, ("000", "b"): row}) == [aim.from_claim(row)] * 2
    assert task.aim({("000", "a"): row, ("000", "b"): {**row, "metric": "cpu_run_pct"}}) is None
