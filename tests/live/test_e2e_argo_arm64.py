"""images.sh for another architecture: arm64 images (the runner) built here under qemu-user-static, for a Pi lab.

Offline (always): the architecture decides the tarball and stamp names (amd64 and arm64 side by side), which images
have a recipe for it, the binfmt_misc registration, and the size of images.sh's pieces. Opt-in: `images.sh
prove-arm64` runs the cached arm64 runner's iperf3 and edgebench under emulation; it skips, with what is not there,
where the arm64 runner is not built (ARCH=arm64 images.sh build runner: ~30 min cold, too long for CI).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts" / "e2e-argo"
IMAGES_SH = SCRIPTS / "images.sh"
E2E = Path(os.environ.get("EDGEBENCH_E2E", Path.home() / ".local/share/edgebench/e2e-argo"))
HOST_ARCH = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
NAMES = ["workflow-controller", "argoexec", "minio", "mc", "runner", "nats", "argo-events"]


def _images_sh(*args: str, e2e: Path, arch: str | None = None, timeout: int = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ARCH"}
    env.update(EDGEBENCH_E2E=str(e2e), EDGEBENCH_TOOLS=str(e2e / "tools"))
    if arch is not None:
        env["ARCH"] = arch
    return subprocess.run(["bash", str(IMAGES_SH), *args], capture_output=True, text=True, env=env, timeout=timeout)


def _rows(out: str) -> dict[str, tuple[str, str]]:
    """`images.sh list` as {name: (state, tarball)}."""
    lines = out.splitlines()
    assert lines and lines[0].split() == ["NAME", "IMAGE", "STATE", "GROUP", "TARBALL"], out
    return {f[0]: (f[2], f[4]) for f in (line.split() for line in lines[1:])}


def test_list_names_each_architectures_tarballs(tmp_path):
    host = _images_sh("list", e2e=tmp_path)
    arm_opt = _images_sh("--arch", "arm64", "list", e2e=tmp_path)
    arm_env = _images_sh("list", e2e=tmp_path, arch="arm64")
    assert host.returncode == arm_opt.returncode == arm_env.returncode == 0, host.stderr + arm_opt.stderr
    assert arm_opt.stdout == arm_env.stdout  # --arch and ARCH= are the same
    assert _images_sh("list", e2e=tmp_path, arch="aarch64").stdout == arm_opt.stdout  # uname -m's name too
    host_rows, arm_rows = _rows(host.stdout), _rows(arm_opt.stdout)
    assert list(host_rows) == list(arm_rows) == NAMES
    for name in NAMES:
        assert host_rows[name][1] == str(tmp_path / "images" / f"{name}-{HOST_ARCH}.tar")
        assert arm_rows[name][1] == str(tmp_path / "images" / f"{name}-arm64.tar")
        assert host_rows[name][0] == "missing"
    if HOST_ARCH != "arm64":  # foreign: only the runner has a recipe
        assert {n: s for n, (s, _) in arm_rows.items()} == {n: "missing" if n == "runner" else "no-recipe"
                                                            for n in NAMES}


def test_an_arm64_tarball_does_not_count_for_amd64(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    (images / "runner-arm64.tar").write_bytes(b"x" * 10)
    (images / "runner-arm64.tar.inputs").write_text("key 0\narch arm64\n")
    host = _rows(_images_sh("list", e2e=tmp_path, arch="amd64").stdout)
    arm = _rows(_images_sh("list", e2e=tmp_path, arch="arm64").stdout)
    assert host["runner"][0] == "missing"
    # the arm64 stamp's key is not the image's (its tools are missing here: no key to compare, so "cached")
    assert arm["runner"][0] in ("cached", "stale")


def test_unknown_architecture_is_one_message(tmp_path):
    for p in (_images_sh("list", e2e=tmp_path, arch="mips"), _images_sh("--arch", "riscv64", "build", e2e=tmp_path)):
        assert p.returncode == 2 and p.stdout == ""  # bad input: exit 2, as scripts/cmdkit.py's programs do
        assert len(p.stderr.strip().splitlines()) == 1 and "is not supported (architectures: amd64 arm64)" in p.stderr


def test_images_sh_pieces_parse_and_stay_short():
    assert subprocess.run(["bash", "-n", str(IMAGES_SH)]).returncode == 0
    assert len(IMAGES_SH.read_text().splitlines()) < 10  # the entry point of images.py
    pieces = [SCRIPTS / f for f in ("images.py", "imagelib.py", "imagekeys.py", "imagerecipes.py", "runner_image.py")]
    for f in pieces:
        compile(f.read_text(), str(f), "exec")
        assert len(f.read_text().splitlines()) <= 400, f"{f.name} is over 400 lines"


def _binfmt() -> dict[str, str]:
    sys.path.insert(0, str(REPO / "scripts" / "lab-local"))
    import lablib  # the one home of the registration (images.py and the lab's builds use it)

    return {"magic": lablib.BINFMT_AARCH64_MAGIC, "mask": lablib.BINFMT_AARCH64_MASK}


def _bytes(escaped: str) -> bytes:
    return bytes(int(h, 16) for h in escaped.split("\\x")[1:])


def test_binfmt_magic_matches_aarch64_executables_only():
    b = _binfmt()
    magic, mask = _bytes(b["magic"]), _bytes(b["mask"])
    assert len(magic) == len(mask) == 20

    def matches(header: bytes) -> bool:
        return all((h & m) == (g & m) for h, m, g in zip(header[:20], mask, magic))

    def elf(machine: int, etype: int = 2, cls: int = 2, osabi: int = 0) -> bytes:
        return (b"\x7fELF" + bytes([cls, 1, 1, osabi]) + bytes(8) + etype.to_bytes(2, "little")
                + machine.to_bytes(2, "little"))

    assert matches(elf(0xB7)) and matches(elf(0xB7, etype=3)) and matches(elf(0xB7, osabi=3))  # exec, PIE, GNU
    assert not matches(elf(0x3E))  # x86-64
    assert not matches(elf(0x28, cls=1))  # 32-bit ARM
    assert not matches(elf(0xB7, etype=1))  # a relocatable object
    if Path("/bin/true").exists():
        assert not matches(Path("/bin/true").read_bytes()[:20]) or HOST_ARCH == "arm64"
    debian = Path("/usr/share/binfmts/qemu-aarch64")  # qemu-user-static's own definition, when installed
    if debian.exists():
        fields = dict(line.split(" ", 1) for line in debian.read_text().splitlines() if " " in line)
        assert (fields["magic"], fields["mask"]) == (b["magic"], b["mask"])


def _arm64_not_cached() -> list[str]:
    missing = []
    p = _images_sh("--arch", "arm64", "list", e2e=E2E)
    state = _rows(p.stdout).get("runner", ("?", ""))[0] if p.returncode == 0 else "?"
    if state not in ("cached", "stale"):  # stale: built, from an older commit (like test_e2e_argo, runs it)
        missing.append(f"image runner-arm64.tar ({state}; ARCH=arm64 scripts/e2e-argo/images.sh build runner)")
    if not Path("/usr/bin/qemu-aarch64-static").exists():
        missing.append("qemu-user-static (/usr/bin/qemu-aarch64-static)")
    for tool in ("umoci", "skopeo", "file"):
        if not shutil.which(tool):
            missing.append(tool)
    return missing


@pytest.mark.skipif(os.geteuid() != 0, reason="prove-arm64 needs root (chroot, mounts, binfmt_misc)")
@pytest.mark.skipif(HOST_ARCH != "amd64", reason="arm64 is emulated only on amd64 hosts")
def test_arm64_runner_runs_under_qemu():
    missing = _arm64_not_cached()
    if missing:
        pytest.skip(f"arm64 runner not built in {E2E} (~30 min cold): {', '.join(missing)}")
    p = _images_sh("prove-arm64", e2e=E2E, timeout=900)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert "image config: linux/arm64" in out
    assert "file /usr/bin/iperf3: ELF 64-bit LSB" in out and "ARM aarch64" in out
    assert "uname -m (in the chroot, under qemu): aarch64" in out
    iperf = out.split("--- iperf3 --version\n", 1)[1]
    assert iperf.startswith("iperf 3."), iperf[:200]
    help_ = out.split("--- edgebench --help (as uid 10001)\n", 1)[1]
    assert "Usage: edgebench" in help_, help_[:400]
    # nothing of the scratch root is left mounted or on disk
    assert str(E2E / "images" / "prove-arm64") not in Path("/proc/mounts").read_text()
    assert not list((E2E / "images").glob("prove-arm64.*"))
