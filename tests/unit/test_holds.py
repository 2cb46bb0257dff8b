"""One sweep per testbed prefix and per lab: the local hold (flock), the lab lease (a script run on the lab's first
server, here run by a local `sh`), the refusals that name the holder, and the error lines of a failed command."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgebench import holds, sh
from edgebench.substrates.clusters import inventory as inv_mod
from edgebench.substrates.clusters import lease

REPO = Path(__file__).resolve().parents[2]
EB = Path(sys.executable).parent / "edgebench"

HOLDER = """
import sys, time
from edgebench import holds
holds.RUN_DIR = __import__("pathlib").Path(sys.argv[1])
with holds.LocalHold(sys.argv[2], "testbed prefix 'x'", sweep_id="the-other-sweep"):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    d = tmp_path / "run"
    monkeypatch.setattr(holds, "RUN_DIR", d)
    return d


def _hold_in_child(run_dir: Path, name: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir), name], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_live_holder_refuses_a_second_and_its_death_frees_the_hold(run_dir):
    child = _hold_in_child(run_dir, "testbed-x")
    try:
        h = holds.holder_of("testbed-x")
        assert h["pid"] == child.pid and h["sweep_id"] == "the-other-sweep"
        with pytest.raises(holds.HeldError) as e:
            holds.LocalHold("testbed-x", "testbed prefix 'x'").acquire()
        assert f"pid {child.pid}" in str(e.value) and "the-other-sweep" in str(e.value)
        assert e.value.exit_code == 2
    finally:
        child.kill()
        child.wait()
    assert holds.holder_of("testbed-x") is None  # the file is still there: a dead holder holds nothing
    with holds.LocalHold("testbed-x", "testbed prefix 'x'"):
        assert holds.holder_of("testbed-x")["pid"] == os.getpid()
        with holds.LocalHold("testbed-x", "testbed prefix 'x'"):  # nested in the same process: allowed
            pass
        assert holds.holder_of("testbed-x")["pid"] == os.getpid()
    assert holds.holder_of("testbed-x") is None


def test_testbed_down_and_a_second_local_sweep_are_refused_while_a_sweep_holds_the_prefix(tmp_path):
    run_dir = tmp_path / "run"
    child = _hold_in_child(run_dir, "testbed-ebheld")
    env = {**os.environ, "EDGEBENCH_RUN_DIR": str(run_dir), "EDGEBENCH_TESTBED_PREFIX": "ebheld"}
    try:
        if os.geteuid() == 0:
            p = subprocess.run([str(EB), "testbed", "down"], env=env, capture_output=True, text=True)
            assert p.returncode == 2, p.stderr
            assert "not removing testbed prefix 'ebheld'" in p.stderr and f"pid {child.pid}" in p.stderr
        p = subprocess.run([str(EB), "sweep", str(REPO / "workflows" / "sweep.yaml"), "--local", "-p",
                            'cnis=["host"]', "-p", 'workloads=["iperf3:tcp"]', "-p", "repetitions=1"],
                           env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 2, p.stdout + p.stderr
        assert "testbed prefix 'ebheld' is in use by sweep the-other-sweep" in p.stderr.replace("\n", " ")
    finally:
        child.kill()
        child.wait()


class ShTransport:
    """Runs a node's script with this machine's sh: the lease script is the same text a lab node runs."""

    def run(self, node, command, sudo=False, timeout=None):
        p = subprocess.run(["sh", "-s"], input=command, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr


def _inventory() -> inv_mod.Inventory:
    return inv_mod.parse({"target": "lab-x", "nodes": [
        {"name": "cp", "address": "192.0.2.1", "arch": "amd64", "role": "server", "user": "u"},
        {"name": "w1", "address": "192.0.2.2", "arch": "amd64", "role": "agent", "user": "u"}]})


def _lease(tmp_path, holder: str, ttl: int = 60) -> lease.LabLease:
    return lease.LabLease(ShTransport(), _inventory(), holder, ttl=ttl, directory=str(tmp_path / "node"))


def test_the_lab_lease_is_held_by_one_holder_renewed_by_it_and_lapses_when_not_renewed(tmp_path):
    a, b = _lease(tmp_path, "edgebench sweep one (pid 1 on laptop)"), _lease(tmp_path, "argo workflow edgebench/sweep-x")
    assert a.show() is None
    a.take()
    a.take()  # the same holder again (the next phase pod of a workflow): renewed
    with pytest.raises(holds.HeldError) as e:
        b.take()
    msg = str(e.value)
    assert "lab 'lab-x' is held by edgebench sweep one (pid 1 on laptop)" in msg and "on cp lapses in" in msg
    assert b.show()["holder"] == a.holder
    b.release()  # not its lease: nothing changes
    assert b.show()["holder"] == a.holder
    a.release()
    assert a.show() is None
    b.take()
    assert a.show()["holder"] == b.holder
    short = _lease(tmp_path / "2", "dead holder", ttl=1)
    short.take()
    time.sleep(2.1)  # not renewed: lapsed
    other = _lease(tmp_path / "2", "next")
    assert other.show() is None
    other.take()
    other.release(force=True)
    assert other.show() is None


def test_a_held_lease_is_renewed_in_the_background_and_given_back_at_the_end(tmp_path):
    a = _lease(tmp_path, "holder a", ttl=3)
    with a:
        time.sleep(4)  # past the first TTL: renewed every second
        with pytest.raises(holds.HeldError):
            _lease(tmp_path, "holder b").take()
    assert _lease(tmp_path, "holder b").show() is None  # released on the way out


def test_an_unreachable_lab_says_which_node_could_not_take_the_lease():
    class Down:
        def run(self, node, command, sudo=False, timeout=None):
            return 255, "", "ssh: connect to host 192.0.2.1 port 22: Connection timed out\n"

    with pytest.raises(Exception) as e:
        lease.LabLease(Down(), _inventory(), "me").take()
    assert "cannot take the lab lease on cp (192.0.2.1): exit 255: ssh: connect to host" in str(e.value)
    assert not isinstance(e.value, holds.HeldError)


def test_a_failed_command_leads_with_its_error_lines_not_its_first_warning():
    kubeadm = """[init] Using Kubernetes version: v1.33.4
[preflight] Running pre-flight checks
\t[WARNING SystemVerification]: cgroups v1 support is in maintenance mode, please migrate to cgroups v2
error execution phase preflight: [preflight] Some fatal errors occurred:
\t[ERROR Port-10250]: Port 10250 is in use
\t[ERROR FileAvailable--etc-kubernetes-kubelet.conf]: /etc/kubernetes/kubelet.conf already exists
[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`
To see the stack trace of this error execute with --v=5 or higher"""
    e = sh.CommandError(["lab-cp", "kubeadm", "init"], 1, kubeadm)
    first = str(e).splitlines()[0]
    assert first == ("`lab-cp kubeadm init` failed (exit 1): [ERROR Port-10250]: Port 10250 is in use; "
                     "[ERROR FileAvailable--etc-kubernetes-kubelet.conf]: /etc/kubernetes/kubelet.conf already exists")
    assert "WARNING" not in first and kubeadm.strip() in str(e)  # the whole output follows
    assert sh.error_lines("dial tcp 10.0.0.1:6443: connect: connection refused") == [
        "dial tcp 10.0.0.1:6443: connect: connection refused"]
    assert sh.error_lines("W0101 some warning\nall went wrong here") == ["all went wrong here"]
    one = sh.CommandError(["x"], 2, "error: no such thing")
    assert str(one) == "`x` failed (exit 2): error: no such thing"  # one line: not repeated


def test_an_inventory_names_its_lab_mirror(tmp_path):
    doc = {"target": "lab-x", "artifact_source": "http://10.77.0.1:8089", "nodes": [
        {"name": "cp", "address": "192.0.2.1", "arch": "amd64", "role": "server", "user": "u"}]}
    assert inv_mod.parse(doc).artifact_source == "http://10.77.0.1:8089"
    assert inv_mod.parse(doc).member(1).artifact_source == "http://10.77.0.1:8089"
    with pytest.raises(inv_mod.SpecError, match="`artifact_source` must be the http"):
        inv_mod.parse({**doc, "artifact_source": "ftp://x"})


@pytest.mark.parametrize("argo", [True, False])
def test_a_phase_keeps_the_lab_for_its_workflow_and_a_phase_by_hand_gives_it_back(tmp_path, monkeypatch, argo):
    from edgebench.sweep import holding

    holder = "argo workflow edgebench/sweep-x" if argo else "edgebench (pid 5 on laptop)"
    if argo:
        monkeypatch.setenv(lease.ENV_HOLDER, holder)
    else:
        monkeypatch.delenv(lease.ENV_HOLDER, raising=False)
    monkeypatch.setattr(lease, "for_lab", lambda *a, **k: _lease(tmp_path, holder))
    with holding.phase_hold("ssh"):
        assert _lease(tmp_path, "other").show()["holder"] == holder
    after = _lease(tmp_path, "other").show()
    assert (after["holder"] == holder) if argo else after is None


def test_lab_release_says_when_the_lease_is_another_holders(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from edgebench.cli import app

    _lease(tmp_path, "edgebench (pid 1 on laptop)").take()
    monkeypatch.setattr(lease, "for_lab", lambda *a, **k: _lease(tmp_path, "edgebench (pid 2 on laptop)"))
    r = CliRunner().invoke(app, ["lab", "release"])
    assert r.exit_code == 3 and "not released: held by edgebench (pid 1 on laptop)" in r.output
    assert _lease(tmp_path, "x").show()["holder"] == "edgebench (pid 1 on laptop)"
    r = CliRunner().invoke(app, ["lab", "release", "--force"])
    assert r.exit_code == 0 and "released (forced)" in r.output and _lease(tmp_path, "x").show() is None
