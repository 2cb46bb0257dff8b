"""CPU pinning on the testbed (substrates/local/endpoints.py): a workload that asks for it (HTTP) runs its client on
one CPU and its server on another with taskset (inside a runc container, as a pod's tools are pinned on clusters);
the others are not pinned, nor are CPU-class nodes, nor anything with EDGEBENCH_PIN_CPUS=0; the manifest records
what was pinned."""
from __future__ import annotations

import os

import pytest

from edgebench import workloads
from edgebench.substrates.local import endpoints as ep_mod
from edgebench.substrates.local.testbed import Endpoint, Testbed


def _testbed(tmp_path, monkeypatch):
    monkeypatch.setattr("edgebench.substrates.local.testbed.STATE_DIR", tmp_path)
    tb = Testbed("pintest", runner=lambda *a, **k: "")
    tb._host, tb._runtime = False, None
    return tb


def test_pinned_endpoints_run_their_tools_under_taskset(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {3, 1, 7})
    tb = _testbed(tmp_path, monkeypatch)
    client, server = tb.pin(tb.client(), "client"), tb.pin(tb.server("cross-node"), "server")
    assert (client.cpu, server.cpu) == (1, 3)  # the first two CPUs this process may use
    assert client.cmd(["fortio", "load"]) == ["ip", "netns", "exec", client.ns, "taskset", "-c", "1", "fortio", "load"]
    assert server.cmd([])[-3:] == ["taskset", "-c", "3"]  # a prefix the caller appends to stays pinned
    assert tb.client().cpu is None and tb.client().cmd(["x"]) == ["ip", "netns", "exec", client.ns, "x"]
    assert tb.pinning() == {"client_cpu": 1, "server_cpu": 3}


def test_tools_in_a_runc_container_are_pinned_inside_it(tmp_path, monkeypatch):
    """Unpinned, host-container's HTTP p50 was 21 us over the pinned host's at 60 B; pinned inside, 2 us
    (docs/substrates.md): the container's cost, not where the scheduler put client and server."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    tb = _testbed(tmp_path, monkeypatch)
    tb._host, tb._runtime = True, "runc"  # host-container:runc: the node's namespace, tools in runc containers
    client = tb.pin(tb.client(), "client")
    assert client.container == "pintest" and client.cpu == 0
    argv = client.cmd(["fortio", "load"])
    tail = argv[argv.index("--") + 1:]  # what the container runs (its first word resolved to a path)
    assert tail[0].endswith("taskset") and tail[1:] == ["-c", "0", "fortio", "load"]
    assert tb.pinning() == {"client_cpu": 0, "server_cpu": 1}


@pytest.mark.parametrize("why", ["one cpu", "env", "cpu class"])
def test_nothing_is_pinned_where_it_would_not_hold(tmp_path, monkeypatch, why):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0} if why == "one cpu" else {0, 1})
    tb = _testbed(tmp_path, monkeypatch)
    if why == "env":
        monkeypatch.setenv(ep_mod.PIN_ENV, "0")
    elif why == "cpu class":
        tb.cpu_limit = "pi4"
    assert tb.pinning() is None
    assert tb.pin(tb.client(), "client").cpu is None


def test_only_http_asks_to_be_pinned():
    assert {name for name, w in workloads.REGISTRY.items() if w.pin_cpus} == {"http"}
    assert Endpoint("ns", "10.0.0.1", 1).cpu is None
