"""VM nodes live (scripts/lab-local/vm.py): an x86 guest with Debian's stock kernel boots under qemu TCG on the lab's
bridge, answers over SSH as the inventory says, has the modules this machine's kernel lacks (wireguard, geneve,
ipip, esp4, xfrm_user, sch_netem), and `down` leaves no qemu, tap, overlay or state. Opt-in (EDGEBENCH_VM_LIVE=1;
minutes of emulated CPU) and only where the base image is cached (`scripts/lab-local/vm.py image x86`); otherwise
it skips naming what is missing."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.substrates.clusters.inventory import load

REPO = Path(__file__).resolve().parents[2]
VM_PY = REPO / "scripts" / "lab-local" / "vm.py"
LAB = Path(os.environ.get("EDGEBENCH_LAB", "/srv/edgebench-lab"))
MODULES = ("wireguard", "geneve", "ipip", "esp4", "xfrm_user", "sch_netem")


def _vm():
    spec = importlib.util.spec_from_file_location("lab_vm_live", VM_PY)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["lab_vm_live"] = mod
    spec.loader.exec_module(mod)
    return mod


def _reason() -> str | None:
    if os.environ.get("EDGEBENCH_VM_LIVE") != "1":
        return "opt-in: EDGEBENCH_VM_LIVE=1 (a qemu TCG guest boots: minutes of emulated CPU)"
    if os.geteuid() != 0:
        return "needs root (a tap on the lab's bridge)"
    if not shutil.which("qemu-system-x86_64"):
        return "qemu-system-x86_64 is missing: apt install qemu-system-x86 (make lab-vm)"
    vm = _vm()
    img = vm.image_dir(vm.KINDS["x86"])
    if not (img / "base.qcow2").exists():
        return f"the x86 base image is not built: {img}/base.qcow2 (scripts/lab-local/vm.py image x86)"
    for f in ("vmlinuz", "initrd.img"):
        if not (img / f).exists():
            return f"the x86 base image has no kernel: {img}/{f} (rebuild: scripts/lab-local/vm.py image x86)"
    return None


@pytest.mark.skipif(_reason() is not None, reason=str(_reason()))
def test_x86_vm_boots_answers_over_ssh_has_its_modules_and_leaves_nothing():
    if (LAB / "vms").exists() or (LAB / "nodes").exists():
        pytest.skip(f"a lab or VM nodes are already up in {LAB} (lab.sh down first)")
    env = dict(os.environ, EDGEBENCH_LAB=str(LAB))
    vm = [sys.executable, str(VM_PY)]
    try:
        up = subprocess.run(vm + ["up", "x86:1"], env=env, capture_output=True, text=True, timeout=1800)
        assert up.returncode == 0, up.stderr
        inv = load(LAB / "inventory.yaml")
        (node,) = inv.nodes
        assert (node.name, node.address, node.arch, node.role) == ("lab-vx1", "10.77.0.31", "amd64", "server")
        ssh = vm + ["ssh", "lab-vx1"]
        kernel = subprocess.run(ssh + ["uname", "-r"], env=env, capture_output=True, text=True, timeout=120)
        assert kernel.returncode == 0 and kernel.stdout.strip().endswith("-cloud-amd64"), kernel
        for m in MODULES:
            r = subprocess.run(ssh + ["sudo", "modprobe", m], env=env, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, f"modprobe {m}: {r.stderr.strip()}"
        meta = json.loads((LAB / "vms" / "lab-vx1" / "node.json").read_text())
        assert meta["boot_to_ssh_s"] > 0
    finally:
        down = subprocess.run(vm + ["down"], env=env, capture_output=True, text=True, timeout=120)
    assert down.returncode == 0, down.stdout + down.stderr
    left = subprocess.run(vm + ["leftovers"], env=env, capture_output=True, text=True)
    assert left.returncode == 0 and left.stdout == "", left.stdout
