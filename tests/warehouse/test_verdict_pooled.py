"""Pooled spreads (docs/verdicts.md, "Pooled spreads"): on a round-blocked sweep where three CNI modes are paired with
the same host runs, the warehouse's vs-host mart pools their spreads exactly as verdict.pooled_spreads() does, and
the runner's stopping rule (sweep/adaptive.judge_all) reaches the same verdicts from the same runs."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

import fixture_manifests
from fixture_manifests.common import T0
from fixture_manifests.iperf3 import manifest
from test_verdict import CASES, _pool, _rows

from edgebench.results import warehouse
from edgebench.results.report import verdict as V
from edgebench.sweep import adaptive

SWEEP = "pooled-sweep-1"
# cni, mode, datapath (those with fixture resources.json) -> per protocol the throughput of rounds 1..3 (the host: 9000 / 1000 Mbit/s)
CELLS = {
    ("host", "host", "host"): {"tcp": [9000, 9100, 8900], "udp": [1000, 990, 1010]},
    # -7.4 % with a wide spread of its own: inconclusive alone (t(2) = 4.30), worse on the group's spread
    ("flannel", "vxlan", "bridge-vxlan"): {"tcp": [8100, 8900, 8000], "udp": [940, 960, 950]},
    ("cilium", "vxlan", "ptp-vxlan"): {"tcp": [6000, 6100, 5900], "udp": [900, 890, 912]},
    ("antrea", "geneve", "bridge-geneve"): {"tcp": [6300, 6450, 6200], "udp": [995, 992, 1008]},
}


def _manifests() -> list[dict]:
    out = []
    for rnd in (1, 2, 3):  # round-blocked: every run of round r ends before any run of round r + 1 starts
        k = 0
        for (cni, mode, datapath), series in CELLS.items():
            for protocol, values in series.items():
                out.append(manifest(substrate="local", distribution="none", cni=cni, cni_mode=mode, datapath=datapath,
                                    protocol=protocol, repetition=rnd, status="ok", value=values[rnd - 1],
                                    sweep_id=SWEEP, new_style=True,
                                    started_at=T0 + timedelta(minutes=10 * rnd, seconds=15 * k)))
                k += 1
    return out


@pytest.fixture(scope="module")
def pooled_warehouse(tmp_path_factory) -> Path:
    root = fixture_manifests.write_tree(tmp_path_factory.mktemp("pooled") / "raw", _manifests())
    path = root.parent / "warehouse.duckdb"
    warehouse.build(warehouse_path=path, raw_root=str(root), quiet=True)
    return path


def test_the_mart_pools_the_modes_paired_with_the_same_host_runs_as_python_does(pooled_warehouse):
    rows = [r for r in _rows(pooled_warehouse, "cmp_iperf3_vs_host") if r["cni"] != "host"]
    assert len(rows) == 6 and {r["verdict_method"] for r in rows} == {"pooled"}
    assert _pool("cmp_iperf3_vs_host", rows) == 6  # two groups (tcp, udp) of three
    keep, judge, vcol, rcol = CASES["cmp_iperf3_vs_host"]
    for r in rows:
        assert keep(r) and (r[vcol], r[rcol]) == judge(r), r
    noisy = next(r for r in rows if r["cni"] == "flannel" and r["protocol"] == "tcp")
    alone = V.decide(noisy["throughput_mbps"] - noisy["host_throughput_mbps"],
                     V.paired_ci95(3, noisy["throughput_pair_sd_mbps"]), 3, 3, noisy["host_throughput_mbps"], True,
                     V.margin_pct("throughput"))
    assert (alone, noisy["verdict"]) == ("inconclusive", "worse")
    # the interval the mart shows is the pooled one: t(6) on the pooled spread
    sd, df = noisy["_pooled"]["throughput_pair_sd_mbps"]
    assert df == 6 and noisy["throughput_diff_ci95_mbps"] == pytest.approx(V.t95(6) * sd / 3 ** 0.5)


def test_the_runner_judges_the_same_runs_as_the_warehouse(pooled_warehouse):
    ms = _manifests()
    by_cell: dict[str, list[dict]] = {}
    for m in ms:
        by_cell.setdefault(m["cell_id"], []).append(m)

    class Cell:
        def __init__(self, m):
            self.cell_id = m["cell_id"]
            self.cni_info = type("Info", (), {"is_host": m["cni"] == "host"})()

    cells = [Cell(ds[0]) for ds in by_cell.values()]
    host = next(i for i, c in enumerate(cells) if c.cni_info.is_host)
    base = {i: (None if i == host else host) for i in range(len(cells))}
    judged = adaptive.judge_all(cells, by_cell, base)
    mart = {(r["cni"], r["protocol"]): r for r in _rows(pooled_warehouse, "cmp_iperf3_vs_host") if r["cni"] != "host"}
    seen = 0
    for i, comps in judged.items():
        cni = by_cell[cells[i].cell_id][0]["cni"]
        for v, c in comps.items():
            r = mart[(cni, v[1])]
            assert (c.method, c.verdict, c.runs_to_decide) == (r["verdict_method"], r["verdict"], r["runs_to_decide"])
            assert c.ci95 == pytest.approx(r["throughput_diff_ci95_mbps"])
            seen += 1
    assert seen == 6
