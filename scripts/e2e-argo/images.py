"""Build, without Docker, the OCI images the kind management cluster runs (Argo's controller and executor, MinIO
and mc, the edgebench runner; the optional group `events`: NATS and Argo Events) and cache them as docker-archive
tarballs in $E2E/images, which `make up` loads into kind (`kind load image-archive`) and the lab's mirror serves
(the runner). Tools: debootstrap + chroot, umoci (layers and configs in an OCI layout), skopeo (OCI layout ->
docker-archive, named after its RepoTags). Every tarball has a stamp (<tar>.inputs) with the key of its inputs: a
rerun with unchanged inputs builds nothing (the keys: imagekeys.py; the recipes: imagerecipes.py; the runner's
definition: containers/runner/image.toml, runner_image.py). The entry point is images.sh beside it.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import inspect
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from imagelib import SUITE, Chroot, Conf, Layout, arch_name, safe_rm, say, warn  # noqa: E402

import cmdkit as ck  # noqa: E402 - on sys.path through imagelib
import lablib as ll  # noqa: E402
import imagekeys as ik  # noqa: E402
import imagerecipes as ir  # noqa: E402
import runner_image as ri  # noqa: E402

CORE_NAMES = ("workflow-controller", "argoexec", "minio", "mc", "runner")  # group core: `build` without NAME
EVENTS_NAMES = ("nats", "argo-events")  # group events (optional): Argo Events' EventBus server and its controller
NAMES = CORE_NAMES + EVENTS_NAMES
GROUPS = {"core": CORE_NAMES, "events": EVENTS_NAMES, "all": NAMES}


def ref_of(c: Conf, name: str) -> str:
    return {"workflow-controller": f"edgebench.local/workflow-controller:{c.argo}",
            "argoexec": f"edgebench.local/argoexec:{c.argo}", "minio": "edgebench.local/minio:e2e",
            "mc": "edgebench.local/mc:e2e", "runner": "edgebench.local/edgebench-runner:e2e",
            "nats": f"edgebench.local/nats:{c.nats.removeprefix('v')}",
            "argo-events": f"edgebench.local/argo-events:{c.events}"}[name]


def expand_names(args: list[str]) -> list[str]:
    """The image names of NAME|GROUP arguments, groups expanded, each once; an unknown name is Fail (exit 2)."""
    names: list[str] = []
    for a in args:
        for n in GROUPS.get(a, (a,)):
            if n not in NAMES:
                raise ck.Fail(f"unknown image {n} (images: {' '.join(NAMES)}; groups: core events all)", 2)
            if n not in names:
                names.append(n)
    return names


def arch_names(c: Conf) -> tuple[str, ...]:
    """The images with a recipe for ARCH: all on the host's own; for a foreign one the runner (the other recipes
    put the host's binaries, compiled here, into the image)."""
    return NAMES if not c.foreign else ("runner",)


class Images:
    def __init__(self, conf: Conf):
        self.c = conf
        self.spec = ri.load()
        tools = list(self.spec["offline"]["tools"])
        if not conf.foreign:  # the C DDS pinger: `make tools` builds it for this host only
            tools += self.spec["offline"]["host_tools"]
        extra = [] if conf.foreign else ri.host_extra(self.spec, conf.e2e, conf.tools)
        self.inputs = ik.Inputs(conf, tools, extra, ri.offline_packages(self.spec))
        self.layout = Layout(conf)
        self.recipes = ir.Recipes(conf, self.layout, self.inputs)

    def key(self, name: str) -> tuple[str, str] | None:
        """(inputs, key) of NAME, or None when an input is missing (said on stderr)."""
        inputs = self.inputs.of(name)
        return None if inputs is None else (inputs, ik.image_key(name, inputs))

    def build_one(self, name: str) -> bool:
        """NAME built, or up to date; False (after the reason) when it could not be."""
        tar, w, t0 = self.c.tar_of(name), f"{self.c.work}/{name}-{self.c.arch}", time.monotonic()
        stamp = Path(f"{tar}.inputs")
        if name not in arch_names(self.c):
            warn(f"{name}: no recipe for {self.c.arch} (for {self.c.arch}: {' '.join(arch_names(self.c))})")
            return False
        try:
            got = self.key(name)
            if got is None:
                warn(f"{name}: not built, an input is missing (above)")
                return False
            inputs, key = got
            if os.path.getsize(tar) if os.path.exists(tar) else 0:
                if stamp.is_file() and stamp.read_text().split("\n", 1)[0] == f"key {key}":
                    say(f"{name}: up to date ({tar})")
                    return True
            say(f"{name}: building {ref_of(self.c, name)} for {self.c.arch}")
            stamp.unlink(missing_ok=True)
            safe_rm(w)
            os.makedirs(w)
            self.recipe(name, w, inputs)
            self.layout.export_tar(name, tar, ref_of(self.c, name))
            self.layout.rm(name)
            stamp.write_text(f"key {key}\n{inputs}\n")
            safe_rm(w)
            size = ll.out(["du", "-h", tar]).split()[0]
            say(f"{name}: built in {time.monotonic() - t0:.0f} s: {tar} ({size})")
            return True
        except ck.Fail as e:
            warn(f"error: {e}")
            return False
        finally:
            if os.path.isdir(w):
                ll.unmount_below(w, warn)

    def recipe(self, name: str, w: str, inputs: str) -> None:
        r = self.recipes
        if name in ("workflow-controller", "argoexec"):
            r.argo(name, w)
        elif name in ("minio", "mc"):
            r.tool(name, w)
        elif name == "runner":
            lines = inputs.split("\n")[1:]  # the venv stage's inputs: after `arch`, before `venv`
            r.runner(w, "\n".join(lines[:next(i for i, x in enumerate(lines) if x.startswith("venv "))]), self.spec)
        elif name == "nats":
            r.nats(w)
        else:
            r.argo_events(w)

    # -------------------------------------------------------------------------------------------- commands
    def build(self, *args: str) -> int:
        c, t0 = self.c, time.monotonic()
        names = expand_names(list(args) or (["core"] if not c.foreign else list(arch_names(c))))
        if os.geteuid() != 0:
            raise ck.Fail("build needs root (chroot, mount, file owners in the layers)", 2)
        ll.need("umoci", "skopeo", "readelf", "findmnt", "file", *(["debootstrap", "chroot"] if "runner" in names
                                                                    else []))
        for d in (c.images, c.work, c.cache):
            os.makedirs(d, exist_ok=True)
        lock = open(f"{c.images}/.lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ck.Fail(f"another images.sh build holds {c.images}/.lock") from None
        if not os.path.exists(f"{c.layout}/index.json"):
            ll.run(["umoci", "init", "--layout", c.layout])
        if c.foreign:
            ll.ensure_emulation(c.lab(), say)
            if "runner" in names:
                ri.cross_tools(self.spec, c.arch, c.tools_dir, f"{c.work}/cross-tools-{c.arch}.log")
        failed = [n for n in names if not self.build_one(n)]
        ll.run(["umoci", "gc", "--layout", c.layout])
        if failed:
            warn(f"not built: {' '.join(failed)} (see above; logs stay in {c.work}); the others are in {c.images} "
                 f"({time.monotonic() - t0:.0f} s)")
            return 1
        safe_rm(c.work)
        say(f"images ({c.arch}) ready in {c.images} ({time.monotonic() - t0:.0f} s); make up loads them into kind "
            "(kind load image-archive)")
        return 0

    def list(self) -> None:
        print(f"{'NAME':<20} {'IMAGE':<44} {'STATE':<9} {'GROUP':<6} TARBALL")
        for n in NAMES:
            tar = self.c.tar_of(n)
            stamp, state = Path(f"{tar}.inputs"), "missing"
            if n not in arch_names(self.c):
                state = "no-recipe"
            elif os.path.exists(tar) and os.path.getsize(tar) and stamp.is_file():
                state = "cached"
                with contextlib.redirect_stderr(io.StringIO()):
                    got = self.key(n)
                if got and stamp.read_text().split("\n", 1)[0] != f"key {got[1]}":
                    state = "stale"
            group = "events" if n in EVENTS_NAMES else "core"
            print(f"{n:<20} {ref_of(self.c, n):<44} {state:<9} {group:<6} {tar}")

    def dockerfile(self) -> None:
        changed = ri.write_dockerfile()
        say(f"{ri.DOCKERFILE}: {'written from' if changed else 'up to date with'} {ri.SPEC}")

    def prove_arm64(self) -> None:
        """The cached arm64 runner runs here under qemu: its config says linux/arm64, its iperf3, python3 and
        fortio are aarch64 ELF files, and `iperf3 --version` and `edgebench --help` (as the image's user) work in a
        chroot of its unpacked root, a scratch directory removed again with the chroot's mounts."""
        c = Conf(**{**self.c.__dict__, "arch": "arm64"})
        tar = c.tar_of("runner")
        if os.geteuid() != 0:
            raise ck.Fail("prove-arm64 needs root (chroot, mount)", 2)
        ll.need("umoci", "skopeo", "file", "chroot")
        if not (os.path.exists(tar) and os.path.getsize(tar)):
            raise ck.Fail(f"no arm64 runner in {tar} (build it: ARCH=arm64 scripts/e2e-argo/images.sh build runner)")
        ll.ensure_emulation(c.lab(), say)
        d = tempfile.mkdtemp(prefix="prove-arm64.", dir=c.images)
        try:
            self._prove(tar, d)
        finally:
            ll.unmount_below(d, warn)
            subprocess.run(["rm", "-rf", "--one-file-system", d])

    def _prove(self, tar: str, d: str) -> None:
        say(f"prove-arm64: {tar}")
        cfg = json.loads(ll.out(["skopeo", "inspect", "--config", f"docker-archive:{tar}"]))
        platform = f"{cfg['os']}/{cfg['architecture']}"
        say(f"prove-arm64:   image config: {platform}")
        if platform != "linux/arm64":
            raise ck.Fail(f"the image's config says {platform}, not linux/arm64")
        ll.run(["skopeo", "--insecure-policy", "copy", "--quiet", f"docker-archive:{tar}", f"oci:{d}/oci:runner"])
        ll.run(["umoci", "unpack", "--image", f"{d}/oci:runner", f"{d}/bundle"], quiet=True)
        root = f"{d}/bundle/rootfs"
        python = os.path.realpath(f"{root}/usr/bin/python3").removeprefix(os.path.realpath(root))
        for f in ("/usr/bin/iperf3", python, "/usr/local/bin/fortio"):
            out = ll.out(["file", "-b", f"{root}{f}"]).strip()
            say(f"prove-arm64:   file {f}: {out.split(', BuildID')[0]}")
            if "ARM aarch64" not in out:
                raise ck.Fail(f"{f} in the image is not an aarch64 executable: {out}")
        uid, home = self.spec["user"]["uid"], self.spec["user"]["home"]
        with Chroot(root) as ch:
            p = ch.run(["uname", "-m"])
            if p.returncode:
                raise ck.Fail("uname -m fails in the arm64 root")
            say(f"prove-arm64:   uname -m (in the chroot, under qemu): {p.stdout.strip()}")
            if p.stdout.strip() != "aarch64":
                raise ck.Fail(f"the chroot runs as {p.stdout.strip()}, not aarch64")
            p = ch.run(["/usr/bin/iperf3", "--version"])
            if p.returncode:
                raise ck.Fail(f"iperf3 --version fails in the arm64 runner: {p.stdout.strip()}")
            print(f"--- iperf3 --version\n{p.stdout.rstrip()}", flush=True)
            p = subprocess.run(["chroot", f"--userspec={uid}:{uid}", root, "/usr/bin/env", "-i", f"HOME={home}",
                                "LANG=C.UTF-8", "PATH=/opt/edgebench/bin:/usr/local/bin:/usr/bin:/bin", "edgebench",
                                "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode:
                raise ck.Fail(f"edgebench --help fails in the arm64 runner (as uid {uid}): {p.stdout.strip()}")
            print(f"--- edgebench --help (as uid {uid})\n{p.stdout.rstrip()}", flush=True)
        say("prove-arm64: ok: the arm64 runner's iperf3 and edgebench run under qemu-aarch64")


def recipe_fingerprint() -> str:
    """A hash of the Python that decides what goes into the images (the recipes, the layout and chroot steps,
    debootstrap, the runner's spec less what only the Dockerfile uses): tests/unit/test_e2e_images.py fails when it no
    longer matches imagekeys.RECIPE_FINGERPRINT, i.e. when a recipe changed but no key did (see RECIPE_REVISIONS)."""
    import imagelib as il

    parts = [inspect.getsource(x) for x in (
        ir.Recipes, ir.runner_config, il.Layout, il.base_files, il.install_binary, il.ldd_libs, il.chroot_argv,
        il.Chroot, ll.debootstrap_root, ri.offline_packages, ri.offline_env, ri.host_extra, ri.cross_tools)]
    spec = {k: v for k, v in ri.load().items() if k != "dockerfile"}
    offline = {*spec["offline"]["tools"], *spec["offline"]["host_tools"]}
    spec["tools"] = {k: v for k, v in spec["tools"].items() if k in offline}  # kind, kubectl, helm: Dockerfile only
    parts += [repr((ir.BUSYBOX_APPLETS, ir.DPKG_SLIM, ir.PROXY_VARS, il.DEV_NODES, il.DEV_LINKS, il.CHROOT_PATH)),
              json.dumps(spec, sort_keys=True)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def doc(c: Conf) -> str:
    return f"""Usage: scripts/e2e-argo/images.sh [--arch ARCH] COMMAND [ARGS]

Builds without Docker the OCI images of the kind management cluster and caches each as a docker-archive
tarball {c.images}/<name>-<arch>.tar, next to a stamp <name>-<arch>.tar.inputs
(the hash of its inputs): a rerun with unchanged inputs builds nothing.

Architectures (--arch ARCH or ARCH=...; default: this host's, {c.host}): {' '.join(ll.KNOWN_ARCHES)}.
  A foreign one (arm64 on amd64) is built under emulation: binfmt_misc is mounted if it is not, qemu-aarch64
  (qemu-user-static) registered with flag F (both stay), debootstrap --foreign + its second stage in the chroot,
  the runner's Go tools cross-compiled (CGO_ENABLED=0 GOARCH=arm64) into $EDGEBENCH_TOOLS/linux-arm64.
  For arm64 only the runner has a recipe (~30 min cold on 2 busy cores, mostly emulated dpkg and pip).

Groups: core ({' '.join(CORE_NAMES)}), events ({' '.join(EVENTS_NAMES)}: optional,
  Argo Events; argo-events needs make events-tools), all (both).
  E.g. images.sh build events, or images.sh build nats argo-events.

Images (NAME  reference  built from):
  workflow-controller  {ref_of(c, 'workflow-controller')}   $E2E/bin/workflow-controller (build.sh)
  argoexec             {ref_of(c, 'argoexec')}              $E2E/bin/argoexec (build.sh)
  minio                edgebench.local/minio:e2e                 $EDGEBENCH_TOOLS/minio
  mc                   edgebench.local/mc:e2e                    $EDGEBENCH_TOOLS/mc + busybox-static (/bin/sh)
  runner               edgebench.local/edgebench-runner:e2e      containers/runner/image.toml: debootstrap {SUITE}
                       + apt packages (cached stage), then a venv with containers/runner and $EDGEBENCH_TOOLS/
                       {{fortio,edgebench-netem-emu,edgebench-relay,edgebench-ddsrr (this host's arch only)}}
                       (cached stage)
  nats                 {ref_of(c, 'nats')}                 $E2E/bin/nats-server (build.sh)
  argo-events          {ref_of(c, 'argo-events')}          $EDGEBENCH_TOOLS/argo-events (make events-tools) +
                                                                 the host's /usr/share/zoneinfo (tzdata)

Environment:
  ARCH              the architecture to build (now {c.arch}); also --arch
  EDGEBENCH_E2E     state directory (now {c.e2e})
  EDGEBENCH_TOOLS   tools built by make tools (now {c.tools});
                    glibc-linked ones (cgo) get the host's loader and libc.so.6 in the image
  ARGO_E2E_VERSION  Argo version of the binaries and image tags (now {c.argo})
  NATS_VERSION, ARGO_EVENTS_VERSION
                    versions of nats-server and argo-events (their stamps) and image tags
                    (now {c.nats}, {c.events})
  EDGEBENCH_DEBIAN_MIRROR, EDGEBENCH_DEBIAN_SECURITY
                    Debian mirrors for the runner (default: the ones this host's apt uses)
To refresh the runner's Debian packages, delete {c.layout} (the cached stages).
Needs root, umoci, skopeo, debootstrap, apt-get, file; for arm64 qemu-user-static and go."""


def commands(c: Conf) -> dict[str, ck.Command]:
    def lazy(method: str):  # the spec and the host are read only when a command runs (not for --help)
        return lambda *a: getattr(Images(c), method)(*a)

    return {
        "build": ck.Command(lazy("build"), "build [NAME|GROUP...]", "build the images (default: group core) whose "
                            "inputs changed; prints each one's time. Exits 1 when one failed or its input is missing "
                            "(e.g. an Argo binary), after building the others.", None),
        "list": ck.Command(lazy("list"), "list", "each image: name, reference, state (cached, stale, missing, "
                           "no-recipe for ARCH), group and tarball."),
        "prove-arm64": ck.Command(lazy("prove_arm64"), "prove-arm64", "unpack the cached arm64 runner and run its "
                                  "iperf3 --version and edgebench --help (as uid 10001) in a chroot under "
                                  "qemu-aarch64; checks with file(1) that they are aarch64 and that the image config "
                                  "says linux/arm64. Exit 1 with the reason."),
        "dockerfile": ck.Command(lazy("dockerfile"), "dockerfile", "write containers/runner/Dockerfile from "
                                 "containers/runner/image.toml (the runner's one definition; generated, not edited)."),
    }


def main(argv: list[str] | None = None, env: dict[str, str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    arch = None
    while argv and (argv[0] == "--arch" or argv[0].startswith("--arch=")):
        if argv[0] == "--arch":
            if len(argv) < 2:
                print("e2e-argo: error: --arch needs an architecture", file=sys.stderr)
                return 2
            arch, argv = argv[1], argv[2:]
        else:
            arch, argv = argv[0].split("=", 1)[1], argv[1:]
    try:
        c = Conf.from_env(env, arch=arch and arch_name(arch)).check_arch()
    except ck.Fail as e:
        print(f"e2e-argo: error: {e}", file=sys.stderr)
        return e.code
    return ck.main("images.sh", "e2e-argo", doc(c), commands(c), argv)


if __name__ == "__main__":
    sys.exit(main())
