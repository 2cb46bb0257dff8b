"""edgebench-ddsrr, the round-robin DDS pinger (containers/ddsrr, drivers/ddsrr/): the parser on real outputs
(tests/data/ddsrr/*.log, made on 127.0.0.1 with the binary `make tools` builds), its refusals, the plan's latency
subscribers, and real runs between two `ebs-` namespaces where each ping is answered by one subscriber in turn."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from edgebench import sh
from edgebench.drivers import ddsrr
from edgebench.drivers.ddsperf import SAMPLE_KEYS, DdsperfError
from edgebench import workloads
from edgebench.plan import spec
from edgebench.plan.dimensions import cells
from edgebench.plan.workload_plans import PLANS
from edgebench.substrates.local.testbed import Endpoint

DATA = Path(__file__).parents[1] / "data" / "ddsrr"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_parse_three_subscribers():
    samples, totals = ddsrr.parse_ping(read("ping-3subs-64.log"))
    assert [s["t_s"] for s in samples] == [1.0, 2.0]
    assert all(list(s) == list(SAMPLE_KEYS) and s["role"] == "ping" for s in samples)
    assert samples[1]["latency_p90_us"] == 116.52 and samples[1]["latency_count"] == 5359
    assert samples[0]["peer"] == "round-robin/3"
    assert totals == {"sent": 8975, "answered": 8975, "timeouts": 0, "per_subscriber": [2992, 2992, 2991]}


def test_parse_counts_timeouts_and_an_unanswering_subscriber():
    samples, totals = ddsrr.parse_ping(read("ping-timeouts.log"))
    assert totals["timeouts"] == 40 and totals["per_subscriber"] == [40, 0]
    assert sum(s["latency_count"] for s in samples) == totals["answered"] == 40


def test_parse_refuses_what_the_pinger_cannot_have_printed():
    good = read("ping-3subs-64.log")
    with pytest.raises(DdsperfError, match="too few matching participants"):
        ddsrr.parse_ping(read("ping-unmatched.log"))
    with pytest.raises(DdsperfError, match="no total line"):
        ddsrr.parse_ping(good.rsplit("ddsrr-ping total", 1)[0])
    with pytest.raises(DdsperfError, match="disagrees"):
        ddsrr.parse_ping(good.replace("answered 8975", "answered 8974"))
    with pytest.raises(DdsperfError, match="90% latency"):
        ddsrr.parse_ping(good.replace("90% 116.52us", "90% -1us"))
    with pytest.raises(DdsperfError, match="no ddsrr-ping line"):
        ddsrr.parse_ping(good.replace("timeouts 0\nddsrr-ping total", "timeouts x\nddsrr-ping total"))


def test_commands():
    assert ddsrr.ping_cmd(4, 64, 5, "best-effort", 3, 20) == [
        "edgebench-ddsrr", "ping", "-n", "4", "-s", "64", "-D", "5", "-r", "best-effort", "-t", "1000", "-w", "20",
        "-i", "3"]
    assert ddsrr.pong_cmd(2, "reliable", 85, 3) == [
        "edgebench-ddsrr", "pong", "-k", "2", "-r", "reliable", "-D", "85", "-i", "3"]


def _latency_runs(extra: dict[str, str]):
    s = spec.from_parameters({"substrate": "local", "cnis": '["host"]', "workloads": '["dds:latency"]',
                              "dds-payloads": '["64"]', "dds-reliability": '["reliable"]', **extra}, source="t")
    return s.sweep_id, PLANS["dds"].expand(s.values, cells(s.sweep_id, "local", "none", s.values)[0], 1, "latency")


def test_latency_subscribers_plan_round_robin_runs():
    sweep_id, runs = _latency_runs({"dds-latency-subscribers": '["1","4"]'})
    assert [r.params["subscribers"] for r in runs] == [1, 4]
    assert " subs=4" in PLANS["dds"].describe(runs[1]) and "subs" not in PLANS["dds"].describe(runs[0])
    plain_id, plain = _latency_runs({})
    assert plain_id == _latency_runs({"dds-latency-subscribers": '["1"]'})[0]  # the default changes no sweep id
    assert [r.params for r in plain] == [runs[0].params]  # and one subscriber is the run it was before


def test_round_robin_runs_refuse_dds_security(dds_ctx):
    """DDS Security material is not given to edgebench's own pinger."""
    _, runs = _latency_runs({"dds-latency-subscribers": '["4"]', "dds-security": '["auth-encrypt"]'})
    raw, metrics, error, params = workloads.get("dds").measure(dds_ctx, runs[0])
    assert error.startswith("unsupported: DDS Security") and metrics is None


def test_measure_refuses_before_starting_anything():
    ep = Endpoint("nowhere", "10.0.0.1", 0)
    args = dict(payload=64, duration=2, reliability="reliable", transport="unicast", discovery="multicast", peers=None)
    assert ddsrr.measure(ep, [], **args)[2].startswith("the round-robin pinger takes 1..64")
    assert ddsrr.measure(ep, [ep], **{**args, "payload": 8})[2].startswith("unsupported: a 8 B sample")
    assert "transport must be" in ddsrr.measure(ep, [ep], **{**args, "transport": "tcp"})[2]


needs_tool = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip") or sh.which(ddsrr.TOOL) is None,
                                reason="needs root, iproute2 and edgebench-ddsrr (`make tools`)")


@needs_tool
@pytest.mark.parametrize("discovery,transport", [("static-peers", "unicast"), ("multicast", "multicast")])
def test_measure_each_subscriber_answers_in_turn(pair, discovery, transport):
    a, b = pair
    raw, m, err = ddsrr.measure(a, [b, b, b], payload=256, duration=2, reliability="reliable", transport=transport,
                                discovery=discovery, peers=None, init_wait=10)
    assert err is None, err
    totals = json.loads(raw["ddsrr-totals.json"])
    per = totals["per_subscriber"]
    assert len(per) == 3 and max(per) - min(per) <= 1 and sum(per) == totals["answered"] > 100
    answered = [int(raw[f"ddsrr-pong-{k}.log"].decode().split("answered")[1]) for k in range(3)]
    assert answered == per  # each pong answered exactly the pings that named it
    assert m["latency_count"] == totals["answered"]
    assert 0 < m["latency_min_us"] <= m["latency_p50_us"] <= m["latency_p90_us"] <= m["latency_max_us"]
    assert m["cpu_pub_pct"] is None  # the pinger prints no CPU figures; the run's resources.json has them


@needs_tool
def test_measure_without_the_subscribers_fails_with_the_pingers_reason(pair):
    a, _ = pair
    ghost = type(a)(a.ns, "10.199.7.9", 0)  # nobody there: nothing matches
    raw, m, err = ddsrr.measure(a, [ghost], payload=64, duration=1, reliability="reliable", transport="unicast",
                                discovery="static-peers", peers=None, init_wait=1)
    assert m is None and "too few matching participants" in err
    assert b"error:" in raw["ddsrr-ping.log"]
