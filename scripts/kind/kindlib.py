"""What scripts/kind's three programs (dockerd.py, mgmt.py, node_image.py) share: the lock of one `up`/`down` at a time, a small JSON state file, process groups and /proc readers,
and the build of runc-capdrop (the Go program in runc-capdrop/ beside this file)
(errors, polls and the sub-command dispatcher are scripts/cmdkit.py's, shared with scripts/lab-local). Stdlib only: it runs as root under the system Python.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # scripts/: cmdkit

from cmdkit import Fail, Timeout, poll  # noqa: E402


# ------------------------------------------------------------------------------------------------ the lock
class Lock:
    """An exclusive flock(2) on `path` (the same lock as flock(1) takes), with a note of the holder's pid at
    `path.pid`. Not inherited by children (Python's descriptors are close-on-exec)."""

    def __init__(self, path: Path, busy: str):
        self.path, self.busy, self.fd = Path(path), busy, None
        self.note = Path(f"{path}.pid")

    def acquire(self) -> "Lock":
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            try:
                holder = self.note.read_text().strip() or "?"
            except OSError:
                holder = "?"
            raise Fail(self.busy.format(pid=holder), 2) from None
        self.fd = fd
        self.note.write_text(f"{os.getpid()}\n")
        return self

    def release(self) -> None:
        if self.fd is not None:
            self.note.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "Lock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


# ------------------------------------------------------------------------------------------------ state
class State:
    """One small JSON file of what a program changed and must undo (written whole, by rename). `legacy(dir)`
    reads what the bash scripts left as one file per item, so a `down` after an upgrade still undoes an `up` of
    before."""

    def __init__(self, path: Path, legacy: Callable[[Path], dict] | None = None):
        self.path, self.legacy = Path(path), legacy

    def load(self) -> dict:
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            return self.legacy(self.path.parent) if self.legacy and self.path.parent.is_dir() else {}
        except ValueError as e:
            raise Fail(f"{self.path}: not JSON ({e}): remove it after checking what it says") from None

    def save(self, data: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.path)

    def update(self, **items: Any) -> dict:
        data = self.load()
        data.update(items)
        self.save(data)
        return data


# ------------------------------------------------------------------------------------------------ processes
def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is gone for our purposes
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def read_pid(path: Path) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def signal_pid(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def signal_group(pgid: int, sig: int) -> None:
    """A signal to every process of the group `pgid` (one that this program started with start_new_session)."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def stop(pid: int, timeout: float, what: str, group: bool = False) -> None:
    """SIGTERM, wait up to `timeout` s for the process to end, then SIGKILL (the whole group if `group`)."""
    send = signal_group if group else signal_pid
    send(pid, signal.SIGTERM)
    try:
        poll(lambda: not alive(pid), timeout, f"{what} (pid {pid}) to end after SIGTERM", interval=0.25)
    except Timeout:
        pass
    send(pid, signal.SIGKILL)
    if group:
        signal_pid(pid, signal.SIGKILL)


# ------------------------------------------------------------------------------------------------ the machine
def mounts(proc_mounts: str | None = None) -> list[tuple[str, str, str]]:
    """(source, mount point, type) of /proc/mounts, in mount order."""
    text = Path("/proc/mounts").read_text() if proc_mounts is None else proc_mounts
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3:
            out.append((f[0], f[1].replace("\\040", " "), f[2]))
    return out


def cgroup_v1_hierarchy(prefer: tuple[str, ...], proc_mounts: str | None = None) -> str | None:
    """The mount point of the first cgroup v1 hierarchy of `prefer` (by its mount option: a controller such as
    "pids", or a name such as "name=systemd") that is mounted; None where there is none (cgroup v2 only)."""
    text = Path("/proc/mounts").read_text() if proc_mounts is None else proc_mounts
    found = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and f[2] == "cgroup":
            for opt in f[3].split(","):
                found.setdefault(opt, f[1])
    return next((found[p] for p in prefer if p in found), None)


def cgroup_procs(top: Path) -> list[int]:
    """The processes in the cgroup `top` and below it."""
    pids: set[int] = set()
    for procs in Path(top).glob("**/cgroup.procs"):
        try:
            pids.update(int(x) for x in procs.read_text().split())
        except (OSError, ValueError):
            pass
    return sorted(pids)


def under(path: str, roots: list[str]) -> bool:
    """Whether `path` starts with one of `roots` (as the bash scripts' awk index() == 1 did)."""
    return any(path.startswith(r) for r in roots)


def sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def sysctl_get(name: str) -> str | None:
    try:
        return sysctl_path(name).read_text().strip()
    except OSError:
        return None


def sysctl_set(name: str, value: str) -> None:
    sysctl_path(name).write_text(f"{value}\n")


def need_root(why: str = "") -> None:
    if os.geteuid() != 0:
        raise Fail("needs root" + (f" ({why})" if why else ""), 2)


def need_commands(names: list[str], hint: str = "") -> None:
    for n in names:
        if shutil.which(n) is None:
            raise Fail(f"{n} is not installed{hint}", 2)


def run(argv: list[str], quiet: bool = False, check: bool = True, fail: str | None = None, code: int = 1,
        **kw: Any) -> subprocess.CompletedProcess:
    """A command; its output goes where ours goes unless `quiet` (stdout dropped, as `>/dev/null`). A failure is
    Fail(`fail` or `COMMAND failed (exit N)`)."""
    if quiet and "stdout" not in kw and "capture_output" not in kw:
        kw["stdout"] = subprocess.DEVNULL
    try:
        p = subprocess.run(argv, **kw)
    except FileNotFoundError:
        raise Fail(f"{argv[0]}: not found", 2) from None
    if check and p.returncode:
        raise Fail(fail or f"{' '.join(map(str, argv[:3]))} failed (exit {p.returncode})", code)
    return p


def out(argv: list[str], check: bool = False, **kw: Any) -> str:
    """A command's stdout ('' if it failed and not `check`); stderr dropped."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, **kw)
    except FileNotFoundError:
        if check:
            raise Fail(f"{argv[0]}: not found", 2) from None
        return ""
    if check and p.returncode:
        raise Fail(f"{' '.join(map(str, argv[:3]))} failed (exit {p.returncode})")
    return p.stdout if p.returncode == 0 else ""


# ------------------------------------------------------------------------------------------------ runc-capdrop
CAPDROP_DIR = Path(__file__).resolve().parent / "runc-capdrop"   # the Go program: go.mod, *.go


def capdrop_sources(src: Path | None = None) -> list[Path]:
    """What runc-capdrop is built from: go.mod and the .go files but the tests, by name."""
    src = src or CAPDROP_DIR
    return sorted([src / "go.mod", *(p for p in src.glob("*.go") if not p.name.endswith("_test.go"))])


def capdrop_key(src: Path | None = None) -> str:
    """sha256 (hex) over the sources' names and bytes: the built binary's cache key and the kind node image's input
    (a change to the program rebuilds both; a change to its tests neither)."""
    h = hashlib.sha256()
    for p in capdrop_sources(src):
        data = p.read_bytes()
        h.update(f"{p.name} {len(data)}\n".encode() + data)
    return h.hexdigest()


def capdrop_bin(cache: Path | None = None) -> Path:
    """runc-capdrop built for this machine, static (CGO_ENABLED=0, standard library only), once per source:
    CACHE/bin/runc-capdrop-KEY (KEY: capdrop_key's first 16 hex digits; CACHE: $EDGEBENCH_KIND_CACHE, else
    ~/.local/share/edgebench/kind, node_image.py's). Built by `go build` as node_image.py builds crictl."""
    if cache is None:
        home = Path(os.environ.get("HOME") or Path.home())
        cache = Path(os.environ.get("EDGEBENCH_KIND_CACHE") or home / ".local/share/edgebench/kind")
    b = cache / "bin" / f"runc-capdrop-{capdrop_key()[:16]}"
    if os.access(b, os.X_OK):
        return b
    need_commands(["go"], " (make setup installs it): runc-capdrop is built from scripts/kind/runc-capdrop")
    tmp = b.with_name(f".{b.name}.{os.getpid()}")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(tmp), "."], cwd=CAPDROP_DIR,
            env={**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"}, fail="go build of runc-capdrop failed")
        os.replace(tmp, b)
    finally:
        tmp.unlink(missing_ok=True)
    return b
