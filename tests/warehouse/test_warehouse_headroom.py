"""The CPU-headroom gate (int_runs__cpu_headroom, docs/verdicts.md): a run is flagged when in some second of it less
than var cpu_headroom_floor_pct of the machine's CPU was idle; the flag reaches the run marts and every vs-host
comparison counts the flagged runs of each side. Files written before `cpus` was recorded give no flag (null)."""

import json
from pathlib import Path

import duckdb
import yaml

import fixture_manifests as fx
from edgebench.results import warehouse

# per (cni, repetition): the system's busy CPU per run second, in % of one CPU, on a 2-CPU machine
BUSY = {("host", 1): [100, 120, 110, 90], ("host", 2): [100, 100, 100, 100], ("host", 3): None,  # None: no cpus
        ("flannel", 1): [100, 190, 194, 100],  # seconds 2 and 3 idle 5 % and 3 %: below the 10 % floor
        ("flannel", 2): [150, 170, 179, 160],  # lowest second idle 10.5 %: just above
        ("flannel", 3): [120, 130, 110, 100]}


def _runs():
    out = []
    for (cni, rep), busy in BUSY.items():
        mode, datapath = ("host", "host") if cni == "host" else ("vxlan", "bridge-vxlan")
        m, files = fx.version_run(cni=cni, cni_mode=mode, datapath=datapath, version=None, version_source=None,
                                  workload="iperf3", repetition=rep, minute=rep,
                                  values={"throughput_mbps": 900.0 + rep + (0 if cni == "host" else -200),
                                          "cpu_system_pct": 50.0, "rss_system_mb": 700.0})
        samples = json.loads(files["resources.json"])
        run_system = [s for s in samples if s["phase"] == "run" and s["component"] == "system"]
        for s, value in zip(run_system, busy or [None] * len(run_system)):
            if value is not None:
                s["cpu_pct"], s["cpus"] = float(value), 2
        files["resources.json"] = json.dumps(samples).encode()
        out.append((m, files))
    return out


def test_runs_below_the_floor_are_flagged_and_counted_on_each_side(tmp_path):
    root = fx.write_version_tree(tmp_path / "raw", _runs())
    db = tmp_path / "warehouse.duckdb"
    warehouse.build(warehouse_path=db, raw_root=str(root), quiet=True)
    with duckdb.connect(str(db), read_only=True) as con:
        runs = con.execute("select cni, repetition, min_idle_cpu_pct, low_cpu_headroom from fct_iperf3_runs "
                           "order by cni, repetition").fetchall()
        cmp = con.execute("select cni, n_runs, n_low_headroom, host_n_low_headroom from cmp_iperf3_vs_host "
                          "order by cni").fetchall()
    got = {(cni, rep): (idle, low) for cni, rep, idle, low in runs}
    for (cni, rep), busy in BUSY.items():
        idle, low = got[(cni, rep)]
        if busy is None:
            assert idle is None and low is None
        else:
            assert abs(idle - (100 - max(busy) / 2)) < 1e-9
            assert low is (100 - max(busy) / 2 < 10)
    assert got[("flannel", 1)][1] is True and got[("flannel", 2)][1] is False
    assert dict((c, (n, low, host_low)) for c, n, low, host_low in cmp) == {"flannel": (3, 1, 0), "host": (3, 0, 0)}


def test_the_floor_has_one_value():
    """The CLI and the portal say the floor from results.report.verdict; the warehouse applies the dbt var: the same."""
    from edgebench.results.report.verdict import CPU_HEADROOM_FLOOR_PCT

    project = yaml.safe_load((Path(__file__).resolve().parents[2] / "analytics" / "dbt_project.yml").read_text())
    assert project["vars"]["cpu_headroom_floor_pct"] == CPU_HEADROOM_FLOOR_PCT


def test_a_duet_windows_machine_rows_gate_the_run_and_stay_out_of_the_resource_marts(tmp_path):
    """A run measured with others in one duet window carries only the machine's rows over the window (phase
    `window`, sweep/sampling.py Joint): the headroom gate reads them; fct_resource_usage, which would show one
    window's machine as every member's own, does not."""
    runs = _runs()
    for m, files in runs:
        if (m["cni"], m["repetition"]) == ("flannel", 1):
            samples = json.loads(files["resources.json"])
            files["resources.json"] = json.dumps([{**s, "phase": "window"} for s in samples
                                                  if s["phase"] == "run" and s["component"] == "system"]).encode()
            window_run = m["run_id"]
    root = fx.write_version_tree(tmp_path / "raw", runs)
    db = tmp_path / "warehouse.duckdb"
    warehouse.build(warehouse_path=db, raw_root=str(root), quiet=True)
    with duckdb.connect(str(db), read_only=True) as con:
        gate = con.execute("select min_idle_cpu_pct, low_cpu_headroom from fct_iperf3_runs where run_id = ?",
                           [window_run]).fetchone()
        usage = con.execute("select count(*) from fct_resource_usage where run_id = ?", [window_run]).fetchone()[0]
        others = con.execute("select count(distinct run_id) from fct_resource_usage").fetchone()[0]
    assert abs(gate[0] - 3.0) < 1e-9 and gate[1] is True  # the window's busiest second: 194 % of 2 CPUs
    assert usage == 0 and others == len(BUSY) - 1
