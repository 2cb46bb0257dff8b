"""Bare metal against a host-network container (seed 000 Fig. 4, seed 002 Fig. 2): the testbed's host-container:runc
runs the host baseline's tools in runc containers in the node's network namespace. The catalog and the plan treat it
as a host-network mode that is not the baseline; on a real testbed its tools run in real runc containers, killing a
launcher kills its container, and teardown leaves no container, bundle, mount or process behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgebench.plan.catalog import resolve_cni
from edgebench.plan.matrix import compatibility
from edgebench.substrates.local import container
from edgebench.substrates.local.testbed import Endpoint, Testbed

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "ebrc"


def test_a_host_network_mode_that_is_not_the_baseline():
    cm = resolve_cni("host-container")
    assert (cm.key, cm.datapath, cm.host_network, cm.is_host, cm.runtime) == ("host-container:runc", "host", True,
                                                                              False, "runc")
    assert resolve_cni("host").is_host and resolve_cni("host").runtime is None
    assert not resolve_cni("flannel").host_network
    # on clusters `host` already runs in hostNetwork pods: the cell is skipped with the reason
    assert "hostNetwork pods" in compatibility("kubeadm", "host-container", "runc")
    # compared with the host cell of the same conditions, like any CNI mode (repetitions=auto)
    from edgebench.plan import spec
    from edgebench.plan.dimensions import cells
    from edgebench.sweep import adaptive

    s = spec.from_parameters({"substrate": "local", "cnis": '["host","host-container"]',
                              "cni-versions": '["default","v1.2.3"]'}, source="t")
    cs = cells(s.sweep_id, "local", "none", s.values)
    assert [c.cni for c in cs] == ["host", "host-container"]  # no CNI software: one cell, no version axis
    assert adaptive.baselines(cs) == {0: None, 1: 0}


def test_the_container_joins_the_node_namespace_read_only_and_unconfined():
    ep = Endpoint("x-n1", "10.0.0.1", 1, (), "pfx")
    argv = ep.cmd(["sockperf", "server"])
    assert argv[:2] == [sys.executable, "-c"] and argv[3:7] == ["run", "pfx", "x-n1", "--"]
    assert os.path.isabs(argv[7]) or argv[7] == "sockperf"  # resolved like every program the runner starts
    cfg = container.config(["sleep", "1"], "x-n1", Path("/r"))
    assert {"type": "network", "path": "/var/run/netns/x-n1"} in cfg["linux"]["namespaces"]
    assert {n["type"] for n in cfg["linux"]["namespaces"]} == {"pid", "mount", "ipc", "uts", "network"}
    assert cfg["root"] == {"path": "/r", "readonly": True} and "seccomp" not in cfg["linux"]
    assert Endpoint("x-n1", "10.0.0.1", 1).cmd(["true"])[:4] == ["ip", "netns", "exec", "x-n1"]


def _launchers(wait: float = 5.0):
    """Launchers (and their reapers, forks of them that end just after them) still running after `wait` s."""
    deadline = time.monotonic() + wait
    while True:
        out = subprocess.run(["pgrep", "-f", f"container import main.* run {PREFIX} "], capture_output=True,
                             text=True).stdout.split()
        if not out or time.monotonic() > deadline:
            return out
        time.sleep(0.1)


def _mounted():
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if f"containers-{PREFIX}/" in line]


@pytest.fixture
def tb():
    t = Testbed(PREFIX)
    t.down()
    yield t
    t.down()
    assert container.containers(PREFIX) == [] and _mounted() == [] and _launchers() == []
    assert not container.state_root(PREFIX).exists()


def test_killing_the_launcher_kills_its_container(tb):
    tb.provision()
    tb.install_cni(resolve_cni("host-container"))
    ep = tb.client()
    assert ep.container == PREFIX
    out = subprocess.run(ep.cmd(["sh", "-c", "echo $$; cat /proc/1/comm; readlink /proc/self/ns/net"]),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    pid, init, net = out.stdout.split()
    assert pid == "1" and init == "sh"  # its own PID namespace
    node_net = subprocess.run(["ip", "netns", "exec", ep.ns, "readlink", "/proc/self/ns/net"], capture_output=True,
                              text=True).stdout.strip()
    assert net == node_net  # the node's network namespace: a hostNetwork pod
    proc = subprocess.Popen(ep.cmd(["sleep", "60"]))
    deadline = time.monotonic() + 20
    while not container.containers(PREFIX) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(container.containers(PREFIX)) == 1
    proc.send_signal(signal.SIGKILL)  # what the drivers do to a server
    proc.wait()
    deadline = time.monotonic() + 10
    while container.containers(PREFIX) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert container.containers(PREFIX) == []


def test_a_sweep_measures_the_container_beside_the_process(minio_server, tmp_path):
    from test_e2e import _env

    env = {**_env(minio_server, tmp_path, "hostcontainer", PREFIX)}
    res = subprocess.run(
        [sys.executable, "-m", "edgebench.cli", "sweep", str(ROOT / "workflows" / "sweep.yaml"), "--local",
         "-p", 'cnis=["host","host-container"]', "-p", 'workloads=["iperf3:tcp","sockperf:tcp","dds:latency"]',
         "-p", 'iperf3-paths=["pod-to-service:cross-node"]', "-p", 'dds-payloads=["64"]', "-p", "repetitions=1",
         "-p", "duration=2", "-p", "sockperf-duration=2", "-p", "sweep-id=hc-1"],
        capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "6 ok, 0 failed" in res.stdout
    assert "host-container:runc sockperf/tcp" in res.stdout
    # nothing of the containers is left: no runc state, no bundle, no root bind mount, no launcher
    assert container.containers(PREFIX) == [] and _mounted() == [] and _launchers() == []
    assert not container.state_root(PREFIX).exists()
    spaces = json.loads(subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True).stdout or "[]")
    assert not [n for n in spaces if n["name"].startswith(PREFIX + "-")]
