"""Adaptive repetitions (-p repetitions=auto, sweep/adaptive.py): each variant of a CNI cell stops once its comparison
with the host baseline is decided by the one rule, or cannot be within max-repetitions; the host measures a variant
while a cell needs it; max-repetitions ends the rest; the parameters are validated and the dry run says the
range."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from edgebench.cli import app as cli_app
from edgebench.errors import SpecError
from edgebench.plan import params, spec
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
            hostgw.cell_id: _docs(hostgw, [960, 1040])}     # wider, and close to the host: undecided
    active = {0: {tcp}, 1: {tcp}, 2: {tcp}}
    out = adaptive.stops(cells, docs, active, rnd=2, min_r=2, max_r=4)
    # both are paired with the same host runs: their spreads are pooled (verdict.pooled)
    assert set(out) == {1} and out[1][tcp].startswith("decided after 2 rounds: worse (pooled, n=2)")
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


def test_cells_paired_with_the_same_host_runs_pool_their_spread_as_the_warehouse_does():
    s = _sweep(cnis='["host","flannel:vxlan","flannel:host-gw","kube-router"]')
    cells, _ = expand_checked(s)
    host, noisy, quiet, quieter = cells
    tcp = adaptive._variant(_docs(host, [1])[0])
    docs = {host.cell_id: _docs(host, [1000, 1010, 990]),
            noisy.cell_id: _docs(noisy, [850, 960, 880]),       # -10 % with a wide spread of its own
            quiet.cell_id: _docs(quiet, [700, 712, 690]),
            quieter.cell_id: _docs(quieter, [705, 705, 705])}
    alone = adaptive.judge(docs[noisy.cell_id], docs[host.cell_id])[tcp]
    assert (alone.verdict, alone.method, alone.df) == ("inconclusive", "paired", 2)
    judged = adaptive.judge_all(cells, docs, adaptive.baselines(cells))
    assert {judged[i][tcp].method for i in (1, 2, 3)} == {"pooled"} and 0 not in judged
    assert (judged[1][tcp].verdict, judged[1][tcp].df) == ("worse", 6)  # t(6) on the group's spread, not t(2)
    out = adaptive.stops(cells, docs, {0: {tcp}, 1: {tcp}, 2: {tcp}, 3: {tcp}}, rnd=3, min_r=2, max_r=3)
    assert out[1][tcp] == "max-repetitions (3) reached: worse"


def test_a_comparison_that_max_repetitions_cannot_decide_stops_as_futile():
    s = _sweep()
    cells, _ = expand_checked(s)
    host, vxlan, _ = cells
    tcp = adaptive._variant(_docs(host, [1])[0])
    # about 4 % apart with a spread of about 40 %: neither apart nor within the 5 % margin at 4 rounds
    docs = {host.cell_id: _docs(host, [1000, 600, 1400]), vxlan.cell_id: _docs(vxlan, [1500, 1000, 460])}
    out = adaptive.stops(cells, docs, {0: {tcp}, 1: {tcp}}, rnd=3, min_r=2, max_r=4)
    assert out[1][tcp].startswith("futile after 3 rounds: inconclusive")
    assert out[1][tcp].bounded  # it rests on max-repetitions: a later session with a higher maximum lifts it
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


# ---- a resumed auto sweep -------------------------------------------------------------------------------------

class _Store:
    def __init__(self, stops=None):
        self.objects = {} if stops is None else {"stops": stops}
        self.put = {}

    def get_json(self, key):
        return {"stops": self.objects["stops"]} if key.endswith("stops.json") and "stops" in self.objects else None

    def put_json(self, key, doc):
        self.put[key] = doc


def test_a_resumed_sweep_judges_the_runs_stored_before_it():
    from edgebench.plan.cells import runs_for
    from edgebench.sweep import runner
    from edgebench.sweep.progress import Progress

    s = _sweep(**{"min-repetitions": "3"})
    cells, _ = expand_checked(s)
    host, vxlan, _ = cells
    tcp = adaptive._variant(_docs(host, [1])[0])
    h, x = _docs(host, [1000, 1010, 990]), _docs(vxlan, [700, 705, 698])
    prior, now = h[:2] + x[:2], [h[2], x[2]]  # rounds 1 and 2 stored by an earlier session, round 3 now
    report = runner.SweepReport(s.sweep_id, results=now)
    active = {i: {tcp} for i in range(3)}
    variant_of = {r.run_id: adaptive.variant(r) for c in cells for r in runs_for(s, c)}
    later = [(i, {r.run_id for r in runs_for(s, c) if r.repetition == 4}) for i, c in enumerate(cells)]
    plan = [(1, set())] + later
    store = _Store()
    runner._adapt(s, cells, store, report, Progress(3, 12, log=lambda _: None), lambda _: None, plan, 0, 3,
                  active, variant_of, {}, prior, {r.run_id: r.repetition for c in cells for r in runs_for(s, c)})
    assert tcp not in active[1]  # decided on rounds 1-3 (n = 3), not on round 3 alone
    assert all(i != 1 for i, _ in plan[1:])  # its round 4 is not measured
    rec = store.put[f"sweeps/{s.sweep_id}/stops.json"]["stops"][vxlan.cell_id]
    assert rec["variants"][adaptive.label(tcp)]["reason"].startswith("decided after 3 rounds: worse (paired, n=3)")
    assert rec["variants"][adaptive.label(tcp)]["kind"] == "judged"


def test_the_time_budget_stops_every_open_variant_before_a_round_that_would_end_after_it():
    from edgebench.plan.cells import runs_for
    from edgebench.sweep import runner
    from edgebench.sweep.progress import Progress

    for budget, stops in (("190", False), ("4m", False), ("189", True)):
        s = _sweep(**{"min-repetitions": "3", "max-repetitions": "10", "time-budget": budget})
        cells, _ = expand_checked(s)
        host, vxlan, gw = cells
        tcp = adaptive._variant(_docs(host, [1])[0])
        # undecided so far: the spread is wide, nothing stops on its own
        now = _docs(host, [1000, 990, 1010]) + _docs(vxlan, [940, 960, 900]) + _docs(gw, [950, 1000, 930])
        report = runner.SweepReport(s.sweep_id, results=now)
        active = {i: {tcp} for i in range(3)}
        variant_of = {r.run_id: adaptive.variant(r) for c in cells for r in runs_for(s, c)}
        rep_of = {r.run_id: r.repetition for c in cells for r in runs_for(s, c)}
        later = [(i, {r.run_id for r in runs_for(s, c) if r.repetition == 4}) for i, c in enumerate(cells)]
        plan = [(2, set())] + later
        clock = iter([0.0, 100.0, 100.0, 100.0]).__next__
        progress = Progress(3, 30, log=lambda _: None, clock=clock)
        progress.measured = 10  # 10 runs in 100 s: the 9 runs of round 4 (3 cells x 3 paths) would end at 190 s
        store, lines = _Store(), []
        runner._adapt(s, cells, store, report, progress, lines.append, plan, 0, 3, active, variant_of, {}, [],
                      rep_of)
        assert (len(plan) == 1) is stops, (budget, lines)
        if stops:
            assert active == {0: set(), 1: set(), 2: set()}
            rec = store.put[f"sweeps/{s.sweep_id}/stops.json"]["stops"][vxlan.cell_id]
            assert rec["variants"][adaptive.label(tcp)]["reason"].startswith("time budget: round 4 (9 runs")
            assert rec["variants"][adaptive.label(tcp)]["kind"] == "time-budget"
            assert sum("time budget" in ln for ln in lines) == 1  # said once, not per variant
        else:
            assert all(active[i] == {tcp} for i in range(3))


def _round_budget(budget, marks, now, measured, first=1):
    """_adapt after round 3 of a sweep of 3 cells x 3 paths (9 runs a full round) with `budget`, the session's
    round ends at `marks` (round, elapsed, measured) and the clock at `now`: whether round 4 starts, and the log."""
    from edgebench.plan.cells import runs_for
    from edgebench.sweep import runner
    from edgebench.sweep.progress import Progress

    s = _sweep(**{"min-repetitions": "3", "max-repetitions": "10", "time-budget": budget})
    cells, _ = expand_checked(s)
    tcp = adaptive._variant(_docs(cells[0], [1])[0])
    now_docs = _docs(cells[0], [1000, 990, 1010]) + _docs(cells[1], [940, 960, 900]) + _docs(cells[2], [950, 1000, 930])
    report = runner.SweepReport(s.sweep_id, results=now_docs)
    active = {i: {tcp} for i in range(3)}
    variant_of = {r.run_id: adaptive.variant(r) for c in cells for r in runs_for(s, c)}
    rep_of = {r.run_id: r.repetition for c in cells for r in runs_for(s, c)}
    plan = [(2, set())] + [(i, {r.run_id for r in runs_for(s, c) if r.repetition == 4}) for i, c in enumerate(cells)]
    clock = iter([0.0, now, now]).__next__
    progress = Progress(3, 90, log=lambda _: None, clock=clock)
    progress.measured, progress.round_marks = measured, list(marks)
    lines = []
    runner._adapt(s, cells, _Store(), report, progress, lines.append, plan, 0, 3, active, variant_of, {}, [], rep_of)
    return len(plan) > 1, lines


def test_a_budget_in_rounds_is_fixed_ns_time_measured_on_the_sweeps_own_full_rounds():
    """`3r`: the time 3 full rounds take here. Rounds of 40 s (the first, with its one-time set-up), 30 and 30 s
    (9 runs each): 4 rounds' time is 40 + 3 x 30 = 130 s; round 4 at the session's pace (100 s / 27 runs) would end
    at 133 s: over 4r, within 5r."""
    marks = [(1, 40.0, 9), (2, 70.0, 18)]
    starts, lines = _round_budget("4r", marks, 100.0, 27)
    assert not starts and lines == ["round 3: time budget: round 4 (9 runs, about 33 s at 3.7 s a run) would end at "
                                    "133 s, after 4 full rounds' time (130 s; a full round takes 30 s here)"]
    assert _round_budget("5r", marks, 100.0, 27)[0]
    # a slow last round sets the pace: its 9 runs took 45 s (5 s a run, the session's 4.3) -> round 4 would end at
    # 160 s (at the session's pace 153 s): over a 155 s budget, within 161 s
    assert not _round_budget("155", marks, 115.0, 27)[0]
    assert _round_budget("161", marks, 115.0, 27)[0]
    # a resumed session whose first round is 3 (rounds 1-2 were an earlier session's): 3r leaves it one round, spent;
    # 4r leaves two, and round 4 (30 s more) ends at 60 s, within them
    assert not _round_budget("3r", [], 30.0, 9)[0]
    assert _round_budget("4r", [], 30.0, 9)[0]


def test_a_bad_time_budget_is_refused():
    with pytest.raises(SpecError, match="time-budget"):
        _sweep(**{"time-budget": "soon"})
    with pytest.raises(SpecError, match="at least 1r"):
        _sweep(**{"time-budget": "0r"})
    assert _sweep(**{"time-budget": "1h"}).values["time-budget"] == 3600
    assert _sweep(**{"time-budget": "3R"}).values["time-budget"] == params.Rounds(3)
    assert _sweep().values["time-budget"] is None


def test_what_an_earlier_session_stopped_stays_stopped():
    from edgebench.sweep import runner

    s = _sweep()
    cells, _ = expand_checked(s)
    tcp = adaptive._variant(_docs(cells[0], [1])[0])
    earlier = {cells[1].cell_id: {"label": cells[1].label, "variants": {
        adaptive.label(tcp): {"after_round": 2, "reason": "decided after 2 rounds: worse", "kind": "judged",
                              "max_repetitions": 6}}}}
    active = {i: {tcp} for i in range(3)}
    lines = []
    assert runner._resume_stops(s, cells, _Store(earlier), active, lines.append) == earlier
    assert active == {0: {tcp}, 1: set(), 2: {tcp}}
    assert lines == [f"{cells[1].label}: 1 variant(s) stopped by an earlier session of this sweep stay stopped"]
    assert runner._resume_stops(s, cells, _Store(), {0: {tcp}}, lines.append) == {}  # first session: nothing


def test_an_earlier_stop_goes_on_where_this_sessions_parameters_undo_its_reason():
    """A stop from a time budget, from a lower max-repetitions (reached or futile) or before this session's
    min-repetitions does not hold: the variant goes on (`edgebench papers run`'s second pass); a decided one stays."""
    from edgebench.sweep import runner

    values = {"min-repetitions": 3, "max-repetitions": 10}
    judged = {"kind": "judged", "max_repetitions": 6, "reason": "decided after 3 rounds: worse"}
    assert runner.stop_holds({**judged, "after_round": 3}, values)
    assert not runner.stop_holds({**judged, "after_round": 2}, values)
    bounded = {"kind": "max-repetitions", "reason": "max-repetitions (N) reached: inconclusive"}
    assert runner.stop_holds({**bounded, "after_round": 10, "max_repetitions": 10}, values)
    assert not runner.stop_holds({**bounded, "after_round": 6, "max_repetitions": 6}, values)
    assert not runner.stop_holds({"after_round": 4, "kind": "time-budget", "max_repetitions": 10,
                                  "reason": "time budget: round 5 would end after the budget"}, values)
    # the words are not read: a stop recorded without its kind (an older stops.json) is measured again
    assert not runner.stop_holds({"after_round": 3, "reason": "decided after 3 rounds: worse"}, values)
    s = _sweep(**{"min-repetitions": "3"})
    cells, _ = expand_checked(s)
    tcp = adaptive._variant(_docs(cells[0], [1])[0])
    earlier = {cells[1].cell_id: {"label": cells[1].label, "after_round": 2, "reason": "every variant stopped (1)",
                                  "variants": {adaptive.label(tcp): {"after_round": 2, "reason": "decided after 2 "
                                                                                                   "rounds: worse"}}}}
    active = {i: {tcp} for i in range(3)}
    lines = []
    assert runner._resume_stops(s, cells, _Store(earlier), active, lines.append) == {
        cells[1].cell_id: {"label": cells[1].label, "variants": {}}}
    assert active == {i: {tcp} for i in range(3)}
    assert lines == [f"{cells[1].label}: 1 variant(s) an earlier session stopped go on: its reason does not hold "
                     "under this session's min-repetitions, max-repetitions or budget"]


def test_dds_runs_pair_with_the_hosts_across_discovery():
    """The host network finds DDS peers by multicast, a datapath without it by static peers: the warehouse compares
    them (cmp_dds_vs_host shows both), so the runner judges them as a pair too (before, DDS never had a baseline)."""
    def dds(discovery, values):
        return [{"status": "ok", "workload": "dds", "protocol": "udp", "path": "pod-to-pod", "placement": "cross-node",
                 "length_bytes": 64, "repetition": r, "params": {"mode": "latency", "discovery": discovery,
                                                                 "reliability": "reliable"},
                 "metrics": {"latency_p90_us": v}} for r, v in enumerate(values, 1)]
    judged = adaptive.judge(dds("static-peers", [80, 82, 81]), dds("multicast", [50, 51, 50]))
    assert [c.verdict for c in judged.values()] == ["worse"]
    other = dds("static-peers", [80, 82, 81])
    for d in other:
        d["params"] = {**d["params"], "reliability": "best-effort"}
    assert adaptive.judge(other, dds("multicast", [50, 51, 50])) == {}  # another parameter: no pair
