"""The step CLI contract: each phase as its own `edgebench <phase> --cell ...` process, state in the work dir,
results in the same raw layout as the local runner; the same order as the local runner."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.sweep import phases
from edgebench.sweep import runner

ROOT = Path(__file__).resolve().parents[2]
SWEEP = str(ROOT / "workflows" / "sweep.yaml")


def cli(*args, env=None, check=True):
    proc = subprocess.run([sys.executable, "-m", "edgebench.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "EDGEBENCH_TESTBED_PREFIX": "ebp", **(env or {})}, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def cells(*params):
    out = cli("cells", SWEEP, "--local", "-p", "repetitions=1", "-p", "duration=1", "-p", "workloads=[\"iperf3:tcp\"]",
              "-p", "iperf3-paths=[\"pod-to-pod:cross-node\",\"pod-to-service:same-node\"]", *params).stdout
    return json.loads(out)


def test_local_runner_uses_the_phase_order():
    assert runner.PHASES == phases.PHASES
    assert phases.PHASES[0] == "provision-cluster" and phases.PHASES[-1] == "teardown-cluster"


@pytest.mark.parametrize("entry", ["flannel:vxlan", "calico:ipip"])
def test_phases_as_separate_processes(tmp_path, entry):
    cell = [c for c in cells("-p", f"cnis=[\"{entry}\"]")][0]
    (tmp_path / "cell.json").write_text(json.dumps(cell))
    common = ["--cell", f"@{tmp_path / 'cell.json'}", "--workdir", str(tmp_path / "work"),
              "--results", str(tmp_path / "out")]
    try:
        for phase in phases.PHASES[:-1]:
            cli(phase, *common)
        # idempotent: collect again changes nothing
        cli("collect-results", *common)
    finally:
        cli("teardown-cluster", *common)
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.count("ebp-") == 0
    run_dirs = sorted((tmp_path / "out" / "runs" / cell["sweep_id"] / cell["cell_id"]).iterdir())
    assert len(run_dirs) == 2
    docs = [json.loads((d / "manifest.json").read_text()) for d in run_dirs]
    state = json.loads((tmp_path / "work" / "state.json").read_text())
    if state["supported"]:
        assert [d["status"] for d in docs] == ["ok", "ok"]
        assert all((d / "iperf3-client.json").exists() for d in run_dirs)
        assert state["mtu"] == docs[0]["mtu"] == 1450
    else:
        assert entry == "calico:ipip"
        assert [d["status"] for d in docs] == ["unsupported", "unsupported"]
        assert docs[0]["error"] == state["reason"]


def test_run_before_install_is_a_clear_error(tmp_path):
    cell = cells("-p", "cnis=[\"host\"]")[0]
    proc = cli("run-workloads", "--cell", json.dumps(cell), "--workdir", str(tmp_path / "w"), "--results",
               str(tmp_path / "o"), check=False)
    assert proc.returncode == 1 and "run install-cni first" in proc.stderr and "Traceback" not in proc.stderr


def test_ssh_substrate_without_inventory_fails_clearly_before_doing_anything(tmp_path):
    cell = cells("-p", "cnis=[\"host\"]")[0]
    cell["substrate"], cell["distribution"] = "ssh", "k3s"
    cell["parameters"]["substrate"] = "ssh"
    from edgebench.plan.cells import Cell

    cell["cell_id"] = Cell(cell["sweep_id"], "ssh", "k3s", "host", "host").cell_id
    proc = cli("provision-cluster", "--cell", json.dumps(cell), "--workdir", str(tmp_path / "w"), check=False,
               env={"EDGEBENCH_INVENTORY": str(tmp_path / "missing.yaml")})
    assert proc.returncode == 2 and "inventory" in proc.stderr and "--inventory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_tampered_cell_is_rejected():
    cell = cells("-p", "cnis=[\"host\"]")[0]
    cell["cell_id"] = "c-0000000000"
    proc = cli("install-cni", "--cell", json.dumps(cell), check=False)
    assert proc.returncode == 2 and "does not match" in proc.stderr
