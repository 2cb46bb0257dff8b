"""What the lab's artifact builds share (mirror.py, labbuild.py, cilium_image.py): the cache layout and the
environment it is read from, commands, the cache keys of the OCI images, files written whole (a served mirror never
shows half a file) and the emulation of a foreign architecture (binfmt_misc + qemu-user-static, as
for scripts/e2e-argo/images.py too). Errors, polls and the sub-command dispatcher are scripts/cmdkit.py's, shared
with scripts/kind. Stdlib only.

Cache keys are the bash scripts' byte for byte (the same text hashed, the same paths in it): caches built by the
bash versions stay cache hits.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # scripts/: cmdkit

from cmdkit import Fail, Log  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
KNOWN_ARCHES = ("amd64", "arm64")
QEMU = {"arm64": "aarch64", "amd64": "x86_64"}
ELF_MACHINE = {"arm64": "ARM aarch64", "amd64": "x86-64"}   # what `file` says of an ELF executable of ARCH
K8S_VERSION = "v1.33.4"
FLANNEL_VERSION = "v0.28.9"   # the catalog's pin
FLANNEL_EXTRA = ("v0.28.10",)   # flannel versions besides the pin (catalog artifacts.yaml `versions:`)
SUITE = "bookworm"
DEBIAN = "http://deb.debian.org/debian"
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# ------------------------------------------------------------------------------------------------ the cache
def host_arch() -> str:
    try:
        return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)


@dataclass(frozen=True)
class Lab:
    """The lab's caches, from the environment. Paths are kept as the strings the bash scripts built (`$LABC/bin/
    $ARCH`, no normalisation): they are part of the image keys."""

    arch: str
    host: str
    labc: str
    mirror: str
    e2e: str
    tools: str

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, host: str | None = None) -> "Lab":
        env = os.environ if env is None else env
        home = env.get("HOME") or str(Path.home())
        host = host or host_arch()
        labc = env.get("EDGEBENCH_LAB_CACHE") or f"{home}/.local/share/edgebench/lab"
        return cls(arch=env.get("ARCH") or host, host=host, labc=labc,
                   mirror=env.get("EDGEBENCH_MIRROR") or f"{labc}/mirror",
                   e2e=env.get("EDGEBENCH_E2E") or f"{home}/.local/share/edgebench/e2e-argo",
                   tools=env.get("EDGEBENCH_TOOLS") or f"{home}/.local/share/edgebench/tools")

    def check_arch(self) -> "Lab":
        if self.arch not in KNOWN_ARCHES:
            raise Fail(f"ARCH={self.arch} is not supported (architectures: {' '.join(KNOWN_ARCHES)})", 2)
        return self

    @property
    def foreign(self) -> bool:
        return self.arch != self.host

    @property
    def bin(self) -> str:   # the lab's own builds for ARCH (labbuild.py)
        return f"{self.labc}/bin/{self.arch}"

    @property
    def k8s_bin(self) -> str:   # the Kubernetes binaries of ARCH: this machine's from scripts/e2e-argo, else ours
        return f"{self.e2e}/bin" if not self.foreign else f"{self.bin}/k8s"

    @property
    def work(self) -> str:
        return f"{self.labc}/work"

    def rootfs(self, name: str) -> str:   # base (the network images' Debian root), cilium-agent
        return f"{self.labc}/rootfs/{name}-{self.arch}"


def stamp(out: str, name: str, version: str) -> str:
    """A build's stamp: OUT/.NAME-VERSION (labbuild.py; the bash build.sh's)."""
    return f"{out}/.{name}-{version}"


# ------------------------------------------------------------------------------------------------ keys
def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def key16(text: str) -> str:
    """`... | sha256sum | cut -c1-16`."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def sha256sum_line(path: str) -> str:
    """What `sha256sum PATH` prints (the path as given)."""
    return f"{sha256_file(path)}  {path}\n"


def newer(a: str | Path, b: str | Path) -> bool:
    """bash's `A -nt B`: A exists and B does not, or A's mtime is later."""
    try:
        ma = os.stat(a).st_mtime_ns
    except OSError:
        return False
    try:
        return ma > os.stat(b).st_mtime_ns
    except OSError:
        return True


def executable(path: str | Path) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


# ------------------------------------------------------------------------------------------------ files
def write_bytes(path: str | Path, data: bytes, mode: int = 0o644) -> bool:
    """PATH holds DATA afterwards (written to a temporary file beside it and renamed); False when it already did."""
    path = Path(path)
    try:
        if path.read_bytes() == data and (path.stat().st_mode & 0o7777) == mode:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def write_text(path: str | Path, text: str, mode: int = 0o644) -> bool:
    return write_bytes(path, text.encode(), mode)


def same_file(a: str | Path, b: str | Path) -> bool:
    try:
        if os.stat(a).st_size != os.stat(b).st_size:
            return False
    except OSError:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def install(src: str | Path, dest: str | Path, mode: int = 0o755) -> bool:
    """`install -D -m MODE SRC DEST`, by a rename (a reader never sees half a file); nothing is written when DEST
    already has SRC's bytes and MODE. True when DEST was written."""
    dest = Path(dest)
    if same_file(src, dest) and (dest.stat().st_mode & 0o7777) == mode:
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def base_files(root: str | Path) -> None:
    """A static image's root: passwd, group, nsswitch, the CA bundle, /tmp."""
    root = Path(root)
    for d in ("etc/ssl/certs", "usr/local/bin"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "tmp").mkdir(exist_ok=True)
    os.chmod(root / "tmp", 0o1777)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/sbin/nologin\n"
                                     "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n")
    (root / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
    (root / "etc/nsswitch.conf").write_text("hosts: files dns\n")
    install("/etc/ssl/certs/ca-certificates.crt", root / "etc/ssl/certs/ca-certificates.crt", 0o644)


# ------------------------------------------------------------------------------------------------ commands
def run(argv: list[str], fail: str | None = None, code: int = 1, quiet: bool = False, **kw: Any) -> None:
    """A command, its output where ours goes (stdout dropped if `quiet`); a failure is Fail(`fail` or the
    command and its exit status)."""
    if quiet:
        kw.setdefault("stdout", subprocess.DEVNULL)
    try:
        p = subprocess.run([str(a) for a in argv], **kw)
    except FileNotFoundError:
        raise Fail(f"{argv[0]} is not installed", 2) from None
    if p.returncode:
        raise Fail(fail or f"{' '.join(map(str, argv[:3]))} failed (exit {p.returncode})", code)


def out(argv: list[str], fail: str | None = None, **kw: Any) -> str:
    """A command's stdout (stderr passes through); a failure is Fail."""
    try:
        p = subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE, text=True, **kw)
    except FileNotFoundError:
        raise Fail(f"{argv[0]} is not installed", 2) from None
    if p.returncode:
        raise Fail(fail or f"{' '.join(map(str, argv[:3]))} failed (exit {p.returncode})")
    return p.stdout


def run_group(argv: list[str], timeout: float, **kw: Any) -> tuple[int | None, str]:
    """ARGV in its own process group, stdout and stderr together; after `timeout` s the whole group is killed
    (returns None as the status). (status, output)."""
    p = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace", start_new_session=True, **kw)
    try:
        output, _ = p.communicate(timeout=timeout)
        return p.returncode, output
    except subprocess.TimeoutExpired:
        kill_group(p.pid)
        output, _ = p.communicate()
        return None, output


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def need_root(why: str) -> None:
    if os.geteuid() != 0:
        raise Fail(f"needs root ({why})", 2)


def need(*names: str) -> None:
    for n in names:
        if shutil.which(n) is None:
            raise Fail(f"{n} is not installed", 2)


def go_env(**extra: str) -> dict[str, str]:
    """The environment of `go mod download` outside any module (run in /tmp)."""
    return {**os.environ, "GOFLAGS": "-mod=mod", "GOSUMDB": "off", **extra}


def go_mod_download(module: str) -> dict[str, str]:
    """`go mod download -json MODULE@VERSION`: Dir, Info, ... (the module cache's, read-only)."""
    import json

    text = out(["go", "mod", "download", "-json", module], cwd="/tmp", env=go_env(),
               fail=f"go mod download {module} failed")
    return json.loads(text)


# ------------------------------------------------------------------------------------------------ OCI images
def oci_image(lab: Lab, log: Log, name: str, ref: str, key: str, fill: Callable[[Path], None],
              config: list[str], env_path: str = IMAGE_PATH) -> bool:
    """MIRROR/images/ARCH/NAME.tar (docker-archive of REF) with the key KEY in NAME.tar.key: built when the key
    differs (umoci: an empty image, FILL(rootfs), the config; skopeo into the archive). True when built."""
    out = Path(lab.mirror) / "images" / lab.arch / f"{name}.tar"
    keyfile = Path(f"{out}.key")
    if out.exists() and keyfile.is_file() and keyfile.read_text().strip() == key:
        return False
    t0 = time.monotonic()
    layout, tag, bundle = f"{lab.work}/oci", f"{name}-{lab.arch}", Path(f"{lab.work}/bundle-{name}")
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(lab.work).mkdir(parents=True, exist_ok=True)
    if not os.path.isdir(layout):
        run(["umoci", "init", "--layout", layout])
    if tag in out_lines(["umoci", "ls", "--layout", layout]):
        run(["umoci", "rm", "--image", f"{layout}:{tag}"])
    shutil.rmtree(bundle, ignore_errors=True)
    run(["umoci", "new", "--image", f"{layout}:{tag}"])
    run(["umoci", "unpack", "--image", f"{layout}:{tag}", bundle], quiet=True)
    fill(bundle / "rootfs")
    run(["umoci", "repack", "--image", f"{layout}:{tag}", bundle], quiet=True)
    run(["umoci", "config", "--image", f"{layout}:{tag}", "--os", "linux", "--architecture", lab.arch,
         "--config.env", f"PATH={env_path}", *config], quiet=True)
    shutil.rmtree(bundle, ignore_errors=True)
    tmp = Path(f"{out}.tmp")
    tmp.unlink(missing_ok=True)
    run(["skopeo", "--insecure-policy", "copy", "--quiet", f"oci:{layout}:{tag}", f"docker-archive:{tmp}:{ref}"])
    run(["umoci", "rm", "--image", f"{layout}:{tag}"])   # the layout only stages: the archive is the artifact
    run(["umoci", "gc", "--layout", layout])
    os.replace(tmp, out)
    write_text(keyfile, f"{key}\n")
    log(f"{lab.arch} image {ref} ({out.stat().st_size >> 20} MiB, {time.monotonic() - t0:.0f} s)")
    return True


def out_lines(argv: list[str]) -> list[str]:
    return out(argv).splitlines()


# ------------------------------------------------------------------------------------------------ emulation
BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")
BINFMT_AARCH64_MAGIC = r"\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00"
BINFMT_AARCH64_MASK = r"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff"


def ensure_emulation(lab: Lab, log: Log, binfmt: Path = BINFMT_DIR) -> None:
    """Executables of a foreign ARCH run here (in chroots too): binfmt_misc mounted, qemu-aarch64 registered with
    flags FP (Debian's update-binfmts when present, else directly). The registration stays (it is the host's)."""
    if not lab.foreign:
        return
    if (lab.arch, lab.host) != ("arm64", "amd64"):
        raise Fail(f"ARCH={lab.arch} on a {lab.host} host: only arm64 on amd64 is emulated (qemu-user-static)", 2)
    q = QEMU[lab.arch]
    interp, entry = f"/usr/bin/qemu-{q}-static", binfmt / f"qemu-{q}"
    if not executable(interp):
        raise Fail(f"ARCH={lab.arch} needs {interp} to emulate {lab.arch} (apt-get install qemu-user-static)", 2)
    if not (binfmt / "register").exists():
        if "binfmt_misc" not in Path("/proc/filesystems").read_text().split():
            raise Fail(f"ARCH={lab.arch}: this kernel has no binfmt_misc (CONFIG_BINFMT_MISC)", 2)
        if subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(binfmt)],
                          stderr=subprocess.DEVNULL).returncode:
            raise Fail(f"ARCH={lab.arch}: cannot mount binfmt_misc on {binfmt} (root, and not in an unprivileged "
                       "container?)", 2)
        log(f"mounted binfmt_misc on {binfmt} (it stays mounted)")
    if not entry.exists() and shutil.which("update-binfmts") and Path(f"/usr/share/binfmts/qemu-{q}").exists():
        subprocess.run(["update-binfmts", "--enable", f"qemu-{q}"], capture_output=True)
    if not entry.exists():
        try:
            (binfmt / "register").write_text(
                f":qemu-{q}:M::{BINFMT_AARCH64_MAGIC}:{BINFMT_AARCH64_MASK}:{interp}:FP\n")
        except OSError:
            raise Fail(f"ARCH={lab.arch}: the kernel refused to register qemu-{q} in {binfmt}/register") from None
        log(f"registered qemu-{q} ({interp}, flags FP) in binfmt_misc (it stays registered)")
    lines = entry.read_text().splitlines()
    if not lines or lines[0] != "enabled":
        raise Fail(f"ARCH={lab.arch}: qemu-{q} is registered but disabled (echo 1 >{entry} enables it)", 2)
    fields = dict((x.split(None, 1) + [""])[:2] for x in lines[1:] if x.strip())
    if "F" not in fields.get("flags:", ""):
        raise Fail(f"ARCH={lab.arch}: qemu-{q} is registered without flag F, so chroots cannot find its interpreter "
                   f"({fields.get('interpreter', '?')}); echo -1 >{entry} removes it, then rerun", 2)


def unmount_below(root: str | Path, log: Log) -> None:
    """Unmount whatever is mounted on or below ROOT, deepest first (a failed debootstrap's /proc, /sys)."""
    real = os.path.realpath(root)
    targets = [line.split()[1].replace("\\040", " ") for line in Path("/proc/mounts").read_text().splitlines()]
    for m in sorted((t for t in targets if t == real or t.startswith(real + "/")), reverse=True):
        if subprocess.run(["umount", m], stderr=subprocess.DEVNULL).returncode and \
                subprocess.run(["umount", "-l", m]).returncode:
            log(f"could not unmount {m}")


def debootstrap_root(lab: Lab, log: Log, root: str, logfile: str, mirror: str = DEBIAN) -> bool:
    """debootstrap --variant=minbase of bookworm for ARCH from MIRROR into ROOT (a foreign ARCH in two stages, the
    second in the chroot under qemu), its output in LOGFILE. False when it failed. The lab's images and
    scripts/e2e-argo's runner both start here."""
    t0 = time.monotonic()
    with open(logfile, "w") as f:
        if not lab.foreign:
            return subprocess.run(["debootstrap", "--variant=minbase", f"--arch={lab.arch}", SUITE, root, mirror],
                                  stdout=f, stderr=subprocess.STDOUT).returncode == 0
        ensure_emulation(lab, log)
        if subprocess.run(["debootstrap", "--foreign", "--variant=minbase", f"--arch={lab.arch}", SUITE, root,
                           mirror], stdout=f, stderr=subprocess.STDOUT).returncode:
            return False
        if subprocess.run(["chroot", root, "/bin/true"], stdout=f, stderr=subprocess.STDOUT).returncode:
            log(f"the {lab.arch} root does not run here: chroot {root} /bin/true fails")
            return False
        log(f"debootstrap first stage ({lab.arch}) in {time.monotonic() - t0:.0f} s; second stage under qemu (slow)")
        try:
            rc = subprocess.run(["chroot", root, "/debootstrap/debootstrap", "--second-stage"], stdout=f,
                                stderr=subprocess.STDOUT).returncode
        finally:
            unmount_below(root, log)
    return rc == 0
