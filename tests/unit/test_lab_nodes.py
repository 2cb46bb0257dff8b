"""scripts/lab-local/lab.sh (nodes.py, labhost.py: the bash lab.sh ported, issue 45): what it reads of /proc/mounts
checked against the bash version's awk programs, the inventory's format, and the command line's messages and exit
statuses (usage, --help, bad arguments: nothing made). Offline: nothing is started, nothing outside tmp_path is
written. Starting and stopping real nodes is tests/host/test_lab_local.py's."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "scripts" / "lab-local"
sys.path.insert(0, str(LAB))

import labhost  # noqa: E402
import nodes  # noqa: E402

# the bash lab.sh's hierarchies() and cg_dirs(), verbatim
BASH_HIERARCHIES = r"""awk '$3 == "cgroup" {n = $2; sub(".*/", "", n); split($4, o, ","); opts = ""
         for (i in o) if (o[i] != "rw" && o[i] != "relatime" && o[i] != "nosuid" && o[i] != "nodev" && o[i] != "noexec")
           opts = opts (opts == "" ? "" : ",") o[i]
         if (opts ~ /^name=/) opts = "none," opts
         print n, opts}
       $3 == "cgroup2" {n = $2; sub(".*/", "", n); if ($2 != "/sys/fs/cgroup") print n, "cgroup2"}' "$1"
"""
BASH_CG_DIRS = r"""awk -v fp="$2" '$3 == "cgroup" || $3 == "cgroup2" {
    d = $2; if (fp != "" && $4 ~ /(^|,)freezer(,|$)/) d = d "/" fp; print d}' "$1"
"""
MOUNTS = """tmpfs /sys/fs/cgroup tmpfs rw,nosuid,nodev,noexec,mode=755 0 0
cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0
cgroup /sys/fs/cgroup/freezer cgroup rw,nosuid,nodev,noexec,relatime,freezer 0 0
cgroup /sys/fs/cgroup/net_cls cgroup rw,relatime,net_cls,freezer_like 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,nosuid,nodev,noexec,relatime,xattr,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,relatime 0 0
cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
"""


def bash(script: str, *args: str) -> str:
    return subprocess.run(["bash", "-c", script, "bash", *args], capture_output=True, text=True, check=True).stdout


def by_line(text: str) -> list[tuple[str, set[str]]]:
    """Lines as (name, set of options): awk's `for (i in o)` does not promise the options' order (mount does not
    care)."""
    return [(ln.split()[0], set(ln.split()[1].split(","))) for ln in text.splitlines()]


@pytest.mark.parametrize("source", ["synthetic", "this machine"])
def test_hierarchies_and_cgroup_dirs_are_the_bash_versions(tmp_path, monkeypatch, source):
    mounts = tmp_path / "mounts"
    mounts.write_text(MOUNTS if source == "synthetic" else Path("/proc/mounts").read_text())
    text = mounts.read_text()
    assert by_line(labhost.hierarchies(text)) == by_line(bash(BASH_HIERARCHIES, str(mounts)))
    monkeypatch.delenv("EDGEBENCH_LAB_FREEZER_PARENT", raising=False)
    lab = tmp_path / "lab"
    assert labhost.cg_dirs(str(lab), text) == bash(BASH_CG_DIRS, str(mounts), "").split()
    # the freezer parent: from the environment, else what `up` kept in $LAB/freezer-parent
    lab.mkdir()
    (lab / "freezer-parent").write_text("eb-heavy\n")
    kept = labhost.cg_dirs(str(lab), text)
    assert kept == bash(BASH_CG_DIRS, str(mounts), "eb-heavy").split()
    monkeypatch.setenv("EDGEBENCH_LAB_FREEZER_PARENT", "other")
    assert labhost.cg_dirs(str(lab), text) == bash(BASH_CG_DIRS, str(mounts), "other").split()
    if source == "synthetic":
        assert "/sys/fs/cgroup/freezer/eb-heavy" in kept and "/sys/fs/cgroup/net_cls" in kept
        assert labhost.hierarchies(text).splitlines()[3:] == ["systemd xattr,name=systemd", "unified cgroup2"]


def test_the_inventory_is_the_pi_labs_format(tmp_path):
    lab = nodes.Lab(str(tmp_path))
    lab.inventory(nodes.node_names(3))
    arch = labhost_arch()
    assert (tmp_path / "inventory.yaml").read_text() == f"""\
# written by scripts/lab-local/lab.sh: the local lab's nodes share this machine's kernel and cores
target: lab-local
artifact_source: http://10.77.0.1:8089   # the lab's mirror (mirror.sh serve 10.77.0.1), for sweeps and Argo
nodes:
  - {{name: lab-cp, address: 10.77.0.11, arch: {arch}, role: server, user: edgebench, port: 22}}
  - {{name: lab-w1, address: 10.77.0.12, arch: {arch}, role: agent, user: edgebench, port: 22}}
  - {{name: lab-w2, address: 10.77.0.13, arch: {arch}, role: agent, user: edgebench, port: 22}}
"""
    assert (tmp_path / "hosts").read_text() == "10.77.0.11 lab-cp\n10.77.0.12 lab-w1\n10.77.0.13 lab-w2\n"
    assert lab.node_addr("lab-w2") == "10.77.0.13" and lab.node_addr("lab-w9") == ""


def labhost_arch() -> str:
    return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()


def test_a_nodes_pid_and_log_tail(tmp_path):
    lab = nodes.Lab(str(tmp_path))
    st = tmp_path / "nodes" / "lab-cp"
    st.mkdir(parents=True)
    assert not lab.alive("lab-cp") and lab.init_pid("lab-cp") is None
    (st / "pid").write_text(f"{os.getpid()}\n")
    assert lab.alive("lab-cp") and lab.init_pid("lab-cp") == os.getpid()
    (st / "pid").write_text("garbage\n")
    assert not lab.alive("lab-cp")
    (st / "init.log").write_text("a\nb\nc\nd\n")
    assert lab.log_tail(st) == "b c d "   # `tail -n 3 | tr '\n' ' '`, then "(log: ...)" follows


def lab_sh(tmp_path: Path, *args: str, lab: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEBENCH_") and k not in ("VMS", "FORCE")}
    env["EDGEBENCH_LAB"] = lab or str(tmp_path / "lab")
    return subprocess.run(["bash", str(LAB / "lab.sh"), *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args,lab,message", [
    ([], None, "usage: lab.sh up [N]|down|status|exec NODE CMD|leftovers|env|vm CMD (--help)"),
    (["bogus"], None, "usage: lab.sh up [N]|down|status|exec NODE CMD|leftovers|env|vm CMD (--help)"),
    (["exec", "lab-cp"], None, "lab-local: error: usage: lab.sh exec NODE CMD..."),
    (["exec", "lab-cp", "true"], None, "lab-local: error: node lab-cp is not running (lab.sh up)"),
    (["up"], None, "lab-local: error: EDGEBENCH_LAB={lab}: not below /tmp or /run (each node mounts its own)"),
    (["up", "1"], "/nonexistent/eb-lab", "lab-local: error: a lab needs at least 2 nodes (1 control plane + "
                                         "workers); got 1"),
    (["up", "10"], "/nonexistent/eb-lab", "lab-local: error: at most 9 nodes (2 cores here); got 10"),
])
def test_bad_input_is_one_line_exit_2_and_makes_nothing(tmp_path, args, lab, message):
    if os.geteuid() != 0 and args[:1] == ["up"]:
        message = "lab-local: error: the lab needs root (namespaces, mounts, cgroups)"
    run = lab_sh(tmp_path, *args, lab=lab)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [message.format(lab=tmp_path / "lab")], run.stderr
    assert not any(tmp_path.iterdir()) and not Path("/nonexistent").exists()


def test_help_env_and_status_without_a_lab(tmp_path):
    text = lab_sh(tmp_path, "--help")
    assert text.returncode == 0 and text.stdout.startswith("The local lab (`make lab-local`)")
    for verb in ("up [N]", "down", "status", "exec NODE CMD", "leftovers", "env", "vm CMD ..."):
        assert f"  lab.sh {verb}" in text.stdout
    lab = tmp_path / "lab"
    env = lab_sh(tmp_path, "env")
    assert env.stdout == (f"export EDGEBENCH_INVENTORY={lab}/inventory.yaml EDGEBENCH_SSH_KEY={lab}/id_ed25519 "
                          f"EDGEBENCH_KNOWN_HOSTS={lab}/known_hosts\n")
    assert lab_sh(tmp_path, "status").stdout == "no lab (lab.sh up)\n"
    lab.mkdir()
    (lab / "hosts").write_text("10.77.0.11 lab-cp\n10.77.0.12 lab-w1\n")
    (lab / "nodes" / "lab-cp").mkdir(parents=True)
    (lab / "nodes" / "lab-cp" / "pid").write_text(f"{os.getpid()}\n")   # a live PID: "up"
    status = lab_sh(tmp_path, "status")
    assert status.returncode == 0
    assert status.stdout == f"lab-cp 10.77.0.11 up (PID {os.getpid()})\nlab-w1 10.77.0.12 down\n"


def test_lab_sh_is_a_thin_entry_point():
    assert len((LAB / "lab.sh").read_text().splitlines()) < 10
    for name in ("nodes.py", "labhost.py"):
        assert len((LAB / name).read_text().splitlines()) < 600
