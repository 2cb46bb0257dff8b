"""VM nodes for the local lab: qemu full-system guests with a kernel of their own (Debian bookworm's stock kernel),
beside lab.sh's namespace nodes, for what this machine's kernel cannot do (WireGuard, Geneve, IPIP, ESP, netem).

Each node is a qemu guest under TCG (no KVM: nested guests hang here), booted directly from the base image's kernel
and initrd (-kernel/-initrd/-append: no boot loader), its disk a qcow2 overlay over one cached base image per kind.
It hangs off the lab's bridge eblab0 through a tap (eblab-vx1, eblab-va1, ...: its uplink, where link conditions apply
as on the namespace nodes' veths), with a static address, sshd with the lab's key, the user `edgebench` with
passwordless sudo, and a line in the lab's inventory (the Pi lab's format, role agent, `cpu: emulated`).

    vm.py up SPEC          start VM nodes, SPEC = KIND:COUNT[,KIND:COUNT] (kinds: x86, arm64), e.g. x86:1,arm64:1;
                           builds a kind's base image first when it is not cached (debootstrap; minutes)
    vm.py image KIND       build (or check) KIND's cached base image only
    vm.py down             stop every VM node: qemu processes, taps, overlays, state, inventory lines
    vm.py status           the VM nodes and whether their qemu runs
    vm.py leftovers        what VM nodes left on this machine, one line each; exit 1 if anything
    vm.py argv NAME        the qemu command line of a running node (or of a node that `up` would start)
    vm.py ssh NAME CMD...  run CMD on a node as `edgebench` over SSH
    vm.py smoke A B        on two running VM nodes: modprobe wireguard, geneve, ipip, esp4, xfrm_user, sch_netem, then a
                           geneve, wireguard, ipip and ESP (xfrm transport) tunnel and netem delay 10ms, each checked
                           by a ping from A; prints a JSON report (works, or the exact error); exit 1 if one fails

kinds        x86: qemu-system-x86_64 -M q35 -cpu max, Debian's linux-image-cloud-amd64 (it carries wireguard, geneve,
             ipip, esp4, xfrm_user and sch_netem as modules), addresses 10.77.0.31-39, names lab-vx1..9
             arm64: qemu-system-aarch64 -M virt -cpu cortex-a57 (a Raspberry Pi stand-in), Debian's
             linux-image-arm64, addresses 10.77.0.41-49, names lab-va1..9
state        $EDGEBENCH_LAB/vms/NAME (default /srv/edgebench-lab): disk.qcow2 (the overlay), console.log, qemu.log,
             pid, node.json; lab.sh down / leftovers call this script's down / leftovers
cache        ~/.local/share/edgebench/lab/vm/KIND-KEY: base.qcow2, vmlinuz, initrd.img, image.json; KEY hashes the
             recipe (suite, packages, kernel package, the guest's init script), so a changed recipe builds a new one
             ($EDGEBENCH_LAB_CACHE moves it); boot times append to ~/.local/share/edgebench/lab/vm/boot-times.jsonl

Emulated CPUs are 10-50x slower than the host's: these nodes prove that things work, never how fast. Run the whole
command under a CPU-sharing wrapper when the machine is shared (the qemu processes inherit its cgroup).
Environment: EDGEBENCH_LAB, EDGEBENCH_LAB_CACHE, EDGEBENCH_VM_MEMORY (MiB, default 2048), EDGEBENCH_VM_SMP (default 2),
EDGEBENCH_VM_TIMEOUT (seconds to wait for SSH; default 900 x86, 1800 arm64), EDGEBENCH_DEBIAN_MIRROR.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
NET = "10.77.0"
HOST_IP = f"{NET}.1"
BRIDGE = "eblab0"
SUITE = "bookworm"
RECIPE = 1  # bump to rebuild every base image
IMAGE_SIZE = "8G"  # the base filesystem (sparse; containerd's images of a worker go into each overlay)
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

# what every guest has besides debootstrap's minbase: an init (systemd), sshd + sudo for the ssh substrate, what the
# kubeadm node setup (substrates/clusters/install/artifacts.py) and kubeadm's preflight use, and the tunnel tools
PACKAGES = (
    "systemd-sysv", "udev", "kmod", "initramfs-tools", "openssh-server", "sudo", "iproute2", "iputils-ping",
    "ca-certificates", "curl", "iptables", "conntrack", "ethtool", "socat", "ebtables", "procps", "netbase",
    "wireguard-tools", "iperf3", "libseccomp2", "less",
)
# modules the initrd must carry to find the root disk (MODULES=most has them; listed so it does not depend on that)
INITRD_MODULES = ("virtio_pci", "virtio_blk", "virtio_net", "ext4")

# the guest's per-node configuration comes from qemu's fw_cfg (opt/edgebench/node: shell assignments, .../hostkey:
# the node's ed25519 host key, generated here so the lab's known_hosts is written before the guest boots)
GUEST_INIT = r"""#!/bin/sh
# edgebench VM node: name, address, host key and the lab's key from qemu's fw_cfg (scripts/lab-local/vm.py)
set -eu
modprobe qemu_fw_cfg
d=/sys/firmware/qemu_fw_cfg/by_name/opt/edgebench
for i in $(seq 1 100); do [ -r $d/node/raw ] && break; sleep 0.1; done
cat $d/node/raw > /run/edgebench-node.env
. /run/edgebench-node.env
hostname "$EB_NAME"
echo "$EB_NAME" > /etc/hostname
printf '127.0.0.1 localhost\n%s\n' "$EB_HOSTS" > /etc/hosts
install -m 600 $d/hostkey/raw /etc/ssh/ssh_host_ed25519_key
ssh-keygen -y -f /etc/ssh/ssh_host_ed25519_key > /etc/ssh/ssh_host_ed25519_key.pub
install -d -m 700 -o edgebench -g edgebench /home/edgebench/.ssh
printf '%s\n' "$EB_PUBKEY" > /home/edgebench/.ssh/authorized_keys
chown edgebench:edgebench /home/edgebench/.ssh/authorized_keys
chmod 600 /home/edgebench/.ssh/authorized_keys
ip link set lo up
ip link set eth0 up
ip addr replace "$EB_ADDR" dev eth0
ip route replace default via "$EB_GW"
"""
GUEST_UNIT = """[Unit]
Description=edgebench VM node configuration (fw_cfg)
DefaultDependencies=no
After=local-fs.target systemd-udevd.service
Before=ssh.service network.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/edgebench-vm-init

[Install]
WantedBy=multi-user.target
"""
SSHD_CONF = ("HostKey /etc/ssh/ssh_host_ed25519_key\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
             "PermitRootLogin no\nUseDNS no\n")
# timers and services a lab node does not need at boot (they cost minutes of emulated CPU)
MASKED = ("apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "fstrim.timer", "man-db.timer",
          "systemd-networkd-wait-online.service", "getty@tty1.service")


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


def cache_key(kind: Kind, mirror: str) -> str:
    """What a base image is built from; a change to any of it is another image."""
    recipe = {"recipe": RECIPE, "kind": kind.name, "arch": kind.arch, "suite": SUITE, "mirror": mirror,
              "packages": sorted(PACKAGES + (kind.kernel_package,)), "initrd_modules": INITRD_MODULES,
              "init": GUEST_INIT, "unit": GUEST_UNIT, "sshd": SSHD_CONF, "masked": MASKED, "size": IMAGE_SIZE}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def qemu_argv(node: VmNode, image: Path, state: Path, memory: int = 2048, smp: int = 2) -> list[str]:
    """The qemu command of a node: TCG, direct kernel boot from the base image's kernel and initrd, the overlay as a
    virtio disk, a tap on the lab's bridge, the node's configuration in fw_cfg, the serial console to a file."""
    k = node.kind
    append = f"root=/dev/vda rw console={k.console} net.ifnames=0 panic=-1 quiet"
    return [
        k.qemu, "-name", node.name, "-accel", "tcg", *k.machine, "-cpu", k.cpu, "-smp", str(smp), "-m", str(memory),
        "-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none", "-no-reboot",
        "-uuid", node.uuid,
        "-kernel", str(image / "vmlinuz"), "-initrd", str(image / "initrd.img"), "-append", append,
        "-drive", f"file={state / 'disk.qcow2'},if=none,id=disk0,format=qcow2,cache=writeback,discard=unmap",
        "-device", "virtio-blk-pci,drive=disk0",
        "-netdev", f"tap,id=net0,ifname={node.tap},script=no,downscript=no",
        "-device", f"virtio-net-pci,netdev=net0,mac={node.mac}",
        "-object", "rng-random,filename=/dev/urandom,id=rng0", "-device", "virtio-rng-pci,rng=rng0",
        "-fw_cfg", f"name=opt/edgebench/node,file={state / 'node.env'}",
        "-fw_cfg", f"name=opt/edgebench/hostkey,file={state / 'host_ed25519'}",
        "-serial", f"file:{state / 'console.log'}",
    ]


def node_env(node: VmNode, pubkey: str, hosts: str) -> str:
    """opt/edgebench/node: what the guest's init script sources."""
    values = {"EB_NAME": node.name, "EB_ADDR": f"{node.address}/24", "EB_GW": HOST_IP, "EB_PUBKEY": pubkey.strip(),
              "EB_HOSTS": hosts.rstrip("\n")}
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items())


def inventory_line(node: VmNode, role: str = "agent") -> str:
    return (f"  - {{name: {node.name}, address: {node.address}, arch: {node.kind.arch}, role: {role}, "
            f"user: edgebench, port: 22, cpu: emulated}}   # VM node ({node.kind.name}, qemu TCG, own kernel)")


def merge_inventory(text: str | None, nodes: list[VmNode]) -> str:
    """lab.sh's inventory with these VM nodes as agents (any earlier VM lines dropped); without one, an inventory of
    the VM nodes alone, the first the server."""
    rest = strip_inventory(text) if text else ""
    if not rest.strip():
        lines = ["# written by scripts/lab-local/vm.py: VM nodes (qemu TCG, each its own kernel)", "target: lab-local",
                 f"artifact_source: http://{HOST_IP}:8089   # the lab's mirror (mirror.sh serve {HOST_IP})", "nodes:"]
        lines += [inventory_line(n, "server" if i == 0 else "agent") for i, n in enumerate(nodes)]
        return "\n".join(lines) + "\n"
    return "\n".join(rest.splitlines() + [inventory_line(n) for n in nodes]) + "\n"


def strip_inventory(text: str) -> str:
    """The inventory without VM node lines ('' when vm.py wrote it alone)."""
    if text.startswith("# written by scripts/lab-local/vm.py"):
        return ""
    out = [ln for ln in text.splitlines() if not re.search(r"\{name: lab-v[xa][1-9],", ln)]
    return "\n".join(out) + ("\n" if out else "")


def strip_known_hosts(text: str, addresses: set[str]) -> str:
    out = [ln for ln in text.splitlines() if ln.split(" ", 1)[0] not in addresses]
    return "\n".join(out) + ("\n" if out else "")


def leftovers(lab: Path, taps: list[str], procs: dict[int, str]) -> list[str]:
    """What VM nodes left: one line per qemu process (its argv names a state directory below lab/vms), tap, state
    directory. `procs` maps PID -> argv joined by spaces (all of this machine's); `taps` are interface names."""
    found = []
    marker = f"{lab}/vms/"
    for pid, cmd in sorted(procs.items()):
        if marker in cmd and "qemu-system" in cmd:
            found.append(f"process: {pid} {cmd}")
    found += [f"interface: {t}" for t in sorted(taps) if t.startswith(TAP_PREFIX)]
    if (lab / "vms").exists():
        overlays = sorted(str(p) for p in (lab / "vms").glob("*/disk.qcow2"))
        found += [f"overlay: {p}" for p in overlays]
        found.append(f"state: {lab / 'vms'}")
    if (lab / "vm-cell").exists():  # vm_cell.py's work directory (its cells' inventory and kubeconfig)
        found.append(f"state: {lab / 'vm-cell'}")
    return found


# ---- the machine ----------------------------------------------------------------------------------------------------

def lab_dir() -> Path:
    return Path(os.environ.get("EDGEBENCH_LAB", "/srv/edgebench-lab"))


def cache_dir() -> Path:
    return Path(os.environ.get("EDGEBENCH_LAB_CACHE", Path.home() / ".local/share/edgebench/lab")) / "vm"


def debian_mirror() -> str:
    return os.environ.get("EDGEBENCH_DEBIAN_MIRROR", "http://deb.debian.org/debian")


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


def image_dir(kind: Kind) -> Path:
    return cache_dir() / f"{kind.name}-{cache_key(kind, debian_mirror())}"


def image_ready(kind: Kind) -> bool:
    d = image_dir(kind)
    return all((d / f).is_file() for f in ("base.qcow2", "vmlinuz", "initrd.img", "image.json"))


def unmount_below(root: Path) -> None:
    real = str(root.resolve())
    mounts = [ln.split()[1] for ln in Path("/proc/mounts").read_text().splitlines()]
    for m in sorted((m for m in mounts if m == real or m.startswith(real + "/")), reverse=True):
        subprocess.run(["umount", "-l", m], capture_output=True)


def ensure_emulation(kind: Kind) -> None:
    """binfmt_misc runs kind's executables in a chroot (lablib.ensure_emulation: the one home of these steps, shared
    with the lab's builds and scripts/e2e-argo's arm64 runner)."""
    host = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
    if kind.arch == host:
        return
    need("qemu-aarch64-static", "qemu-user-static")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import lablib

    def say(msg: str) -> None:
        print(f"lab-local: vm: {msg}", file=sys.stderr)

    try:
        lablib.ensure_emulation(lablib.Lab(arch=kind.arch, host=host, labc="", mirror="", e2e="", tools=""), say)
    except lablib.Fail as e:
        raise VmError(str(e)) from None


def build_image(kind: Kind) -> float:
    """debootstrap KIND's root with its stock kernel, configure it, make it an ext4 qcow2; returns the seconds taken
    (0 when cached)."""
    out = image_dir(kind)
    if image_ready(kind):
        return 0.0
    need_root()
    for cmd, pkg in (("debootstrap", "debootstrap"), ("qemu-img", "qemu-utils"), ("mkfs.ext4", "e2fsprogs")):
        need(cmd, pkg)
    t0 = time.monotonic()
    states = {freezer_state()}
    build = cache_dir() / f"build-{kind.name}"
    root = build / "root"
    if build.exists():
        unmount_below(build)
        shutil.rmtree(build)
    build.mkdir(parents=True)
    blog = build / "build.log"
    log(f"{kind.name}: building the base image (debootstrap {SUITE} {kind.arch} + {kind.kernel_package}; "
        f"log: {blog})")
    include = ",".join(PACKAGES + (kind.kernel_package,))
    foreign = kind.arch != subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                                          text=True).stdout.strip()
    try:
        if foreign:
            ensure_emulation(kind)
            run("debootstrap", "--foreign", "--variant=minbase", f"--arch={kind.arch}", f"--include={include}",
                SUITE, str(root), debian_mirror(), log_to=blog)
            # the initrd is built in the second stage (the kernel's postinst): its modules list goes in first
            (root / "etc/initramfs-tools").mkdir(parents=True, exist_ok=True)
            (root / "etc/initramfs-tools/modules").write_text("\n".join(INITRD_MODULES) + "\n")
            log(f"{kind.name}: debootstrap first stage in {time.monotonic() - t0:.0f} s; second stage under "
                f"qemu-user (slow)")
            run("chroot", str(root), "/debootstrap/debootstrap", "--second-stage", log_to=blog)
            unmount_below(root)
        else:
            run("debootstrap", "--variant=minbase", f"--arch={kind.arch}", f"--include={include}", SUITE, str(root),
                debian_mirror(), log_to=blog)
            (root / "etc/initramfs-tools/modules").write_text("\n".join(INITRD_MODULES) + "\n")
            run("chroot", str(root), "sh", "-c", "mount -t proc proc /proc && update-initramfs -u -k all; "
                "rc=$?; umount /proc; exit $rc", log_to=blog)
        log(f"{kind.name}: debootstrap done in {time.monotonic() - t0:.0f} s; configuring")
        configure_root(root, blog)
        kernels = sorted((root / "boot").glob("vmlinuz-*"))
        initrds = sorted((root / "boot").glob("initrd.img-*"))
        if not kernels or not initrds:
            raise VmError(f"{kind.kernel_package} left no /boot/vmlinuz-* and initrd.img-* in the root (log: {blog})")
        shutil.copy2(kernels[-1], build / "vmlinuz")
        shutil.copy2(initrds[-1], build / "initrd.img")
        kver = kernels[-1].name.removeprefix("vmlinuz-")
        mods = root / "lib/modules" / kver
        need_mods = {"wireguard.ko", "geneve.ko", "ipip.ko", "esp4.ko", "xfrm_user.ko", "sch_netem.ko",
                     "qemu_fw_cfg.ko", "vxlan.ko", "br_netfilter.ko", "overlay.ko"}
        have = {p.name for p in mods.rglob("*.ko")} | {p.name.removesuffix(".xz") for p in mods.rglob("*.ko.xz")}
        raw = build / "base.raw"
        run("truncate", "-s", IMAGE_SIZE, str(raw))
        run("mkfs.ext4", "-q", "-F", "-L", "ebroot", "-d", str(root), str(raw), log_to=blog)
        run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(build / "base.qcow2"), log_to=blog)
        raw.unlink()
        took = time.monotonic() - t0
        states.add(freezer_state())
        meta = {"freezer_start_end": sorted(states), "kind": kind.name, "arch": kind.arch, "suite": SUITE, "kernel_package": kind.kernel_package,
                "kernel": kver, "key": cache_key(kind, debian_mirror()), "built_s": round(took, 1),
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "modules_present": sorted(m.removesuffix(".ko") for m in need_mods & have),
                "modules_missing": sorted(m.removesuffix(".ko") for m in need_mods - have)}
        (build / "image.json").write_text(json.dumps(meta, indent=1) + "\n")
        shutil.rmtree(root)
        if out.exists():
            shutil.rmtree(out)
        build.rename(out)
    except BaseException:
        unmount_below(build)
        raise
    log(f"{kind.name}: base image {out} built in {took:.0f} s (kernel {kver}; modules missing: "
        f"{', '.join(meta['modules_missing']) or 'none'})")
    return took


def configure_root(root: Path, blog: Path) -> None:
    (root / "etc/fstab").write_text("/dev/vda / ext4 rw,errors=remount-ro 0 1\n")
    (root / "etc/hostname").write_text("edgebench-vm\n")
    (root / "etc/machine-id").write_text("")  # systemd makes one per boot: every node its own
    (root / "var/lib/dbus/machine-id").unlink(missing_ok=True)
    run("chroot", str(root), "sh", "-c", "id edgebench >/dev/null 2>&1 || useradd -m -s /bin/bash edgebench; "
        "usermod -p '*' edgebench", log_to=blog)
    (root / "etc/sudoers.d/edgebench").write_text("edgebench ALL=(ALL) NOPASSWD:ALL\n")
    os.chmod(root / "etc/sudoers.d/edgebench", 0o440)
    for f in (root / "etc/ssh").glob("ssh_host_*"):
        f.unlink()
    (root / "etc/ssh/sshd_config.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/ssh/sshd_config.d/edgebench-lab.conf").write_text(SSHD_CONF)
    init = root / "usr/local/sbin/edgebench-vm-init"
    init.parent.mkdir(parents=True, exist_ok=True)
    init.write_text(GUEST_INIT)
    init.chmod(0o755)
    (root / "etc/systemd/system/edgebench-vm-init.service").write_text(GUEST_UNIT)
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    (wants / "edgebench-vm-init.service").unlink(missing_ok=True)
    (wants / "edgebench-vm-init.service").symlink_to("/etc/systemd/system/edgebench-vm-init.service")
    dropin = root / "etc/systemd/system/ssh.service.d"
    dropin.mkdir(parents=True, exist_ok=True)
    (dropin / "edgebench.conf").write_text("[Unit]\nAfter=edgebench-vm-init.service\nRequires=edgebench-vm-init.service\n")
    for unit in MASKED:
        m = root / "etc/systemd/system" / unit
        m.unlink(missing_ok=True)
        m.symlink_to("/dev/null")
    (root / "etc/modules-load.d/edgebench-vm.conf").write_text("qemu_fw_cfg\n")
    run("chroot", str(root), "apt-get", "clean", log_to=blog)
    for f in (root / "var/lib/apt/lists").glob("*_*"):
        f.unlink()


# ---- nodes ----------------------------------------------------------------------------------------------------------

def links() -> list[str]:
    p = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    return [ln.split(": ")[1].split("@")[0] for ln in p.stdout.splitlines() if ": " in ln]


def procs() -> dict[int, str]:
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                pass
    return out


def ensure_bridge_and_key(lab: Path) -> None:
    if BRIDGE not in links():
        run("ip", "link", "add", BRIDGE, "type", "bridge")
        run("ip", "addr", "add", f"{HOST_IP}/24", "dev", BRIDGE)
        run("ip", "link", "set", BRIDGE, "up")
        log(f"created the lab's bridge {BRIDGE} ({HOST_IP}/24); lab.sh down removes it")
    lab.mkdir(parents=True, exist_ok=True)
    key = lab / "id_ed25519"
    if not key.exists():
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "edgebench-lab", "-f", str(key))
    key.chmod(0o600)


def ssh_argv(lab: Path, address: str, *cmd: str, timeout: int = 5) -> list[str]:
    return ["ssh", "-i", str(lab / "id_ed25519"), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={lab / 'known_hosts'}", "-o", f"ConnectTimeout={timeout}",
            "-o", "LogLevel=ERROR", f"edgebench@{address}", "--", *cmd]


def qemu_pid(state: Path) -> int | None:
    """The node's qemu, if it runs (its PID file, checked against its argv: a reused PID is not ours)."""
    try:
        pid = int((state / "pid").read_text())
        cmd = (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return None
    return pid if str(state / "disk.qcow2") in cmd else None


def hosts_text(lab: Path, nodes: list[VmNode]) -> str:
    lines = [ln for ln in (lab / "hosts").read_text().splitlines()] if (lab / "hosts").exists() else []
    lines += [f"{n.address} {n.name}" for n in nodes]
    return "\n".join(lines) + "\n"


def up(spec_text: str, memory: int, smp: int) -> None:
    spec = parse_spec(spec_text)
    need_root()
    for kind, _ in spec:
        need(kind.qemu, kind.apt_package)
    need("qemu-img", "qemu-utils")
    need("ssh", "openssh-client")
    lab = lab_dir()
    built = {kind.name: build_image(kind) for kind, _ in spec}
    ensure_bridge_and_key(lab)
    nodes = nodes_of(spec)
    # every running VM node of the lab goes into the inventory, not only this spec's
    vms = lab / "vms"
    vms.mkdir(parents=True, exist_ok=True)
    running = sorted({node_of(d.name) for d in vms.iterdir() if d.is_dir() and NAME_RE.match(d.name)} | set(nodes),
                     key=lambda n: (n.kind.first_octet, n.index))
    pubkey = (lab / "id_ed25519.pub").read_text()
    hosts = hosts_text(lab, running)
    started = []
    for node in nodes:
        st = vms / node.name
        if qemu_pid(st):
            log(f"{node.name} already up ({node.address})")
            continue
        if st.exists():
            shutil.rmtree(st)
        st.mkdir(parents=True)
        img = image_dir(node.kind)
        run("qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(img / "base.qcow2"),
            str(st / "disk.qcow2"))
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", node.name, "-f", str(st / "host_ed25519"))
        (st / "node.env").write_text(node_env(node, pubkey, hosts))
        if node.tap in links():
            run("ip", "link", "del", node.tap)
        run("ip", "tuntap", "add", "dev", node.tap, "mode", "tap")
        run("ip", "link", "set", node.tap, "master", BRIDGE, "up")
        argv = qemu_argv(node, img, st, memory, smp)
        (st / "argv.json").write_text(json.dumps(argv) + "\n")
        with open(st / "qemu.log", "w") as qlog:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=qlog, stderr=subprocess.STDOUT,
                                 start_new_session=True)  # its own process group: down kills the group
        (st / "pid").write_text(f"{p.pid}\n")
        (st / "node.json").write_text(json.dumps({"name": node.name, "kind": node.kind.name, "address": node.address,
                                                  "tap": node.tap, "image": str(img), "pid": p.pid,
                                                  "started": time.time()}) + "\n")
        started.append((node, p, time.monotonic()))
        log(f"{node.name}: qemu started (PID {p.pid}, {node.kind.qemu}, tap {node.tap}, {node.address})")
    write_lab_files(lab, running)
    timeout_env = os.environ.get("EDGEBENCH_VM_TIMEOUT")
    for node, p, t0 in started:
        timeout = int(timeout_env) if timeout_env else node.kind.timeout
        seen = {freezer_state()}
        wait_ssh(lab, node, p, t0, timeout, seen)
        took = time.monotonic() - t0
        seen.add(freezer_state())
        cold = built[node.kind.name] > 0
        rec = {"name": node.name, "kind": node.kind.name, "boot_to_ssh_s": round(took, 1), "cold": cold,
               "image_build_s": round(built[node.kind.name], 1), "smp": smp, "memory_mib": memory,
               "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "freezer": sorted(seen),
               "valid": "FROZEN" not in seen and "FREEZING" not in seen}  # a pause in the timing: repeat it
        with open(cache_dir() / "boot-times.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")
        st = vms / node.name
        meta = json.loads((st / "node.json").read_text())
        meta.update(rec)
        (st / "node.json").write_text(json.dumps(meta) + "\n")
        log(f"{node.name} up: {node.address} ({node.kind.name}, PID {p.pid}, tap {node.tap}) SSH ready "
            f"{took:.0f} s after qemu's start" + (f" (image built first: {built[node.kind.name]:.0f} s)" if cold
                                                  else " (cached image)"))
    log(f"inventory: {lab / 'inventory.yaml'}; key: {lab / 'id_ed25519'}; host keys: {lab / 'known_hosts'}")


def freezer_state() -> str:
    """The CPU-sharing freezer cgroup's state where this machine has one (a timing taken while FROZEN is invalid)."""
    try:
        return Path("/sys/fs/cgroup/freezer/eb-heavy/freezer.state").read_text().strip()
    except OSError:
        return "none"


def write_lab_files(lab: Path, nodes: list[VmNode]) -> None:
    inv = lab / "inventory.yaml"
    inv.write_text(merge_inventory(inv.read_text() if inv.exists() else None, nodes))
    kh = lab / "known_hosts"
    text = strip_known_hosts(kh.read_text() if kh.exists() else "", {n.address for n in nodes})
    for n in nodes:
        pub = lab / "vms" / n.name / "host_ed25519.pub"
        if pub.exists():
            text += f"{n.address} {' '.join(pub.read_text().split()[:2])}\n"
    kh.write_text(text)


def wait_ssh(lab: Path, node: VmNode, p: subprocess.Popen, t0: float, timeout: int, seen: set[str]) -> None:
    """Until the node answers over SSH; `seen` collects the CPU-sharing freezer's states meanwhile."""
    while time.monotonic() - t0 < timeout:
        seen.add(freezer_state())
        if p.poll() is not None:
            tail = console_tail(lab / "vms" / node.name)
            qlog = (lab / "vms" / node.name / "qemu.log").read_text().strip().splitlines()[-1:]
            raise VmError(f"{node.name}: qemu exited ({p.returncode}) before SSH answered: "
                          f"{' | '.join(qlog) or tail} (console: {lab / 'vms' / node.name / 'console.log'})")
        r = subprocess.run(ssh_argv(lab, node.address, "sudo", "-n", "true", timeout=3), capture_output=True)
        if r.returncode == 0:
            return
        time.sleep(2)
    raise VmError(f"{node.name} ({node.address}): SSH does not answer after {timeout} s: console says "
                  f"{console_tail(lab / 'vms' / node.name)!r} (console: {lab / 'vms' / node.name / 'console.log'}; "
                  f"EDGEBENCH_VM_TIMEOUT raises the limit)")


def console_tail(st: Path) -> str:
    try:
        lines = [ln.strip() for ln in (st / "console.log").read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def down() -> None:
    lab = lab_dir()
    vms = lab / "vms"
    if vms.exists():
        for st in sorted(d for d in vms.iterdir() if d.is_dir()):
            pid = qemu_pid(st)
            if pid:
                try:
                    os.killpg(pid, signal.SIGTERM)  # qemu leads its own process group (up starts a new session)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(qemu_pid(st) for st in vms.iterdir() if st.is_dir()):
            time.sleep(0.3)
        for st in (d for d in vms.iterdir() if d.is_dir()):
            pid = qemu_pid(st)
            if pid:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.3)
    # any qemu whose argv names this lab's VM state (a lost PID file), by PID
    for pid, cmd in procs().items():
        if f"{lab}/vms/" in cmd and "qemu-system" in cmd:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for t in links():
        if t.startswith(TAP_PREFIX):
            subprocess.run(["ip", "link", "del", t], capture_output=True)
    names = {d.name for d in vms.iterdir()} if vms.exists() else set()
    if vms.exists():
        shutil.rmtree(vms)
    shutil.rmtree(lab / "vm-cell", ignore_errors=True)
    inv = lab / "inventory.yaml"
    if inv.exists():
        rest = strip_inventory(inv.read_text())
        if rest:
            inv.write_text(rest)
        else:
            inv.unlink()
    kh = lab / "known_hosts"
    if kh.exists():
        addrs = {node_of(n).address for n in names if NAME_RE.match(n)}
        rest = strip_known_hosts(kh.read_text(), addrs)
        if rest:
            kh.write_text(rest)
        else:
            kh.unlink()
    # the bridge is the namespace lab's when it has nodes (lab.sh down removes it), else ours
    if not (lab / "nodes").exists() and BRIDGE in links():
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
    left = leftovers(lab, links(), procs())
    if left:
        for ln in left:
            print(ln)
        raise VmError("down: something of the VM nodes is left (above)")
    log("down: no VM node left (qemu, taps, overlays, state)")


def status() -> None:
    vms = lab_dir() / "vms"
    found = False
    for st in sorted(d for d in vms.iterdir() if d.is_dir()) if vms.exists() else []:
        found = True
        node = node_of(st.name)
        pid = qemu_pid(st)
        print(f"{node.name} {node.address} {node.kind.name} " + (f"up (qemu PID {pid}, tap {node.tap})" if pid
                                                                  else "down (qemu not running)"))
    if not found:
        print("no VM nodes (vm.py up x86:1)")


# ---- the stock kernel's modes, checked between two VM nodes --------------------------------------------------------

def smoke_steps(a: str, b: str) -> list[tuple[str, list[tuple[str, str]], str, list[tuple[str, str]]]]:
    """(mode, setup commands as (node, shell), the check on node A, teardown) of each mode between the nodes with
    addresses a and b ("A"/"B" name the node). Every setup command runs with sudo on its node."""
    xfrm_key = "0x" + "11" * 20  # rfc4106(gcm(aes)): 16-byte key + 4-byte salt
    def esp(src: str, dst: str, spi: str) -> str:
        return (f"ip xfrm state add src {src} dst {dst} proto esp spi {spi} mode transport "
                f"aead 'rfc4106(gcm(aes))' {xfrm_key} 128")
    return [
        ("geneve", [("A", f"ip link add ebgnv0 type geneve id 77 remote {b} && ip addr add 192.168.77.1/24 dev ebgnv0 "
                          "&& ip link set ebgnv0 up"),
                    ("B", f"ip link add ebgnv0 type geneve id 77 remote {a} && ip addr add 192.168.77.2/24 dev ebgnv0 "
                          "&& ip link set ebgnv0 up")],
         "ping -c 3 -W 3 192.168.77.2",
         [("A", "ip link del ebgnv0"), ("B", "ip link del ebgnv0")]),
        ("wireguard", [("A", "umask 077 && wg genkey > /run/eb-wg.key && wg pubkey < /run/eb-wg.key > /run/eb-wg.pub"),
                       ("B", "umask 077 && wg genkey > /run/eb-wg.key && wg pubkey < /run/eb-wg.key > /run/eb-wg.pub"),
                       ("A", "ip link add ebwg0 type wireguard && ip addr add 192.168.78.1/24 dev ebwg0 && "
                             "wg set ebwg0 listen-port 51820 private-key /run/eb-wg.key && ip link set ebwg0 up"),
                       ("B", "ip link add ebwg0 type wireguard && ip addr add 192.168.78.2/24 dev ebwg0 && "
                             "wg set ebwg0 listen-port 51820 private-key /run/eb-wg.key && ip link set ebwg0 up"),
                       ("A", f"wg set ebwg0 peer PUB_B allowed-ips 192.168.78.2/32 endpoint {b}:51820"),
                       ("B", f"wg set ebwg0 peer PUB_A allowed-ips 192.168.78.1/32 endpoint {a}:51820")],
         "ping -c 3 -W 3 192.168.78.2 && wg show ebwg0 latest-handshakes",
         [("A", "ip link del ebwg0; rm -f /run/eb-wg.*"), ("B", "ip link del ebwg0; rm -f /run/eb-wg.*")]),
        ("ipip", [("A", f"ip link add ebipip0 type ipip local {a} remote {b} && "
                        "ip addr add 192.168.79.1/24 dev ebipip0 && ip link set ebipip0 up"),
                  ("B", f"ip link add ebipip0 type ipip local {b} remote {a} && "
                        "ip addr add 192.168.79.2/24 dev ebipip0 && ip link set ebipip0 up")],
         "ping -c 3 -W 3 192.168.79.2",
         [("A", "ip link del ebipip0"), ("B", "ip link del ebipip0")]),
        ("esp", [(n, f"{esp(a, b, '0x1001')} && {esp(b, a, '0x1002')} && "
                     f"ip xfrm policy add src {a}/32 dst {b}/32 dir {d1} tmpl src {a} dst {b} proto esp mode transport "
                     f"&& ip xfrm policy add src {b}/32 dst {a}/32 dir {d2} tmpl src {b} dst {a} proto esp mode "
                     "transport") for n, d1, d2 in (("A", "out", "in"), ("B", "in", "out"))],
         f"ping -c 3 -W 3 {b} && ip -s xfrm state get src {a} dst {b} proto esp spi 0x1001",
         [(n, f"ip xfrm policy delete src {a}/32 dst {b}/32 dir {d1}; ip xfrm policy delete src {b}/32 dst {a}/32 "
              f"dir {d2}; ip xfrm state delete src {a} dst {b} proto esp spi 0x1001; "
              f"ip xfrm state delete src {b} dst {a} proto esp spi 0x1002")
          for n, d1, d2 in (("A", "out", "in"), ("B", "in", "out"))]),
        ("netem", [("A", "tc qdisc add dev eth0 root netem delay 10ms")],
         f"ping -c 10 -i 0.3 -W 3 {b} && tc qdisc show dev eth0",
         [("A", "tc qdisc del dev eth0 root")]),
    ]


def rtt(ping_out: str) -> tuple[float, float] | None:
    """ping's summary line 'rtt min/avg/max/mdev = 0.4/0.5/0.7/0.1 ms' -> (0.4, 0.5): min and mean"""
    m = re.search(r"= ([\d.]+)/([\d.]+)/[\d.]+/[\d.]+ ms", ping_out)
    return (float(m.group(1)), float(m.group(2))) if m else None


def smoke(name_a: str, name_b: str) -> dict:
    """modprobe of the modules this machine's kernel lacks, then each mode between two VM nodes: works (with the
    ping's mean RTT) or the exact error."""
    lab = lab_dir()
    na, nb = node_of(name_a), node_of(name_b)
    addr = {"A": na.address, "B": nb.address}

    def sh(who: str, cmd: str, timeout: int = 120) -> subprocess.CompletedProcess:
        return subprocess.run(ssh_argv(lab, addr[who], "sudo", "-n", "sh", "-c", shlex.quote(cmd), timeout=10),
                              capture_output=True, text=True, timeout=timeout)

    report: dict = {"a": name_a, "b": name_b, "kernel": sh("A", "uname -r").stdout.strip(), "modules": {},
                    "modes": {}}
    for m in ("wireguard", "geneve", "ipip", "esp4", "xfrm_user", "sch_netem"):
        r = sh("A", f"modprobe {m}")
        report["modules"][m] = "ok" if r.returncode == 0 else (r.stderr.strip() or f"exit {r.returncode}")
    base = rtt(sh("A", f"ping -c 10 -i 0.3 -W 3 {addr['B']}").stdout)
    report["baseline_rtt_ms"] = {"min": base[0], "mean": base[1]} if base else None
    pubs = {}
    for mode, setup, check, teardown in smoke_steps(addr["A"], addr["B"]):
        entry: dict = {}
        for who, cmd in setup:
            cmd = cmd.replace("PUB_A", pubs.get("A", "")).replace("PUB_B", pubs.get("B", ""))
            r = sh(who, cmd)
            if r.returncode:
                entry = {"result": "fails", "step": f"{who}: {cmd}", "error": (r.stderr or r.stdout).strip()}
                break
            if mode == "wireguard" and "wg pubkey" in cmd:
                pubs[who] = sh(who, "cat /run/eb-wg.pub").stdout.strip()
        if not entry:
            r = sh("A", check)
            if r.returncode:
                entry = {"result": "fails", "step": f"A: {check}", "error": (r.stderr or r.stdout).strip()[-300:]}
            else:
                got = rtt(r.stdout)
                entry = {"result": "works", "rtt_ms": {"min": got[0], "mean": got[1]} if got else None}
                # every packet A sends waits 10 ms in netem: the fastest round trip is at least that (the emulated
                # CPUs' jitter makes the means of a few pings incomparable)
                if mode == "netem" and (got is None or got[0] < 10.0):
                    entry = {"result": "fails", "error": f"with netem delay 10ms the fastest ping took {got and got[0]} "
                                                         f"ms (< 10): {r.stdout.strip()[-200:]}"}
                elif mode == "netem":
                    entry["qdisc"] = r.stdout.strip().splitlines()[-1]
                if mode == "esp" and not re.search(r"\d+\(bytes\), [1-9]\d*\(packets\)", r.stdout):
                    entry = {"result": "fails", "error": "the ping answered but the ESP state counted no packets: "
                                                         + r.stdout.strip()[-200:]}
        for who, cmd in teardown:
            sh(who, cmd)
        report["modes"][mode] = entry
        log(f"smoke {mode}: {json.dumps(entry)}")
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="vm.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    u = sub.add_parser("up", help="start VM nodes: SPEC = KIND:COUNT[,...], e.g. x86:1,arm64:1")
    u.add_argument("spec")
    u.add_argument("--memory", type=int, default=int(os.environ.get("EDGEBENCH_VM_MEMORY", 2048)), help="MiB per VM")
    u.add_argument("--smp", type=int, default=int(os.environ.get("EDGEBENCH_VM_SMP", 2)), help="vCPUs per VM")
    i = sub.add_parser("image", help="build (or check) a kind's cached base image")
    i.add_argument("kind", choices=sorted(KINDS))
    sub.add_parser("down", help="stop every VM node and remove its tap, overlay and state")
    sub.add_parser("status", help="the VM nodes and whether their qemu runs")
    sub.add_parser("leftovers", help="what VM nodes left on this machine; exit 1 if anything")
    a = sub.add_parser("argv", help="the qemu command line of a node")
    a.add_argument("name")
    sm = sub.add_parser("smoke", help="modprobe and a geneve, wireguard, ipip, esp and netem check between 2 VM nodes")
    sm.add_argument("a")
    sm.add_argument("b")
    s = sub.add_parser("ssh", help="run a command on a node as edgebench")
    s.add_argument("name")
    s.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "up":
            up(args.spec, args.memory, args.smp)
        elif args.cmd == "image":
            kind = KINDS[args.kind]
            need_root()
            took = build_image(kind)
            print(f"{image_dir(kind)} ({'built in %.0f s' % took if took else 'cached'})")
        elif args.cmd == "down":
            need_root()
            down()
        elif args.cmd == "status":
            status()
        elif args.cmd == "leftovers":
            left = leftovers(lab_dir(), links(), procs())
            for ln in left:
                print(ln)
            return 1 if left else 0
        elif args.cmd == "argv":
            node = node_of(args.name)
            st = lab_dir() / "vms" / node.name
            saved = st / "argv.json"
            argv_ = json.loads(saved.read_text()) if saved.exists() else qemu_argv(node, image_dir(node.kind), st)
            print(shlex.join(argv_))
        elif args.cmd == "smoke":
            report = smoke(args.a, args.b)
            report["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            print(json.dumps(report, indent=1))
            with open(cache_dir() / "smoke.jsonl", "a") as f:  # kept across labs: what the stock kernel did
                f.write(json.dumps(report) + "\n")
            return 0 if all(e.get("result") == "works" for e in report["modes"].values()) else 1
        elif args.cmd == "ssh":
            node = node_of(args.name)
            return subprocess.run(ssh_argv(lab_dir(), node.address, *args.command, timeout=10)).returncode
    except VmError as e:
        print(f"lab-local: vm: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
