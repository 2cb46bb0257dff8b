"""Latency under load (workloads/loaded_latency.py), the workload added through the four-file recipe: real runs on
the testbed (idle and with a bulk iperf3 flow), then the mart's comparison and verdicts."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from edgebench import workloads
from edgebench.plan import cells
from edgebench.plan import spec
from edgebench.results.report import verdict as V

ROOT = Path(__file__).resolve().parents[2]
SWEEP = str(ROOT / "workflows" / "sweep.yaml")


def test_expansion_pairs_idle_and_bulk_per_payload():
    sweep = spec.from_parameters({"cnis": '["host"]', "workloads": '["loaded-latency"]',
                                  "loaded-latency-payloads": '["64","1024"]', "repetitions": "2"})
    runs = cells.runs_for(sweep, cells.expand(sweep)[0])
    assert len(runs) == 2 * 2 * 2 * 2  # repetitions x probes x payloads x loads
    assert {(r.params["probe"], r.params["load"], r.length_bytes) for r in runs} == {
        (p, load, n) for p in ("dds", "http") for load in ("idle", "bulk") for n in (64, 1024)}
    assert len({r.run_id for r in runs}) == len(runs)
    assert workloads.REGISTRY["loaded-latency"].params[0].name == "loaded-latency-payloads"


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One host and one flannel:vxlan cell, 2 repetitions, short probes, through `edgebench run-cell`."""
    out = tmp_path_factory.mktemp("loaded")
    env = {**os.environ, "EDGEBENCH_TESTBED_PREFIX": "ebl"}
    cell_list = json.loads(subprocess.run(
        [sys.executable, "-m", "edgebench.cli", "cells", SWEEP, "--local", "-p", 'cnis=["host","flannel:vxlan"]',
         "-p", 'workloads=["loaded-latency"]', "-p", "repetitions=2", "-p", "loaded-latency-duration=2",
         "-p", "loaded-latency-requests=30", "-p", "sweep-id=loaded-test"],
        capture_output=True, text=True, env=env, check=True).stdout)
    for cell in cell_list:
        proc = subprocess.run([sys.executable, "-m", "edgebench.cli", "run-cell", "--cell", json.dumps(cell),
                               "--workdir", str(out / "work" / cell["cell_id"]), "--results", str(out / "raw")],
                              capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ebl-" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return out


def test_real_runs_record_the_probe_and_the_background_flow(measured):
    docs = [json.loads(p.read_text()) for p in (measured / "raw").rglob("manifest.json")]
    assert len(docs) == 2 * 2 * 2 * 2  # cells x repetitions x probes x loads
    for d in docs:
        assert d["workload"] == "loaded-latency" and d["status"] == "ok", d["error"]
        m = d["metrics"]
        assert 0 < m["probe_p50_us"] <= m["probe_p99_us"]
        run_dir = measured / "raw" / "runs" / d["sweep_id"] / d["cell_id"] / d["run_id"]
        if d["params"]["load"] == "bulk":
            assert m["bulk_sent_mbps"] > 0 and m["bulk_seconds"] > 1
            assert (run_dir / "bulk-iperf3-client.json").is_file()
        else:
            assert "bulk_sent_mbps" not in m
        # the probe's own raw files carry a prefix, so the dds/http tables never count them
        assert not (run_dir / "dds-samples.json").exists() and not (run_dir / "http-requests.json").exists()
        assert {"iperf3", "ddsperf", "fortio"} <= set(d["environment"]["tools"])


def test_mart_compares_loaded_with_idle_with_n_ci_and_verdict(measured, tmp_path):
    from edgebench.results import warehouse

    path = tmp_path / "wh.duckdb"
    warehouse.build(warehouse_path=path, raw_root=str(measured / "raw"), quiet=True)
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute("""select cni, probe, idle_n_runs, loaded_n_runs, idle_p99_us, loaded_p99_us,
                                     p99_inflation_us, p99_inflation_ci95_us, p99_verdict, is_host_baseline,
                                     host_p99_inflation_us, p99_runs_to_decide
                              from cmp_loaded_latency_vs_idle order by probe, cni""").fetchall()
        runs = con.execute("""select r.cni, l.probe, l.load, l.probe_p99_us, l.resolution_us
                              from int_runs__deduplicated r join stg_edgebench__loaded_latency l using (raw_key)""")
        runs = runs.fetchall()
    assert [(r[0], r[1]) for r in rows] == [("flannel", "dds"), ("host", "dds"), ("flannel", "http"), ("host", "http")]
    for cni, probe, n_idle, n_loaded, idle, loaded, infl, ci, verdict, is_host, host_infl, runs_left in rows:
        assert n_idle == n_loaded == 2 and is_host == (cni == "host")
        # recomputed independently from the per-run rows
        mine = [p99 for c, p, load, p99, _ in runs if c == cni and p == probe and load == "idle"]
        theirs = [p99 for c, p, load, p99, _ in runs if c == cni and p == probe and load == "bulk"]
        assert idle == pytest.approx(sum(mine) / 2) and loaded == pytest.approx(sum(theirs) / 2)
        assert infl == pytest.approx(loaded - idle)
        # the one rule (edgebench.results.report.verdict): Welch's interval of loaded - idle, lower = better, the latency
        # margin (5 % of the idle p99) never below the probe's resolution
        welch = V.welch_ci95(2, statistics.stdev(theirs), 2, statistics.stdev(mine))
        assert ci is not None and ci == pytest.approx(welch, rel=1e-9, abs=1e-9)
        resolutions = [res for c, p, _, _, res in runs if c == cni and p == probe and res is not None]
        resolution = max(resolutions) if resolutions else None
        expected = V.decide(infl, welch, 2, 2, idle, False, V.margin_pct("latency"), resolution)
        assert verdict == expected
        assert runs_left == V.runs_to_decide(expected, infl, welch, 2, idle, V.margin_pct("latency"), resolution)
        host_row = [r for r in rows if r[0] == "host" and r[1] == probe][0]
        assert host_infl == pytest.approx(host_row[6])
