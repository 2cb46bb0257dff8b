"""scripts/kind/runc-capdrop, the OCI runtime in front of runc that lets Docker start privileged containers (kind's
nodes) where the capability bounding set lacks some capabilities: it drops from a container's capability sets
exactly the capabilities this process cannot grant (not in its bounding and permitted sets), keeps every other one
(a capability it does not know included), leaves other commands alone, then runs the real runc.

A Go program (issue 45; a bash + jq script before): its own Go tests run here, then the binary kindlib.capdrop_bin
builds (static, cached by source hash) against a fake runc that records its arguments and the JSON it was handed,
with this machine's sets and with a synthetic bounding set (setpriv drops capabilities from it, as a machine that
lacks them has it)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KIND = ROOT / "scripts" / "kind"
sys.path.insert(0, str(KIND))

import kindlib as kl  # noqa: E402

NAMES = ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
         "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
         "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
         "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
         "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
         "CHECKPOINT_RESTORE"]
ALL = [f"CAP_{n}" for n in NAMES] + ["CAP_FUTURE_THING"]
GO = pytest.mark.skipif(shutil.which("go") is None, reason="needs a Go toolchain (go) on PATH (make setup)")
pytestmark = GO


@pytest.fixture(scope="module")
def capdrop(tmp_path_factory) -> Path:
    return kl.capdrop_bin(tmp_path_factory.mktemp("kindc"))


def _grantable() -> set[str]:
    status = dict(line.split(":\t", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":\t" in line)
    have = int(status["CapBnd"], 16) & int(status["CapPrm"], 16)
    return {f"CAP_{n}" for i, n in enumerate(NAMES) if have >> i & 1}


def _fake_runc(tmp_path: Path) -> Path:
    """A runc that records its arguments and a copy of the JSON it was handed (config.json or --process)."""
    fake = tmp_path / "runc"
    fake.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/args"\n'
                    'for a in "$@"; do case $a in *.json) cp "$a" "$(dirname "$0")/seen.json";; esac; done\n'
                    '[ -f "$(dirname "$0")/bundle/config.json" ] && cp "$(dirname "$0")/bundle/config.json" '
                    '"$(dirname "$0")/seen.json"\nexit 0\n')
    fake.chmod(0o755)
    return fake


def _run(capdrop, tmp_path, *args, prefix=(), **env):
    full = {**os.environ, "RUNC_CAPDROP_RUNC": str(_fake_runc(tmp_path)), "RUNC_CAPDROP_LOG": str(tmp_path / "log"),
            **env}
    return subprocess.run([*prefix, str(capdrop), *args], env=full, capture_output=True, text=True, timeout=30)


def _bundle(tmp_path, caps=None) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir(exist_ok=True)
    sets = caps or {k: list(ALL) for k in ("bounding", "effective", "inheritable", "permitted", "ambient")}
    (bundle / "config.json").write_text(json.dumps({"ociVersion": "1.0.2", "process": {"capabilities": sets,
                                                    "args": ["sh"], "rlimit": 1.5}, "hostname": "<n&m>"}))
    (bundle / "config.json").chmod(0o640)
    return bundle


def test_go_tests():
    p = subprocess.run(["go", "test", "-count=1", "."], cwd=kl.CAPDROP_DIR, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "GOFLAGS": "-buildvcs=false"})
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_binary_is_static_and_cached_by_its_source(capdrop, tmp_path):
    assert capdrop.name == f"runc-capdrop-{kl.capdrop_key()[:16]}"
    assert b"ld-linux" not in capdrop.read_bytes()   # no ELF interpreter: CGO_ENABLED=0
    assert kl.capdrop_bin(capdrop.parent.parent) == capdrop   # built once
    src = tmp_path / "src"
    shutil.copytree(kl.CAPDROP_DIR, src)
    key = kl.capdrop_key(src)
    (src / "main_test.go").write_text("package main\n")
    assert kl.capdrop_key(src) == key   # the tests are not the program
    (src / "main.go").write_text((src / "main.go").read_text() + "\n// changed\n")
    assert kl.capdrop_key(src) != key


def test_create_drops_only_what_this_process_cannot_grant(capdrop, tmp_path):
    bundle = _bundle(tmp_path)
    out = _run(capdrop, tmp_path, "--root", "/run/x", "create", "--bundle", str(bundle), "c1")
    assert out.returncode == 0, out.stderr
    doc = json.loads((bundle / "config.json").read_text())
    caps = doc["process"]["capabilities"]
    expected = [c for c in ALL if c in _grantable() or c == "CAP_FUTURE_THING"]
    assert all(v == expected for v in caps.values()), caps
    assert (tmp_path / "args").read_text().split() == ["--root", "/run/x", "create", "--bundle", str(bundle), "c1"]
    assert json.loads((tmp_path / "seen.json").read_text()) == doc   # runc was handed the rewritten file
    assert doc["process"]["rlimit"] == 1.5 and doc["hostname"] == "<n&m>"   # the rest as it was
    assert (bundle / "config.json").stat().st_mode & 0o777 == 0o640
    dropped = set(ALL) - set(expected)
    if dropped:  # this machine lacks some (CAP_SYS_RESOURCE here): the rewrite is logged
        assert all(c in (tmp_path / "log").read_text() for c in dropped)
    assert not [p for p in bundle.iterdir() if p.name != "config.json"]   # no temporary file left


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_a_synthetic_bounding_set_drops_exactly_its_gaps(capdrop, tmp_path):
    """setpriv takes NET_ADMIN and SYS_TIME out of the bounding set (root's permitted set follows it at exec)."""
    bundle = _bundle(tmp_path)
    out = _run(capdrop, tmp_path, "run", "-b", str(bundle), "c2",
               prefix=("setpriv", "--bounding-set", "-net_admin,-sys_time", "--"))
    assert out.returncode == 0, out.stderr
    caps = json.loads((bundle / "config.json").read_text())["process"]["capabilities"]
    gone = {"CAP_NET_ADMIN", "CAP_SYS_TIME"} | (set(ALL) - _grantable() - {"CAP_FUTURE_THING"})
    assert all(v == [c for c in ALL if c not in gone] for v in caps.values()), caps
    line = (tmp_path / "log").read_text().splitlines()[-1]
    assert f" run {bundle}/config.json: dropped [" in line and '"CAP_NET_ADMIN"' in line and '"CAP_SYS_TIME"' in line


def test_exec_rewrites_the_process_file_and_other_commands_pass_through(capdrop, tmp_path):
    proc = tmp_path / "process.json"
    proc.write_text(json.dumps({"args": ["sh"], "capabilities": {"bounding": list(ALL), "effective": list(ALL)}}))
    assert _run(capdrop, tmp_path, "exec", "--process", str(proc), "--detach", "c1").returncode == 0
    caps = json.loads(proc.read_text())["capabilities"]
    assert set(caps["bounding"]) == (set(ALL) & _grantable()) | {"CAP_FUTURE_THING"}
    log = tmp_path / "log"
    logged = log.read_text() if log.exists() else ""
    assert _run(capdrop, tmp_path, "state", "c1").returncode == 0
    assert (tmp_path / "args").read_text().split() == ["state", "c1"]
    assert (log.read_text() if log.exists() else "") == logged  # nothing rewritten for a command that runs nothing


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_a_file_that_is_not_json_goes_to_runc_unchanged(capdrop, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "config.json").write_text("{not json")
    out = _run(capdrop, tmp_path, "create", "--bundle", str(bundle), "c3",
               prefix=("setpriv", "--bounding-set", "-net_admin", "--"))
    assert out.returncode == 0
    assert out.stderr.startswith(f"runc-capdrop: could not rewrite {bundle}/config.json (")
    assert out.stderr.endswith("); passing it to runc unchanged\n")
    assert (bundle / "config.json").read_text() == "{not json" and (tmp_path / "seen.json").exists()


def test_runcs_exit_status_is_the_wrappers_and_no_runc_is_127(capdrop, tmp_path):
    fail = tmp_path / "failing-runc"
    fail.write_text("#!/bin/sh\nexit 3\n")
    fail.chmod(0o755)
    assert _run(capdrop, tmp_path, "state", "x", RUNC_CAPDROP_RUNC=str(fail)).returncode == 3
    if not any(os.access(p, os.X_OK) for p in ("/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc",
                                               "/usr/local/bin/runc")):
        out = _run(capdrop, tmp_path, "state", "x", RUNC_CAPDROP_RUNC="", PATH=str(tmp_path / "empty"))
        assert out.returncode == 127 and out.stderr == "runc-capdrop: no runc found (set RUNC_CAPDROP_RUNC)\n"
