"""The testbed's socket load balancer (a CNI mode with `forward: ebpf` in the catalog: Cilium's, whose kube-proxy
replacement the local lab runs): bpf/sock_lb.c's cgroup programs on each node's pods, and their service map.

Every pod process of such a mode starts in its node's cgroup v2 `edgebench-<prefix>-sock-n<i>` (Endpoint.cmd), to
which the programs are attached, so each of its connect(), UDP sendmsg and UDP recvmsg passes through them, as on a
real node (where they sit on the root cgroup). Measured on the local lab's real cilium (bpf_stats, 2026-11-29): the
recvmsg hook was the largest of its programs in a DDS round trip; the testbed had no such hook before this.
A service the testbed adds is written to the node's `services` map too: a pod's connect() or sendto() to the
ClusterIP leaves addressed to the backend (the service proxy's DNAT is not reached, as with Cilium's).
The hooks report to the node's `events` perf array where Cilium's socket load balancer tracing does (its agent's
`trace-sock`, on by default): every UDP message a pod receives, and every operation towards a service. A monitor
process per node (`sock_lb_loader monitor`, in the node's namespace, so Testbed.down ends it with the rest; a reset
spares it, Endpoints.agent_pids) reads the events as the agent's perf reader does: a wake-up an event.

bpf/sock_lb_loader.c loads and attaches the programs (the cgroup keeps them: no bpffs, no pinning) and edits the
map by id. Both are built with clang and libbpf (`make setup` installs them) and cached like ebpf.py's object.
Removing the cgroup (remove(), from Testbed.down) releases the programs and their maps. Where cgroup v2 is not
mounted or the kernel refuses the programs, the mode is unsupported with the reason (`probe`)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path
from typing import Callable

from edgebench import sh
from edgebench.substrates.local import ebpf
from edgebench.substrates.local.cpuclass import CGROUP_ROOT, remove_matching

BPF_DIR = Path(__file__).parent / "bpf"
SOURCE = BPF_DIR / "sock_lb.c"
LOADER_SOURCE = BPF_DIR / "sock_lb_loader.c"
NAME = "edgebench-{prefix}-sock-n{node}"

Run = Callable[[list[str]], str]


def cgroup2(root: Path = CGROUP_ROOT) -> Path | None:
    """The cgroup v2 hierarchy: at the root (a v2 machine) or at root/unified (a hybrid one); None when neither."""
    for d in (root, root / "unified"):
        if (d / "cgroup.controllers").is_file():
            return d
    return None


def _cached(name: str, source: Path, argv: Callable[[Path], list[str]]) -> Path:
    """ebpf.compile_cached under a name that carries the source's and the command line's hash."""
    key = hashlib.sha256(source.read_bytes() + " ".join(argv(Path("x"))).encode()).hexdigest()[:16]
    return ebpf.compile_cached(ebpf.cache_dir() / f"{name}-{key}", argv)


def build() -> tuple[Path, Path]:
    """(the programs' object, the loader), compiled unless cached. Raises sh.CommandError with clang's message."""
    obj = _cached("sock_lb.o", SOURCE, lambda out: [*ebpf.bpf_clang(), "-c", str(SOURCE), "-o", str(out)])
    loader = _cached("sock_lb_loader", LOADER_SOURCE, lambda out: ["clang", "-O2", "-Wall", "-Werror", "-o",
                                                                   str(out), str(LOADER_SOURCE), "-lbpf"])
    return obj, loader


def missing(root: Path = CGROUP_ROOT) -> str | None:
    """What the socket load balancer needs and this machine lacks, or None."""
    reason = ebpf.missing()
    if reason:
        return reason
    if cgroup2(root) is None:
        return (f"no cgroup v2 hierarchy at {root} or {root}/unified, which its cgroup hooks attach to "
                f"(mount -t cgroup2 none {root}/unified)")
    return None


def attach(prefix: str, node: int, root: Path = CGROUP_ROOT, run: Run | None = None) -> dict:
    """Node `node`'s cgroup, created, with the programs attached; returns {"cgroup", "services", "reverse",
    "counts", "events"} (the directory and the maps' ids). Raises sh.CommandError with the loader's message."""
    obj, loader = build()
    base = cgroup2(root)
    if base is None:
        raise sh.CommandError(["mkdir", str(root / "unified")], 1, missing(root) or "no cgroup v2 hierarchy")
    cg = base / NAME.format(prefix=prefix, node=node)
    cg.mkdir(exist_ok=True)
    out = (run or sh.run)([str(loader), "attach", str(obj), str(cg)])
    return {"cgroup": str(cg), **json.loads(out)}


MONITOR_READY_S = 10.0


def start_monitor(rec: dict, ns: str) -> subprocess.Popen:
    """The node's monitor (the agent's perf reader) on its events map, started in the node's namespace `ns` and
    left running; returns once it reads. Raises sh.CommandError when it does not become ready."""
    argv = ["ip", "netns", "exec", ns, str(build()[1]), "monitor", str(rec["events"])]
    proc = sh.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + MONITOR_READY_S
    while time.monotonic() < deadline and proc.poll() is None:
        if (proc.stdout.readline() if proc.stdout else "").startswith("ready"):
            return proc
    proc.kill()
    _, err = proc.communicate(timeout=10)
    raise sh.CommandError(argv, proc.returncode or 1, err or "the monitor did not become ready")


def add_service(rec: dict, cluster_ip: str, port: int, backend_ip: str, backend_port: int,
                run: Run | None = None) -> None:
    """cluster_ip:port -> backend (TCP and UDP) in the node's service map (`rec`: attach()'s record)."""
    (run or sh.run)([str(build()[1]), "service", str(rec["services"]), cluster_ip, str(port), backend_ip,
                     str(backend_port)])


def flush(rec: dict, run: Run | None = None) -> None:
    (run or sh.run)([str(build()[1]), "flush", str(rec["services"])])


def counts(rec: dict, run: Run | None = None) -> dict[str, int]:
    """What the node's programs did so far: {"translated", "reversed", "missed"} (operations, all CPUs)."""
    out = (run or sh.run)([str(build()[1]), "counts", str(rec["counts"])]).split()
    return dict(zip(("translated", "reversed", "missed"), map(int, out)))


def remove(prefix: str, root: Path = CGROUP_ROOT) -> list[str]:
    """Delete every edgebench-<prefix>-sock-n* cgroup (processes still inside moved to the root first), which
    releases its programs and maps; the names removed."""
    base = cgroup2(root)
    return remove_matching(base, NAME.format(prefix=prefix, node="*")) if base is not None else []


def probe(prefix: str, root: Path = CGROUP_ROOT) -> str | None:
    """None if the programs build here and this kernel attaches them (to a scratch cgroup, removed after), else the
    reason."""
    reason = missing(root)
    if reason:
        return f"the socket load balancer cannot be built: {reason}"
    scratch = f"{prefix}-probe"
    try:
        attach(scratch, 0, root)
    except sh.CommandError as e:
        return f"this kernel does not attach the socket load balancer's cgroup programs: {e}"
    finally:
        remove(scratch, root)
    return None
