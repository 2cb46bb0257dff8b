"""Host-network containers on the testbed (the CNI entry `host-container`): a tool started by an endpoint runs in a
runc container that joins its node's network namespace, as a Kubernetes hostNetwork pod's container does; the host
baseline runs the same tool as a plain process in that namespace. So the pair compares a process on the node
("bare metal") with the same process in a container, on the same kernel datapath.

What the container is: runc (Debian's, the runtime containerd and Kubernetes use) with its own PID, mount, IPC and
UTS namespaces and cgroup, the node's network namespace, this machine's root filesystem read-only (a recursive bind
mount, slave so nothing propagates back) with the node's /tmp writable in it (the tools' files), a dozen capabilities
(NET_ADMIN, NET_RAW, SYS_NICE, ...: more than a pod's default set, none of them used on the measured path), and no
seccomp filter: Kubernetes runs containers Unconfined unless a pod or the kubelet asks for RuntimeDefault. What it is
not: a container image (no overlay filesystem), containerd or a kubelet, a CPU or memory limit, or Docker's default
seccomp profile (which seed 000's Fig. 4 containers had).

Killing the launcher kills the container: `run` starts runc as its child and a reaper process that waits for the
launcher's end (a pidfd) and then deletes the container (`runc delete --force`), so a driver that SIGKILLs a server
leaves nothing running. `cleanup(prefix)` (Testbed.down) deletes every container, bundle and the root bind mount of a
testbed prefix.
"""
from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Sequence

from edgebench import sh

RUNTIME = "runc"
# the launcher's entry (`python -c`, not `-m`: the package imports this module, and -m would run a second copy)
_ENTRY = "import sys; from edgebench.substrates.local.container import main; sys.exit(main(sys.argv[1:]))"


def _run_dir() -> Path:
    return Path(os.environ.get("EDGEBENCH_RUN_DIR", "/run/edgebench"))


def state_root(prefix: str) -> Path:
    """runc's state directory for a testbed prefix (`runc --root`): its containers and nothing else."""
    return _run_dir() / f"runc-{prefix}"


def _work(prefix: str) -> Path:
    return _run_dir() / f"containers-{prefix}"


def wrap(ns: str, prefix: str, argv: Sequence[str]) -> list[str]:
    """The command that runs argv in a new host-network container of namespace `ns`."""
    return [sys.executable, "-c", _ENTRY, "run", prefix, ns, "--", *sh.resolved(argv)]


def config(args: Sequence[str], ns: str, rootfs: Path, cwd: str = "/") -> dict:
    """runc's config.json (OCI runtime spec 1.0) for one tool run."""
    caps = ["CAP_" + c for c in ("CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "NET_ADMIN", "NET_BIND_SERVICE",
                                 "NET_RAW", "SETGID", "SETUID", "SYS_ADMIN", "SYS_NICE", "IPC_LOCK")]
    return {
        "ociVersion": "1.0.2",
        "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "args": list(args), "cwd": cwd,
                    "env": [f"PATH={os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}", "HOME=/root"],
                    "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
                    "noNewPrivileges": False},
        "root": {"path": str(rootfs), "readonly": True},
        "hostname": f"eb-{ns}"[:63],
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "nodev", "mode=1777"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
            # the node's /tmp, writable: iperf3 keeps its stream buffers there, the HTTP driver its payload files
            {"destination": "/tmp", "type": "bind", "source": "/tmp", "options": ["rbind", "rw"]},
        ],
        "linux": {"namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts")]
                  + [{"type": "network", "path": f"/var/run/netns/{ns}"}],
                  "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list"]},
    }


def _mounted(path: Path) -> bool:
    return sh.call(["mountpoint", "-q", str(path)]).returncode == 0


def _rootfs(prefix: str) -> Path:
    """The read-only root every container of the prefix shares: a recursive, slave bind mount of / (made once; the
    server and the client of a run start together, hence the lock)."""
    root = _work(prefix) / "rootfs"
    root.mkdir(parents=True, exist_ok=True)
    with open(_work(prefix) / "rootfs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _mounted(root):
            sh.call(["mount", "--rbind", "/", str(root)], check=True)
            sh.call(["mount", "--make-rslave", str(root)], check=True)
    return root


def _reap(launcher: int, prefix: str, cid: str, bundle: Path) -> None:
    """In a detached child: wait for the launcher to end however it ends, then delete the container."""
    if os.fork():
        os.wait()  # the first child exits at once
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # never hold the launcher's pipes open (its reader waits for their end)
        os.dup2(null, fd)
    try:
        fd = os.pidfd_open(launcher)
        select.select([fd], [], [])
    except (ProcessLookupError, OSError):
        pass
    if (state_root(prefix) / cid).exists():  # not when the testbed's cleanup deleted it first
        sh.call([RUNTIME, "--root", str(state_root(prefix)), "delete", "--force", cid],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(bundle, ignore_errors=True)
    os._exit(0)


def run(prefix: str, ns: str, argv: Sequence[str]) -> int:
    """Run argv in a container in netns `ns`; its exit code (128 + signal when killed)."""
    cid = f"eb-{uuid.uuid4().hex[:12]}"
    bundle = _work(prefix) / "bundles" / cid
    bundle.mkdir(parents=True)
    (bundle / "config.json").write_text(json.dumps(config(argv, ns, _rootfs(prefix))))
    state_root(prefix).mkdir(parents=True, exist_ok=True)
    _reap(os.getpid(), prefix, cid, bundle)
    proc = sh.popen([RUNTIME, "--root", str(state_root(prefix)), "run", "--bundle", str(bundle), cid])
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # passed on; runc forwards them to the tool
        signal.signal(sig, lambda s, _f: proc.send_signal(s))
    return proc.wait()


def containers(prefix: str) -> list[str]:
    """The ids of the prefix's containers runc knows (running or stopped)."""
    root = state_root(prefix)
    if not root.exists():
        return []
    out = sh.call([RUNTIME, "--root", str(root), "list", "-q"], capture_output=True, text=True)
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def cleanup(prefix: str) -> list[str]:
    """Delete every container of the prefix, its bundles and the root bind mount; returns the containers removed."""
    gone = containers(prefix)
    for cid in gone:
        sh.call([RUNTIME, "--root", str(state_root(prefix)), "delete", "--force", cid],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    work = _work(prefix)
    root = work / "rootfs"
    if root.exists() and _mounted(root):
        if sh.call(["umount", "-R", str(root)], capture_output=True).returncode != 0:
            sh.call(["umount", "-R", "-l", str(root)], capture_output=True)  # busy: detach it now
    # never a recursive delete across the bind mount of /: the bundles' files, then empty directories only
    shutil.rmtree(work / "bundles", ignore_errors=True)
    (work / "rootfs.lock").unlink(missing_ok=True)
    for d in (root, work):
        try:
            d.rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise RuntimeError(f"{d} is still mounted or not empty after cleanup: {exc}") from None
    shutil.rmtree(state_root(prefix), ignore_errors=True)
    return gone


def main(args: Sequence[str]) -> int:
    if len(args) >= 4 and args[0] == "run" and args[3] == "--":
        return run(args[1], args[2], args[4:])
    print("usage: python -m edgebench.substrates.local.container run PREFIX NETNS -- COMMAND...", file=sys.stderr)
    return 2


