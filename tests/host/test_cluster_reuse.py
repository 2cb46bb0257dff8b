"""Consecutive cells of the same build share one testbed (runner._run_cells, phases.reset_cluster): the earlier cell
resets it for the next and verifies the reset; anything that does not read back as built is torn down instead."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.plan import netem
from edgebench.plan import spec
from edgebench.plan.catalog import resolve_cni
from edgebench.plan.cells import expand
from edgebench.substrates import build_key
from edgebench.substrates.local import netem as netem_local
from edgebench.substrates.local import processes
from edgebench.substrates.local.provider import LocalProvider
from edgebench.substrates.local.testbed import Testbed

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "workflows" / "sweep.yaml"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")


def _cells(**params):
    return expand(spec.load(SWEEP, {k: json.dumps(v) for k, v in params.items()}, substrate="local"))


def test_build_key_groups_cells_that_build_the_same_testbed():
    cells = _cells(cnis=["flannel:vxlan", "calico:vxlan"], tuning=["default_settings", "network-latency", "mtu-9000"],
                   netem=["none", "lcl"])
    keys = {(c.cni, c.tuning_profile, c.netem_scenario): build_key(c) for c in cells}
    # tuning without an MTU and link conditions are applied per cell: one testbed
    assert keys["flannel", "default_settings", "none"] == keys["flannel", "network-latency", "lcl"]
    # another datapath, or an MTU profile (built into the LAN and pods), is another testbed
    assert keys["flannel", "default_settings", "none"] != keys["calico", "default_settings", "none"]
    assert keys["flannel", "default_settings", "none"] != keys["flannel", "mtu-9000", "none"]
    # two clusters joined by an inter-cluster tool are never shared
    joined = _cells(cnis=["flannel:vxlan"], intercluster=["skupper:amqp"])
    assert all(build_key(c) is None for c in joined)


@pytest.fixture
def built(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("EDGEBENCH_STATE", str(tmp_path / "state"))
    tb = Testbed("ebr")
    provider = LocalProvider(tb)
    provider.provision()
    provider.install_cni(resolve_cni("flannel:vxlan"))
    fresh = provider.fingerprint()
    yield provider, fresh
    tb.down()
    assert tb.namespaces() == []


def _condition(provider):
    """What a cell does to its testbed: a tuning profile, a link condition, a service, a process left running."""
    provider.apply_tuning("network-latency")
    provider.apply_netem(netem.resolve("edg10@100mbit"))
    provider.add_service("10.96.0.10", 5201, provider.server("cross-node"))
    pod = provider.server("cross-node").ns
    return subprocess.Popen(["ip", "netns", "exec", pod, "sleep", "300"])


@needs_root
def test_reset_returns_the_testbed_to_its_built_state(built):
    provider, fresh = built
    pod = provider.server("cross-node").ns
    before = subprocess.run(["ip", "netns", "exec", pod, "sysctl", "-n", "net.ipv4.tcp_fastopen"],
                            capture_output=True, text=True).stdout
    sleeper = _condition(provider)
    assert provider.fingerprint() != fresh  # the link condition and the service changed the nodes
    problems = provider.reset(fresh)
    sleeper.wait(timeout=5)
    assert problems == ["1 process(es) were still running in the testbed"]  # killed, and said: not reused
    assert provider.reset(fresh) == []  # nothing left: this testbed now reads as built
    assert provider.fingerprint() == fresh
    after = subprocess.run(["ip", "netns", "exec", pod, "sysctl", "-n", "net.ipv4.tcp_fastopen"],
                           capture_output=True, text=True).stdout
    assert after == before


@needs_root
def test_reset_keeps_the_modes_own_agents_and_says_when_one_is_gone(tmp_path, monkeypatch):
    """Cilium's testbed runs a monitor per node (the socket load balancer's event reader, sock_lb.py): a reset kills
    what a cell left running, not them, so the testbed is reused; a monitor that died makes the reset refuse it."""
    monkeypatch.setenv("EDGEBENCH_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("EDGEBENCH_STATE", str(tmp_path / "state"))
    tb = Testbed("ebm")
    provider = LocalProvider(tb)
    try:
        provider.provision()
        provider.install_cni(resolve_cni("cilium:vxlan"))
        fresh = provider.fingerprint()
        agents = tb.agent_pids()
        assert len(agents) == 2
        pod = provider.server("cross-node").ns
        left = subprocess.Popen(["ip", "netns", "exec", pod, "sleep", "300"])
        assert provider.reset(fresh) == ["1 process(es) were still running in the testbed"]
        left.wait(timeout=5)
        assert provider.reset(fresh) == [] and tb.agent_pids() == agents
        os.kill(agents[0], 9)
        assert provider.reset(fresh) == ["1 of the mode's agent process(es) (the socket load balancer's monitors) "
                                         "are gone"]
    finally:
        tb.down()
    assert tb.namespaces() == []
    assert not [pid for pid in agents if processes.running(pid)]


@needs_root
def test_reset_that_leaves_a_link_condition_is_refused(built, monkeypatch):
    provider, fresh = built
    provider.apply_netem(netem.resolve("edg10@100mbit"))
    monkeypatch.setattr(netem_local, "revert_local", lambda *a, **k: None)  # a revert that does nothing
    problems = provider.reset(fresh)
    assert any("differs from the freshly built testbed" in p for p in problems), problems
    monkeypatch.undo()
    netem_local.revert_local(provider._nodes(), "eth0")


@needs_root
def test_sweep_reuses_the_testbed_and_records_each_cell_as_its_own(minio_server, tmp_path):
    """Four cells, two datapaths, in round order (--no-duet: a duet round stands every member up anew): the second
    cell of each datapath reuses the first one's testbed. Every run is measured and stored, and nothing is left
    behind. (What a reset restores is tested above.)"""
    env = {**os.environ, **minio_server["env"], "EDGEBENCH_BUCKET": "reuse", "EDGEBENCH_STATE": str(tmp_path / "st"),
           "EDGEBENCH_TESTBED_PREFIX": "ebu", "EDGEBENCH_RUN_DIR": str(tmp_path / "run")}
    out = subprocess.run([sys.executable, "-m", "edgebench.cli", "sweep", str(SWEEP), "--local", "--no-duet",
                          "-p", 'cnis=["host","flannel:vxlan"]', "-p", 'tuning=["network-latency","default_settings"]',
                          "-p", "repetitions=1", "-p", "duration=1", "-p", 'workloads=["iperf3:tcp"]',
                          "-p", 'iperf3-paths=["pod-to-pod:cross-node"]', "-p", "sweep-id=reuse-1"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("reset and verified, is reused") == 2, out.stdout
    assert "not reused" not in out.stdout
    assert Testbed("ebu").namespaces() == []
    from minio import Minio

    client = Minio(minio_server["endpoint"].split("://")[1], minio_server["access_key"], minio_server["secret_key"],
                   secure=False)
    docs = [json.loads(client.get_object("reuse", o.object_name).read())
            for o in client.list_objects("reuse", prefix="runs/", recursive=True)
            if o.object_name.endswith("manifest.json")]
    assert len(docs) == 4 and all(d["status"] == "ok" and d["is_valid"] for d in docs)
    assert {(d["cni"], d["tuning"]["profile"]) for d in docs} == {
        (cni, profile) for cni in ("host", "flannel") for profile in ("network-latency", "default_settings")}


def test_an_interrupt_during_the_reset_still_tears_down(monkeypatch):
    """A cell that was to keep its testbed for the next one is interrupted while resetting it: teardown runs."""
    from edgebench.sweep import phases

    calls = []
    monkeypatch.setattr(phases, "FUNCTIONS", {name: (lambda ctx: None) for name in phases.PHASES})

    def interrupted(ctx):
        raise KeyboardInterrupt

    monkeypatch.setattr(phases, "reset_cluster", interrupted)
    monkeypatch.setattr(phases, "teardown_cluster", lambda ctx: calls.append("teardown"))
    with pytest.raises(KeyboardInterrupt):
        phases.run_cell(object())
    assert calls == ["teardown"]
