"""DDS Security for ddsperf runs (security="auth-encrypt"): finding Cyclone's security plugins, throwaway
certificates and signed governance/permissions made with openssl per run, and the Domain/Security configuration
and manifest record that use them."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta, timezone
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from edgebench import sh
from edgebench.drivers.ddsperf.scan import DdsperfError

SECURITY_LIBS = ("libdds_security_auth", "libdds_security_ac", "libdds_security_crypto")


def security_xml(sec: dict[str, str]) -> str:
    """Domain/Security (element names: config_file_reference.rst "//CycloneDDS/Domain/Security"). Values are
    URIs (`file:/abs/path`); Library@path is the plugin's absolute file name (see security_config())."""
    def lib(kind: str) -> str:
        path = sec[f"{kind}_library"]
        init = {"auth": "init_authentication", "ac": "init_access_control", "crypto": "init_crypto"}[kind]
        fini = {"auth": "finalize_authentication", "ac": "finalize_access_control", "crypto": "finalize_crypto"}[kind]
        return f'<Library path={quoteattr(path)} initFunction="{init}" finalizeFunction="{fini}"/>'

    def el(tag: str, key: str) -> str:
        return f"<{tag}>{escape(sec[key])}</{tag}>"
    return "\n".join([
        "    <Security>",
        "      <Authentication>",
        f"        {lib('auth')}",
        f"        {el('IdentityCA', 'identity_ca')}",
        f"        {el('IdentityCertificate', 'identity_cert')}",
        f"        {el('PrivateKey', 'private_key')}",
        "      </Authentication>",
        "      <AccessControl>",
        f"        {lib('ac')}",
        f"        {el('PermissionsCA', 'permissions_ca')}",
        f"        {el('Governance', 'governance')}",
        f"        {el('Permissions', 'permissions')}",
        "      </AccessControl>",
        "      <Cryptographic>",
        f"        {lib('crypto')}",
        "      </Cryptographic>",
        "    </Security>"])


def find_security_libs() -> dict[str, str]:
    """{"auth": path, "ac": path, "crypto": path} for the plugins found (Debian puts them in a private dir
    next to libddsc, e.g. /usr/lib/x86_64-linux-gnu/libddsc0debian/)."""
    roots = []
    try:
        out = sh.call(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if "libddsc" in line and "=>" in line:
                roots.append(os.path.dirname(os.path.realpath(line.split("=>", 1)[1].strip())))
    except (FileNotFoundError, subprocess.TimeoutExpired):
        pass
    roots += ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/arm-linux-gnueabihf",
              "/usr/local/lib", "/usr/lib", "/opt/cyclonedds/lib"]
    found: dict[str, str] = {}
    for root in dict.fromkeys(roots):
        if not os.path.isdir(root):
            continue
        for dirpath, _dirs, files in os.walk(root):
            if dirpath.count(os.sep) - root.count(os.sep) > 1:
                _dirs[:] = []
                continue
            for f in files:
                for lib in SECURITY_LIBS:
                    kind = lib.rsplit("_", 1)[1]
                    if kind not in found and f.startswith(lib + ".so"):
                        found[kind] = os.path.join(dirpath, f)
        if len(found) == 3:
            break
    return found


def security_support() -> str | None:
    """None if this Cyclone build can run DDS Security (auth + access control + crypto plugins present and
    loadable, openssl available to make certificates), else the reason."""
    import ctypes

    libs = find_security_libs()
    missing = [lib for lib in SECURITY_LIBS if lib.rsplit("_", 1)[1] not in libs]
    if missing:
        return (f"cyclonedds on this machine ships no DDS Security plugins "
                f"({', '.join(m + '.so' for m in missing)} not found)")
    for kind, path in libs.items():
        try:
            ctypes.CDLL(path)
        except OSError as exc:
            return f"DDS Security plugin {path} does not load: {exc}"
    if not sh.which("openssl"):
        return "openssl is not installed (needed to generate the DDS Security certificates)"
    return None


# --- DDS Security material --------------------------------------------------------------------------
#
# params.security = "auth-encrypt" (docs/results-layout.md) reproduces the seed's strongest DDS Security setting,
# "SignWithOrigAuthRTPSEncryptSM": whole RTPS messages signed with origin authentication, RTPS submessages encrypted.
# Governance mapping (OMG DDS Security 1.1, 9.4.1.2; Cyclone's builtin plugins: AES-GCM/GMAC):
#   rtps_protection_kind      SIGN_WITH_ORIGIN_AUTHENTICATION  "SignWithOrigAuthRTPS": every RTPS message gets a
#                                                              common MAC plus one receiver-specific MAC
#   metadata_protection_kind  ENCRYPT                          "EncryptSM": every submessage of user topics (DATA,
#                                                              HEARTBEAT, ACKNACK, ...) is encrypted, so the
#                                                              serialized payload inside DATA is encrypted as well
#   data_protection_kind      NONE                             no second, separate payload encryption (the seed's
#                                                              setting did not encrypt the payload on its own; it
#                                                              travels inside the encrypted submessage)
#   discovery/liveliness_protection_kind ENCRYPT, enable_discovery/liveliness_protection true: secure SEDP and
#                                                              participant-message endpoints, encrypted
#   allow_unauthenticated_participants false, enable_join_access_control true, read/write access control true:
#   participants without valid certificates and permissions signed by the permissions CA cannot join or match.
# One identity (EC P-256 certificate + key, signed by a throwaway CA that is both identity and permissions CA) is
# shared by all participants: Cyclone authenticates participants, not hosts, and accepts the same identity on
# both ends of a handshake.

DOMAIN_ID_MAX = 230  # highest domain id Cyclone 0.10's governance/permissions parser accepts (232 is rejected)

PROTECTION_KINDS = {
    "rtps_protection_kind": "SIGN_WITH_ORIGIN_AUTHENTICATION",
    "discovery_protection_kind": "ENCRYPT",
    "liveliness_protection_kind": "ENCRYPT",
    "metadata_protection_kind": "ENCRYPT",
    "data_protection_kind": "NONE",
}
PROTECTION_VALUES = ("NONE", "SIGN", "ENCRYPT", "SIGN_WITH_ORIGIN_AUTHENTICATION",
                     "ENCRYPT_WITH_ORIGIN_AUTHENTICATION")
SEED_SETTING = "SignWithOrigAuthRTPSEncryptSM"


def _openssl(*args: str, cwd: str) -> str:
    try:
        out = sh.call(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise DdsperfError("openssl is not installed (needed to generate the DDS Security certificates)") from None
    except subprocess.TimeoutExpired:
        raise DdsperfError(f"openssl {args[0]} did not finish within 60s") from None
    if out.returncode != 0:
        raise DdsperfError(f"openssl {' '.join(args[:2])} failed: {(out.stderr or out.stdout).strip()[-300:]}")
    return out.stdout


def _utc(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def governance_xml(kinds: dict[str, str] | None = None, domains: tuple[int, int] = (0, DOMAIN_ID_MAX)) -> str:
    """Governance document (OMG omg_shared_ca_governance.xsd): one domain rule for `domains`, one topic rule "*"."""
    k = {**PROTECTION_KINDS, **(kinds or {})}
    bad = {n: v for n, v in k.items() if n not in PROTECTION_KINDS or v not in PROTECTION_VALUES}
    if bad:
        raise ValueError(f"bad protection kinds {bad}: names {sorted(PROTECTION_KINDS)}, values {PROTECTION_VALUES}")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd">
  <domain_access_rules>
    <domain_rule>
      <domains>
        <id_range><min>{int(domains[0])}</min><max>{int(domains[1])}</max></id_range>
      </domains>
      <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
      <enable_join_access_control>true</enable_join_access_control>
      <discovery_protection_kind>{k["discovery_protection_kind"]}</discovery_protection_kind>
      <liveliness_protection_kind>{k["liveliness_protection_kind"]}</liveliness_protection_kind>
      <rtps_protection_kind>{k["rtps_protection_kind"]}</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>*</topic_expression>
          <enable_discovery_protection>true</enable_discovery_protection>
          <enable_liveliness_protection>true</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>true</enable_write_access_control>
          <metadata_protection_kind>{k["metadata_protection_kind"]}</metadata_protection_kind>
          <data_protection_kind>{k["data_protection_kind"]}</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"""


def permissions_xml(subject: str, not_before: datetime, not_after: datetime,
                    domains: tuple[int, int] = (0, DOMAIN_ID_MAX)) -> str:
    """Permissions document (OMG omg_shared_ca_permissions.xsd): `subject` (the identity certificate's subject,
    RFC 2253) may publish and subscribe every topic in every partition of `domains`; everything else is denied."""
    allow = "\n".join(f"""        <{what}>
          <topics><topic>*</topic></topics>
          <partitions><partition>*</partition></partitions>
        </{what}>""" for what in ("publish", "subscribe"))
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd">
  <permissions>
    <grant name="edgebench_ddsperf">
      <subject_name>{escape(subject)}</subject_name>
      <validity>
        <not_before>{_utc(not_before)}</not_before>
        <not_after>{_utc(not_after)}</not_after>
      </validity>
      <allow_rule>
        <domains>
          <id_range><min>{int(domains[0])}</min><max>{int(domains[1])}</max></id_range>
        </domains>
{allow}
      </allow_rule>
      <default>DENY</default>
    </grant>
  </permissions>
</dds>
"""


def make_security_material(directory: str, *, kinds: dict[str, str] | None = None, valid_hours: float = 48
                           ) -> dict[str, Any]:
    """Throwaway DDS Security material in `directory` (which must exist; the caller deletes it), made with
    openssl (argument lists, no shell): ca.pem/ca.key (self-signed EC P-256 CA, used as identity CA and as
    permissions CA), identity.pem/identity.key (the participants' shared identity, signed by the CA),
    governance.xml/.p7s and permissions.xml/.p7s (S/MIME-signed with the CA, `openssl smime -sign -text`).

    Returns {"files": {name: absolute path}, "subject": identity subject (RFC 2253), "ca_subject",
    "not_before"/"not_after" (permissions validity, UTC), "kinds": the governance protection kinds,
    "key": "EC prime256v1"}. The certificates are valid for `valid_hours` from now (the permissions from an hour
    before now, so slightly skewed clocks still accept them)."""
    d = os.path.abspath(directory)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    days = str(max(1, int(-(-valid_hours // 24))))
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", days, "-sha256",
             "-subj", "/O=edgebench/CN=edgebench throwaway DDS CA", cwd=d)
    _openssl("req", "-new", *ec, "-keyout", "identity.key", "-out", "identity.csr", "-sha256",
             "-subj", "/O=edgebench/CN=edgebench ddsperf", cwd=d)
    _openssl("x509", "-req", "-in", "identity.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial",
             str(int.from_bytes(os.urandom(8), "big")), "-days", days, "-sha256", "-out", "identity.pem", cwd=d)
    os.remove(os.path.join(d, "identity.csr"))

    def subject(cert: str) -> str:
        out = _openssl("x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in", cert, cwd=d).strip()
        return out.split("=", 1)[1].strip() if out.startswith("subject") else out

    now = datetime.now(timezone.utc).replace(microsecond=0)
    not_before, not_after = now - timedelta(hours=1), now + timedelta(hours=valid_hours)
    subj = subject("identity.pem")
    k = {**PROTECTION_KINDS, **(kinds or {})}
    docs = {"governance": governance_xml(k), "permissions": permissions_xml(subj, not_before, not_after)}
    for name, text in docs.items():
        with open(os.path.join(d, f"{name}.xml"), "w") as f:
            f.write(text)
        _openssl("smime", "-sign", "-text", "-in", f"{name}.xml", "-out", f"{name}.p7s", "-signer", "ca.pem",
                 "-inkey", "ca.key", cwd=d)
    for key in ("ca.key", "identity.key"):
        os.chmod(os.path.join(d, key), 0o600)
    names = ("ca.pem", "ca.key", "identity.pem", "identity.key", "governance.xml", "governance.p7s",
             "permissions.xml", "permissions.p7s")
    return {"files": {n: os.path.join(d, n) for n in names}, "subject": subj, "ca_subject": subject("ca.pem"),
            "not_before": _utc(not_before) + "Z", "not_after": _utc(not_after) + "Z", "kinds": k,
            "key": "EC prime256v1"}


def security_config(material: dict[str, Any], libs: dict[str, str] | None = None) -> dict[str, str]:
    """The `security` dict for cyclone_config(). Plugins: Library@path = the absolute file name found by
    find_security_libs() (Debian keeps them in libddsc0debian/, off the loader's path, so the default bare
    names "dds_security_auth" etc. would need LD_LIBRARY_PATH; absolute paths need no environment)."""
    libs = libs or find_security_libs()
    missing = [k for k in ("auth", "ac", "crypto") if k not in libs]
    if missing:
        raise DdsperfError(f"DDS Security plugins not found: {', '.join(missing)}")
    f = material["files"]
    return {"auth_library": libs["auth"], "ac_library": libs["ac"], "crypto_library": libs["crypto"],
            "identity_ca": "file:" + f["ca.pem"], "identity_cert": "file:" + f["identity.pem"],
            "private_key": "file:" + f["identity.key"], "permissions_ca": "file:" + f["ca.pem"],
            "governance": "file:" + f["governance.p7s"], "permissions": "file:" + f["permissions.p7s"]}


def security_record(material: dict[str, Any], libs: dict[str, str] | None = None) -> dict[str, Any]:
    """dds-security.json: what protected the run (no keys; certificates only by subject)."""
    k = material["kinds"]
    return {
        "security": "auth-encrypt",
        "seed_setting": SEED_SETTING,
        "governance": {"domains": [0, DOMAIN_ID_MAX], "topic_expression": "*",
                       "allow_unauthenticated_participants": False, "enable_join_access_control": True,
                       "enable_discovery_protection": True, "enable_liveliness_protection": True,
                       "enable_read_access_control": True, "enable_write_access_control": True, **k},
        "permissions": {"subject_name": material["subject"], "not_before": material["not_before"],
                        "not_after": material["not_after"], "publish": ["*"], "subscribe": ["*"],
                        "default": "DENY"},
        "identity": {"shared_by_all_participants": True, "key": material["key"], "subject": material["subject"],
                     "identity_ca_subject": material["ca_subject"],
                     "permissions_ca_subject": material["ca_subject"]},
        "plugins": dict(libs or find_security_libs()),
        "signed": "S/MIME (openssl smime -sign -text) by the permissions CA",
    }
