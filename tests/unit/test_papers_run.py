"""`edgebench papers run` offline (sweep/papers_run.py): the plan from the scorecard's undecided claims, and the loop
within one budget with the machine faked out."""
from __future__ import annotations

import json

from edgebench.sweep import papers_run
from edgebench.sweep.papers_run import PresetTask

MULTICAST = "workflows/presets/seed-000-dds-multicast.testbed.yaml"
CNI = "workflows/presets/seed-000-dds-cni.testbed.yaml"


def _row(paper, substrate, claim_ids):
    return {"paper": paper, "substrate": substrate, "cannot_tell": [{"claim_id": c} for c in claim_ids]}


def test_undecided_reads_the_testbed_row_or_the_row_of_a_paper_with_nothing_measured():
    rows = [_row("000", "ssh", ["000-01"]), _row("000", "local", ["000-02", "000-03"]), _row("001", None, ["001-01"])]
    assert papers_run.undecided(rows) == [("000", "000-02"), ("000", "000-03"), ("001", "001-01")]
    assert papers_run.undecided(rows, ["001"]) == [("001", "001-01")]


def test_the_plan_groups_claims_by_the_testbed_preset_that_measures_them_most_claims_first():
    rows = [_row("000", "local", ["000-13", "000-14", "000-01"])]
    claims = {("000", "000-13"): {"left_subject": "transport=multicast", "right_subject": "transport=unicast",
                                  "claim": "multicast beats unicast"},
              ("000", "000-14"): {"left_subject": "transport=multicast", "right_subject": "transport=unicast",
                                  "claim": "multicast with 8 subscribers"},
              ("000", "000-01"): {"left_subject": "cni=flannel", "right_subject": "cni=weave", "claim": "flannel"}}
    tasks, orphans = papers_run.plan(rows, claims)
    assert [(t.preset, t.claims) for t in tasks] == [(MULTICAST, [("000", "000-13"), ("000", "000-14")]),
                                                     (CNI, [("000", "000-01")])]
    assert orphans == [] and tasks[0].papers == ["000"]


def test_sweep_ids_are_stable_and_valid():
    assert PresetTask(MULTICAST).sweep_id == "papers-seed-000-dds-multicast-testbed"
    assert len(PresetTask("workflows/presets/" + "x" * 90 + ".testbed.yaml").sweep_id) <= 63


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_the_loop_shares_the_budget_skips_what_got_decided_and_stops_when_it_is_spent():
    clock, ran, lines = Clock(), [], []
    a = PresetTask("a.testbed.yaml", [("000", "1"), ("000", "2")])
    b = PresetTask("b.testbed.yaml", [("000", "3")])
    c = PresetTask("c.testbed.yaml", [("002", "4")])
    d = PresetTask("d.testbed.yaml", [("003", "5")])
    decided_by_a = {("000", "3")}  # running a also decides b's one claim

    def run_sweep(task, params):
        ran.append((task.preset, params))
        clock.t += {"a.testbed.yaml": 600, "c.testbed.yaml": 1700}[task.preset]

    out = papers_run.run([a, b, c, d], 2400, planned_runs={"a.testbed.yaml": 100, "b.testbed.yaml": 100,
                                                           "c.testbed.yaml": 200, "d.testbed.yaml": 100}.get,
                         run_sweep=run_sweep, rebuild=lambda: None,
                         still_open=lambda t: [k for k in t.claims if k not in decided_by_a],
                         log=lines.append, clock=clock)
    assert [r["outcome"] for r in out] == ["run", "decided", "run", "no budget"]
    # a's share: 2400 s x 100 / 500 planned runs; c's: the 1800 s left x 200 / 300
    assert [(p, params["time-budget"]) for p, params in ran] == [("a.testbed.yaml", "480"), ("c.testbed.yaml", "1200")]
    assert ran[0][1] == {"repetitions": "auto", "max-repetitions": "6", "time-budget": "480",
                         "sweep-id": "papers-a-testbed"}
    assert any("its claims are decided; not run" in x for x in lines)
    assert any("the budget is spent" in x and "stored runs are kept" in x for x in lines)


def test_a_preset_whose_claims_runs_can_judge_is_aimed_at_them():
    ran, lines = [], []
    row = {"metric": "throughput_mbps", "left_subject": "cni=flannel;cni_mode=host-gw", "comparator": ">",
           "right_subject": "cni=flannel;cni_mode=vxlan", "filters": '{"dds_mode": "throughput"}'}
    a = PresetTask("a.testbed.yaml", [("000", "1")])
    b = PresetTask("b.testbed.yaml", [("003", "2")])
    claims = {("000", "1"): row, ("003", "2"): {**row, "metric": "throughput_efficiency_pct"}}
    papers_run.run([a, b], 3600, planned_runs=lambda p: 10, run_sweep=lambda t, p: ran.append((t.preset, p)),
                   rebuild=lambda: None, still_open=lambda t: t.claims, log=lines.append, claims=claims)
    assert json.loads(ran[0][1]["aim"]) == [{"left": {"cni": "flannel", "cni_mode": "host-gw"},
                                             "right": {"cni": "flannel", "cni_mode": "vxlan"},
                                             "metric": "throughput_mbps", "filters": {"dds_mode": "throughput"}}]
    assert "aim" not in ran[1][1]  # an efficiency is the mart's: the variants stop on the host
    assert any("aimed at its 1 claim comparison(s)" in x for x in lines)
    assert any("derived metric: variants stop on the host" in x for x in lines)


def test_a_budget_the_minimum_rounds_cannot_fit_is_said_before_and_while_it_runs():
    a = PresetTask("a.testbed.yaml", [("000", "1")])
    b = PresetTask("b.testbed.yaml", [("004", "2")])
    minimum = {"a.testbed.yaml": 600.0, "b.testbed.yaml": 3000.0}.get
    assert papers_run.overrun([a, b], 3600, minimum) is None
    warning = papers_run.overrun([a, b], 1800, minimum)
    assert "60 min of timed measurement" in warning and "30 min budget: 1 of 2 fit" in warning
    clock, lines = Clock(), []

    def run_sweep(task, params):
        clock.t += 700

    papers_run.run([a, b], 1800, planned_runs=lambda p: 100, run_sweep=run_sweep, rebuild=lambda: None,
                   still_open=lambda t: t.claims, log=lines.append, clock=clock, minimum_s=minimum)
    first, second = [x for x in lines if "undecided claim(s); budget" in x]
    assert "runs past its share" not in first and "ETA the whole run 30 min at the latest" in first
    assert "minimum rounds alone hold 50.0 min" in second and "runs past its share" in second
    assert "ETA this preset 62 min or later, after the budget" in second
