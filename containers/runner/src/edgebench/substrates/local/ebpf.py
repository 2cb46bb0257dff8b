"""The testbed's eBPF forwarding (a CNI mode with `forward: ebpf` in the catalog: Cilium's): the tc programs of
bpf/tunnel_forward.c, built once per source and flags with clang and cached, attached to each pod's host-side veth
and to the device packets from other nodes arrive on. What the programs do and leave out is said in the source.

Building needs clang and libbpf's headers (`apt-get install clang libbpf-dev`; `make setup` installs them); loading
needs a kernel with BPF and tc's clsact. Where either is missing, the mode is unsupported with the reason (`probe`),
never built without its programs."""

from __future__ import annotations

import hashlib
import os
import sysconfig
from pathlib import Path
from typing import Callable

from edgebench import sh

SOURCE = Path(__file__).parent / "bpf" / "tunnel_forward.c"
# the tunnel device's interface index, the same in every node namespace (an index is per namespace), so that one
# object serves every node
TUNNEL_IFINDEX = 4242
INSTALL_HINT = "apt-get install clang libbpf-dev"


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "edgebench" / "bpf"


def bpf_clang() -> list[str]:
    """clang's command line for a BPF object of the testbed's: BPF target, the kernel's UAPI headers of this
    architecture (asm/ lives under the multiarch include directory on Debian)."""
    argv = ["clang", "-O2", "-g", "-Wall", "-Werror", "-target", "bpf"]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch and Path(f"/usr/include/{multiarch}").is_dir():
        argv.append(f"-I/usr/include/{multiarch}")
    return argv


def compile_argv(source: Path, output: Path, vni: int) -> list[str]:
    """clang's command line for the object: bpf_clang(), the tunnel's index and VNI."""
    return [*bpf_clang(), f"-DTUNNEL_IFINDEX={TUNNEL_IFINDEX}", f"-DVNI={vni}", "-c", str(source), "-o", str(output)]


def object_path(vni: int, source: Path = SOURCE) -> Path:
    """Where the object built from this source for this VNI is cached (the name carries the source's hash and the
    flags, so an edited source is rebuilt)."""
    key = hashlib.sha256(source.read_bytes() + f"{TUNNEL_IFINDEX}/{vni}".encode()).hexdigest()[:16]
    return cache_dir() / f"tunnel_forward-{key}.o"


def build(vni: int, source: Path = SOURCE) -> Path:
    """The object for this VNI, compiled unless cached. Raises sh.CommandError with clang's message."""
    return compile_cached(object_path(vni, source), lambda partial: compile_argv(source, partial, vni))


def compile_cached(out: Path, argv: Callable[[Path], list[str]]) -> Path:
    """`out` (a path in cache_dir() whose name carries what it is built from), built by running argv(partial) and
    renaming the partial file into place unless it exists. Raises sh.CommandError with the compiler's message; a
    failed build leaves nothing behind."""
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        try:
            sh.run(argv(partial))
            partial.replace(out)
        finally:
            partial.unlink(missing_ok=True)
    return out


def missing() -> str | None:
    """What building needs and this machine lacks, or None."""
    if sh.which("clang") is None:
        return f"clang is not installed ({INSTALL_HINT})"
    if not Path("/usr/include/bpf/bpf_helpers.h").exists():
        return f"libbpf's headers are not installed ({INSTALL_HINT})"
    return None


def tc_lines(dev: str, obj: Path, hooks: list[tuple[str, str]]) -> list[str]:
    """`tc -batch` lines that give `dev` a clsact qdisc and attach, per (direction, program) of `hooks`, that
    program of `obj` in direct-action mode (direction: ingress or egress)."""
    return [f"qdisc add dev {dev} clsact",
            *(f"filter add dev {dev} {direction} bpf direct-action obj {obj} sec tc/{program}"
              for direction, program in hooks)]


def probe(scratch_ns: str, vni: int) -> str | None:
    """None if the programs build here and this kernel loads them (tried on a veth in the scratch namespace
    `scratch_ns`, which the caller made and removes; a veth, which every testbed needs, not a dummy device, which
    some kernels lack), else the reason."""
    reason = missing()
    if reason:
        return f"the eBPF forwarding cannot be built: {reason}"
    try:
        obj = build(vni)
    except sh.CommandError as e:
        return f"the eBPF forwarding does not compile here: {e}"
    good, err = sh.ok(["ip", "-n", scratch_ns, "link", "add", "bpf0", "type", "veth", "peer", "name", "bpf1"])
    if good:
        lines = tc_lines("bpf0", obj, [("ingress", "from_overlay")])
        proc = sh.call(["ip", "netns", "exec", scratch_ns, "tc", "-batch", "-"], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=60)
        good, err = proc.returncode == 0, (proc.stderr or proc.stdout).strip()
    return None if good else f"this kernel does not load the eBPF forwarding's tc programs: {err}"
