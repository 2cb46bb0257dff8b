"""The seed papers beside our measurements (edgebench.results.report.papers, `edgebench report --paper`, the Papers page):
the claim evaluator on hand-made mart rows with known outcomes, and the report on the fixture warehouse with
expectations computed here from the per-run facts."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from edgebench.cli import app as cli_app
from edgebench.results.report import papers
from edgebench.results.report import verdict as V

# ---- pure parts ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("left, lci, right, rci, comp, expected", [
    (10, 1, 5, 1, ">", "agrees"),         # [9, 11] above [4, 6]
    (10, 1, 5, 1, "<", "disagrees"),
    (10, 3, 5, 3, ">", "agrees"),         # the intervals overlap, but the difference's (5 +- 4.2) excludes 0
    (10, 4, 5, 4, ">", "cannot tell"),    # 5 +- 5.7 holds 0: inconclusive
    (100, 0.5, 101, 0.5, ">", "disagrees"),  # -1 +- 0.7 within the 5 % margin: equivalent, not higher
    (10, 1, 5, 1, "~", "disagrees"),
    (5, 1, 10, 1, "<", "agrees"),
    (5, None, 10, 1, "<", "cannot tell"),  # a side with one run: no interval
    (100, 1, 102, 1, "~", "agrees"),      # tolerance 5 % of 102 = 5.1; difference -2 +- 2 inside
    (100, 1, 120, 1, "~", "disagrees"),   # -20 +- 2 outside
    (100, 5, 104, 1, "~", "cannot tell"),  # -4 +- 6 crosses the band's edge
])
def test_compare(left, lci, right, rci, comp, expected):
    assert papers.compare(left, lci, right, rci, comp, tolerance_pct=5) == expected


def test_subject_paper_id_and_ci_column():
    assert papers.parse_subject("cni=flannel;cni_mode=vxlan|fastdp") == {"cni": {"flannel"},
                                                                       "cni_mode": {"vxlan", "fastdp"}}
    with pytest.raises(ValueError):
        papers.parse_subject("cni")
    assert [papers.paper_id(x) for x in ("0", "000", "seed-004", " 3 ")] == ["000", "000", "004", "003"]
    with pytest.raises(papers.PaperError, match="000, 001, 002, 003, 004"):
        papers.paper_id("5")
    assert papers.ci_column("throughput_mbps") == "throughput_ci95_mbps"
    assert papers.ci_column("latency_p90_overhead_pct") == "latency_p90_overhead_ci95_pct"


def _dds(cni, mode, length, value, ci, n=3, **kw):
    base = {"substrate": "local", "distribution": "none", "netem_scenario": "none", "tuning_profile": "default",
            "dds_mode": "throughput", "length_bytes": length, "reliability": "reliable", "transport": "unicast",
            "subscribers": 1, "security": "none", "rate": "inf", "placement": "cross-node", "cni": cni,
            "cni_mode": mode, "datapath": f"dp-{mode}", "is_host_baseline": cni == "host", "n_runs": n,
            "throughput_mbps": value, "throughput_ci95_mbps": ci}
    return {**base, **kw}


CLAIM = {"claim_id": "t-01", "mart": "cmp_dds_vs_host", "metric": "throughput_mbps", "testable": True,
         "left_subject": "cni=flannel;cni_mode=host-gw", "comparator": ">", "right_subject": "cni=flannel;cni_mode=vxlan",
         "filters": json.dumps({"dds_mode": "throughput", "length_bytes": [64, 1024]}), "scope": "each",
         "tolerance_pct": None}


def test_each_claim_pairs_within_groups_only():
    # n = 3 a side, +-1: sd 1 x sqrt(3) / 4.303 = 0.40, Welch (df 4) +-2.776 x sqrt(2 x 0.40^2 / 3) = +-0.91; the
    # margin is 5 % of the right side (throughput)
    rows = [_dds("flannel", "host-gw", 64, 90, 1), _dds("flannel", "vxlan", 64, 80, 1),     # +10 +- 0.91 vs 4.0
            _dds("flannel", "host-gw", 1024, 95, 1), _dds("flannel", "vxlan", 1024, 85, 1),  # +10 +- 0.91 vs 4.25
            # another placement is another group; a payload outside the filter is ignored
            _dds("flannel", "vxlan", 64, 99, 1, placement="same-node"),
            _dds("flannel", "host-gw", 4096, 10, 1), _dds("flannel", "vxlan", 4096, 99, 1)]
    res = papers.evaluate_claim(CLAIM, rows)
    assert (res["outcome"], res["n_comparisons"], res["n_agree"]) == ("agrees", 2, 2)
    assert res["left"]["mean"] == pytest.approx(92.5) and res["left"]["n_runs"] == 6
    assert res["right"]["mean"] == pytest.approx(82.5)
    # one decided counterexample refutes an `each` claim: 95 vs 105, -10 +- 0.91 beyond the margin (5.25): worse
    rows[3] = _dds("flannel", "vxlan", 1024, 105, 1)
    assert papers.evaluate_claim(CLAIM, rows)["outcome"] == "disagrees"
    # and so does a difference within the margin: 95 vs 92, +3 +- 0.91 inside +-4.6: equivalent, not higher
    rows[3] = _dds("flannel", "vxlan", 1024, 92, 1)
    assert papers.evaluate_claim(CLAIM, rows)["outcome"] == "disagrees"
    # an inconclusive one: cannot tell. 95 +- 1 vs 93 +- 10: sd 0.40 and 4.03, Welch df 2, +2 +- 4.303 x
    # sqrt(0.40^2 / 3 + 4.03^2 / 3) = +2 +- 10.0, holding 0 and reaching beyond +-4.65
    rows[3] = _dds("flannel", "vxlan", 1024, 93, 10)
    res = papers.evaluate_claim(CLAIM, rows)
    assert (res["outcome"], res["n_agree"], res["n_cannot_tell"]) == ("cannot tell", 1, 1)


def test_overall_claim_and_threshold_and_freeing():
    # length_bytes=16384 < length_bytes=64 on the overhead: each CNI with itself (cni stays in the group)
    claim = {**CLAIM, "metric": "throughput_overhead_pct", "left_subject": "length_bytes=16384",
             "comparator": "<", "right_subject": "length_bytes=64", "scope": "each",
             "filters": json.dumps({"is_host_baseline": False})}
    rows = [_dds(c, m, n, None, None, throughput_overhead_pct=v, throughput_overhead_ci95_pct=1)
            for c, m, n, v in (("flannel", "vxlan", 64, 40), ("flannel", "vxlan", 16384, 3),
                               ("weave", "fastdp", 64, 45), ("weave", "fastdp", 16384, 50),
                               ("host", "host", 64, 0), ("host", "host", 16384, 0))]
    res = papers.evaluate_claim(claim, rows)
    assert (res["outcome"], res["n_comparisons"], res["n_agree"], res["n_disagree"]) == ("disagrees", 2, 1, 1)
    # overall: the means over the groups where both sides exist; half-width sqrt(1 + 1) / 2
    res = papers.evaluate_claim({**claim, "scope": "overall"}, rows)
    assert res["left"]["mean"] == pytest.approx(26.5) and res["left"]["ci95"] == pytest.approx(math.sqrt(2) / 2)
    assert res["right"]["mean"] == pytest.approx(42.5) and res["outcome"] == "agrees"
    # a number on the right is a threshold in the metric's unit
    res = papers.evaluate_claim({**claim, "right_subject": "60", "left_subject": "cni=weave"}, rows)
    assert (res["outcome"], res["n_comparisons"]) == ("agrees", 2)


def test_claims_that_cannot_be_told():
    rows = [_dds("flannel", "vxlan", 64, 80, 1)]
    res = papers.evaluate_claim(CLAIM, rows)
    assert res["outcome"] == "cannot tell" and "no measured row matches cni=flannel;cni_mode=host-gw" in res["detail"]
    res = papers.evaluate_claim({**CLAIM, "left_subject": "deployment=container"}, rows)
    assert res["outcome"] == "cannot tell" and "no column deployment" in res["detail"]
    no_ci = [{k: v for k, v in r.items() if k != "throughput_ci95_mbps"} for r in rows]
    assert "no interval" in papers.evaluate_claim(CLAIM, no_ci)["detail"]
    res = papers.evaluate_claim({**CLAIM, "testable": False, "note": "bare metal is not measured"}, rows)
    assert (res["outcome"], res["detail"]) == ("not testable", "bare metal is not measured")


# ---- on the fixture warehouse -------------------------------------------------------------------------------------

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447}


def _welch_half_width(a: list[float], b: list[float]) -> float:
    def var(xs):
        m = sum(xs) / len(xs)
        return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)
    sa, sb = var(a) / len(a), var(b) / len(b)
    df = (sa + sb) ** 2 / (sa ** 2 / (len(a) - 1) + sb ** 2 / (len(b) - 1))
    return T95[math.floor(df)] * math.sqrt(sa + sb)


def _fetch(path):
    def fetch(sql, params):
        with duckdb.connect(str(path), read_only=True) as con:
            cur = con.execute(sql, params)
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]
    return fetch


def _per_run(path, sql):
    with duckdb.connect(str(path), read_only=True) as con:
        return [r[0] for r in con.execute(sql).fetchall()]


def test_dds_overhead_interval_from_the_runs(fixture_warehouse):
    """cmp_dds_vs_host's new half-width and verdict, recomputed from the per-run values of fct_dds_*."""
    sel = ("substrate = 'local' and length_bytes = 1024 and reliability = 'reliable' and transport = 'unicast' "
           "and subscribers = 1 and security = 'none' and status = 'ok'")
    host = _per_run(fixture_warehouse, f"select throughput_mbps from fct_dds_throughput where cni = 'host' and {sel}")
    fl = _per_run(fixture_warehouse, f"select throughput_mbps from fct_dds_throughput where cni = 'flannel' and {sel}")
    assert len(host) == len(fl) == 2
    ((pct, ci, verdict, n, hn),) = duckdb.connect(str(fixture_warehouse), read_only=True).execute(
        "select throughput_overhead_pct, throughput_overhead_ci95_pct, verdict, n_runs, host_n_runs "
        "from cmp_dds_vs_host where cni = 'flannel' and dds_mode = 'throughput' and subscribers = 1").fetchall()
    hm, fm = sum(host) / 2, sum(fl) / 2
    expected_ci = _welch_half_width(fl, host) / hm * 100
    assert (n, hn) == (2, 2)
    assert pct == pytest.approx((hm - fm) / hm * 100) and ci == pytest.approx(expected_ci, rel=1e-6)
    # the one rule on the per-run values: Welch's interval of flannel - host against 5 % of the host mean
    sd = [math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) for xs, m in ((fl, fm), (host, hm))]
    welch = V.welch_ci95(2, sd[0], 2, sd[1])
    assert welch == pytest.approx(_welch_half_width(fl, host), rel=1e-9)
    assert verdict == V.decide(fm - hm, welch, 2, 2, hm, True, V.margin_pct("throughput"))
    # the fixture's flannel is 16.2 % slower, +-5.7 %: the interval lies beyond the 5 % margin, worse
    assert verdict == "worse"
    # host rows are the baseline
    assert duckdb.connect(str(fixture_warehouse), read_only=True).execute(
        "select distinct verdict from cmp_dds_vs_host where cni = 'host'").fetchall() == [("baseline",)]


def test_paper_000_report_on_the_fixtures(fixture_warehouse):
    rep = papers.paper_report(_fetch(fixture_warehouse), "0")
    assert rep["paper"] == "000" and rep["substrates"] == ["local"]
    assert "not the paper's hardware" in rep["substrate_notes"]["local"]
    # Tables I and II: 20 numbers each (and Fig. 4's two, bare metal against a container; and the text's two on
    # Fig. 5, a CNI mode against another); the fixture measured flannel vxlan at 1024 B (throughput) and 64/1024 B
    # (latency); every other published cell is listed as not measured
    measured = [r for r in rep["numbers"] if r["ours"] is not None]
    assert sorted((r["table_ref"], r["payload_bytes"]) for r in measured) == [
        ("Table I", 1024), ("Table II", 64), ("Table II", 1024)]
    assert len(rep["numbers"]) == 44 and all(r["cni"] == "flannel" and r["cni_mode"] == "vxlan" for r in measured)
    lat = next(r for r in measured if r["table_ref"] == "Table II" and r["payload_bytes"] == 64)
    with duckdb.connect(str(fixture_warehouse), read_only=True) as con:
        ((want, want_ci),) = con.execute(
            "select latency_p90_overhead_pct, latency_p90_overhead_ci95_pct from cmp_dds_vs_host where cni = 'flannel' "
            "and dds_mode = 'latency' and length_bytes = 64 and reliability = 'reliable' and security = 'none'"
        ).fetchall()
    # Table II prints 39.3 for Flannel-VXLAN at 64 B
    assert (lat["ours"], lat["ours_ci95"], lat["value"]) == (pytest.approx(want), pytest.approx(want_ci), 39.3)
    assert lat["unit"] == "%" and lat["conditions"] == "defaults"  # every condition the default
    # the paper's other numbers are listed with a reason, never dropped
    assert rep["published_only"] and all(r["reason"] for r in rep["published_only"])
    # every claim of the paper appears; the untestable ones as such, with the seed's note
    ids = {c["claim_id"] for c in rep["claims"]}
    assert ids == {f"000-{i:02d}" for i in range(1, 25)}
    outcomes = {c["claim_id"]: c for c in rep["claims"]}
    assert outcomes["000-12"]["outcome"] == "not testable" and outcomes["000-12"]["detail"]
    assert outcomes["000-09"]["outcome"] == "cannot tell"  # no host-gw in the fixtures
    # 000-10 (best-effort < reliable, overall): the sides' means are the means of the mart rows behind them
    c10 = outcomes["000-10"]
    with duckdb.connect(str(fixture_warehouse), read_only=True) as con:
        be, rel = (con.execute(
            "select avg(latency_p90_us) from cmp_dds_vs_host where dds_mode = 'latency' and length_bytes = 64 "
            "and security = 'none' and cni in ('host', 'flannel') and reliability = ?", [r]).fetchone()[0]
            for r in ("best-effort", "reliable"))
    assert c10["left"]["mean"] == pytest.approx(be) and c10["right"]["mean"] == pytest.approx(rel)
    assert c10["outcome"] in ("agrees", "disagrees", "cannot tell")
    assert sum(rep["claim_outcomes"].values()) == len(rep["claims"])
    # every outcome says what it rests on, and the two agree
    assert all(c["reason"] in papers.REASONS for c in rep["claims"])
    assert all((c["reason"] == "decided") == (c["outcome"] in ("agrees", "disagrees")) for c in rep["claims"])
    assert outcomes["000-09"]["reason"] == "side missing" and outcomes["000-12"]["reason"] == "not testable"


def test_paper_report_before_anything_was_measured(fixture_warehouse):
    """Only the seeds are in the warehouse: every number 'not measured yet', every testable claim says so."""
    full = _fetch(fixture_warehouse)

    def seeds_only(sql, params):
        return full(sql, params) if "published_" in sql else []

    rep = papers.paper_report(seeds_only, "003")
    assert rep["substrates"] == [] and len(rep["published_only"]) > 0
    # seed 003's efficiency numbers have counterparts, none measured yet
    assert rep["numbers"] and all(n["ours"] is None and n["conditions"] == "not measured yet" for n in rep["numbers"])
    assert {c["substrate"] for c in rep["claims"]} == {None}
    assert all(c["detail"] == "nothing measured in cmp_tuning_vs_host yet" for c in rep["claims"]
               if c["outcome"] != "not testable")


def test_report_paper_cli(fixture_warehouse):
    runner = CliRunner()
    res = runner.invoke(cli_app, ["report", "--paper", "000", "--warehouse", str(fixture_warehouse)])
    assert res.exit_code == 0, res.output
    for text in ("seed 000", "Kang et al.", "Published numbers beside ours", "Claims", "000-24", "not testable",
                 "substrate local"):
        assert text in res.output
    res = runner.invoke(cli_app, ["report", "--paper", "000", "--json", "--warehouse", str(fixture_warehouse)])
    rep = json.loads(res.output)
    assert rep["paper"] == "000" and len(rep["claims"]) == 24
    for argv, msg in ((["--paper", "9"], "unknown paper '9'"),
                      (["--paper", "000", "--cni", "calico"], "cannot be combined with --paper")):
        res = runner.invoke(cli_app, ["report", *argv, "--warehouse", str(fixture_warehouse)])
        assert res.exit_code == 2 and msg in res.output


# ---- the run hint: presets that exist ---------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
HINTED = re.compile(r"workflows/presets/[^\s`'\")]+")


@pytest.mark.parametrize("paper", list(papers.PAPERS))
def test_every_hinted_preset_exists_and_is_named_in_full(paper):
    """The hint (Papers page, `edgebench report --paper`) names each preset of the paper that exists by its full path:
    no pattern that matches nothing (seed-004 has no seed-004-*.testbed.yaml) or several files (seed 000 has three)."""
    hint = papers.run_hint(paper, REPO)
    paths = HINTED.findall(hint)
    assert paths and len(paths) == len(set(paths))
    for p in paths:
        assert not set(p) & set("*?[{"), p
        assert (REPO / p).is_file() and Path(p).name.startswith(f"seed-{paper}"), p
    assert any(p.endswith(".testbed.yaml") for p in paths), "a preset for this machine (--local)"
    for p in papers.presets(paper, REPO)["testbed"]:
        assert f"`edgebench sweep {p} --local`" in hint
    from data.papers import run_hint  # the Papers page's
    assert run_hint(paper) == hint


def test_every_preset_is_hinted_for_one_paper():
    hinted = [p for paper in papers.PAPERS for p in HINTED.findall(papers.run_hint(paper, REPO))]
    files = sorted(f"workflows/presets/{f.name}" for f in (REPO / "workflows" / "presets").glob("seed-*.yaml"))
    assert sorted(hinted) == files


def test_preset_paths_in_the_portal_and_cli_sources_exist():
    """A preset path the app pages or the CLI print literally is a file (a pattern or a placeholder is not)."""
    sources = [*(REPO / "app").rglob("*.py"), *(REPO / "containers" / "runner" / "src" / "edgebench" / "cli").glob("*.py")]
    for src in sources:
        for p in HINTED.findall(src.read_text()):
            assert not set(p) & set("*?[{"), f"{src.name}: {p}"
            if p.endswith(".yaml"):
                assert (REPO / p).is_file(), f"{src.name}: {p}"


def test_seed_001_preset_header_names_the_figures_its_grid_measures():
    """The header's figure range is the figures seed 001's published numbers and claims cite (Fig. 3 is the 1 MB
    inference echo of the grid: payload-echo at 1000000 B)."""
    import csv
    cited = set()
    for name in ("published_results.csv", "published_claims.csv"):
        with open(REPO / "analytics" / "seeds" / name, newline="") as f:
            cited |= {int(m) for r in csv.DictReader(f) if r["paper"] == "001"
                      for m in re.findall(r"Fig\. (\d+)", r["figure_ref"])}
    header = (REPO / "workflows" / "presets" / "seed-001-intercluster.yaml").read_text().split("apiVersion:")[0]
    lo, hi = map(int, re.search(r"Figs\. (\d+)-(\d+)", header).groups())
    assert set(range(lo, hi + 1)) == cited
    preset = (REPO / "workflows" / "presets" / "seed-001-intercluster.yaml").read_text()
    assert '"1000000"' in preset and "http:payload-echo" in preset  # Fig. 3's cell is in the grid
