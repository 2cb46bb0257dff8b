"""scripts/lab-local/labhost.py's spawn_init, the start of a lab node's init without a lab (no bridge, no cgroup, no
address: a `sleep` in a PID and network namespace of its own): the PID it returns is unshare's child in a network
namespace other than this machine's (commit d9d28c2's race: never the job's helper, never this namespace), the hook
runs in unshare's process before the exec, and an unshare that fails is None at once, not after the deadline."""
from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parents[2] / "scripts" / "lab-local"
sys.path.insert(0, str(LAB))

import labhost  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                reason="needs root and unshare")
UNSHARE = ["unshare", "--fork", "--pid", "--mount", "--net", "--propagation", "private"]


def ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_the_init_is_unshares_child_in_a_network_namespace_of_its_own(tmp_path):
    marker = tmp_path / "hook"

    def hook():   # in the child before the exec: what lab.sh's cgroup join does, here a file
        marker.write_text(str(os.getpid()))

    pid = labhost.spawn_init([*UNSHARE, "sleep", "60"], tmp_path / "init.log", hook)
    try:
        assert pid is not None
        assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
        assert os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid")
        assert Path(f"/proc/{pid}/comm").read_text().strip() == "sleep"
        assert ppid(pid) == int(marker.read_text())   # unshare, which ran the hook, is its parent
        fd = os.pidfd_open(pid)
        try:
            assert not labhost.exited(fd)
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while not labhost.exited(fd) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert labhost.exited(fd)
        finally:
            os.close(fd)
    finally:
        if pid:
            labhost.kill(pid)


def test_an_unshare_that_fails_is_none_before_the_deadline(tmp_path):
    t0 = time.monotonic()
    assert labhost.spawn_init(["unshare", "--no-such-option", "true"], tmp_path / "init.log", lambda: None, 20) is None
    assert time.monotonic() - t0 < 10 and "unshare" in (tmp_path / "init.log").read_text()


def test_exec_runs_in_the_nodes_namespaces_with_the_commands_status(tmp_path):
    """`lab.sh exec NODE CMD` against a stand-in node (the spawned sleep as its init; no cgroup of the lab's)."""
    import subprocess

    pid = labhost.spawn_init([*UNSHARE, "sleep", "60"], tmp_path / "init.log", lambda: None)
    assert pid is not None
    try:
        st = tmp_path / "lab" / "nodes" / "stand-in"
        st.mkdir(parents=True)
        (st / "pid").write_text(f"{pid}\n")
        env = {**os.environ, "EDGEBENCH_LAB": str(tmp_path / "lab")}
        run = subprocess.run(["bash", str(LAB / "lab.sh"), "exec", "stand-in", "sh", "-c",
                              "readlink /proc/self/ns/net; exit 7"], env=env, capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 7 and run.stdout.strip() == os.readlink(f"/proc/{pid}/ns/net"), run.stderr
    finally:
        labhost.kill(pid)
