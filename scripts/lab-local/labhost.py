"""What the local lab's node manager (nodes.py, lab.sh) reads of this machine and does to its processes: the mounts,
the cgroup hierarchies and the directories the lab's cgroups go below, the network interfaces, the processes'
command lines and parent links, SIGKILL, a pidfd's exit. Kept apart from the nodes' lifecycle so that the pure parts
(the /proc/mounts readings) are tested against the bash pipelines they replace (tests/unit/test_lab_nodes.py).
Stdlib only.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # scripts/: cmdkit

import cmdkit as ck  # noqa: E402

LEAVE_OUT = {"rw", "relatime", "nosuid", "nodev", "noexec"}   # mount options a hierarchy's mount does not repeat


def mounts(text: str | None = None) -> list[list[str]]:
    """/proc/mounts as fields (device, mount point, type, options, ...)."""
    text = Path("/proc/mounts").read_text() if text is None else text
    return [line.split() for line in text.splitlines() if len(line.split()) >= 4]


def hierarchies(text: str | None = None) -> str:
    """The name and mount options of every cgroup hierarchy, one per line ("cpu,cpuacct cpu,cpuacct", "systemd
    none,name=systemd", "unified cgroup2"): what node-init.sh mounts in the node's own /sys/fs/cgroup."""
    out = []
    for _dev, point, typ, opts, *_ in mounts(text):
        name = point.rsplit("/", 1)[-1]
        if typ == "cgroup":
            kept = ",".join(o for o in opts.split(",") if o not in LEAVE_OUT)
            out.append(f"{name} {'none,' if kept.startswith('name=') else ''}{kept}")
        elif typ == "cgroup2" and point != "/sys/fs/cgroup":
            out.append(f"{name} cgroup2")
    return "".join(f"{line}\n" for line in out)


def freezer_parent(lab: str) -> str:
    """EDGEBENCH_LAB_FREEZER_PARENT, else what `up` kept in $LAB/freezer-parent, else nothing."""
    fp = os.environ.get("EDGEBENCH_LAB_FREEZER_PARENT", "")
    if not fp:
        try:
            fp = Path(lab, "freezer-parent").read_text().rstrip("\n")
        except OSError:
            fp = ""
    return fp


def cg_dirs(lab: str, text: str | None = None) -> list[str]:
    """The directory of every cgroup hierarchy the lab's cgroups go below; a freezer parent G puts them below G in
    the freezer hierarchy (a machine shared with benchmarks that freeze G while they measure: the nodes pause too)."""
    fp = freezer_parent(lab)
    dirs = []
    for _dev, point, typ, opts, *_ in mounts(text):
        if typ in ("cgroup", "cgroup2"):
            dirs.append(f"{point}/{fp}" if fp and "freezer" in opts.split(",") else point)
    return dirs


def links() -> list[str]:
    """The names of this machine's network interfaces (`ip -o link show`, without the @peer)."""
    p = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    return [ln.split(": ")[1].split("@")[0] for ln in p.stdout.splitlines() if ": " in ln]


def cmdlines() -> dict[int, str]:
    """Every process's command line, its NULs as spaces (as `tr '\\0' ' '` shows it: a trailing space)."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                pass
    return out


def children(pid: int) -> list[int]:
    """The children of PID, from the kernel's parent links (/proc/*/stat; this kernel has no .../children)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[1] == str(pid):
                found.append(int(d.name))
    return sorted(found)


def cgroup_procs(top: str) -> list[str]:
    """The PIDs in every cgroup.procs below TOP (`find TOP -name cgroup.procs -exec cat {} +`)."""
    pids = []
    for root, _dirs, files in os.walk(top):
        if "cgroup.procs" in files:
            try:
                pids += Path(root, "cgroup.procs").read_text().split()
            except OSError:
                pass
    return pids


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def exited(pidfd: int) -> bool:
    """Whether the process behind PIDFD has exited (a pidfd is readable then)."""
    return bool(select.select([pidfd], [], [], 0)[0])


def spawn_init(argv: list[str], logfile: Path, enter: Callable[[], None], timeout: float = 30) -> int | None:
    """Start ARGV, an `unshare --fork --net ...` command line, in a session of its own, its output to LOGFILE, ENTER
    run in the child before the exec; the PID of the process unshare forks (a node's init) once it lives in a network
    namespace of its own, or None when unshare exited or TIMEOUT s passed first.

    The init is found through the handle on unshare (Popen): its child by the kernel's parent link, checked by its
    network namespace. Nothing else forks below unshare (commit d9d28c2: the bash version's job forked helpers that
    its `pgrep -P` could take for the init, and eth0 went to this machine's namespace). It counts once it has exec'd
    its program: between unshare's fork and that exec the child is still unshare, setting up its mounts."""
    with open(logfile, "wb") as log:
        outer = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True, preexec_fn=enter)
    here_net = os.readlink("/proc/self/ns/net")
    unshare_exe: list[str] = []  # unshare's own program, read once it runs (before that: the forked Python)

    def init() -> int | None:
        if outer.poll() is not None:
            raise ck.Fail("unshare exited")
        try:
            unshare_exe[:] = unshare_exe or [os.readlink(f"/proc/{outer.pid}/exe")]
        except OSError:
            return None
        for p in children(outer.pid):
            try:  # in its own network namespace AND past its exec (its mounts, e.g. --mount-proc, are done then)
                if os.readlink(f"/proc/{p}/ns/net") != here_net and os.readlink(f"/proc/{p}/exe") != unshare_exe[0]:
                    return p
            except OSError:
                pass
        return None

    try:
        return ck.poll(init, timeout, "the init")
    except ck.Fail:
        return None
