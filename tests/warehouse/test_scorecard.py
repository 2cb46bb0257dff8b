"""The reproduction scorecard (results/report/scorecard.py): per paper and substrate, the claims' outcomes counted from
results/report/papers.py's report (nothing judged twice), the printed numbers with a counterpart, and for each claim we
cannot tell what would decide it; `edgebench report --paper all` prints it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgebench.cli import app as cli_app
from edgebench.results.report import claim_preset, papers, scorecard
from test_papers import _fetch  # the fixture warehouse as papers' fetch(sql, params)

REPO = Path(__file__).resolve().parents[2]


def test_the_scorecard_counts_what_the_paper_report_judged(fixture_warehouse):
    fetch = _fetch(fixture_warehouse)
    rows = scorecard.scorecard(fetch, REPO)
    assert [r["paper"] for r in rows] == ["000", "001", "002", "003", "004"] or \
        sorted({r["paper"] for r in rows}) == list(papers.PAPERS)
    for r in rows:
        rep = papers.paper_report(fetch, r["paper"])
        n_claims = len({c["claim_id"] for c in rep["claims"]})
        assert r["claims"] == n_claims == sum(r[o] for o in papers.OUTCOMES)
        assert r["testable"] == n_claims - r["not testable"] and r["decided"] == r["agrees"] + r["disagrees"]
        assert len(r["cannot_tell"]) == r["cannot tell"] and all(u["to_decide"] for u in r["cannot_tell"])
        mine = {c["claim_id"]: c["outcome"] for c in rep["claims"] if c["substrate"] == r["substrate"]}
        for cid, outcome in mine.items():  # a claim judged on this substrate counts with the report's outcome
            assert outcome != "cannot tell" or cid in {u["claim_id"] for u in r["cannot_tell"]}
    s000 = next(r for r in rows if r["paper"] == "000" and r["substrate"] == "local")
    # Tables I and II print 40 comparable numbers, Fig. 4 two more, the text on Fig. 5 two (CNI mode against CNI
    # mode); the fixture measured 3 of them on the testbed
    assert (s000["numbers_comparable"], s000["numbers_measured"]) == (44, 3)
    assert s000["numbers_printed"] > 40  # the paper's other numbers count as printed, without a counterpart
    for r in rows:  # a counterpart or a reason stated for the number (published_results.no_counterpart_reason)
        rep = papers.paper_report(fetch, r["paper"])
        stated = {scorecard._number_key(n) for n in rep["published_only"] if n["reason_stated"]}
        assert r["numbers_comparable"] <= r["numbers_explained"] <= r["numbers_printed"]
        assert r["numbers_explained"] - r["numbers_comparable"] == len(stated)
        assert r["numbers_explained_share"] >= 0.8, r["paper"]


def test_a_claim_nothing_measured_names_the_preset_that_would():
    claim = {"claim": "With 4 subscribers, WeaveNet multicast has lower throughput than every unicast CNI.",
             "left_subject": "cni=weave;cni_mode=fastdp-1438;transport=multicast",
             "right_subject": "transport=unicast;is_host_baseline=false"}
    # the subjects' values name the multicast preset, though the statement also says "CNI" (and its grid holds both
    # sides: WeaveNet's fastdp-1438 mode; seed 002's grid, with fastdp, would be named for cni_mode=fastdp)
    assert claim_preset.home(claim, "000", REPO).preset == "workflows/presets/seed-000-dds-multicast.testbed.yaml"
    assert claim_preset.home(claim, "000", REPO, "ssh").preset == "workflows/presets/seed-000-dds-multicast.yaml"
    sec = {"claim": "Kube-Router with DDS Security has higher throughput than Flannel-IPsec below 1 KB.",
           "left_subject": "cni=kube-router;security=auth-encrypt", "right_subject": "cni=flannel;security=none"}
    assert claim_preset.home(sec, "000", REPO).preset == "workflows/presets/seed-000-dds-security.testbed.yaml"
    threshold = {"claim": "drops to 0", "left_subject": "cni=weave", "right_subject": "1"}
    assert claim_preset.home(threshold, "002", REPO).preset == "workflows/presets/seed-002-dds-k8s.testbed.yaml"
    row = {"substrate": None, "detail": "nothing measured in cmp_dds_vs_host yet"}
    assert scorecard.to_decide(row, claim, "000", REPO) == (
        "measure it: `edgebench sweep workflows/presets/seed-000-dds-multicast.testbed.yaml --local`")


def test_an_inconclusive_claim_says_about_how_many_runs_would_decide_it():
    # left 110 +- 15 (n 3), right 100 +- 20 (n 3): difference 10 +- 25, margin 5: the interval narrows as 1/sqrt(n)
    # and decides once narrower than |diff| = 10: n x (25 / 10)^2 = 18.75, so 19 runs, 16 more
    row = {"substrate": "local", "metric": "throughput_mbps", "detail": "0 of 1 agree",
           "left": {"mean": 110.0, "ci95": 15.0, "n_rows": 1, "n_runs": 3},
           "right": {"mean": 100.0, "ci95": 20.0, "n_rows": 1, "n_runs": 3}}
    assert scorecard.runs_to_decide(row) == 16
    text = scorecard.to_decide(row, {"claim": "x", "left_subject": "cni=flannel", "right_subject": "cni=host"},
                               "000", REPO)
    assert text.startswith("about 16 more run(s) per side: `edgebench sweep workflows/presets/seed-000-dds-cni")
    assert "max-repetitions=19" in text
    few = {**row, "left": {**row["left"], "ci95": None}, "detail": "a side has fewer than 2 runs",
           "reason": "few runs"}
    assert scorecard.to_decide(few, {"claim": "x"}, "000", REPO).startswith("2 or more runs per side")


def test_a_claim_with_a_side_never_measured_names_its_sides_and_the_full_grid():
    """The testbed grid may lack a claim's conditions (seed 001's 100 KB payloads): the hint names the sides and
    filters to measure and the paper's cluster preset, which has them."""
    claim = {"claim": "Skupper is slowest at 100 KB", "left_subject": "intercluster_tool=skupper",
             "right_subject": "intercluster_tool=clusterlink", "filters": '{"length_bytes": [100000], "service": '
                                                                          '"payload-echo"}'}
    row = {"substrate": "local", "reason": "side missing", "detail": "no measured row matches ..."}
    text = scorecard.to_decide(row, claim, "001", REPO)
    assert text.startswith("measure both sides (intercluster_tool=skupper against intercluster_tool=clusterlink, "
                           "where length_bytes=100000, service=payload-echo) under the same conditions: "
                           "`edgebench sweep workflows/presets/seed-001-intercluster.testbed.yaml --local`")
    assert text.endswith("(or the paper's full grid: `argo submit workflows/presets/seed-001-intercluster.yaml`)")


def test_report_paper_all(fixture_warehouse):
    runner = CliRunner()
    res = runner.invoke(cli_app, ["report", "--paper", "all", "--warehouse", str(fixture_warehouse)])
    assert res.exit_code == 0, res.output
    for text in ("Reproduction scorecard", "seed 000", "seed 004", "44 / 3", "000-09: ", "seed 003 numbers explained: "):
        assert text in res.output, text
    res = runner.invoke(cli_app, ["report", "--paper", "ALL", "--json", "--warehouse", str(fixture_warehouse)])
    rows = json.loads(res.output)
    assert {r["paper"] for r in rows} == set(papers.PAPERS)
    assert all({"agrees", "disagrees", "cannot tell", "not testable", "cannot_tell"} <= set(r) for r in rows)


@pytest.mark.parametrize("paper", list(papers.PAPERS))
def test_every_named_preset_exists(paper, fixture_warehouse):
    for r in scorecard.paper_scorecard(_fetch(fixture_warehouse), paper, REPO):
        for u in r["cannot_tell"]:
            for path in re.findall(r"workflows/presets/[\w.-]+\.yaml", u["to_decide"]):
                assert (REPO / path).is_file(), path


def test_what_the_testbed_can_never_measure_is_not_testable_there():
    """Distributions and the CNI agents' own processes do not exist on the testbed: such claims are not testable on
    substrate local (with the reason), while clusters can test them; the hint for a claim naming tuned profiles the
    testbed preset's grid lacks adds them to the preset's own with -p."""
    dist = {"mart": "cmp_iperf3_vs_host", "left_subject": "cni=calico;distribution=k0s|microk8s",
            "right_subject": "cni=calico;distribution=kubeadm", "filters": '{"protocol":"tcp"}'}
    agents = {"mart": "cmp_resources_vs_host", "left_subject": "cni=flannel", "right_subject": "is_host_baseline=false",
              "filters": '{"workload":"iperf3","component":"cni"}'}
    system = {**agents, "filters": '{"workload":"iperf3","component":"system"}'}
    assert "no Kubernetes distribution" in papers.substrate_limit(dist, "local")
    assert "no CNI agents" in papers.substrate_limit(agents, "local")
    assert papers.substrate_limit(system, "local") is None
    assert papers.substrate_limit(dist, "ssh") is None and papers.substrate_limit(agents, "ssh") is None
    tuned = {"claim": "x", "left_subject": "cni=calico;tuning_profile=latency-performance",
             "right_subject": "cni=calico;tuning_profile=kernel_optimizations", "filters": '{"workload":"iperf3"}'}
    text = scorecard.to_decide({"substrate": "local", "reason": "side missing"}, tuned, "003", REPO)
    assert ("-p 'tuning=[\"default_settings\",\"kernel_optimizations\",\"nic_optimizations\",\"mtu-9000\","
            "\"latency-performance\"]'") in text
    # latency-performance changes nothing a network namespace carries: the testbed cannot measure it, a cluster can
    assert text.startswith("not measurable on the testbed") and "would run as default_settings" in text
    assert text.endswith("(or the paper's full grid: `argo submit workflows/presets/seed-003-tuned-profiles.yaml`)")
    throughput = {**tuned, "left_subject": "cni=calico;tuning_profile=network-throughput"}
    text = scorecard.to_decide({"substrate": "local", "reason": "side missing"}, throughput, "003", REPO)
    assert ("`edgebench sweep workflows/presets/seed-003-tuned-profiles.testbed.yaml --local -p 'tuning=[\"default_"
            "settings\",\"kernel_optimizations\",\"nic_optimizations\",\"mtu-9000\",\"network-throughput\"]'` (on "
            "the testbed network-throughput runs without 5 of its 10 settings") in text


def test_the_scorecard_counts_what_a_substrate_cannot_measure_as_not_testable(fixture_warehouse):
    rows = {r["substrate"]: r for r in scorecard.paper_scorecard(_fetch(fixture_warehouse), "004", REPO)}
    local = rows["local"]
    assert local["not testable"] >= 10  # every claim on distributions or on the CNI component
    assert local["testable"] == local["claims"] - local["not testable"]
    # a testbed preset named is the one whose grid holds the claim: seed 004's, UDP against TCP too (each at its
    # own length: naming the protocol frees the length, papers.FREED_WITH)
    named = {c["claim_id"]: re.findall(r"seed-00\d[\w-]*\.testbed\.yaml", c["to_decide"]) for c in local["cannot_tell"]}
    assert all(n in ([], ["seed-004.testbed.yaml"]) for n in named.values()), named
    assert all(named[c] == ["seed-004.testbed.yaml"] for c in ("004-06", "004-16") if c in named), named


def test_totals_sum_each_substrate_over_the_papers():
    rows = [{"substrate": "local", "decided": 3, "testable": 10}, {"substrate": "ssh", "decided": 0, "testable": 0},
            {"substrate": "local", "decided": 2, "testable": 5}, {"substrate": None, "decided": 0, "testable": 9}]
    assert scorecard.totals(rows) == [
        {"substrate": "local", "decided": 5, "testable": 15, "decided_share": 5 / 15},
        {"substrate": "ssh", "decided": 0, "testable": 0, "decided_share": None}]


def test_a_cluster_substrate_s_hint_names_its_preset_once():
    """On kind or ssh the preset to run is already the cluster preset: no "(or the paper's full grid: ...)" naming
    it a second time; on the testbed the full grid is the other preset, and is named."""
    claim = {"left_subject": "cni=weave", "right_subject": "cni=flannel", "claim": "weave beats flannel"}
    on_kind = scorecard.to_decide({"substrate": "kind", "reason": "side missing"}, claim, "000")
    assert on_kind.count("seed-000-dds-cni.yaml") == 1 and "full grid" not in on_kind
    on_testbed = scorecard.to_decide({"substrate": "local", "reason": "side missing"}, claim, "000")
    assert "seed-000-dds-cni.testbed.yaml" in on_testbed and "(or the paper's full grid: `argo submit" in on_testbed


def test_the_papers_dry_run_says_what_would_measure_each_claim_it_leaves_out(fixture_warehouse):
    """`edgebench papers run --dry-run` names each undecided claim no testbed grid holds as it stands with the
    scorecard's own hint (one answer: results/report/claim_preset.py), the -p tuning=[...] for seed 003's tuned
    profiles."""
    res = CliRunner().invoke(cli_app, ["papers", "run", "--dry-run", "--paper", "003", "--warehouse",
                                       str(fixture_warehouse)])
    assert res.exit_code == 0, res.output
    hints = {u["claim_id"]: u["to_decide"] for r in scorecard.paper_scorecard(_fetch(fixture_warehouse), "003", REPO)
             if r["substrate"] == "local" for u in r["cannot_tell"]}
    left_out = [c for c in ("003-03", "003-04", "003-08", "003-12", "003-13", "003-14") if c in hints]
    assert left_out
    text = " ".join(res.output.split())
    for cid in left_out:
        assert f"{cid}: {' '.join(hints[cid].split())}" in text, cid
        assert "-p 'tuning=[" in hints[cid], cid


def test_papers_run_on_a_machine_that_measured_nothing_plans_every_testable_claim(tmp_path, monkeypatch):
    """No warehouse and an empty store (a new machine): `papers run` does not stop for want of a warehouse; its
    scorecard comes from the seeds alone (analytics/seeds, typed as dbt types them), every claim the testbed can
    test undecided there, so the plan is the new machine's whole plan (tests/unit/test_papers_run.py)."""
    from edgebench.cli import papers as cli_papers
    from edgebench.results.report.claim_compare import substrate_limit
    from edgebench.sweep import papers_run

    empty = tmp_path / "bucket"
    empty.mkdir()
    monkeypatch.setenv("EDGEBENCH_RAW_ROOT", str(empty))
    missing = tmp_path / "wh" / "warehouse.duckdb"
    res = CliRunner().invoke(cli_app, ["papers", "run", "--dry-run", "--warehouse", str(missing)])
    assert res.exit_code == 0, res.output
    assert "nothing measured here yet" in " ".join(res.output.split())
    assert not missing.exists()  # a dry run on nothing builds nothing
    rows, claims = cli_papers._read(missing, "local")
    assert all(isinstance(c["testable"], bool) for c in claims.values())
    testable = {k for k, c in claims.items() if c["testable"] and substrate_limit(c, "local") is None}
    assert len(testable) >= 60
    undecided = set(papers_run.undecided(rows))
    # a paper with nothing measured has no substrate yet: what the testbed can never measure is among its undecided,
    # and the plan leaves it to the cluster presets
    assert undecided >= testable and all(substrate_limit(claims[k], "local") for k in undecided - testable)
    tasks, orphans = papers_run.plan(rows, claims, REPO)
    assert {k for t in tasks for k in t.claims} | set(orphans) == testable
    flat = "".join(res.output.split())
    assert tasks and all(f"sweep{t.sweep_id})" in flat for t in tasks)
