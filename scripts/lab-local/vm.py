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
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # beside it: vm_common, vm_image, vm_smoke

import labhost  # noqa: E402
from vm_common import (BRIDGE, HOST_IP, KINDS, NAME_RE, TAP_PREFIX, VmError, VmNode, freezer_state,  # noqa: E402
                       lab_dir, log, need, need_root, node_of, nodes_of, parse_spec, run, ssh_argv)
from vm_image import build_image, cache_dir, cache_key, image_dir  # noqa: E402,F401  cache_key: the tests'
from vm_smoke import rtt, smoke, smoke_steps  # noqa: E402,F401  rtt, smoke_steps: the tests'


# ---- the lifecycle: qemu argv, node configuration, inventory lines, leftovers (tests/unit/test_lab_vm.py) ----------

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


# ---- nodes ----------------------------------------------------------------------------------------------------------

links = labhost.links  # this machine's interfaces, as lab.sh's node manager reads them


def procs() -> dict[int, str]:
    """Every process's command line (labhost.cmdlines), without the trailing space."""
    return {pid: cmd.strip() for pid, cmd in labhost.cmdlines().items()}


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
