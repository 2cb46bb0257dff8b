"""When a duet round measures its HTTP runs together (workloads/http.py measure_together, sweep/duet.py together),
and when it says why not and measures them one after another."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from edgebench import workloads
from edgebench.drivers import http as driver
from edgebench.sweep import duet

HTTP = workloads.REGISTRY["http"]


def _run(run_id, intercluster="none", service="payload-echo", length=60, workload="http", path="pod-to-pod"):
    cell = SimpleNamespace(intercluster=intercluster, intercluster_info=SimpleNamespace(is_none=intercluster == "none"))
    return SimpleNamespace(run_id=run_id, workload=workload, cell=cell, placement="cross-node", path=path,
                           params={"service": service, "requests": 100}, length_bytes=length)


class _Testbed:  # the namespace testbed's provider as measure_together reads it
    def __init__(self, name, container=None, hooks=None):
        self.name, self.container, self.hooks = name, container, hooks

    def client(self, placement):
        return SimpleNamespace(ns=f"{self.name}-c", ip="10.0.0.1", cpu=0, cgroups=(), container=self.container,
                               hooks=self.hooks)

    def server(self, placement):
        return SimpleNamespace(ns=f"{self.name}-s", ip="10.0.0.2", cpu=1, cgroups=(), container=self.container)

    def pin(self, endpoint, role):
        return endpoint

    def flush_services(self):
        pass

    def add_service(self, cluster_ip, port, backend):
        return None


def _members(*providers, **run):
    return [(SimpleNamespace(provider=p, state={"supported": True}), _run(f"r{k}", **run))
            for k, p in enumerate(providers)]


@pytest.fixture
def built(monkeypatch):
    monkeypatch.setattr("edgebench.workloads.http.sh.which", lambda tool: f"/x/{tool}")
    seen = {}

    def fake(ends, port, service, length, requests, burst=driver.DUET_BURST):
        seen.update(ends=ends, service=service, length=length, requests=requests)
        return {rid: ({"httpduet-access.jsonl": b""}, {"client": driver.DUET_CLIENT}, None) for rid, *_ in ends}
    monkeypatch.setattr(driver, "measure_together", fake)
    return seen


def test_testbed_members_are_measured_together_each_through_its_own_endpoints(built):
    got = HTTP.measure_together(_members(_Testbed("a"), _Testbed("b")))
    assert set(got) == {"r0", "r1"} and got["r0"][1] == {"client": driver.DUET_CLIENT} and got["r0"][3] is None
    assert [(rid, c.ns, s.ns, t) for rid, c, s, t in built["ends"]] == [("r0", "a-c", "a-s", "10.0.0.2"),
                                                                        ("r1", "b-c", "b-s", "10.0.0.2")]
    assert (built["service"], built["length"], built["requests"]) == ("payload-echo", 60, 100)


@pytest.mark.parametrize("members, env, why", [
    (lambda: _members(_Testbed("a")), "1", "a single member"),
    (lambda: _members(_Testbed("a"), _Testbed("b")), "0", "EDGEBENCH_DUET_INTERLEAVE=0"),
    (lambda: _members(_Testbed("a"), SimpleNamespace()), "1", "not a single cluster of the namespace testbed"),
    (lambda: _members(_Testbed("a"), _Testbed("b"), intercluster="skupper"), "1", "not a single cluster"),
    (lambda: _members(_Testbed("a", container="eb"), _Testbed("b", container="eb")), "1", "runs in a container"),
    (lambda: _members(_Testbed("a"), _Testbed("b", hooks="/cg/sock-n1"), path="pod-to-service"), "1",
     "reaches the service by its socket load balancer"),
])
def test_otherwise_it_says_why_and_measures_nothing(built, monkeypatch, members, env, why):
    monkeypatch.setenv("EDGEBENCH_DUET_INTERLEAVE", env)
    got = HTTP.measure_together(members())
    assert isinstance(got, str) and why in got and "ends" not in built


def test_a_member_with_the_socket_load_balancer_is_measured_together_pod_to_pod(built):
    """The duet client is in no member's socket load balancer cgroup: pod-to-pod it skips one connect() hook a run,
    so the members are measured together; pod-to-service it is refused (above)."""
    got = HTTP.measure_together(_members(_Testbed("a"), _Testbed("b", hooks="/cg/sock-n1")))
    assert set(got) == {"r0", "r1"}


def test_without_the_client_built_the_runs_go_one_after_another(monkeypatch):
    monkeypatch.setattr("edgebench.workloads.http.sh.which", lambda tool: None)
    assert HTTP.measure_together(_members(_Testbed("a"), _Testbed("b"))) == \
        "edgebench-httpduet is not built (make tools)"


def test_a_workload_that_measures_alone_says_so():
    assert workloads.REGISTRY["iperf3"].measure_together([]) == "iperf3 measures one run at a time"


def test_duet_together_leaves_the_results_for_run_one_and_skips_unsupported_members(built):
    ms = _members(_Testbed("a"), _Testbed("b"), _Testbed("c"))
    ms[2][0].state["supported"] = False
    ctxs = {k: ctx for k, (ctx, _) in enumerate(ms)}
    for ctx in ctxs.values():
        ctx.premeasured = {}
    logs = []
    duet.together(ctxs, [(k, r) for k, (_, r) in enumerate(ms)], logs.append)
    assert set(ctxs[0].premeasured) == {"r0"} and set(ctxs[1].premeasured) == {"r1"} and not ctxs[2].premeasured
    started, measurement = ctxs[0].premeasured["r0"]
    assert started.endswith("Z") and measurement[1] == {"client": driver.DUET_CLIENT}
    assert logs == []


def test_duet_together_samples_the_window_for_the_headroom_gate(built, monkeypatch):
    """The machine during the window (the headroom gate's input, int_runs__cpu_headroom): every member's
    resources.json holds the window's system rows, phase `window`, and no process rows: one client serves every
    member, so no member's own CPU can be told apart (the resource marts read phases idle and run only)."""
    import time

    from edgebench.sweep import sampling

    monkeypatch.setattr(sampling, "SAMPLE_INTERVAL_S", 0.05)
    inner = driver.measure_together

    def slow(*args, **kw):
        time.sleep(0.4)  # a window long enough for several samples
        return inner(*args, **kw)
    monkeypatch.setattr(driver, "measure_together", slow)
    ms = _members(_Testbed("a"), _Testbed("b"))
    ctxs = {k: ctx for k, (ctx, _) in enumerate(ms)}
    for ctx in ctxs.values():
        ctx.premeasured = {}
    duet.together(ctxs, [(k, r) for k, (_, r) in enumerate(ms)], lambda line: None)
    shares = [json.loads(ctxs[k].premeasured[f"r{k}"][1][0]["resources.json"]) for k in (0, 1)]
    assert shares[0] == shares[1] and len(shares[0]) >= 3
    assert {(r["phase"], r["component"], r["name"]) for r in shares[0]} == {("window", "system", "system")}
    assert all(r["cpus"] >= 1 and r["cpu_pct"] >= 0 for r in shares[0])
    assert ctxs[0].premeasured["r0"][1][0]["httpduet-access.jsonl"] == b""


def test_a_window_that_falls_back_stores_no_samples(monkeypatch):
    """measure_together refused (here EDGEBENCH_DUET_INTERLEAVE=0): the runs are measured one after another, each
    with its own sampler (sweep/phases.py); the window's sampler is stopped and its rows dropped."""
    from edgebench.sweep import sampling

    stopped = []

    class Spy:
        def stop(self):
            stopped.append(True)
            return [{"phase": "window"}]
    monkeypatch.setattr(sampling, "joint", lambda ctxs: Spy())
    monkeypatch.setenv("EDGEBENCH_DUET_INTERLEAVE", "0")
    ms = _members(_Testbed("a"), _Testbed("b"))
    ctxs = {k: ctx for k, (ctx, _) in enumerate(ms)}
    for ctx in ctxs.values():
        ctx.premeasured = {}
    duet.together(ctxs, [(k, r) for k, (_, r) in enumerate(ms)], lambda line: None)
    assert stopped == [True] and not ctxs[0].premeasured and not ctxs[1].premeasured


def test_duet_together_logs_why_it_falls_back(monkeypatch):
    monkeypatch.setenv("EDGEBENCH_DUET_INTERLEAVE", "0")
    ms = _members(_Testbed("a"), _Testbed("b"))
    ctxs = {k: ctx for k, (ctx, _) in enumerate(ms)}
    for ctx in ctxs.values():
        ctx.premeasured = {}
    logs = []
    duet.together(ctxs, [(k, r) for k, (_, r) in enumerate(ms)], logs.append)
    assert logs == ["duet: http measured one member after another: EDGEBENCH_DUET_INTERLEAVE=0"]
    assert not ctxs[0].premeasured


def test_the_clients_logs_parse_as_their_own_format():
    line = json.dumps({"latency": 0.000123, "timestamp": 1795933863141230566, "thread": 0, "iter": 0, "ok": True,
                       "details": "200"})
    fmt = {f.tool: f for f in driver.FORMATS}[driver.DUET_CLIENT]
    rec = fmt.parse(line + "\n")
    assert fmt.raw_name == "httpduet-access.jsonl"
    assert rec["metrics"]["client"] == driver.DUET_CLIENT and rec["metrics"]["resolution_ms"] == 0.001
    assert rec["samples"][0]["response_ms"] == pytest.approx(0.123)

