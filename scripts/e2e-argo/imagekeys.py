"""What each image is made of (its stamp: one input a line) and its key, byte for byte the bash images.sh's: a
tarball or a runner stage built by the bash version stays a cache hit (a cold runner is ~30 min).

The bash key of an image was sha256(inputs, a newline, `declare -f` of the functions that build it); the runner's
stage tags hashed their inputs and their stage functions the same way. Those function texts are frozen in
recipe-v1.txt (data, checked against RECIPE_V1_SHA256 on load) and hashed as they were. The Python that now builds
the images is guarded by RECIPE_FINGERPRINT (tests/unit/test_e2e_images.py): a change to what goes into an image
must also give that image (or stage) an entry in RECIPE_REVISIONS, which changes its key, so it is rebuilt.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
from pathlib import Path

from imagelib import HERE, REPO, SUITE, Conf, check_binary, warn  # first: puts cmdkit and lablib on sys.path

import cmdkit as ck  # noqa: E402
import lablib as ll  # noqa: E402

RECIPE_V1 = HERE / "recipe-v1.txt"
RECIPE_V1_SHA256 = "3cf7e665f6e806b7802bd9301a8a1631bee3fa26f6a1bbcb6d0a026c8c39b26b"
# the bash functions each key hashed (image_key's, runner_base_tag's, runner_venv_tag's)
COMMON_FNS = ("new_bundle", "finish_bundle", "export_tar")
IMAGE_FNS = {
    "workflow-controller": COMMON_FNS + ("recipe_argo", "add_base_files", "install_binary"),
    "argoexec": COMMON_FNS + ("recipe_argo", "add_base_files", "install_binary"),
    "minio": COMMON_FNS + ("recipe_tool", "add_base_files", "install_binary", "add_busybox"),
    "mc": COMMON_FNS + ("recipe_tool", "add_base_files", "install_binary", "add_busybox"),
    "runner": COMMON_FNS + ("recipe_runner",),
    "nats": COMMON_FNS + ("recipe_nats", "add_base_files", "install_binary"),
    "argo-events": COMMON_FNS + ("recipe_argo_events", "add_base_files", "install_binary"),
}
BASE_FNS = ("stage_runner_base", "debootstrap_root")
VENV_FNS = ("stage_runner_venv", "chroot_enter", "in_chroot")
# image or stage (runner-base, runner-venv) -> why its recipe changed since recipe-v1.txt; an entry changes the key
RECIPE_REVISIONS: dict[str, str] = {}
RECIPE_FINGERPRINT = "022023b573d51f0d"


def _functions() -> dict[str, str]:
    data = RECIPE_V1.read_bytes()
    if hashlib.sha256(data).hexdigest() != RECIPE_V1_SHA256:
        raise ck.Fail(f"{RECIPE_V1} was edited (its sha256 is not RECIPE_V1_SHA256): the cache keys would change")
    text = "".join(line for line in data.decode().splitlines(keepends=True) if not line.startswith("#"))
    parts = re.split(r"(?m)^(?=[a-z_]+ \(\) $)", text)
    return {p.split(" ", 1)[0]: p for p in parts if p}


FUNCTIONS = _functions()


def bash_text(names: tuple[str, ...], what: str) -> str:
    """`declare -f NAMES...` as the bash images.sh printed it, plus WHAT's revision line when it has one."""
    rev = RECIPE_REVISIONS.get(what)
    return "".join(FUNCTIONS[n] for n in names) + (f"revision {rev}\n" if rev else "")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def image_key(name: str, inputs: str) -> str:
    """The key of an image: its inputs and the code that builds it (the stamp's first line: `key KEY`)."""
    return sha(f"{inputs}\n{bash_text(IMAGE_FNS[name], name)}")


def runner_base_tag(arch: str, mirror: str, security: str, packages: list[str]) -> str:
    """The runner's first stage (debootstrap + apt packages), by its inputs: runner-base-ARCH-KEY16."""
    text = "".join(f"{v}\n" for v in (arch, SUITE, mirror, security, " ".join(packages)))
    return f"runner-base-{arch}-{sha(text + bash_text(BASE_FNS, 'runner-base'))[:16]}"


def runner_venv_tag(arch: str, venv_inputs: str) -> str:
    """The runner's second stage (user, tools, venv), by its inputs: runner-venv-ARCH-KEY16."""
    key = sha(venv_inputs + "\n" + bash_text(VENV_FNS, "runner-venv"))
    return f"runner-venv-{arch}-{key[:16]}"


# ------------------------------------------------------------------------------------------------ the host's facts
@functools.cache
def apt_site(suite: str) -> str:
    """The mirror this host's apt fetches SUITE from ('' when none)."""
    p = subprocess.run(["apt-get", "indextargets", "--format", "$(SITE) $(RELEASE)", "Created-By: Packages"],
                       capture_output=True, text=True)
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) >= 2 and f[1] == suite:
            return f[0]
    return ""


def debian_mirror() -> str:
    return os.environ.get("EDGEBENCH_DEBIAN_MIRROR") or apt_site(SUITE) or "http://deb.debian.org/debian"


def debian_security() -> str:
    return (os.environ.get("EDGEBENCH_DEBIAN_SECURITY") or apt_site(f"{SUITE}-security")
            or "http://deb.debian.org/debian-security")


def dpkg_version(package: str) -> str | None:
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else None


def busybox_version() -> str | None:
    p = subprocess.run(["apt-cache", "policy", "busybox-static"], capture_output=True, text=True)
    v = next((line.split()[1] for line in p.stdout.splitlines() if line.split()[:1] == ["Candidate:"]), "")
    if not v or v == "(none)":
        warn("apt knows no busybox-static (apt-get update?)")
        return None
    return v


def runner_sources_sum(repo: Path = REPO) -> str:
    """sha256 over `sha256sum` of requirements.txt, containers/runner/pyproject.toml and the runner's sources
    (no caches), in byte order, paths relative to the repository."""
    files = ["requirements.txt", "containers/runner/pyproject.toml"]
    src = []
    for d, dirs, names in os.walk(repo / "containers/runner/src"):
        rel = os.path.relpath(d, repo)
        for n in names:
            p = f"{rel}/{n}"
            if not n.endswith(".pyc") and "/__pycache__/" not in f"{p}" and ".egg-info/" not in p:
                src.append(p)
    lines = [f"{ll.sha256_file(repo / p)}  {p}\n" for p in files + sorted(src, key=os.fsencode)]
    return sha("".join(lines))


def edgebench_commit(repo: Path = REPO) -> str:
    """The commit recorded in the runner (EDGEBENCH_COMMIT), +dirty when tracked files differ."""
    p = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if p.returncode:
        return "unknown"
    s = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                       capture_output=True, text=True)
    return p.stdout.strip() + ("+dirty" if s.stdout.strip() else "")


# ------------------------------------------------------------------------------------------------ inputs
class Inputs:
    """Each image's inputs (one `what value` a line), from this host and the build's settings. None (after a
    warning on stderr naming it) when one is missing."""

    def __init__(self, conf: Conf, runner_tools: list[str], runner_extra: list[str], packages: list[str]):
        self.c, self.tools, self.extra, self.packages = conf, runner_tools, runner_extra, packages

    def argo_binary(self, cmd: str) -> str:
        return f"{self.c.e2e}/bin/{cmd}"

    def stamped(self, binary: str, stamp: str, hint: str) -> bool:
        """BINARY is there and its builder finished it (STAMP names the version)."""
        if not check_binary(binary, hint):
            return False
        if not os.path.exists(stamp):
            warn(f"{binary} has no stamp {stamp} ({hint})")
            return False
        return True

    def check_argo(self, cmd: str) -> bool:
        b = self.argo_binary(cmd)
        if not check_binary(b, "scripts/e2e-argo/build.sh builds it"):
            return False
        if not os.path.exists(f"{self.c.e2e}/bin/.{cmd}-{self.c.argo}"):
            warn(f"{b} has no stamp {self.c.e2e}/bin/.{cmd}-{self.c.argo}: build.sh has not finished it")
            return False
        return True

    def check_nats(self) -> bool:
        return self.stamped(f"{self.c.e2e}/bin/nats-server", f"{self.c.e2e}/bin/.nats-server-{self.c.nats}",
                            "scripts/e2e-argo/build.sh builds it")

    def check_events(self) -> bool:
        return self.stamped(f"{self.c.tools}/argo-events", f"{self.c.tools}/argo-events-{self.c.events}",
                            "make events-tools builds it")

    def base_tag(self) -> str:
        return runner_base_tag(self.c.arch, debian_mirror(), debian_security(), self.packages)

    def runner_venv(self) -> str | None:
        """The venv stage's inputs: the base stage, the sources, the tools and extra binaries."""
        lines = [f"base {self.base_tag()}", f"sources {runner_sources_sum()}"]
        for t in self.tools:
            path = f"{self.c.tools_dir}/{t}"
            if not check_binary(path):
                return None
            lines.append(f"{t} {ll.sha256_file(path)}")
        lines += [f"{os.path.basename(t)} {ll.sha256_file(t)}" for t in self.extra]
        return "\n".join(lines)

    def host_files(self) -> list[str]:
        return [f"ca-certificates.crt {ll.sha256_file('/etc/ssl/certs/ca-certificates.crt')}",
                f"libc6 {dpkg_version('libc6')}"]

    def of(self, name: str) -> str | None:
        c, lines = self.c, [f"arch {self.c.arch}"]
        if name in ("workflow-controller", "argoexec"):
            if not self.check_argo(name):
                return None
            lines += [f"{name} {c.argo} {ll.sha256_file(self.argo_binary(name))}", *self.host_files()]
        elif name in ("minio", "mc"):
            if not check_binary(f"{c.tools}/{name}", f"EDGEBENCH_TOOLS={c.tools}"):
                return None
            lines += [f"{name} {ll.sha256_file(f'{c.tools}/{name}')}", *self.host_files()]
            if name == "mc":
                lines.append(f"busybox-static {busybox_version() or ''}")
        elif name == "runner":
            venv = self.runner_venv()
            if venv is None:
                return None
            lines += [venv, f"venv {runner_venv_tag(c.arch, venv)}", f"commit {edgebench_commit()}"]
        elif name == "nats":
            if not self.check_nats():
                return None
            lines += [f"nats-server {c.nats} {ll.sha256_file(f'{c.e2e}/bin/nats-server')}", *self.host_files()]
        elif name == "argo-events":
            if not self.check_events():
                return None
            tz = dpkg_version("tzdata")
            if tz is None or not os.path.isdir("/usr/share/zoneinfo"):
                warn("argo-events: the host has no tzdata (/usr/share/zoneinfo; apt-get install tzdata)")
                return None
            if not os.path.exists(f"{c.e2e}/bin/.argo-{c.argo}"):
                warn(f"argo-events: {c.e2e}/bin/argo is missing (the CLI the argoWorkflow trigger runs; "
                     "scripts/e2e-argo/build.sh builds it)")
                return None
            lines += [f"argo-events {c.events} {ll.sha256_file(f'{c.tools}/argo-events')}",
                      f"argo {c.argo} {ll.sha256_file(f'{c.e2e}/bin/argo')}", *self.host_files(), f"tzdata {tz}"]
        return "\n".join(lines)
