"""The request/response latency probe (sockperf ping-pong): its parser on real sockperf 3.7 outputs, the plan's
runs, and a live sweep on the testbed into MinIO, through the warehouse to cmp_sockperf_vs_host and
cmp_tuning_vs_host, whose verdict is recomputed here from the per-run values by the Python rule."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from edgebench.drivers import sockperf as S
from edgebench.plan import spec
from edgebench.results.report import verdict as V

DATA = Path(__file__).parents[1] / "data" / "sockperf"
ROOT = Path(__file__).resolve().parents[2]


def test_parse_tcp_ping_pong():
    m = S.parse_metrics((DATA / "sockperf-3.7-tcp-64B.txt").read_text())
    assert m["latency_p50_us"] == 8.861 and m["latency_p90_us"] == 13.670 and m["latency_p99_us"] == 22.441
    assert (m["latency_min_us"], m["latency_max_us"]) == (8.495, 1159.033)
    assert m["latency_mean_us"] == 10.173 and m["latency_stddev_us"] == 10.355
    assert m["latency_count"] == 76059 and m["received_messages"] == 76059 and m["dropped_messages"] == 0
    assert m["valid_seconds"] == 1.55


def test_parse_udp_ping_pong():
    m = S.parse_metrics((DATA / "sockperf-3.7-udp-1472B.txt").read_text())
    assert 0 < m["latency_min_us"] <= m["latency_p50_us"] <= m["latency_p99_us"] <= m["latency_max_us"]


@pytest.mark.parametrize("name, message", [
    ("sockperf-3.7-tcp-refused.txt", "Can`t connect socket (errno=111 Connection refused)"),
    ("sockperf-3.7-udp-1s-no-valid.txt", "no valid observations"),
])
def test_failed_runs_say_why(name, message):
    with pytest.raises(S.SockperfError, match=message.replace("(", r"\(").replace(")", r"\)")):
        S.parse_metrics((DATA / name).read_text())


def test_broken_outputs_are_refused():
    text = (DATA / "sockperf-3.7-tcp-64B.txt").read_text()
    with pytest.raises(S.SockperfError, match="percentile 90.000"):
        S.parse_metrics("\n".join(line for line in text.splitlines() if "percentile 90.000" not in line))
    with pytest.raises(S.SockperfError, match="not in order"):
        S.parse_metrics(text.replace("percentile 50.000 =    8.861", "percentile 50.000 =   99.000"))
    with pytest.raises(S.SockperfError, match="did not finish"):
        S.parse_metrics(text.split("[Valid Duration]")[0])


def test_plan_and_commands():
    s = spec.from_parameters({"substrate": "local", "cnis": '["host"]', "workloads": '["sockperf:tcp","sockperf:udp"]',
                              "sockperf-lengths": '["64","1472"]', "sockperf-duration": "2"}, source="t")
    assert s.values["sockperf-lengths"] == [64, 1472] and s.values["sockperf-duration"] == 2
    assert S.client_cmd("tcp", "10.0.0.2", 11111, 64, 2) == [
        "sockperf", "ping-pong", "--tcp", "-i", "10.0.0.2", "-p", "11111", "-m", "64", "-t", "2", "--no-rdtsc"]
    assert "--tcp" not in S.client_cmd("udp", "10.0.0.2", 11111, 64, 2)
    with pytest.raises(Exception, match="sockperf-duration"):
        spec.from_parameters({"workloads": '["sockperf:tcp"]', "sockperf-duration": "1"}, source="t")
    with pytest.raises(Exception, match="sockperf-lengths"):
        spec.from_parameters({"workloads": '["sockperf:tcp"]', "sockperf-lengths": '["8"]'}, source="t")


def _sd(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def test_live_sweep_to_the_marts(minio_server, tmp_path, monkeypatch):
    from test_e2e import _env

    env = _env(minio_server, tmp_path, "sockperf", "ebs")
    res = subprocess.run(
        [sys.executable, "-m", "edgebench.cli", "sweep", str(ROOT / "workflows" / "sweep.yaml"), "--local",
         "-p", 'cnis=["host","flannel:vxlan"]', "-p", 'workloads=["sockperf:tcp","sockperf:udp"]',
         "-p", 'sockperf-paths=["pod-to-pod:cross-node","pod-to-service:cross-node"]', "-p", "repetitions=3",
         "-p", "sockperf-duration=2", "-p", "sweep-id=sp-1"],
        capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "latency p50" in res.stdout

    from edgebench.results import warehouse

    for k, v in minio_server["env"].items():
        monkeypatch.setenv(k, v)
    wh = tmp_path / "warehouse.duckdb"
    warehouse.build(warehouse_path=wh, raw_root="s3://sockperf", quiet=True)
    con = duckdb.connect(str(wh), read_only=True)
    runs = con.execute("select cni, protocol, path, status, latency_p50_us, repetition from int_runs__deduplicated "
                       "where workload = 'sockperf' order by all").fetchall()
    assert len(runs) == 2 * 2 * 2 * 3 and all(r[3] == "ok" and r[4] > 0 for r in runs), runs
    rows = con.execute("select protocol, path, n_runs, host_n_runs, latency_p50_us, host_latency_p50_us, "
                       "latency_p50_overhead_pct, verdict, verdict_method from cmp_sockperf_vs_host "
                       "where cni = 'flannel' order by all").fetchall()
    assert len(rows) == 4
    for protocol, path, n, hn, p50, host, pct, verdict, method in rows:
        mine = [r[4] for r in runs if (r[0], r[1], r[2]) == ("flannel", protocol, path)]
        base = [r[4] for r in runs if (r[0], r[1], r[2]) == ("host", protocol, path)]
        assert (n, hn) == (3, 3) and p50 == pytest.approx(sum(mine) / 3) and host == pytest.approx(sum(base) / 3)
        assert pct == pytest.approx((p50 - host) / host * 100)
        # the one rule, recomputed from the runs (paired by round: the sweep interleaves them)
        by_round = {r[5]: r[4] for r in runs if (r[0], r[1], r[2]) == ("flannel", protocol, path)}
        host_round = {r[5]: r[4] for r in runs if (r[0], r[1], r[2]) == ("host", protocol, path)}
        diffs = [by_round[k] - host_round[k] for k in sorted(by_round)]
        assert method == "paired"
        want = V.decide(sum(diffs) / 3, V.paired_ci95(3, _sd(diffs)), 3, 3, host, False, V.margin_pct("latency"))
        assert verdict == want
    # seed 003's latency efficiency now has TCP and UDP rows
    eff = con.execute("select protocol, latency_efficiency_pct from cmp_tuning_vs_host where workload = 'sockperf' "
                      "and cni = 'flannel' and path = 'pod-to-pod'").fetchall()
    assert sorted(p for p, _ in eff) == ["tcp", "udp"] and all(e > 0 for _, e in eff)
