"""scripts/kind/runc-capdrop, the OCI runtime in front of runc that lets Docker start privileged containers (kind's
nodes) where the capability bounding set lacks some capabilities: it drops from a container's capability sets
exactly the capabilities this process cannot grant (not in its bounding and permitted sets), keeps every other one
(a capability it does not know included), leaves other commands alone, then runs the real runc."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WRAPPER = ROOT / "scripts" / "kind" / "runc-capdrop"
NAMES = ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
         "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
         "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
         "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
         "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
         "CHECKPOINT_RESTORE"]
ALL = [f"CAP_{n}" for n in NAMES] + ["CAP_FUTURE_THING"]

pytestmark = pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed (make setup installs it)")


def _grantable() -> set[str]:
    status = dict(line.split(":\t", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":\t" in line)
    have = int(status["CapBnd"], 16) & int(status["CapPrm"], 16)
    return {f"CAP_{n}" for i, n in enumerate(NAMES) if have >> i & 1}


def _fake_runc(tmp_path: Path) -> Path:
    fake = tmp_path / "runc"
    fake.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/args"\n')
    fake.chmod(0o755)
    return fake


def _run(tmp_path, *args):
    env = {**os.environ, "RUNC_CAPDROP_RUNC": str(_fake_runc(tmp_path)), "RUNC_CAPDROP_LOG": str(tmp_path / "log")}
    return subprocess.run(["bash", str(WRAPPER), *args], env=env, capture_output=True, text=True, timeout=30)


def test_create_drops_only_what_this_process_cannot_grant(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    sets = {k: list(ALL) for k in ("bounding", "effective", "inheritable", "permitted", "ambient")}
    (bundle / "config.json").write_text(json.dumps({"ociVersion": "1.0.2", "process": {"capabilities": sets,
                                                                                       "args": ["sh"]}}))
    out = _run(tmp_path, "--root", "/run/x", "create", "--bundle", str(bundle), "c1")
    assert out.returncode == 0, out.stderr
    caps = json.loads((bundle / "config.json").read_text())["process"]["capabilities"]
    expected = [c for c in ALL if c in _grantable() or c == "CAP_FUTURE_THING"]
    assert all(v == expected for v in caps.values()), caps
    assert (tmp_path / "args").read_text().split() == ["--root", "/run/x", "create", "--bundle", str(bundle), "c1"]
    dropped = set(ALL) - set(expected)
    if dropped:  # this machine lacks some (CAP_SYS_RESOURCE here): the rewrite is logged
        assert all(c in (tmp_path / "log").read_text() for c in dropped)


def test_exec_rewrites_the_process_file_and_other_commands_pass_through(tmp_path):
    proc = tmp_path / "process.json"
    proc.write_text(json.dumps({"args": ["sh"], "capabilities": {"bounding": list(ALL), "effective": list(ALL)}}))
    assert _run(tmp_path, "exec", "--process", str(proc), "--detach", "c1").returncode == 0
    caps = json.loads(proc.read_text())["capabilities"]
    assert set(caps["bounding"]) == (set(ALL) & _grantable()) | {"CAP_FUTURE_THING"}
    log = tmp_path / "log"
    logged = log.read_text() if log.exists() else ""
    assert _run(tmp_path, "state", "c1").returncode == 0
    assert (tmp_path / "args").read_text().split() == ["state", "c1"]
    assert (log.read_text() if log.exists() else "") == logged  # nothing rewritten for a command that runs nothing
