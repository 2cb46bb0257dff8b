"""`edgebench papers run --inventory` (`make papers-lab`): the papers' cluster presets on a lab, planned from the
claims the lab (substrate ssh) cannot tell yet, never from the testbed's."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgebench.cli import app as cli_app
from edgebench.cli import papers as cli_papers
from edgebench.errors import EdgebenchError
from edgebench.results import warehouse
from edgebench.results.report import papers, scorecard
from edgebench.results.report.marts import papers as paper_marts
from edgebench.results.report.claim_compare import substrate_limit
from edgebench.sweep import papers_run

REPO = Path(__file__).resolve().parents[2]
LAB_INVENTORY = """target: lab-local
nodes:
  - {name: lab-cp, address: 10.77.0.11, arch: amd64, role: server, user: root}
  - {name: lab-w1, address: 10.77.0.12, arch: amd64, role: agent, user: root}
"""


def _row(paper, substrate, claim_ids):
    return {"paper": paper, "substrate": substrate,
            "cannot_tell": [{"claim_id": c, "runs_a_side": 3, "more_runs": 2} for c in claim_ids]}


def _published() -> dict[tuple[str, str], dict]:
    with open(REPO / "analytics/seeds/published_claims.csv", newline="") as f:
        return {(r["paper"], r["claim_id"]): {**r, "testable": r["testable"] == "true"} for r in csv.DictReader(f)}


def test_the_lab_reads_its_own_rows_never_the_testbeds():
    rows = [_row("000", "local", ["000-01", "000-02"]), _row("000", "ssh", ["000-03"]), _row("002", None, ["002-01"])]
    assert papers_run.undecided(rows, substrate="ssh") == [("000", "000-03"), ("002", "002-01")]
    assert papers_run.undecided(rows) == [("000", "000-01"), ("000", "000-02"), ("002", "002-01")]
    keys = [("000", "000-01"), ("000", "000-03")]
    assert papers_run.short_of_runs(rows, keys, "ssh") == {("000", "000-03"): (3, 2)}
    assert papers_run.short_of_runs(rows, keys) == {("000", "000-01"): (3, 2)}


def test_the_lab_plan_takes_cluster_presets_and_leaves_the_testbeds_alone():
    """Every claim of seeds 000, 002 and 004 undecided on the lab: each goes to a cluster preset whose grid holds both
    its sides, or is named as one no cluster preset holds alone (seed 004's distributions: a preset each)."""
    published = _published()
    testable = [k for k, c in published.items() if c["testable"] and k[0] in ("000", "002", "004")
                and substrate_limit(c, "ssh") is None]
    rows = [_row(p, "ssh", [c for q, c in testable if q == p]) for p in ("000", "002", "004")]
    tasks, orphans = papers_run.plan(rows, published, REPO, ["000", "002", "004"], "ssh")
    assert tasks, "no cluster preset planned"
    assert all(not t.preset.endswith(".testbed.yaml") for t in tasks), [t.preset for t in tasks]
    planned = [k for t in tasks for k in t.claims]
    assert sorted(planned + orphans) == sorted(testable)
    assert ("004", "004-04") in orphans  # calico on k0s and MicroK8s against kubeadm: three presets' grids
    assert any(t.preset.endswith("seed-004-kubeadm.yaml") for t in tasks)
    # the same claims on the testbed go to testbed presets: one claim, two homes, one per substrate
    local_tasks, _ = papers_run.plan([_row("002", "local", ["002-01"])], published, REPO, ["002"])
    assert [t.preset for t in local_tasks] == ["workflows/presets/seed-002-dds-k8s.testbed.yaml"]
    lab_tasks, _ = papers_run.plan([_row("002", "ssh", ["002-01"])], published, REPO, ["002"], "ssh")
    assert [t.preset for t in lab_tasks] == ["workflows/presets/seed-002-dds-k8s.yaml"]


def test_a_parameter_for_every_preset_reaches_the_plan_and_its_estimate():
    """-p dds-duration=10 shortens the cluster preset's DDS runs (120 s in seed 000's preset): the minimum rounds'
    timed measurement follows it."""
    preset = "workflows/presets/seed-000-dds-cni.yaml"
    full = cli_papers._minimum(REPO, preset, 6, {}, 2, {}, lab=True)
    short = cli_papers._minimum(REPO, preset, 6, {}, 2, {"dds-duration": "10"}, lab=True)
    assert full[0] == short[0] > 0
    assert short[1] == pytest.approx(full[1] / 12)


@pytest.mark.parametrize("argv, message", [
    (["-p", "repetitions=3"], "papers run sets it for each preset"),
    (["-p", "sweep-id=x", "-p", "aim=[]"], "-p aim, sweep-id: papers run sets them"),
    (["-p", "run-lengths=paper"], "would replace repetitions=auto"),
    (["-p", "dds-duraton=10"], "-p dds-duraton: not a sweep parameter"),
    (["-p", "dds-duration=soon"], "dds-duration"),
    (["--ssh-key", "/nonexistent"], "give --inventory too"),
    (["--cell-by-cell"], "give --inventory too"),
    (["--inventory", "/nonexistent/inventory.yaml"], "inventory /nonexistent/inventory.yaml not found"),
])
def test_bad_lab_options_change_nothing(tmp_path, monkeypatch, argv, message):
    built = []
    monkeypatch.setattr(cli_papers.warehouse, "build", lambda *a, **k: built.append(a))
    missing = tmp_path / "warehouse.duckdb"
    res = CliRunner().invoke(cli_app, ["papers", "run", "--warehouse", str(missing), *argv])
    assert isinstance(res.exception, EdgebenchError) and message in str(res.exception), res.output
    assert not built and not missing.exists()


def _dry_run(tmp_path, monkeypatch, inventory_text: str, *argv: str):
    def no_results(*a, **k):
        raise cli_papers.warehouse.NoResultsError("nothing stored")
    monkeypatch.setattr(cli_papers.warehouse, "build", no_results)
    monkeypatch.setattr(cli_papers.ResultStore, "check", lambda self: None)
    monkeypatch.setattr(cli_papers.papers_run, "run", lambda *a, **k: pytest.fail("the dry run ran something"))
    monkeypatch.delenv("EDGEBENCH_ARTIFACT_SOURCE", raising=False)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(inventory_text)
    res = CliRunner().invoke(cli_app, ["papers", "run", "--warehouse", str(tmp_path / "w.duckdb"), "--dry-run",
                                       "--inventory", str(inventory), *argv])
    assert res.exit_code == 0, res.output
    return res.output


def test_the_lab_dry_run_plans_cluster_presets_from_the_seeds(tmp_path, monkeypatch):
    """A machine that has measured nothing, --inventory: the dry run names the lab, plans only cluster presets and
    runs nothing; -p reaches the estimate (seed 002's DDS runs at 10 s instead of the paper's 60)."""
    text = " ".join(_dry_run(tmp_path, monkeypatch, LAB_INVENTORY, "--paper", "002").split())
    assert "(substrate ssh, the cluster presets)" in text
    assert "seed-002-dds-k8s.yaml" in text and ".testbed.yaml" not in text
    short = " ".join(_dry_run(tmp_path, monkeypatch, LAB_INVENTORY, "--paper", "002", "-p", "dds-duration=10").split())
    minutes = [int(re.search(r"(\d+) min of timed measurement", t).group(1)) for t in (text, short)]
    assert minutes[0] == 6 * minutes[1] > 0, minutes


def test_the_mirror_named_by_the_inventory_keeps_the_distributions_it_cannot_install_out(tmp_path, monkeypatch):
    text = " ".join(_dry_run(tmp_path, monkeypatch, LAB_INVENTORY + "artifact_source: http://10.77.0.1:8089\n",
                             "--paper", "004").split())
    assert "seed-004-k3s.yaml: not planned on this lab: unsupported:" in text
    assert "seed-004-kubeadm.yaml: " in text and "seed-004-k0s.yaml: 1" not in text


def test_a_paper_the_testbed_measured_is_still_planned_on_the_lab():
    """The scorecard gives each paper a row on the substrate asked for, measured there or not: a lab after the
    testbed sees every claim it can test undecided, with what it cannot test by its own limits (not the testbed's)."""
    fetch = paper_marts.seeds_fetcher(warehouse.analytics_dir())
    plain = scorecard.scorecard(fetch, REPO)
    assert {r["substrate"] for r in plain} == {None}
    rows = {(r["paper"], r["substrate"]): r for r in scorecard.scorecard(fetch, REPO, also=("ssh", "local"))}
    assert set(rows) == {(p, s) for p in papers.PAPERS for s in ("ssh", "local")}
    # seed 004's claims on distributions and on the agents: testable on a lab, never on the testbed
    assert rows[("004", "ssh")]["testable"] == 16 and rows[("004", "local")]["testable"] == 6
    assert len(papers_run.undecided(list(rows.values()), ["004"], "ssh")) == 16


def test_presets_the_lab_cannot_install_are_never_planned_and_are_named():
    """A lab served from a mirror without k3s, k0s or MicroK8s: seed 004's claims go to its kubeadm preset, and a
    claim that needs another distribution is left out, naming the presets this lab cannot run."""
    skip = cli_papers._unrunnable(REPO, "http://10.77.0.1:8089")
    assert {Path(p).name for p in skip} >= {"seed-004-k3s.yaml", "seed-004-k0s.yaml", "seed-004-microk8s.yaml"}
    assert "seed-004-kubeadm.yaml" not in {Path(p).name for p in skip}
    assert all("403" in why or "not reachable" in why for why in skip.values())
    assert cli_papers._unrunnable(REPO, None) == {}  # nodes that install from the internet: every preset
    published = _published()
    rows = [_row("004", "ssh", ["004-03", "004-05", "004-12"])]
    tasks, orphans = papers_run.plan(rows, published, REPO, ["004"], "ssh", skip)
    assert [(Path(t.preset).name, t.claims) for t in tasks] == [
        ("seed-004-kubeadm.yaml", [("004", "004-03"), ("004", "004-05")])]
    assert orphans == [("004", "004-12")]
    from edgebench.results.report import claim_preset
    why = claim_preset.home(published[("004", "004-12")], "004", REPO, "ssh", skip).command()
    assert "seed-004-k0s.yaml" in why and "cannot run" in why
    assert "`argo submit workflows/presets/seed-004-k0s.yaml`" in \
        claim_preset.home(published[("004", "004-12")], "004", REPO, "ssh").command()


def test_udp_against_tcp_compares_each_at_its_own_length_but_a_length_claim_keeps_the_protocol():
    """Seed 004's cluster preset runs iperf3 TCP at 128 KiB writes and UDP at 1300 B datagrams: a claim naming the
    protocol (004-06, 004-16: the nodes' and the agents' CPU, UDP against TCP) is held by its grid, as the scorecard
    groups rows (papers.freed_by, one home for both); a claim naming the length does not pool protocols."""
    from edgebench.results.report import claim_runs
    from edgebench.results.report.papers import freed_by

    assert freed_by({"protocol"}) == {"protocol", "length_bytes"}
    assert freed_by({"length_bytes"}) == {"length_bytes"}
    assert "datapath" in freed_by({"cni"})
    published = _published()
    grid = claim_runs.grid("workflows/presets/seed-004-kubeadm.yaml", REPO, None)
    for cid in ("004-06", "004-16"):
        assert claim_runs.measures(published[("004", cid)], grid), cid
    length_claim = {**published[("004", "004-06")], "left_subject": "length_bytes=1300",
                    "right_subject": "length_bytes=131072"}
    assert not claim_runs.measures(length_claim, grid)  # 1300 B is UDP's, 128 KiB TCP's: never the same protocol
