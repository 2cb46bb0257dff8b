"""ddsperf driver, real measure() runs (plain and DDS Security) between two `ebs-` namespaces joined by a veth
pair."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from edgebench.drivers import ddsperf as d
from edgebench.drivers import ddsperf as dp
from edgebench.drivers.ddsperf import security as sec

# --- real runs ----------------------------------------------------------------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ddsperf") or not shutil.which("ip"),
                                reason="needs root, iproute2 and ddsperf")


def _check_samples(raw):
    samples = json.loads(raw["dds-samples.json"])
    assert samples and all(list(s) == list(dp.SAMPLE_KEYS) for s in samples)
    return samples


@needs_root
def test_measure_latency_static_peers(pair):
    a, b = pair
    raw, m, err = d.measure(a, [b], mode="latency", payload=64, duration=2, reliability="reliable",
                            transport="unicast", discovery="static-peers", peers=None, init_wait=5)
    assert err is None, err
    assert set(raw) == {"ddsperf-ping.log", "ddsperf-pong.log", "dds-samples.json"}
    assert 0 < m["latency_p50_us"] < 10_000 and m["latency_count"] > 0
    assert m["latency_min_us"] <= m["latency_p50_us"] <= m["latency_p99_us"] <= m["latency_max_us"]
    assert m["cpu_pub_pct"] is not None and m["rss_sub_mb"] > 0
    assert all(s["role"] == "ping" for s in _check_samples(raw))


@needs_root
def test_measure_throughput_two_subs_multicast(pair):
    a, b = pair
    raw, m, err = d.measure(a, [b, b], mode="throughput", payload=1024, duration=2, reliability="best-effort",
                            transport="multicast", discovery="multicast", peers=None, init_wait=5)
    assert err is None, err
    assert {"ddsperf-pub.log", "ddsperf-sub-1.log", "ddsperf-sub-2.log", "dds-samples.json"} == set(raw)
    assert m["throughput_mbps"] > 0 and m["samples_per_s"] > 0 and m["lost_samples"] >= 0
    assert m["per_subscriber_mbps"] == pytest.approx(m["throughput_mbps"] / 2)
    assert m["cpu_pub_pct"] > 0
    assert {s["subscriber"] for s in _check_samples(raw)} == {1, 2}


def _udp_out(ns: str) -> int:
    lines = [ln.split() for ln in subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"],
                                                  capture_output=True, text=True, check=True).stdout.splitlines()
             if ln.startswith("Udp:")]
    return int(lines[1][lines[0].index("OutDatagrams")])


@needs_root
def test_measure_throughput_batching_off_sends_a_datagram_per_sample(pair):
    """The publisher's UDP datagrams per sample received: ddsperf's own batching packs many 64 B samples into each
    RTPS message; with batching=off every sample goes in a datagram of its own."""
    a, b = pair
    per_sample = {}
    for batching in ("on", "off"):
        before = _udp_out(a.ns)
        raw, m, err = d.measure(a, [b], mode="throughput", payload=64, duration=2, reliability="reliable",
                                transport="unicast", discovery="static-peers", peers=None, init_wait=5,
                                batching=batching)
        assert err is None, err
        per_sample[batching] = (_udp_out(a.ns) - before) / (m["samples_per_s"] * 2)
    assert per_sample["on"] < 0.2 < 0.8 < per_sample["off"], per_sample


@needs_root
def test_measure_unreachable_peer_is_clear_error(pair):
    a, b = pair
    raw, m, err = d.measure(a, [b], mode="latency", payload=64, duration=2, reliability="reliable",
                            transport="unicast", discovery="static-peers", peers=["10.199.99.99"], init_wait=2,
                            timeout_extra=15)
    assert m is None
    assert "did not match" in err and "ping" in err
    assert raw["ddsperf-ping.log"]


# --- real runs with DDS Security --------------------------------------------------------------------------

needs_security = pytest.mark.skipif(sec.security_support() is not None, reason=f"{sec.security_support()}")


def _leftover_material():
    return {p.name for p in Path(tempfile.gettempdir()).glob("edgebench-ddssec-*")}


def _check_security_raw(raw):
    rec = json.loads(raw["dds-security.json"])
    assert rec["security"] == "auth-encrypt" and rec["seed_setting"] == "SignWithOrigAuthRTPSEncryptSM"
    g = rec["governance"]
    assert (g["rtps_protection_kind"], g["metadata_protection_kind"]) == ("SIGN_WITH_ORIGIN_AUTHENTICATION",
                                                                          "ENCRYPT")
    assert g["allow_unauthenticated_participants"] is False and g["enable_join_access_control"] is True
    assert all(b"PRIVATE KEY" not in v for v in raw.values())
    return rec


@needs_root
@needs_security
def test_measure_secure_latency(pair):
    a, b = pair
    before = _leftover_material()
    raw, m, err = d.measure(a, [b], mode="latency", payload=64, duration=3, reliability="reliable",
                            transport="unicast", discovery="static-peers", peers=None, security="auth-encrypt",
                            init_wait=5)
    assert err is None, err
    assert set(raw) == {"ddsperf-ping.log", "ddsperf-pong.log", "dds-samples.json", "dds-security.json"}
    _check_security_raw(raw)
    assert 0 < m["latency_p50_us"] < 10_000 and m["latency_count"] > 100
    assert m["latency_min_us"] <= m["latency_p50_us"] <= m["latency_p99_us"] <= m["latency_max_us"]
    assert m["cpu_pub_pct"] is not None and m["rss_sub_mb"] > 0
    assert _leftover_material() <= before  # the throwaway keys are gone


@needs_root
@needs_security
def test_measure_secure_throughput(pair):
    a, b = pair
    raw, m, err = d.measure(a, [b], mode="throughput", payload=1024, duration=3, reliability="reliable",
                            transport="unicast", discovery="static-peers", peers=None, security="auth-encrypt",
                            init_wait=5)
    assert err is None, err
    assert {"ddsperf-pub.log", "ddsperf-sub-1.log", "dds-samples.json", "dds-security.json"} == set(raw)
    _check_security_raw(raw)
    assert 1 < m["throughput_mbps"] < 100_000 and m["samples_per_s"] > 1000 and m["lost_samples"] == 0
    assert m["cpu_pub_pct"] > 0


@needs_root
@needs_security
def test_measure_secure_ping_does_not_match_insecure_pong(pair):
    """Proof that security is really on: with allow_unauthenticated_participants=false and protected discovery,
    a secure ping never matches a plain pong, and the run fails with a clear error."""
    a, b = pair
    raw, m, err = d.measure(a, [b], mode="latency", payload=64, duration=2, reliability="reliable",
                            transport="unicast", discovery="static-peers", peers=None, security="auth-encrypt",
                            responder_security="none", init_wait=3, timeout_extra=10)
    assert m is None
    assert "did not match" in err and "security=auth-encrypt" in err and "security=none" in err, err
    assert "never match" in err
    rec = json.loads(raw["dds-security.json"])
    assert (rec["initiator_security"], rec["responder_security"]) == ("auth-encrypt", "none")
    assert "too few matching participants" in raw["ddsperf-ping.log"].decode()
