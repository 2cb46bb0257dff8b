"""What images.py's recipes share: the build's settings from the environment, messages, binaries copied into an
image (with the host libraries a cgo binary needs), the OCI layout (umoci) with its cached stages, and the chroot
the runner's stages run commands in. The emulation of a foreign architecture and debootstrap are
scripts/lab-local/lablib.py's (one home for both builders); errors and the dispatcher are scripts/cmdkit.py's.
Stdlib only: it runs as root under the system Python.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _d in (HERE.parent, HERE.parent / "lab-local"):  # scripts/: cmdkit; scripts/lab-local: lablib
    if str(_d) not in sys.path:
        sys.path.insert(0, str(_d))

import cmdkit as ck  # noqa: E402
import lablib as ll  # noqa: E402

REPO = HERE.parent.parent
SUITE = "bookworm"
KNOWN_ARCHES = ll.KNOWN_ARCHES
CHROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
warn = ck.Log("e2e-argo")  # stderr


def say(msg: str) -> None:
    """Progress, on stdout (as the bash images.sh printed it)."""
    print(f"e2e-argo: {msg}", flush=True)


def arch_name(arch: str) -> str:
    """uname -m's names too (x86_64, aarch64)."""
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(arch, arch)


@dataclass(frozen=True)
class Conf:
    """The build's settings (the environment variables of images.sh --help). Paths stay the strings the bash
    script built: the runner's inputs name no path, but the messages do."""

    arch: str
    host: str
    e2e: str
    tools: str
    argo: str
    nats: str
    events: str

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, host: str | None = None,
                 arch: str | None = None) -> "Conf":
        env = os.environ if env is None else env
        home = env.get("HOME") or str(Path.home())
        host = host or ll.host_arch()
        return cls(arch=arch_name(arch or env.get("ARCH") or host), host=host,
                   e2e=env.get("EDGEBENCH_E2E") or f"{home}/.local/share/edgebench/e2e-argo",
                   tools=env.get("EDGEBENCH_TOOLS") or f"{home}/.local/share/edgebench/tools",
                   argo=env.get("ARGO_E2E_VERSION") or "v3.7.9",
                   nats=env.get("NATS_VERSION") or "v2.10.29",  # scripts/e2e-argo/build.sh's
                   events=env.get("ARGO_EVENTS_VERSION") or "v1.9.11")  # the Makefile's (make events-tools)

    def check_arch(self) -> "Conf":
        if self.arch not in KNOWN_ARCHES:
            raise ck.Fail(f"ARCH={self.arch} is not supported (architectures: {' '.join(KNOWN_ARCHES)})", 2)
        return self

    @property
    def foreign(self) -> bool:
        return self.arch != self.host

    @property
    def images(self) -> str:
        return f"{self.e2e}/images"

    @property
    def layout(self) -> str:  # umoci's OCI layout: the runner's cached stages, and each image while it is built
        return f"{self.images}/oci"

    @property
    def work(self) -> str:  # bundles and scratch space of a build, removed afterwards
        return f"{self.images}/work"

    @property
    def cache(self) -> str:  # downloads (busybox-static .deb)
        return f"{self.images}/cache"

    @property
    def tools_dir(self) -> str:
        """The runner's Go tools for ARCH: the host's from `make tools`, a foreign ARCH's cross-compiled."""
        return self.tools if not self.foreign else f"{self.tools}/linux-{self.arch}"

    def tar_of(self, name: str) -> str:
        """The cached docker-archive of image NAME for ARCH (every architecture's side by side)."""
        return f"{self.images}/{name}-{self.arch}.tar"

    def lab(self) -> ll.Lab:
        """lablib's view of this build, for its emulation and debootstrap."""
        return ll.Lab(arch=self.arch, host=self.host, labc="", mirror="", e2e=self.e2e, tools=self.tools)


# ------------------------------------------------------------------------------------------------ binaries
def is_static(path: str) -> bool:
    p = subprocess.run(["readelf", "-l", path], capture_output=True, text=True)
    return p.returncode == 0 and "program interpreter" not in p.stdout


def check_binary(path: str, hint: str = "") -> bool:
    """PATH is an ELF executable the image needs; says on stderr what is wrong when it is not."""
    if not ll.executable(path):
        warn(f"{path} is missing{f' ({hint})' if hint else ''}")
        return False
    if subprocess.run(["readelf", "-h", path], capture_output=True).returncode:
        warn(f"{path} is not an ELF executable")
        return False
    return True


def ldd_libs(ldd_output: str) -> list[str]:
    """The absolute paths in ldd's output (the loader and the libraries), in order."""
    return [w for line in ldd_output.splitlines() for w in line.split() if w.startswith("/")]


def install_binary(src: str, root: str, dest: str) -> None:
    """SRC as ROOT/DEST; a dynamically linked SRC (Go with cgo) brings the host libraries ldd names, same paths."""
    ll.run(["install", "-D", "-m", "0755", src, f"{root}{dest}"])
    if is_static(src):
        return
    for lib in ldd_libs(ll.out(["ldd", src])):
        if not os.path.lexists(f"{root}{lib}"):
            ll.run(["install", "-D", "-m", "0755", os.path.realpath(lib), f"{root}{lib}"])


def base_files(root: str, users: list[tuple[str, int]]) -> None:
    """/etc/passwd and /etc/group (root, USERS, nobody), nsswitch.conf, the host's CA bundle, /tmp (1777): what a
    static Go program expects of its root filesystem."""
    for d in ("bin", "usr/bin", "etc/ssl/certs"):
        os.makedirs(f"{root}/{d}", mode=0o755, exist_ok=True)
    os.makedirs(f"{root}/tmp", exist_ok=True)
    os.chmod(f"{root}/tmp", 0o1777)
    passwd = "root:x:0:0:root:/root:/sbin/nologin\n" + "".join(
        f"{n}:x:{i}:{i}:{n}:/tmp:/sbin/nologin\n" for n, i in users)
    group = "root:x:0:\n" + "".join(f"{n}:x:{i}:\n" for n, i in users)
    Path(f"{root}/etc/passwd").write_text(passwd + "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n")
    Path(f"{root}/etc/group").write_text(group + "nogroup:x:65534:\n")
    Path(f"{root}/etc/nsswitch.conf").write_text("hosts: files dns\n")
    ll.run(["install", "-m", "0644", "/etc/ssl/certs/ca-certificates.crt", f"{root}/etc/ssl/certs/"])


# ------------------------------------------------------------------------------------------------ directories
def mounted_below(d: str) -> bool:
    real = os.path.realpath(d)
    return any(t == real or t.startswith(real + "/") for t in ll.out(["findmnt", "-rn", "-o", "TARGET"]).split("\n"))


def safe_rm(*dirs: str) -> None:
    """rm -rf that refuses when something is mounted below the directory (a chroot left mounted)."""
    for d in dirs:
        if not os.path.lexists(d):
            continue
        if mounted_below(d):
            raise ck.Fail(f"refusing to delete {d}: something is still mounted below it")
        ll.run(["rm", "-rf", "--one-file-system", d])


# ------------------------------------------------------------------------------------------------ the OCI layout
class Layout:
    """umoci's OCI layout of the build: images are made in it under a tag, exported with skopeo, then removed;
    the runner's stages stay in it, cached by tag (<stage>-<key>)."""

    def __init__(self, conf: Conf):
        self.conf, self.path = conf, conf.layout

    def tags(self) -> list[str]:
        return ll.out(["umoci", "ls", "--layout", self.path]).splitlines()

    def has(self, tag: str) -> bool:
        return tag in self.tags()

    def rm(self, tag: str) -> None:
        ll.run(["umoci", "rm", "--image", f"{self.path}:{tag}"])

    def new_bundle(self, tag: str, bundle: str) -> None:
        """A new empty image TAG, unpacked into BUNDLE (its files go to BUNDLE/rootfs)."""
        if self.has(tag):
            self.rm(tag)
        safe_rm(bundle)
        ll.run(["umoci", "new", "--image", f"{self.path}:{tag}"])
        ll.run(["umoci", "config", "--no-history", "--image", f"{self.path}:{tag}", "--os", "linux",
                "--architecture", self.conf.arch])
        ll.run(["umoci", "unpack", "--image", f"{self.path}:{tag}", bundle], quiet=True)

    def finish_bundle(self, tag: str, bundle: str, *config: str) -> None:
        """BUNDLE/rootfs becomes a new layer of TAG, then the config options CONFIG."""
        if mounted_below(bundle):
            raise ck.Fail(f"{bundle} still has mounts: not packing it")
        ll.run(["umoci", "repack", "--image", f"{self.path}:{tag}", bundle])
        if config:
            ll.run(["umoci", "config", "--image", f"{self.path}:{tag}", *config])
        safe_rm(bundle)

    def export_tar(self, tag: str, tar: str, ref: str) -> None:
        """The image TAG as the docker-archive TAR, named REF (its RepoTags)."""
        Path(f"{tar}.tmp").unlink(missing_ok=True)
        ll.run(["skopeo", "--insecure-policy", "copy", "--quiet", f"oci:{self.path}:{tag}",
                f"docker-archive:{tar}.tmp:{ref}"])
        os.replace(f"{tar}.tmp", tar)

    def ensure_stage(self, tag: str, build: Callable[[str], None]) -> None:
        """A cached stage: unless the layout has TAG, BUILD(wip-TAG) makes it under a temporary tag, renamed to
        TAG once complete; older keys of the stage (and unfinished ones) go."""
        prefix, t0 = tag.rsplit("-", 1)[0], time.monotonic()
        tags = self.tags()
        if tag in tags:
            say(f"{prefix}: cached stage {tag}")
            return
        for old in tags:
            if old.startswith((f"{prefix}-", f"wip-{prefix}-")):
                self.rm(old)
        build(f"wip-{tag}")
        ll.run(["umoci", "tag", "--image", f"{self.path}:wip-{tag}", tag])
        self.rm(f"wip-{tag}")
        say(f"{prefix}: stage {tag} built in {time.monotonic() - t0:.0f} s")


# ------------------------------------------------------------------------------------------------ chroot
DEV_NODES = (("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8), ("urandom", 1, 9), ("tty", 5, 0))
DEV_LINKS = (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
             ("stderr", "/proc/self/fd/2"))


def chroot_argv(root: str, argv: list[str], env: list[str] = ()) -> list[str]:
    """ARGV in ROOT as root with a clean environment (plus the VAR=value of ENV)."""
    return ["chroot", root, "/usr/bin/env", "-i", f"PATH={CHROOT_PATH}", "HOME=/root", "LANG=C.UTF-8",
            "DEBIAN_FRONTEND=noninteractive", *env, *argv]


class Chroot:
    """ROOT with /proc and a private /dev (a tmpfs with the usual nodes: the host's /dev stays out of reach of
    rm -rf); `with` unmounts them again, also on errors."""

    def __init__(self, root: str):
        self.root, self.mounts = root, []

    def __enter__(self) -> "Chroot":
        r = self.root
        ll.run(["mount", "-t", "proc", "proc", f"{r}/proc"])
        self.mounts.append(f"{r}/proc")
        ll.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=16m", "tmpfs", f"{r}/dev"])
        self.mounts.append(f"{r}/dev")
        for name, major, minor in DEV_NODES:
            ll.run(["mknod", "-m", "0666", f"{r}/dev/{name}", "c", str(major), str(minor)])
        for name, target in DEV_LINKS:
            os.symlink(target, f"{r}/dev/{name}")
        os.mkdir(f"{r}/dev/shm")
        os.chmod(f"{r}/dev/shm", 0o1777)
        return self

    def __exit__(self, *exc) -> None:
        for m in reversed(self.mounts):
            if subprocess.run(["umount", m], stderr=subprocess.DEVNULL).returncode and \
                    subprocess.run(["umount", "-l", m]).returncode:
                warn(f"could not unmount {m}")
        self.mounts = []

    def argv(self, argv: list[str], env: list[str] = ()) -> list[str]:
        return chroot_argv(self.root, argv, env)

    def run(self, argv: list[str], env: list[str] = (), **kw) -> subprocess.CompletedProcess:
        """ARGV in the chroot as root; stdout and stderr together, as text (returned, not checked)."""
        return subprocess.run(chroot_argv(self.root, argv, env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", **kw)
