"""The lab's VM nodes, what every part of vm.py shares: the kinds (x86, arm64), node names and addresses,
the lab's bridge and directory, running a command (VmError: one line for the user), SSH to a node."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
NET = "10.77.0"
HOST_IP = f"{NET}.1"
BRIDGE = "eblab0"
TAP_PREFIX = "eblab-v"
NAME_RE = re.compile(r"^lab-v([xa])([1-9])$")


class VmError(Exception):
    """One line for the user; exit 2."""


@dataclass(frozen=True)
class Kind:
    name: str  # x86, arm64
    arch: str  # Debian's architecture
    letter: str  # in node and tap names
    qemu: str
    apt_package: str  # what provides `qemu`
    machine: tuple[str, ...]
    cpu: str
    console: str
    kernel_package: str
    first_octet: int
    timeout: int  # seconds from qemu's start to SSH, default


KINDS = {
    "x86": Kind("x86", "amd64", "x", "qemu-system-x86_64", "qemu-system-x86", ("-M", "q35"), "max", "ttyS0",
                "linux-image-cloud-amd64", 31, 900),
    "arm64": Kind("arm64", "arm64", "a", "qemu-system-aarch64", "qemu-system-arm", ("-M", "virt"), "cortex-a57",
                  "ttyAMA0", "linux-image-arm64", 41, 1800),
}
BY_LETTER = {k.letter: k for k in KINDS.values()}


def log(msg: str) -> None:
    print(f"lab-local: vm: {msg}", file=sys.stderr, flush=True)


# ---- pure parts (tests/unit/test_lab_vm.py) -------------------------------------------------------------------------

def parse_spec(spec: str) -> list[tuple[Kind, int]]:
    """'x86:1,arm64:2' -> [(x86, 1), (arm64, 2)]; VmError naming what is wrong."""
    out: list[tuple[Kind, int]] = []
    seen: set[str] = set()
    for part in [p.strip() for p in spec.split(",") if p.strip()]:
        kind, _, count = part.partition(":")
        if kind not in KINDS:
            raise VmError(f"unknown VM kind {kind!r} in {spec!r} (kinds: {', '.join(KINDS)})")
        if kind in seen:
            raise VmError(f"VM kind {kind!r} given twice in {spec!r}")
        seen.add(kind)
        n = count or "1"
        if not n.isdigit() or not 1 <= int(n) <= 9:
            raise VmError(f"{part!r}: the count must be 1-9")
        out.append((KINDS[kind], int(n)))
    if not out:
        raise VmError(f"empty VM spec {spec!r} (e.g. x86:1,arm64:1)")
    return out


@dataclass(frozen=True)
class VmNode:
    kind: Kind
    index: int  # 1..9

    @property
    def name(self) -> str:
        return f"lab-v{self.kind.letter}{self.index}"

    @property
    def tap(self) -> str:
        return f"{TAP_PREFIX}{self.kind.letter}{self.index}"

    @property
    def address(self) -> str:
        return f"{NET}.{self.kind.first_octet + self.index - 1}"

    @property
    def mac(self) -> str:
        return "52:54:00:4d:00:%02x" % (self.kind.first_octet + self.index - 1)

    @property
    def uuid(self) -> str:  # the guest's product_uuid (kubeadm wants one per node)
        return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{self.name}.edgebench-lab"))


def node_of(name: str) -> VmNode:
    m = NAME_RE.match(name)
    if not m:
        raise VmError(f"{name!r} is not a VM node name (lab-vx1..9, lab-va1..9)")
    return VmNode(BY_LETTER[m.group(1)], int(m.group(2)))


def nodes_of(spec: list[tuple[Kind, int]]) -> list[VmNode]:
    return [VmNode(k, i) for k, n in spec for i in range(1, n + 1)]



def lab_dir() -> Path:
    return Path(os.environ.get("EDGEBENCH_LAB", "/srv/edgebench-lab"))


def run(*cmd: str, log_to: Path | None = None, check: bool = True, **kw) -> subprocess.CompletedProcess:
    if log_to is None:
        p = subprocess.run(list(cmd), capture_output=True, text=True, **kw)
    else:
        with open(log_to, "a") as f:
            f.write(f"+ {shlex.join(cmd)}\n")
            f.flush()
            p = subprocess.run(list(cmd), stdout=f, stderr=subprocess.STDOUT, text=True, **kw)
    if check and p.returncode:
        tail = (p.stderr or p.stdout or "").strip().splitlines()[-1:] if log_to is None else \
            log_to.read_text().strip().splitlines()[-3:]
        raise VmError(f"{shlex.join(cmd)[:120]} failed (exit {p.returncode}): {' | '.join(tail)}"
                      + (f" (log: {log_to})" if log_to else ""))
    return p


def need(cmd: str, package: str) -> None:
    if not shutil.which(cmd):
        raise VmError(f"{cmd} is not installed: apt install {package} (or make lab-vm)")


def need_root() -> None:
    if os.geteuid() != 0:
        raise VmError("VM nodes need root (taps on the lab's bridge, debootstrap, chroot)")


def ssh_argv(lab: Path, address: str, *cmd: str, timeout: int = 5) -> list[str]:
    return ["ssh", "-i", str(lab / "id_ed25519"), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={lab / 'known_hosts'}", "-o", f"ConnectTimeout={timeout}",
            "-o", "LogLevel=ERROR", f"edgebench@{address}", "--", *cmd]


def freezer_state() -> str:
    """The CPU-sharing freezer cgroup's state where this machine has one (a timing taken while FROZEN is invalid)."""
    try:
        return Path("/sys/fs/cgroup/freezer/eb-heavy/freezer.state").read_text().strip()
    except OSError:
        return "none"
