"""scripts/lab-local/vm.py's pure parts, offline: the VM spec, node names/addresses/taps (no collision with lab.sh's
namespace nodes), the qemu argv, the base image's cache key, the inventory and known_hosts lines, the leftovers
list. No qemu is started here (tests/live/test_lab_vm_live.py boots them, opt-in)."""
from __future__ import annotations

import importlib.util
import ipaddress
import re
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.substrates.clusters.inventory import loads

REPO = Path(__file__).resolve().parents[2]
VM_PY = REPO / "scripts" / "lab-local" / "vm.py"


def _load():
    spec = importlib.util.spec_from_file_location("lab_vm", VM_PY)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["lab_vm"] = mod  # dataclasses resolve their module
    spec.loader.exec_module(mod)
    return mod


vm = _load()


def test_spec_parses_kinds_and_counts():
    spec = vm.parse_spec("x86:2,arm64:1")
    assert [(k.name, n) for k, n in spec] == [("x86", 2), ("arm64", 1)]
    assert [(k.name, n) for k, n in vm.parse_spec("arm64")] == [("arm64", 1)]


@pytest.mark.parametrize("bad, says", [("riscv:1", "unknown VM kind 'riscv'"), ("x86:0", "count must be 1-9"),
                                       ("x86:10", "count must be 1-9"), ("x86:1,x86:2", "given twice"),
                                       ("", "empty VM spec"), ("x86:a", "count must be 1-9")])
def test_spec_errors_say_what_is_wrong(bad, says):
    with pytest.raises(vm.VmError, match=says):
        vm.parse_spec(bad)


def test_names_addresses_taps_and_macs_are_unique_and_clear_of_lab_sh():
    nodes = vm.nodes_of(vm.parse_spec("x86:9,arm64:9"))
    lab_sh = {f"10.77.0.{11 + i}" for i in range(9)}  # lab.sh up 9: lab-cp, lab-w1..8
    addrs = [n.address for n in nodes]
    assert len(set(addrs)) == len(addrs) and not set(addrs) & lab_sh and "10.77.0.1" not in addrs
    assert all(ipaddress.ip_address(a) in ipaddress.ip_network("10.77.0.0/24") for a in addrs)
    for attr in ("name", "tap", "mac", "uuid"):
        vals = [getattr(n, attr) for n in nodes]
        assert len(set(vals)) == len(vals), attr
    assert all(len(n.tap) <= 15 for n in nodes), "IFNAMSIZ"
    # the taps are the lab's uplinks (eblab-...), but never a namespace node's veth (eblab-<digit>)
    assert all(n.tap.startswith("eblab-v") for n in nodes)
    assert vm.node_of("lab-va3") == vm.VmNode(vm.KINDS["arm64"], 3)
    with pytest.raises(vm.VmError):
        vm.node_of("lab-w1")


def _argv(kind="x86", i=1):
    node = vm.VmNode(vm.KINDS[kind], i)
    return node, vm.qemu_argv(node, Path("/cache/vm/img"), Path("/srv/lab/vms") / node.name, memory=1536, smp=2)


def _opt(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_qemu_argv_x86_is_tcg_direct_kernel_boot_on_a_tap():
    node, argv = _argv("x86")
    assert argv[0] == "qemu-system-x86_64"
    assert _opt(argv, "-accel") == ["tcg"], "nested KVM guests hang here: TCG only"
    assert _opt(argv, "-M") == ["q35"] and _opt(argv, "-m") == ["1536"] and _opt(argv, "-smp") == ["2"]
    assert _opt(argv, "-kernel") == ["/cache/vm/img/vmlinuz"] and _opt(argv, "-initrd") == ["/cache/vm/img/initrd.img"]
    (append,) = _opt(argv, "-append")
    assert "root=/dev/vda" in append and "console=ttyS0" in append and "net.ifnames=0" in append
    assert "panic=-1" in append and "-no-reboot" in argv, "a kernel panic ends qemu instead of rebooting"
    (drive,) = _opt(argv, "-drive")
    assert drive.startswith("file=/srv/lab/vms/lab-vx1/disk.qcow2,") and "format=qcow2" in drive
    (netdev,) = _opt(argv, "-netdev")
    assert netdev == "tap,id=net0,ifname=eblab-vx1,script=no,downscript=no"
    assert f"virtio-net-pci,netdev=net0,mac={node.mac}" in argv
    assert _opt(argv, "-fw_cfg") == ["name=opt/edgebench/node,file=/srv/lab/vms/lab-vx1/node.env",
                                     "name=opt/edgebench/hostkey,file=/srv/lab/vms/lab-vx1/host_ed25519"]
    assert _opt(argv, "-serial") == ["file:/srv/lab/vms/lab-vx1/console.log"]
    assert "-enable-kvm" not in argv and "kvm" not in " ".join(argv)


def test_qemu_argv_arm64_is_a_virt_machine_with_a_cortex_a57():
    node, argv = _argv("arm64", 2)
    assert argv[0] == "qemu-system-aarch64"
    assert _opt(argv, "-M") == ["virt"] and _opt(argv, "-cpu") == ["cortex-a57"]
    assert "console=ttyAMA0" in _opt(argv, "-append")[0]
    assert "ifname=eblab-va2" in _opt(argv, "-netdev")[0] and node.address == "10.77.0.42"


def test_cache_key_changes_with_the_recipe_only(monkeypatch):
    x86, arm = vm.KINDS["x86"], vm.KINDS["arm64"]
    k = vm.cache_key(x86, "http://deb.debian.org/debian")
    assert k == vm.cache_key(x86, "http://deb.debian.org/debian") and len(k) == 16
    assert k != vm.cache_key(arm, "http://deb.debian.org/debian")
    assert k != vm.cache_key(x86, "http://mirror.example/debian")
    image = sys.modules["vm_image"]  # the base image recipe, beside vm.py (scripts/lab-local/vm_image.py)
    monkeypatch.setattr(image, "PACKAGES", image.PACKAGES + ("vim",))
    assert k != vm.cache_key(x86, "http://deb.debian.org/debian")
    monkeypatch.undo()
    monkeypatch.setattr(image, "GUEST_INIT", image.GUEST_INIT + "echo\n")
    assert k != vm.cache_key(x86, "http://deb.debian.org/debian"), "a changed guest init script is another image"


def test_the_x86_kind_takes_the_kernel_that_has_the_tunnel_modules():
    # checked 2026-11-29 in the package: linux-image-6.1.0-56-cloud-amd64 has wireguard, geneve, ipip, esp4,
    # xfrm_user, sch_netem, qemu_fw_cfg as modules (docs/lab-vm.md)
    assert vm.KINDS["x86"].kernel_package == "linux-image-cloud-amd64"
    assert vm.KINDS["arm64"].kernel_package == "linux-image-arm64"
    packages = sys.modules["vm_image"].PACKAGES  # the base image recipe (scripts/lab-local/vm_image.py)
    assert {"wireguard-tools", "openssh-server", "sudo", "iperf3", "systemd-sysv"} <= set(packages)


def test_node_env_is_shell_the_guest_sources():
    node = vm.VmNode(vm.KINDS["x86"], 1)
    env = vm.node_env(node, "ssh-ed25519 AAAA edgebench-lab\n", "10.77.0.11 lab-cp\n10.77.0.31 lab-vx1\n")
    out = subprocess.run(["sh", "-c", f'{env}\nprintf "%s|%s|%s|%s\\n" "$EB_NAME" "$EB_ADDR" "$EB_GW" "$EB_PUBKEY"; '
                          'printf "%s" "$EB_HOSTS"'], capture_output=True, text=True, check=True).stdout
    assert out == "lab-vx1|10.77.0.31/24|10.77.0.1|ssh-ed25519 AAAA edgebench-lab\n10.77.0.11 lab-cp\n10.77.0.31 lab-vx1"


LAB_SH_INVENTORY = """# written by scripts/lab-local/lab.sh: the local lab's nodes share this machine's kernel and cores
target: lab-local
artifact_source: http://10.77.0.1:8089   # the lab's mirror (mirror.sh serve 10.77.0.1), for sweeps and Argo
nodes:
  - {name: lab-cp, address: 10.77.0.11, arch: amd64, role: server, user: edgebench, port: 22}
  - {name: lab-w1, address: 10.77.0.12, arch: amd64, role: agent, user: edgebench, port: 22}
"""


def test_inventory_appends_vm_agents_to_lab_sh_s_and_parses(tmp_path):
    nodes = vm.nodes_of(vm.parse_spec("x86:1,arm64:1"))
    text = vm.merge_inventory(LAB_SH_INVENTORY, nodes)
    assert vm.merge_inventory(text, nodes) == text, "idempotent: a second up does not add lines twice"
    inv = loads(text, source="test")
    assert [(n.name, n.address, n.arch, n.role) for n in inv.nodes] == [
        ("lab-cp", "10.77.0.11", "amd64", "server"), ("lab-w1", "10.77.0.12", "amd64", "agent"),
        ("lab-vx1", "10.77.0.31", "amd64", "agent"), ("lab-va1", "10.77.0.41", "arm64", "agent")]
    assert vm.strip_inventory(text) == LAB_SH_INVENTORY


def test_inventory_of_vms_alone_has_one_server_and_strips_to_nothing():
    text = vm.merge_inventory(None, vm.nodes_of(vm.parse_spec("x86:2")))
    inv = loads(text, source="test")
    assert [(n.name, n.role) for n in inv.nodes] == [("lab-vx1", "server"), ("lab-vx2", "agent")]
    assert vm.merge_inventory(text, vm.nodes_of(vm.parse_spec("x86:2"))) == text, "a second up rewrites it the same"
    assert vm.strip_inventory(text) == ""


def test_known_hosts_lines_of_removed_nodes_go():
    kh = "10.77.0.11 ssh-ed25519 AAA\n10.77.0.31 ssh-ed25519 BBB\n"
    assert vm.strip_known_hosts(kh, {"10.77.0.31"}) == "10.77.0.11 ssh-ed25519 AAA\n"
    assert vm.strip_known_hosts(kh, {"10.77.0.11", "10.77.0.31"}) == ""


def test_leftovers_lists_qemu_taps_overlays_and_state(tmp_path):
    lab = tmp_path / "lab"
    assert vm.leftovers(lab, ["lo", "eblab0", "eblab-0"], {1: "/sbin/init"}) == []
    (lab / "vms" / "lab-vx1").mkdir(parents=True)
    (lab / "vms" / "lab-vx1" / "disk.qcow2").write_bytes(b"")
    procs = {4242: f"qemu-system-x86_64 -name lab-vx1 -drive file={lab}/vms/lab-vx1/disk.qcow2,if=none",
             4243: f"vim {lab}/vms/lab-vx1/console.log",  # not a qemu: never listed (down kills what it lists)
             4244: "qemu-system-x86_64 -drive file=/elsewhere/disk.qcow2"}  # another lab's or someone else's
    left = vm.leftovers(lab, ["eblab0", "eblab-0", "eblab-vx1", "eth0"], procs)
    assert left == [f"process: 4242 {procs[4242]}", "interface: eblab-vx1",
                    f"overlay: {lab}/vms/lab-vx1/disk.qcow2", f"state: {lab}/vms"]
    (lab / "vm-cell").mkdir()
    assert vm.leftovers(lab, [], {})[-1] == f"state: {lab}/vm-cell"


def test_missing_qemu_is_one_line_naming_the_package(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    monkeypatch.setattr(vm.os, "geteuid", lambda: 0)
    assert vm.main(["up", "x86:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("lab-local: vm: error: qemu-system-x86_64 is not installed: apt install qemu-system-x86 "
                   "(or make lab-vm)")


def test_help_explains_the_commands():
    out = subprocess.run([sys.executable, str(VM_PY), "--help"], capture_output=True, text=True, check=True).stdout
    for word in ("up SPEC", "down", "leftovers", "x86:1,arm64:1", "TCG", "eblab0", "qcow2 overlay"):
        assert word in out, word


def test_rtt_reads_pings_summary():
    out = "5 packets transmitted, 5 received, 0% packet loss, time 1204ms\nrtt min/avg/max/mdev = 11.257/13.044/16.1/1.7 ms\n"
    assert vm.rtt(out) == (11.257, 13.044)
    assert vm.rtt("3 packets transmitted, 0 received, 100% packet loss") is None


def test_smoke_steps_tear_down_what_they_set_up():
    steps = vm.smoke_steps("10.77.0.31", "10.77.0.32")
    assert [s[0] for s in steps] == ["geneve", "wireguard", "ipip", "esp", "netem"]
    for mode, setup, check, teardown in steps:
        assert setup and teardown and check.startswith("ping ")
        assert {who for who, _ in setup} >= {who for who, _ in teardown}
        for dev in set(re.findall(r"ip link add (\S+)", " ".join(c for _, c in setup))):
            assert any(f"ip link del {dev}" in c for _, c in teardown), (mode, dev)
    netem = dict((s[0], s) for s in steps)["netem"]
    assert netem[1] == [("A", "tc qdisc add dev eth0 root netem delay 10ms")]


def test_vm_cell_picks_nodes_the_first_the_server():
    spec = importlib.util.spec_from_file_location("lab_vm_cell", REPO / "scripts" / "lab-local" / "vm_cell.py")
    cell = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cell)
    text = vm.merge_inventory(LAB_SH_INVENTORY, vm.nodes_of(vm.parse_spec("x86:1,arm64:1")))
    inv = loads(cell.sub_inventory(text, ["lab-vx1", "lab-cp", "lab-va1"]), source="test")
    assert [(n.name, n.role, n.arch) for n in inv.nodes] == [
        ("lab-vx1", "server", "amd64"), ("lab-cp", "agent", "amd64"), ("lab-va1", "agent", "arm64")]
    assert inv.artifact_source == "http://10.77.0.1:8089"
    with pytest.raises(SystemExit, match="lab-vx9 not in the lab's inventory"):
        cell.sub_inventory(text, ["lab-cp", "lab-vx9"])
