"""HTTP runs of different request counts are different configurations (int_http__config_stats, cmp_http_vs_host):
a run's p50 over 40 requests carries the connection's warm-up, over 1000 much less (docs/workloads.md), so a sweep
at `-p http-requests=1000` beside the default's 40 must never be pooled with it, and each compares with the host
runs of its own count."""

import statistics

import duckdb

import fixture_manifests as fx
from edgebench.results import warehouse

P50 = {("host", 40): 0.30, ("host", 1000): 0.10, ("flannel", 40): 0.36, ("flannel", 1000): 0.15}


def _runs():
    out = []
    for (cni, n), p50 in P50.items():
        mode, datapath = ("host", "host") if cni == "host" else ("vxlan", "bridge-vxlan")
        for rep in (1, 2, 3):
            out.append(fx.version_run(cni=cni, cni_mode=mode, datapath=datapath, version=None, version_source=None,
                                      workload="http", protocol="tcp", length=1000, repetition=rep,
                                      params={"service": "payload-echo", "requests": n, "connections": 1},
                                      values={"response_p50_ms": p50 * (1 + 0.01 * rep),
                                              "response_p95_ms": p50 * 1.5}, minute=10 * rep + n % 7))
    return out


def test_request_counts_are_not_pooled_and_each_has_its_own_host(tmp_path):
    root = fx.write_version_tree(tmp_path / "raw", _runs())
    db = tmp_path / "warehouse.duckdb"
    warehouse.build(warehouse_path=db, raw_root=str(root), quiet=True)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select cni, requests_planned, n_runs, host_n_runs, response_p50_ms, "
                           "host_response_p50_ms from cmp_http_vs_host order by cni, requests_planned").fetchall()
    got = {(cni, n): (runs, host_runs, p50, host_p50) for cni, n, runs, host_runs, p50, host_p50 in rows}
    assert set(got) == set(P50)  # four configurations, not two
    for n in (40, 1000):
        runs, host_runs, p50, host_p50 = got[("flannel", n)]
        assert (runs, host_runs) == (3, 3)
        # each side's mean p50 is its own count's (the fixture's request times: median = the run's p50)
        assert abs(host_p50 - got[("host", n)][2]) < 1e-9
        assert abs(p50 - statistics.mean(P50[("flannel", n)] * (1 + 0.01 * r) for r in (1, 2, 3))) < 0.01
