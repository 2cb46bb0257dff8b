"""The base image of a VM node kind (vm.py image KIND): the recipe (suite, packages, kernel package, the guest's
init script, unit, sshd settings), its cache key, and the build (debootstrap, kernel and initrd, image.json, keys)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from vm_common import Kind, VmError, freezer_state, log, need, need_root, run

SUITE = "bookworm"
RECIPE = 1  # bump to rebuild every base image
IMAGE_SIZE = "8G"  # the base filesystem (sparse; containerd's images of a worker go into each overlay)

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


def cache_key(kind: Kind, mirror: str) -> str:
    """What a base image is built from; a change to any of it is another image."""
    recipe = {"recipe": RECIPE, "kind": kind.name, "arch": kind.arch, "suite": SUITE, "mirror": mirror,
              "packages": sorted(PACKAGES + (kind.kernel_package,)), "initrd_modules": INITRD_MODULES,
              "init": GUEST_INIT, "unit": GUEST_UNIT, "sshd": SSHD_CONF, "masked": MASKED, "size": IMAGE_SIZE}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]



def cache_dir() -> Path:
    return Path(os.environ.get("EDGEBENCH_LAB_CACHE", Path.home() / ".local/share/edgebench/lab")) / "vm"


def debian_mirror() -> str:
    return os.environ.get("EDGEBENCH_DEBIAN_MIRROR", "http://deb.debian.org/debian")


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


