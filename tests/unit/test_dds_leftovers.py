"""A DDS run first stops what earlier runs left in the pods (workloads/dds.py): on a cluster, killing `kubectl exec`
leaves the remote ddsperf running (a pong or sub lives init wait + duration + 60 s), and a leftover pong answers the
next run's pings. Measured on the local lab before the fix (2026-11-29, one cluster per cell, 10 rounds of 64 B and
16 KB latency): up to 9 pongs at once in a pod, and the host's 64 B p50 went from 32 us in round 1 to 77-83 us."""
from __future__ import annotations

from types import SimpleNamespace

from edgebench import workloads
from edgebench.drivers import ddsperf as driver

DDS = workloads.REGISTRY["dds"]


class _Pods:  # a cluster's provider as the DDS workload reads it
    def __init__(self, events, name="ssh"):
        self.events, self.name = events, name

    def flush_services(self):
        self.events.append("flush")

    def client(self, placement):
        self.events.append("client")
        return SimpleNamespace(ip="10.244.1.10")

    def peers(self, placement):
        return [SimpleNamespace(ip="10.244.2.10")]

    def multicast_reason(self, placement):
        return "no multicast"


def _run(mode):
    params = {"mode": mode, "subscribers": 1, "transport": "unicast", "security": "none", "reliability": "reliable",
              "batching": "on"}
    return SimpleNamespace(params=params, placement="cross-node", length_bytes=64, duration_s=3)


def test_each_dds_run_stops_the_pods_leftovers_before_it_starts_its_own(monkeypatch):
    events: list[str] = []

    def measure(pub, subs, **kw):
        events.append(f"measure {kw['mode']}")
        return {}, {"latency_p90_us": 1.0}, None
    monkeypatch.setattr(driver, "measure", measure)
    ctx = SimpleNamespace(provider=_Pods(events))
    for mode in ("latency", "latency", "throughput"):
        DDS.measure(ctx, _run(mode))
    assert events == ["flush", "client", "measure latency", "flush", "client", "measure latency",
                      "flush", "client", "measure throughput"]


def test_a_clusters_dds_run_records_that_it_ran_after_the_flush_and_a_testbed_run_does_not(monkeypatch):
    monkeypatch.setattr(driver, "measure", lambda pub, subs, **kw: ({}, {"latency_p90_us": 1.0}, None))
    *_, on_cluster = DDS.measure(SimpleNamespace(provider=_Pods([])), _run("latency"))
    *_, on_testbed = DDS.measure(SimpleNamespace(provider=_Pods([], name="local")), _run("latency"))
    assert on_cluster["leftovers_stopped"] is True  # the warehouse keeps a cluster's DDS run without it out
    assert "leftovers_stopped" not in on_testbed
