"""The answer on the first page (edgebench.results.report.ranking): the CNI modes ranked against the host per headline metric,
with the marts' verdicts unchanged, in `edgebench summary answer` and on the portal's Overview."""
from __future__ import annotations

from pathlib import Path

import duckdb
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from edgebench.cli import app as cli_app
from edgebench.results.report import ranking
from edgebench.results.report.marts import summaries

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")


def _fetch(path):
    con = duckdb.connect(str(path), read_only=True)

    def fetch(sql, params):
        cur = con.execute(sql, params)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]
    return fetch


def test_the_answer_carries_the_marts_verdicts_ranked(fixture_warehouse):
    entries = summaries.answer(fixture_warehouse)
    assert entries, "the fixture warehouse has CNI modes compared with the host"
    fetch = _fetch(fixture_warehouse)
    iperf3 = [e for e in entries if e["headline"] == "iperf3" and e["substrate"] == "local"]
    assert len(iperf3) == 1
    e = iperf3[0]
    mart = fetch("select * from cmp_iperf3_vs_host where substrate = 'local' and protocol = 'tcp' and cni <> 'host'", [])
    same = ["cni", "cni_mode", "distribution", *ranking._neutral(), "path", "placement", "length_bytes"]
    for r in e["rows"]:
        matches = [m for m in mart if all(str(m[c]) == str(r[c]) for c in same)]
        assert matches and all(m["verdict"] == r["verdict"] for m in matches), (r, matches)
    order = [ranking._RANK[r["verdict"]] for r in e["rows"]]
    assert order == sorted(order)
    for r in e["rows"]:
        assert r["mode"] in e["sentence"]
        if r["verdict"] in ("better", "worse"):
            assert r["text"].startswith(f"{r['verdict']} by ") and "n " in r["text"] and "margin ±5 %" in r["text"]
    assert e["sentence"].startswith("On the local testbed")


def test_runs_of_another_duration_are_another_configuration_and_a_mode_is_ranked_once():
    def row(mode, duration, verdict, n):
        cni, cni_mode = mode.split(":")
        return {"substrate": "local", "lab": "testbed", "distribution": "none", "cni": cni, "cni_mode": cni_mode,
                **ranking._neutral(), "path": "pod-to-pod", "placement": "cross-node", "length_bytes": 131072,
                "duration_s": duration, "iperf3_bitrate": None, "value": 1.0, "n_runs": n, "host_n_runs": n,
                "diff_pct": -30.0, "ci_pct": 10.0, "verdict": verdict, "verdict_margin_pct": 5.0,
                "runs_to_decide": None}

    rows = [row("flannel:vxlan", 1, "worse", 8), row("flannel:host-gw", 1, "worse", 8),
            row("flannel:vxlan", 3, "worse", 9), row("flannel:host-gw", 3, "inconclusive", 3)]
    (e,) = ranking.headline(lambda sql, params: [dict(r) for r in rows], ranking.HEADLINES[0])
    assert sorted(r["mode"] for r in e["rows"]) == ["flannel:host-gw", "flannel:vxlan"]  # each once
    assert {r["duration_s"] for r in e["rows"]} == {1} and "1 s runs" in e["sentence"]  # as many judged: the one with more runs


def test_sentence_groups_modes_by_verdict():
    rows = [{"mode": "a:x", "verdict": "equivalent", "diff_pct": 1.0, "verdict_margin_pct": 5.0},
            {"mode": "b:y", "verdict": "worse", "diff_pct": 25.0, "verdict_margin_pct": 5.0},
            {"mode": "c:z", "verdict": "worse", "diff_pct": 40.0, "verdict_margin_pct": 5.0},
            {"mode": "d:w", "verdict": "inconclusive", "diff_pct": 3.0, "verdict_margin_pct": 5.0}]
    text = ranking.sentence("local", "DDS latency p90", {"length_bytes": 64}, {}, rows)
    assert "a:x is equivalent to the host" in text
    assert "b:y and c:z are 25–40 % worse than the host" in text
    assert "d:w is inconclusive so far" in text and "64 B" in text


def test_summary_answer_cli(fixture_warehouse, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(fixture_warehouse))
    res = CliRunner().invoke(cli_app, ["summary", "answer"])
    assert res.exit_code == 0, res.output
    assert "against the host network" in res.output and "On the local testbed" in res.output


def test_overview_page_answers(fixture_warehouse, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(fixture_warehouse))
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    assert any(h.value == "The answer" for h in at.header)
    assert any(m.value.startswith("On the local testbed") for m in at.markdown)
