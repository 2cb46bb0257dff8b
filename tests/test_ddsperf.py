"""ddsperf driver: parsers on real captures (tests/data/ddsperf-*.log, Cyclone DDS 0.10.2 between two network
namespaces joined by a veth pair, or one namespace for ddsperf-loopback-*), summarize(), command builders,
cyclone_config(), DDS Security material, and real measure() runs (plain and DDS Security) between two `ebs-`
namespaces joined by a veth pair."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

import pytest

from edgebench.drivers import ddsperf as d
from edgebench.testbed import Endpoint

DATA = Path(__file__).parent / "data"


def read(name: str) -> str:
    return (DATA / name).read_text()


# --- parse ------------------------------------------------------------------------------------------

def test_parse_latency_ping_exact():
    s = d.parse(read("ddsperf-lat64-besteffort-ping.log"), "ping", 1)
    assert [x["t_s"] for x in s] == [2.0, 3.0]
    assert set(s[0]) == set(d.SAMPLE_KEYS)
    assert s[0] == {
        "t_s": 2.0, "role": "ping", "subscriber": 1, "peer": "vm:27587",
        "latency_mean_us": 24.965, "latency_min_us": 7.631, "latency_p50_us": 28.482, "latency_p90_us": 30.625,
        "latency_p99_us": 36.544, "latency_max_us": 714.555, "latency_count": 19970,
        "samples_per_s": None, "throughput_mbps": None, "lost_samples": None}
    assert s[1]["latency_count"] == 17172 and s[1]["latency_max_us"] == 1177.345


def test_parse_latency_16k_and_pong_has_no_samples():
    s = d.parse(read("ddsperf-lat16k-reliable-ping.log"), "ping")
    assert s and all(x["latency_p50_us"] > 0 and x["subscriber"] is None for x in s)
    assert d.parse(read("ddsperf-lat64-reliable-pong.log"), "pong") == []
    assert d.parse(read("ddsperf-tp1k-reliable-1sub-pub.log"), "pub") == []


def test_parse_sub_exact():
    s = d.parse(read("ddsperf-tp1k-besteffort-1sub-sub-1.log"), "sub", 1)
    assert [(x["t_s"], x["samples_per_s"], x["throughput_mbps"], x["lost_samples"]) for x in s] == [
        (1.0, 254340.0, 2083.59, 2392), (2.0, 431490.0, 3534.73, 1092),
        (3.001, 426050.0, 3490.23, 624), (4.0, 181340.0, 1485.55, 0)]
    assert all(x["role"] == "sub" and x["subscriber"] == 1 and x["peer"] is None for x in s)
    assert all(x["latency_mean_us"] is None for x in s)


def test_parse_stats_own_and_peers():
    st = d.parse_stats(read("ddsperf-tp1k-besteffort-1sub-sub-1.log"))
    # own lines: recvUC 20+6, 34+11, 31+15, 13+6
    assert st["lines"] == 4 and st["pid"] == 27761
    assert st["cpu_pct"] == pytest.approx((26 + 45 + 46 + 19) / 4)
    assert st["rss_mb"] == pytest.approx(23.7) and st["cpu_max_pct"] == 46
    assert st["peers"]["vm:27770"]["lines"] == 3
    assert st["peers"]["vm:27770"]["cpu_pct"] == pytest.approx((96 + 99 + 100) / 3)


def test_parse_stats_skips_stale_and_kb():
    text = ("[1] 1.000  rss:900kB vcsw:1 ivcsw:2 recvUC:1%+2% tev:0%+1%\n"
            "[1] 1.000  (stale) @h:2 rss:7.0MB vcsw:1 ivcsw:2 recvUC:50%+50%\n"
            "[1] 2.000  rss:1.0MB vcsw:1 ivcsw:2\n")
    st = d.parse_stats(text)
    assert st["lines"] == 2 and st["cpu_pct"] == pytest.approx(2.0)
    assert st["rss_mb"] == pytest.approx((900 / 1024 + 1.0) / 2)
    assert st["peers"] == {}


# --- summarize --------------------------------------------------------------------------------------

def _lat(t, mean, mn, p50, p90, p99, mx, cnt):
    s = dict.fromkeys(d.SAMPLE_KEYS)
    s.update(t_s=t, role="ping", subscriber=1, peer="h:1", latency_mean_us=mean, latency_min_us=mn,
             latency_p50_us=p50, latency_p90_us=p90, latency_p99_us=p99, latency_max_us=mx, latency_count=cnt)
    return s


def _tp(sub, t, sps, mbps, lost=0):
    s = dict.fromkeys(d.SAMPLE_KEYS)
    s.update(t_s=t, role="sub", subscriber=sub, samples_per_s=sps, throughput_mbps=mbps, lost_samples=lost)
    return s


def test_summarize_latency_count_weighted():
    samples = [_lat(1, 10, 5, 9, 12, 20, 100, 100), _lat(2, 40, 3, 30, 50, 80, 90, 300)]
    m = d.summarize("latency", samples, {"ping": {"cpu_pct": 40.0, "rss_mb": 8.0},
                                         "pong": {"cpu_pct": 30.0, "rss_mb": 7.0}})
    assert m["latency_count"] == 400
    assert m["latency_mean_us"] == pytest.approx((10 * 100 + 40 * 300) / 400)
    assert m["latency_p50_us"] == pytest.approx((9 * 100 + 30 * 300) / 400)
    assert m["latency_p90_us"] == pytest.approx((12 * 100 + 50 * 300) / 400)
    assert m["latency_p99_us"] == pytest.approx((20 * 100 + 80 * 300) / 400)
    assert m["latency_min_us"] == 3 and m["latency_max_us"] == 100
    assert (m["cpu_pub_pct"], m["rss_pub_mb"], m["cpu_sub_pct"], m["rss_sub_mb"]) == (40.0, 8.0, 30.0, 7.0)
    assert m["throughput_mbps"] is None and m["lost_samples"] is None


def test_summarize_throughput_sum_over_subscribers():
    samples = [
        # sub 1: idle, partial, 2 full seconds, partial, idle
        _tp(1, 1, 0, 0), _tp(1, 2, 50, 5, 1), _tp(1, 3, 100, 10, 2), _tp(1, 4, 120, 12), _tp(1, 5, 30, 3),
        _tp(1, 6, 0, 0),
        # sub 2: only two data seconds -> nothing trimmed
        _tp(2, 1, 200, 20), _tp(2, 2, 100, 10, 4)]
    m = d.summarize("throughput", samples, {"pub": {"cpu_pct": 90.0, "rss_mb": 11.0},
                                            "sub": [{"cpu_pct": 10.0, "rss_mb": 7.0},
                                                    {"cpu_pct": 20.0, "rss_mb": 8.0}]})
    assert m["samples_per_s"] == pytest.approx(110 + 150)
    assert m["throughput_mbps"] == pytest.approx(11 + 15)
    assert m["per_subscriber_mbps"] == pytest.approx(13)
    assert m["lost_samples"] == 7
    assert m["cpu_sub_pct"] == pytest.approx(15.0) and m["rss_sub_mb"] == pytest.approx(7.5)
    assert m["cpu_pub_pct"] == 90.0 and m["latency_p50_us"] is None


def test_summarize_real_captures():
    samples = d.parse(read("ddsperf-tp1k-besteffort-1sub-sub-1.log"), "sub", 1)
    m = d.summarize("throughput", samples, {})
    assert m["samples_per_s"] == pytest.approx((431490 + 426050) / 2)
    assert m["throughput_mbps"] == pytest.approx((3534.73 + 3490.23) / 2)
    assert m["lost_samples"] == 4108
    four = [x for i in range(1, 5) for x in d.parse(read(f"ddsperf-tp1k-reliable-4sub-sub-{i}.log"), "sub", i)]
    m4 = d.summarize("throughput", four, {})
    assert m4["lost_samples"] == 0
    assert m4["throughput_mbps"] == pytest.approx(4 * m4["per_subscriber_mbps"])
    lat = d.parse(read("ddsperf-lat64-besteffort-ping.log"), "ping", 1)
    ml = d.summarize("latency", lat, {})
    assert ml["latency_count"] == 19970 + 17172
    assert ml["latency_p50_us"] == pytest.approx((28.482 * 19970 + 29.143 * 17172) / 37142)
    assert ml["latency_min_us"] == 7.631 and ml["latency_max_us"] == 1177.345


def test_loopback_capture():
    s = d.parse(read("ddsperf-loopback-tp1k-sub-1.log"), "sub", 1)
    assert s and max(x["throughput_mbps"] for x in s) > 0
    assert d.parse_stats(read("ddsperf-loopback-tp1k-pub.log"))["cpu_pct"] > 0


# --- commands and config ----------------------------------------------------------------------------

def test_commands():
    assert d.ping_cmd(64, 5, "best-effort", None, 3) == [
        "ddsperf", "-i", "3", "-c", "-D", "5", "-u", "-Qminmatch:1", f"-Qinitwait:{d._num(d.INIT_WAIT)}",
        "ping", "size", "64"]
    assert d.pong_cmd(30, "reliable", 0, init_wait=2.5) == [
        "ddsperf", "-i", "0", "-c", "-D", "30", "-Qminmatch:1", "-Qinitwait:2.5", "pong"]
    assert d.pub_cmd(1024, 10, "reliable", "inf", minmatch=4, init_wait=5) == [
        "ddsperf", "-i", "0", "-c", "-D", "10", "-Qminmatch:4", "-Qinitwait:5", "pub", "size", "1024"]
    assert d.pub_cmd(16384, 10, "best-effort", 1000)[-4:] == ["pub", "1000Hz", "size", "16384"]
    assert d.ping_cmd(64, 5, rate="100")[-4:] == ["ping", "100Hz", "size", "64"]
    assert d.sub_cmd(20, "best-effort") == ["ddsperf", "-i", "0", "-c", "-D", "20", "-u", "-1", "sub"]
    with pytest.raises(ValueError):
        d.pub_cmd(64, 1, "sloppy")


def _tag(root, path):
    ns = {"c": "https://cdds.io/config"}
    return root.find(path, ns)


def test_cyclone_config_static_peers():
    x = d.cyclone_config("static-peers", ["10.244.1.10", "10.244.2.11"], False, interface="10.244.1.10")
    root = ET.fromstring(x.encode())
    assert _tag(root, "c:Domain/c:General/c:AllowMulticast").text == "false"
    assert _tag(root, "c:Domain/c:Discovery/c:ParticipantIndex").text == "auto"
    assert int(_tag(root, "c:Domain/c:Discovery/c:MaxAutoParticipantIndex").text) >= 12
    peers = root.findall("c:Domain/c:Discovery/c:Peers/c:Peer", {"c": "https://cdds.io/config"})
    assert [p.get("address") for p in peers] == ["10.244.1.10", "10.244.2.11"]
    assert _tag(root, "c:Domain/c:General/c:Interfaces/c:NetworkInterface").get("address") == "10.244.1.10"


@pytest.mark.parametrize("discovery,mc,expected", [
    ("multicast", True, "true"), ("multicast", False, "spdp"), ("static-peers", True, "asm")])
def test_cyclone_config_multicast(discovery, mc, expected):
    root = ET.fromstring(d.cyclone_config(discovery, ["10.0.0.1"], mc).encode())
    assert _tag(root, "c:Domain/c:General/c:AllowMulticast").text == expected
    if discovery == "multicast":
        assert _tag(root, "c:Domain/c:Discovery/c:Peers") is None


def test_cyclone_config_security_block():
    sec = {"auth_library": "/x/libdds_security_auth.so", "ac_library": "/x/libdds_security_ac.so",
           "crypto_library": "/x/libdds_security_crypto.so", "identity_ca": "file:/t/ca.pem",
           "identity_cert": "file:/t/id.pem", "private_key": "file:/t/id.key", "permissions_ca": "file:/t/ca.pem",
           "governance": "file:/t/gov.p7s", "permissions": "file:/t/perm.p7s"}
    root = ET.fromstring(d.cyclone_config("multicast", None, True, sec).encode())
    s = "c:Domain/c:Security/"
    for block, lib, init, fini in (("Authentication", "auth", "init_authentication", "finalize_authentication"),
                                   ("AccessControl", "ac", "init_access_control", "finalize_access_control"),
                                   ("Cryptographic", "crypto", "init_crypto", "finalize_crypto")):
        el = _tag(root, f"{s}c:{block}/c:Library")
        assert (el.get("path"), el.get("initFunction"), el.get("finalizeFunction")) == (
            f"/x/libdds_security_{lib}.so", init, fini)
    got = {t: _tag(root, f"{s}c:{t}").text for t in (
        "Authentication/c:IdentityCA", "Authentication/c:IdentityCertificate", "Authentication/c:PrivateKey",
        "AccessControl/c:PermissionsCA", "AccessControl/c:Governance", "AccessControl/c:Permissions")}
    assert list(got.values()) == ["file:/t/ca.pem", "file:/t/id.pem", "file:/t/id.key", "file:/t/ca.pem",
                                  "file:/t/gov.p7s", "file:/t/perm.p7s"]
    assert _tag(ET.fromstring(d.cyclone_config("multicast", None, True).encode()), "c:Domain/c:Security") is None


def test_governance_rejects_unknown_kinds():
    with pytest.raises(ValueError):
        d.governance_xml({"rtps_protection_kind": "SCRAMBLE"})
    with pytest.raises(ValueError):
        d.governance_xml({"payload_kind": "ENCRYPT"})


# --- DDS Security material -----------------------------------------------------------------------------

needs_openssl = pytest.mark.skipif(not shutil.which("openssl"), reason="needs openssl")


@pytest.fixture(scope="module")
def material():
    with tempfile.TemporaryDirectory(prefix="ebs-test-") as tmp:
        yield d.make_security_material(tmp)


def _openssl(*argv):
    return subprocess.run(["openssl", *argv], capture_output=True, text=True)


@needs_openssl
def test_security_material_files_and_signatures(material):
    f = material["files"]
    assert all(os.path.getsize(p) > 0 for p in f.values())
    assert oct(os.stat(f["identity.key"]).st_mode & 0o777) == "0o600"
    # identity certificate chains to the CA
    assert _openssl("verify", "-CAfile", f["ca.pem"], f["identity.pem"]).returncode == 0
    for doc in ("governance", "permissions"):
        out = _openssl("smime", "-verify", "-in", f[f"{doc}.p7s"], "-CAfile", f["ca.pem"], "-text")
        assert out.returncode == 0, out.stderr
        assert "Verification successful" in out.stderr
        assert out.stdout.strip() == Path(f[f"{doc}.xml"]).read_text().strip()
        # signed by someone else's CA: rejected
        other = _openssl("smime", "-verify", "-in", f[f"{doc}.p7s"], "-CAfile", f["identity.pem"])
        assert other.returncode != 0


@needs_openssl
def test_security_material_documents(material):
    f = material["files"]
    gov = ET.parse(f["governance.xml"]).getroot()
    rule = gov.find("domain_access_rules/domain_rule")
    assert rule.find("allow_unauthenticated_participants").text == "false"
    assert rule.find("enable_join_access_control").text == "true"
    assert rule.find("rtps_protection_kind").text == "SIGN_WITH_ORIGIN_AUTHENTICATION"
    assert rule.find("discovery_protection_kind").text == "ENCRYPT"
    assert (rule.find("domains/id_range/min").text, rule.find("domains/id_range/max").text) == (
        "0", str(d.DOMAIN_ID_MAX))
    topic = rule.find("topic_access_rules/topic_rule")
    assert topic.find("topic_expression").text == "*"
    assert topic.find("metadata_protection_kind").text == "ENCRYPT"
    assert material["kinds"] == d.PROTECTION_KINDS
    perm = ET.parse(f["permissions.xml"]).getroot().find("permissions/grant")
    subject = _openssl("x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in", f["identity.pem"]).stdout
    assert perm.find("subject_name").text == subject.split("=", 1)[1].strip() == material["subject"]
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    nb = datetime.fromisoformat(perm.find("validity/not_before").text)
    na = datetime.fromisoformat(perm.find("validity/not_after").text)
    assert nb < now < na
    allow = perm.find("allow_rule")
    assert [t.text for t in allow.findall("publish/topics/topic")] == ["*"]
    assert [t.text for t in allow.findall("subscribe/topics/topic")] == ["*"]
    assert perm.find("default").text == "DENY"
    rec = d.security_record(material, {"auth": "/a", "ac": "/b", "crypto": "/c"})
    assert rec["governance"]["metadata_protection_kind"] == "ENCRYPT" and rec["seed_setting"] == d.SEED_SETTING
    assert "PRIVATE KEY" not in json.dumps(rec)
    sec = d.security_config(material, {"auth": "/a", "ac": "/b", "crypto": "/c"})
    assert sec["private_key"] == "file:" + f["identity.key"] and sec["governance"].endswith("governance.p7s")


def test_cyclone_config_rejects():
    with pytest.raises(ValueError):
        d.cyclone_config("static-peers", [], False)
    with pytest.raises(ValueError):
        d.cyclone_config("cds", ["1.2.3.4"], False)


def test_version_and_security_support():
    assert d.version()
    reason = d.security_support()
    assert reason is None or isinstance(reason, str)
    if len(d._find_security_libs()) == 3 and shutil.which("openssl"):
        assert reason is None


def test_measure_rejects_bad_args_and_security(monkeypatch):
    ep = Endpoint("nowhere", "10.0.0.1", 0)
    kw = dict(payload=64, duration=1, reliability="reliable", transport="unicast", discovery="multicast", peers=None)
    raw, m, err = d.measure(ep, [ep], mode="bogus", **kw)
    assert m is None and "mode" in err
    raw, m, err = d.measure(ep, [ep], mode="latency", security="auth-encrypt", domain=231, **kw)
    assert m is None and "domain id" in err
    raw, m, err = d.measure(ep, [ep], mode="latency", responder_security="tls", **kw)
    assert m is None and "responder_security" in err
    monkeypatch.setattr(d, "security_support", lambda: "no plugins here")
    raw, m, err = d.measure(ep, [ep], mode="latency", security="auth-encrypt", **kw)
    assert (raw, m, err) == ({}, None, "unsupported: no plugins here")


# --- real runs ----------------------------------------------------------------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ddsperf") or not shutil.which("ip"),
                                reason="needs root, iproute2 and ddsperf")


def _sh(*argv):
    subprocess.run(argv, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pair():
    tag = uuid.uuid4().hex[:4]
    a, b = f"ebs-{tag}a", f"ebs-{tag}b"
    va, vb = f"ebs{tag}a", f"ebs{tag}b"
    try:
        _sh("ip", "netns", "add", a)
        _sh("ip", "netns", "add", b)
        _sh("ip", "link", "add", va, "netns", a, "type", "veth", "peer", "name", vb, "netns", b)
        for ns, dev, ip in ((a, va, "10.199.7.1/24"), (b, vb, "10.199.7.2/24")):
            _sh("ip", "-n", ns, "addr", "add", ip, "dev", dev)
            _sh("ip", "-n", ns, "link", "set", dev, "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield Endpoint(a, "10.199.7.1", 0), Endpoint(b, "10.199.7.2", 1)
    finally:
        for ns in (a, b):
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                subprocess.run(["kill", "-9", pid], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _check_samples(raw):
    samples = json.loads(raw["dds-samples.json"])
    assert samples and all(list(s) == list(d.SAMPLE_KEYS) for s in samples)
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

needs_security = pytest.mark.skipif(d.security_support() is not None, reason=f"{d.security_support()}")


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
