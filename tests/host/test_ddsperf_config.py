"""ddsperf driver, without a network: the command builders, cyclone_config() and the DDS Security material."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

import pytest

from edgebench.drivers import ddsperf as d
from edgebench.drivers.ddsperf import run as d_run
from edgebench.drivers.ddsperf import security as sec
from edgebench.substrates.local.testbed import Endpoint

# --- commands and config ----------------------------------------------------------------------------

def test_commands():
    assert d.ping_cmd(64, 5, "best-effort", None, 3) == [
        "ddsperf", "-i", "3", "-c", "-D", "5", "-u", "-Qminmatch:1", f"-Qinitwait:{d.INIT_WAIT:g}",
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
        sec.governance_xml({"rtps_protection_kind": "SCRAMBLE"})
    with pytest.raises(ValueError):
        sec.governance_xml({"payload_kind": "ENCRYPT"})


# --- DDS Security material -----------------------------------------------------------------------------

needs_openssl = pytest.mark.skipif(not shutil.which("openssl"), reason="needs openssl")


@pytest.fixture(scope="module")
def material():
    with tempfile.TemporaryDirectory(prefix="ebs-test-") as tmp:
        yield sec.make_security_material(tmp)


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
        "0", str(sec.DOMAIN_ID_MAX))
    topic = rule.find("topic_access_rules/topic_rule")
    assert topic.find("topic_expression").text == "*"
    assert topic.find("metadata_protection_kind").text == "ENCRYPT"
    assert material["kinds"] == sec.PROTECTION_KINDS
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
    rec = sec.security_record(material, {"auth": "/a", "ac": "/b", "crypto": "/c"})
    assert rec["governance"]["metadata_protection_kind"] == "ENCRYPT" and rec["seed_setting"] == sec.SEED_SETTING
    assert "PRIVATE KEY" not in json.dumps(rec)
    config = sec.security_config(material, {"auth": "/a", "ac": "/b", "crypto": "/c"})
    assert config["private_key"] == "file:" + f["identity.key"] and config["governance"].endswith("governance.p7s")


def test_cyclone_config_rejects():
    with pytest.raises(ValueError):
        d.cyclone_config("static-peers", [], False)
    with pytest.raises(ValueError):
        d.cyclone_config("cds", ["1.2.3.4"], False)
    with pytest.raises(ValueError, match="batching"):
        d.cyclone_config("multicast", None, True, batching="none")


@pytest.mark.parametrize("discovery", ["multicast", "static-peers"])
def test_cyclone_config_batching_off_caps_the_message_size(discovery):
    """batching=off: General/MaxMessageSize below any RTPS message, so Cyclone's packer sends every submessage in a
    message of its own; on: ddsperf's own batching, MaxMessageSize left at Cyclone's default."""
    off = ET.fromstring(d.cyclone_config(discovery, ["10.0.0.1"], False, batching="off", interface="10.0.0.1").encode())
    assert _tag(off, "c:Domain/c:General/c:MaxMessageSize").text == d.UNBATCHED_MAX_MESSAGE_SIZE == "1B"
    assert _tag(off, "c:Domain/c:General/c:AllowMulticast") is not None  # the rest of the config is unchanged
    assert _tag(off, "c:Domain/c:Internal") is None  # Internal/WriteBatch: ddsperf overrides it (see cyclone_config)
    for on in (d.cyclone_config(discovery, ["10.0.0.1"], False, interface="10.0.0.1"),
               d.cyclone_config(discovery, ["10.0.0.1"], False, batching="on", interface="10.0.0.1")):
        assert _tag(ET.fromstring(on.encode()), "c:Domain/c:General/c:MaxMessageSize") is None
    assert d.cyclone_config(discovery, ["10.0.0.1"], False, interface="10.0.0.1") == d.cyclone_config(
        discovery, ["10.0.0.1"], False, batching="on", interface="10.0.0.1")


def test_batching_is_a_dds_sweep_parameter():
    from edgebench.plan import cells as cells_mod
    from edgebench.plan import spec
    s = spec.from_parameters({"substrate": "local", "workloads": json.dumps(["dds:throughput"]),
                              "repetitions": "1", "dds-payloads": json.dumps(["64"]),
                              "dds-batching": json.dumps(["on", "off"])})
    runs = cells_mod.runs_for(s, cells_mod.expand(s)[0])
    assert sorted(r.params.get("batching", "-") for r in runs) == ["-", "off"]  # on: params as before
    assert len({r.run_id for r in runs}) == 2
    with pytest.raises(Exception, match="batching"):
        spec.from_parameters({"substrate": "local", "dds-batching": json.dumps(["sometimes"])})


def test_version_and_security_support():
    assert d.version()
    reason = sec.security_support()
    assert reason is None or isinstance(reason, str)
    if len(sec.find_security_libs()) == 3 and shutil.which("openssl"):
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
    raw, m, err = d.measure(ep, [ep], mode="latency", batching="sometimes", **kw)
    assert m is None and "batching" in err
    monkeypatch.setattr(d_run, "security_support", lambda: "no plugins here")
    raw, m, err = d.measure(ep, [ep], mode="latency", security="auth-encrypt", **kw)
    assert (raw, m, err) == ({}, None, "unsupported: no plugins here")
