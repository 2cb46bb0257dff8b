"""A kind node image for Kubernetes v1.33.4, built here and offline (issue 44): no registry, no `kind build
node-image` (its `ctr content fetch` always asks the registry), no Docker to build it (`docker load` at the end).
What goes in, all of it already built by the project or from Debian:
  - a Debian bookworm root (debootstrap) with systemd 252 as PID 1, Debian's containerd 1.6.20 + runc 1.1.5 and the
    packages of kind's images/base/Dockerfile (a cached stage, $KINDC/rootfs/node-base; delete it to refresh)
  - kind v0.33.0's images/base/files (entrypoint, systemd units, containerd config, /kind/bin/*), from the Go module
    cache (the module zip of sigs.k8s.io/kind holds images/base)
  - kubeadm, kubelet, kubectl v1.33.4 and the CNI plugins from the lab's mirror (scripts/lab-local/mirror.sh build),
    crictl v1.37.0 (go install), runc-capdrop built from its Go source beside this file (the node's runc: a pod that
    adds a capability this machine's bounding set lacks would otherwise not start)
  - containerd's image store preloaded (namespace k8s.io, pinned, not unpacked, as kind's own build does): the
    mirror's control plane, kube-proxy, etcd, CoreDNS, pause and flannel archives, under their upstream names
  - the default CNI: kind's own (kindnetd) is not served by the module proxy (403), so /kind/manifests/default-cni.yaml
    is the mirror's flannel manifest (vxlan, images preloaded), marked for kind to template its Network with the
    cluster's pod subnet. A cluster that sets networking.disableDefaultCNI installs another CNI instead.
Output: $KINDC/images/node.tar (docker-archive, $NODE_IMAGE) and node.tar.key (the inputs' key: the image is rebuilt
when it changes), then `docker load` if an engine answers and holds another build. Needs root (debootstrap, chroot,
file ownership). Environment: EDGEBENCH_KIND_CACHE ($KINDC), EDGEBENCH_LAB_CACHE, NODE_IMAGE,
EDGEBENCH_DEBIAN_MIRROR.

usage: node-image.sh [--no-load]      build (or find cached) and load
       node-image.sh key              print the inputs' key (what a cached node.tar must carry)
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kindlib as kl  # noqa: E402
import cmdkit as ck  # noqa: E402 - on sys.path through kindlib / lablib

HERE = Path(__file__).resolve().parent
K8S_VERSION = "v1.33.4"
KIND_VERSION = "v0.33.0"
CRICTL_VERSION = "v1.37.0"
ARCH, SUITE = "amd64", "bookworm"
PRELOAD = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd", "coredns", "pause",
           "flannel", "flannel-cni-plugin")
# kind's images/base/Dockerfile list, less what only rootless (fuse-overlayfs), storage e2e tests (nfs-common,
# open-iscsi) or the upstream build need; plus Debian's containerd and runc instead of kind's builds
PACKAGES = ("systemd", "conntrack", "iptables", "nftables", "iproute2", "ethtool", "util-linux", "mount", "kmod",
            "libseccomp2", "pigz", "e2fsprogs", "bash", "ca-certificates", "curl", "jq", "procps", "containerd", "runc")
CHROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
RUNC_CAPDROP = "/usr/local/sbin/runc-capdrop"
PRELOAD_TIMEOUT = 30  # s for the preload's containerd to answer

# The recipe's identity in the cache key. The key hashed the bash script node-image.sh itself; its steps are this
# module's now, unchanged, so the key carries that script's sha256 (commit 81cbba9) and node.tar files built before
# stay cached. A change to what goes into the image gets a new RECIPE (any new string) and, for the unit test that
# guards it, the new RECIPE_FINGERPRINT (tests/unit/test_kind_scripts.py prints it). (Issue 45: runc-capdrop became
# a Go program that assemble() copies from its build; RECIPE stays, the key changes through the program's input,
# kindlib.capdrop_key, in place of the bash script's sha256.)
RECIPE = "63d9925906293ffb72faff751d68d3914d1d09d79b74cdd9f18a0874b46338b7"
RECIPE_FINGERPRINT = "3a14403e7757be4a"
say = ck.Log("kind-node")


def containerd_config(kind_toml: str) -> str:
    """kind's containerd config with three changes: no fuse-overlayfs proxy plugin (rootless only), OOM scores
    clamped (lowering oom_score_adj needs CAP_SYS_RESOURCE, which this machine's bounding set lacks: the kubelet asks
    -997/-998 for critical pods and sandboxes), and runc behind runc-capdrop (a pod that adds SYS_RESOURCE, e.g.
    cilium's agent, would otherwise fail with "unable to apply caps")."""
    lines, skip = [], False
    for line in kind_toml.splitlines():
        if line.startswith("[proxy_plugins"):
            skip = True
            continue
        if line.startswith("["):
            skip = False
        if skip:
            continue
        line = line.replace("restrict_oom_score_adj = false", "restrict_oom_score_adj = true", 1)
        line = re.sub(r"^(\s*)SystemdCgroup = true", lambda m: f"{m[1]}SystemdCgroup = true\n{m[1]}BinaryName = "
                      f'"{RUNC_CAPDROP}"', line, count=1)
        lines.append(line)
    text = "\n".join(lines) + "\n"
    if "restrict_oom_score_adj = true" not in text:
        raise ck.Fail("containerd config: restrict_oom_score_adj not set")
    if text.count(f'BinaryName = "{RUNC_CAPDROP}"') != 2:
        raise ck.Fail("containerd config: BinaryName not set twice")
    return text


def default_cni(flannel: str, source: str) -> str:
    """The mirror's flannel manifest as kind's default CNI: kind templates a manifest that holds the marker line with
    Go's text/template ({{ .PodSubnet }}); the flannel manifest must have no other braces."""
    if '"Network": "10.244.0.0/16"' not in flannel:
        raise ck.Fail(f'no "Network" line to template in {source}')
    if "{{" in flannel:
        raise ck.Fail(f"{source} holds template braces")
    return ("# would you kindly template this file\n"
            "# edgebench: the lab mirror's flannel v0.28.9 (vxlan), kind's default CNI in this node image\n"
            + flannel.replace('"Network": "10.244.0.0/16"', '"Network": "{{ .PodSubnet }}"'))


def base_spec(spec: dict) -> dict:
    """`ctr oci spec` + kind's createContainer hook, without rlimits (as kind's Dockerfile does)."""
    hooks = spec.setdefault("hooks", {})
    hooks["createContainer"] = list(hooks.get("createContainer") or []) + [{"path": "/kind/bin/mount-product-files.sh"}]
    spec.get("process", {}).pop("rlimits", None)
    return spec


def inputs_key(stamp: str, file_hashes: list[str], preload_hashes: list[str]) -> str:
    """The key of what the image is made of, as the bash script computed it: sha256 over the base stage's stamp,
    the recipe's and the input files' sha256 (one a line), the preloaded archives' and the versions; 16 hex."""
    text = stamp + "".join(f"{h}\n" for h in file_hashes) + "".join(f"{h}\n" for h in preload_hashes)
    text += f"{KIND_VERSION} {CRICTL_VERSION} {K8S_VERSION}\n"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Build:
    def __init__(self, env: dict[str, str] | None = None):
        env = os.environ if env is None else env
        share = Path(env.get("HOME", str(Path.home()))) / ".local/share/edgebench"
        self.kindc = Path(env.get("EDGEBENCH_KIND_CACHE", share / "kind"))
        self.labc = Path(env.get("EDGEBENCH_LAB_CACHE", share / "lab"))
        self.node_image = env.get("NODE_IMAGE") or f"edgebench.local/kind-node:{K8S_VERSION}"
        self.mirror_url = env.get("EDGEBENCH_DEBIAN_MIRROR") or "http://deb.debian.org/debian"
        self.base = self.kindc / "rootfs/node-base"  # cached stage: debootstrap + packages + kind's clean-up
        self.work = self.kindc / "work"
        self.root = self.work / "node-rootfs"  # the image's root while it is assembled
        self.layout = self.work / "oci"
        self.out = self.kindc / "images"
        self.bin = self.labc / "mirror/bin" / ARCH
        self.mimg = self.labc / "mirror/images" / ARCH  # scripts/lab-local/mirror.sh build
        self.flannel = self.labc / "mirror/manifests/flannel/v0.28.9/kube-flannel.yml"

    # -------------------------------------------------------------------------------------------- chroot
    @contextlib.contextmanager
    def chroot(self, r: Path):
        """/proc and a private /dev for apt's and systemctl's sake; unmounted on the way out, whatever happens."""
        made: list[Path] = []
        try:
            kl.run(["mount", "-t", "proc", "proc", str(r / "proc")])
            made.append(r / "proc")
            kl.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=16m", "tmpfs", str(r / "dev")])
            made.append(r / "dev")
            for name, major, minor in (("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8),
                                       ("urandom", 1, 9), ("tty", 5, 0)):
                os.mknod(r / "dev" / name, 0o666 | 0o020000, os.makedev(major, minor))
                os.chmod(r / "dev" / name, 0o666)
            yield
        finally:
            for m in reversed(made):
                if subprocess.run(["umount", str(m)], stderr=subprocess.DEVNULL).returncode:
                    subprocess.run(["umount", "-l", str(m)])

    def in_chroot(self, r: Path, *argv: str, **kw) -> subprocess.CompletedProcess:
        return kl.run(["chroot", str(r), "/usr/bin/env", "-i", f"PATH={CHROOT_PATH}", "HOME=/root", "LANG=C.UTF-8",
                       "DEBIAN_FRONTEND=noninteractive", *argv], **kw)

    # -------------------------------------------------------------------------------------------- stage 1
    def base_stage(self) -> None:
        """The Debian root (cached; delete $KINDC/rootfs/node-base to refresh the packages)."""
        if (self.base / ".stamp").exists():
            return
        t0, wip = time.monotonic(), Path(f"{self.base}.wip")
        self.work.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(wip, ignore_errors=True)
        dlog = self.work / "debootstrap.log"
        say(f"debootstrap {SUITE} (minbase) into {wip}")
        with open(dlog, "w") as lf:
            kl.run(["debootstrap", "--variant=minbase", f"--arch={ARCH}", SUITE, str(wip), self.mirror_url],
                   stdout=lf, stderr=subprocess.STDOUT, fail=f"debootstrap failed ({dlog})")
        shutil.copyfile("/etc/resolv.conf", wip / "etc/resolv.conf")
        prc = wip / "usr/sbin/policy-rc.d"  # start nothing
        prc.write_text("#!/bin/sh\nexit 101\n")
        prc.chmod(0o755)
        with self.chroot(wip), open(dlog, "a") as lf:
            self.in_chroot(wip, "apt-get", "update", "-q", stdout=lf, stderr=subprocess.STDOUT)
            self.in_chroot(wip, "apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES, stdout=lf,
                           stderr=subprocess.STDOUT, fail=f"apt-get install failed ({dlog})")
            self.in_chroot(wip, "apt-get", "clean")
            # kind's images/base/Dockerfile, first RUN: no units but the ones kind enables, no kmsg in journald
            self.in_chroot(wip, "sh", "-euc", """
                find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
                rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
                      /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
                      /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
                echo "ReadKMsg=no" >> /etc/systemd/journald.conf
                ln -sf /usr/lib/systemd/systemd /sbin/init""")
            # NOT kind's: systemd-sysctl in a privileged node writes the HOST's global sysctls; Debian's systemd
            # brings kernel.pid_max = 4194304 (this host: 32768) and fs.protected_*. Only kind's per-netns files stay.
            for f in ("usr/lib/sysctl.d/50-pid-max.conf", "usr/lib/sysctl.d/99-protect-links.conf",
                      "etc/sysctl.d/99-sysctl.conf"):
                (wip / f).unlink(missing_ok=True)
        (wip / "etc/resolv.conf").unlink(missing_ok=True)
        prc.unlink(missing_ok=True)
        for pattern in ("var/lib/apt/lists/*", "var/cache/apt/archives/*.deb", "usr/share/doc", "usr/share/man",
                        "usr/share/locale", "var/log/*"):
            for p in wip.glob(pattern):
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        shutil.rmtree(self.base, ignore_errors=True)
        os.replace(wip, self.base)
        (self.base / ".stamp").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + "\n")
        say(f"base root in {time.monotonic() - t0:.0f} s")

    # -------------------------------------------------------------------------------------------- inputs
    def kind_files(self) -> Path:
        """kind v0.33.0's images/base/files, from the module cache."""
        got = kl.out(["go", "mod", "download", "-json", f"sigs.k8s.io/kind@{KIND_VERSION}"], check=True, cwd="/tmp",
                     env={**os.environ, "GOFLAGS": "-mod=mod"})
        d = Path(json.loads(got).get("Dir") or "/nonexistent")
        if not (d / "images/base/files").is_dir():
            raise ck.Fail(f"no images/base/files in the kind module ({d})")
        return d / "images/base/files"

    def crictl_bin(self) -> Path:
        b = self.kindc / "bin" / f"crictl-{CRICTL_VERSION}"
        if not os.access(b, os.X_OK):
            tmp = self.kindc / "bin/crictl.tmp"
            tmp.mkdir(parents=True, exist_ok=True)
            kl.run(["go", "install", "-trimpath", "-ldflags", "-s -w",
                    f"sigs.k8s.io/cri-tools/cmd/crictl@{CRICTL_VERSION}"], cwd="/tmp",
                   env={**os.environ, "GOBIN": str(tmp), "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"})
            os.replace(tmp / "crictl", b)
            tmp.rmdir()
        return b

    def missing_inputs(self) -> list[str]:
        miss = [f"{self.bin / f} (scripts/lab-local/mirror.sh build)" for f in ("kubeadm", "kubelet", "kubectl")
                if not os.access(self.bin / f, os.X_OK)]
        miss += [f"{self.mimg / f}.tar (scripts/lab-local/mirror.sh build)" for f in PRELOAD
                 if not (self.mimg / f"{f}.tar").is_file()]
        if not self.flannel.is_file():
            miss.append(f"{self.flannel} (mirror.sh build)")
        if not (self.bin / "cni-plugins.tgz").is_file():
            miss.append(f"{self.bin / 'cni-plugins.tgz'} (mirror.sh build)")
        return miss

    def key(self) -> str:
        """What the image is made of: rebuilt when it changes (see RECIPE). runc-capdrop counts by its Go source
        (kindlib.capdrop_key: `key` needs no Go; the bash script's own sha256 was this place's before issue 45)."""
        files = [*(self.bin / b for b in ("kubeadm", "kubelet", "kubectl")), self.flannel, self.bin / "cni-plugins.tgz"]
        return inputs_key((self.base / ".stamp").read_text(), [RECIPE, kl.capdrop_key(), *map(sha256_file, files)],
                          [sha256_file(self.mimg / f"{n}.tar") for n in PRELOAD])

    # -------------------------------------------------------------------------------------------- stage 2
    def assemble(self, files: Path, crictl: Path, capdrop: Path) -> None:
        root = self.root
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        kl.run(["cp", "-a", f"{self.base}/.", f"{root}/"])
        (root / ".stamp").unlink(missing_ok=True)

        def put(srcs, dst: str, mode: int) -> None:
            for s in srcs:
                d = root / dst / Path(s).name
                shutil.copyfile(s, d)
                os.chmod(d, mode)
                os.chown(d, 0, 0)

        # kind's COPY lines, with their modes
        for d in ("kind", "kind/bin", "LICENSES", "etc/containerd", "etc/default", "etc/sysctl.d",
                  "etc/systemd/system/kubelet.service.d", "etc/kubernetes/manifests"):
            (root / d).mkdir(parents=True, exist_ok=True)
            os.chmod(root / d, 0o755)
        put(sorted((files / "usr/local/bin").iterdir()), "usr/local/bin", 0o755)
        put([files / "kind/README.txt"], "kind", 0o644)
        put(sorted((files / "kind/bin").iterdir()), "kind/bin", 0o755)
        put([files / "etc/crictl.yaml"], "etc", 0o644)
        put([files / "etc/default/kubelet"], "etc/default", 0o644)
        put(sorted((files / "etc/sysctl.d").iterdir()), "etc/sysctl.d", 0o644)
        units = files / "etc/systemd/system"
        put(sorted([*units.glob("*.service"), *units.glob("*.slice")]), "etc/systemd/system", 0o644)
        put(sorted((files / "etc/systemd/system/kubelet.service.d").iterdir()), "etc/systemd/system/kubelet.service.d",
            0o644)
        (root / "etc/containerd/config.toml").write_text(containerd_config((files / "etc/containerd/config.toml")
                                                                           .read_text()))
        shutil.copyfile(capdrop, root / RUNC_CAPDROP.lstrip("/"))
        os.chmod(root / RUNC_CAPDROP.lstrip("/"), 0o755)
        # kind's unit starts /usr/local/bin/containerd; Debian's is /usr/bin/containerd
        (root / "usr/local/bin/containerd").unlink(missing_ok=True)
        (root / "usr/local/bin/containerd").symlink_to("/usr/bin/containerd")
        (root / "etc/systemd/system/multi-user.target.wants/containerd.service").unlink(missing_ok=True)
        # the base runtime spec: `ctr oci spec` + kind's createContainer hook, without rlimits
        with self.chroot(root):
            spec = self.in_chroot(root, "ctr", "oci", "spec", capture_output=True, text=True).stdout
        (root / "etc/containerd/cri-base.json").write_text(json.dumps(base_spec(json.loads(spec)), indent=2) + "\n")
        # Kubernetes, crictl, CNI plugins
        put([self.bin / b for b in ("kubeadm", "kubelet", "kubectl")], "usr/bin", 0o755)
        shutil.copyfile(crictl, root / "usr/local/bin/crictl")
        os.chmod(root / "usr/local/bin/crictl", 0o755)
        (root / "opt/cni/bin").mkdir(parents=True, exist_ok=True)
        kl.run(["tar", "-xzf", str(self.bin / "cni-plugins.tgz"), "-C", str(root / "opt/cni/bin")])
        # what kind's node image build writes, and the default CNI (see the header)
        (root / "kind/version").write_text(K8S_VERSION)
        (root / "kind/manifests").mkdir(mode=0o755, exist_ok=True)
        (root / "kind/manifests/default-cni.yaml").write_text(default_cni(self.flannel.read_text(), str(self.flannel)))
        # kind's second RUN: enable its units, never touch the kernel-global binfmt_misc (the host's systemctl with
        # --root: no chroot, no running systemd needed)
        kl.run(["systemctl", f"--root={root}", "enable", "kubelet.service", "containerd.service",
                "undo-mount-hacks.service"])
        kl.run(["systemctl", f"--root={root}", "mask", "systemd-binfmt.service"])
        (root / "etc/machine-id").unlink(missing_ok=True)
        (root / "etc/machine-id").write_text("")  # the entrypoint regenerates it per node

    # -------------------------------------------------------------------------------------------- stage 3
    def preload(self) -> None:
        """containerd's store, preloaded by the image's own containerd (Debian's 1.6.20, linked like the host's) run
        from the host side, without CRI; ctr is the host's (same package)."""
        st, t0 = Path("/run/edgebench-kind-build"), time.monotonic()
        sock, cfg = st / "containerd.sock", st / "config.toml"
        shutil.rmtree(st, ignore_errors=True)
        st.mkdir(parents=True)
        (self.root / "var/lib/containerd").mkdir(parents=True, exist_ok=True)
        cfg.write_text(f'version = 2\nroot = "{self.root}/var/lib/containerd"\nstate = "{st}/state"\n'
                       f'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "{sock}"\n')
        ctr = ["ctr", "-a", str(sock), "-n", "k8s.io"]
        with open(self.work / "preload-containerd.log", "wb") as lf:
            proc = subprocess.Popen([str(self.root / "usr/bin/containerd"), "--config", str(cfg)], stdout=lf,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            def answers() -> bool:
                if proc.poll() is not None:
                    raise ck.Fail(f"the preload's containerd exited (code {proc.returncode}; log: "
                                  f"{self.work / 'preload-containerd.log'})")
                return sock.is_socket() and subprocess.run(["ctr", "-a", str(sock), "version"],
                                                           stdout=subprocess.DEVNULL,
                                                           stderr=subprocess.DEVNULL).returncode == 0
            ck.poll(answers, PRELOAD_TIMEOUT, f"the preload's containerd answering on {sock}", interval=0.5)
            for n in PRELOAD:
                f = self.mimg / f"{n}.tar"
                kl.run([*ctr, "images", "import", "--all-platforms", "--no-unpack", "--digests", str(f)], quiet=True,
                       fail=f"import of {f} failed")
                # ctr 1.6 has no `import --label`: pin afterwards (kubelet's image GC leaves pinned images alone)
                with tarfile.open(f) as t:
                    manifest = json.load(t.extractfile("manifest.json"))
                for ref in (tag for m in manifest for tag in (m.get("RepoTags") or [])):
                    kl.run([*ctr, "images", "label", ref, "io.cri-containerd.pinned=pinned"], quiet=True)
            names = kl.out([*ctr, "images", "ls", "-q"], check=True)
            (self.work / "preloaded.txt").write_text(names)
        finally:
            kl.stop(proc.pid, 15, "the preload's containerd", group=True)
            proc.wait()
        shutil.rmtree(st)  # no container ran: no shim, nothing mounted below it
        say(f"preloaded {len(names.splitlines())} image names in {time.monotonic() - t0:.0f} s")

    # -------------------------------------------------------------------------------------------- stage 4
    def pack(self, key: str) -> None:
        t0, bundle, tag = time.monotonic(), self.work / "node-bundle", "node"
        img = f"{self.layout}:{tag}"
        self.out.mkdir(parents=True, exist_ok=True)
        if not (self.layout / "oci-layout").exists():
            shutil.rmtree(self.layout, ignore_errors=True)
            kl.run(["umoci", "init", "--layout", str(self.layout)])
        if tag in kl.out(["umoci", "ls", "--layout", str(self.layout)]).split():
            kl.run(["umoci", "rm", "--image", img])
        shutil.rmtree(bundle, ignore_errors=True)
        kl.run(["umoci", "new", "--image", img])
        kl.run(["umoci", "unpack", "--image", img, str(bundle)], quiet=True)
        (bundle / "rootfs").rmdir()
        os.replace(self.root, bundle / "rootfs")
        kl.run(["umoci", "repack", "--image", img, str(bundle)])
        # kind's final stage: ENV container=docker, STOPSIGNAL SIGRTMIN+3, ENTRYPOINT [entrypoint, /sbin/init]
        kl.run(["umoci", "config", "--image", img, "--os", "linux", "--architecture", ARCH,
                "--config.env", "container=docker", "--config.env", f"PATH={CHROOT_PATH}",
                "--config.stopsignal", "SIGRTMIN+3",
                "--config.entrypoint", "/usr/local/bin/entrypoint", "--config.entrypoint", "/sbin/init",
                "--config.label", f"io.edgebench.kind-node.inputs={key}"])
        shutil.rmtree(bundle, ignore_errors=True)
        tmp = self.out / "node.tar.tmp"
        tmp.unlink(missing_ok=True)
        kl.run(["skopeo", "--insecure-policy", "copy", "--quiet", f"oci:{img}",
                f"docker-archive:{tmp}:{self.node_image}"])
        kl.run(["umoci", "rm", "--image", img])
        kl.run(["umoci", "gc", "--layout", str(self.layout)])
        os.replace(tmp, self.out / "node.tar")
        mb = -(-(self.out / "node.tar").stat().st_size // (1 << 20))
        say(f"{self.node_image} -> {self.out / 'node.tar'} ({mb} MB) in {time.monotonic() - t0:.0f} s")

    # -------------------------------------------------------------------------------------------- main
    def check(self) -> None:
        kl.need_root()
        kl.need_commands(["debootstrap", "umoci", "skopeo", "jq", "go", "ctr"])
        miss = self.missing_inputs()
        if miss:
            raise ck.Fail(f"missing {len(miss)} input(s): {'; '.join(miss)}", 2)

    def main(self, load: bool = True) -> None:
        self.check()
        self.base_stage()
        key = self.key()
        tar, keyfile = self.out / "node.tar", self.out / "node.tar.key"
        if tar.is_file() and keyfile.is_file() and keyfile.read_text().strip() == key:
            say(f"cached: {tar} ({self.node_image}, inputs {key})")
        else:
            t0 = time.monotonic()
            files, crictl = self.kind_files(), self.crictl_bin()
            self.assemble(files, crictl, kl.capdrop_bin(self.kindc))
            self.preload()
            self.pack(key)
            keyfile.write_text(f"{key}\n")
            say(f"built in {time.monotonic() - t0:.0f} s")
        if load and subprocess.run(["docker", "info"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL).returncode == 0:
            label = kl.out(["docker", "image", "inspect", "-f",
                            '{{index .Config.Labels "io.edgebench.kind-node.inputs"}}', self.node_image]).strip()
            if label != key:
                kl.run(["docker", "load", "-i", str(tar)])

    def print_key(self) -> None:
        miss = self.missing_inputs() + ([] if (self.base / ".stamp").is_file() else [f"{self.base}/.stamp"])
        if miss:
            raise ck.Fail(f"missing {len(miss)} input(s): {'; '.join(miss)}", 2)
        print(self.key())


def recipe_fingerprint() -> str:
    """A hash of the code that decides what goes into the image (the stages, the edits, the lists and versions):
    tests/unit/test_kind_scripts.py fails when it no longer matches RECIPE_FINGERPRINT, i.e. when the recipe changed
    but RECIPE (the cache key's part) did not."""
    parts = [inspect.getsource(f) for f in (containerd_config, default_cni, base_spec, Build.base_stage,
                                            Build.assemble, Build.preload, Build.pack)]
    parts.append(repr((K8S_VERSION, KIND_VERSION, CRICTL_VERSION, ARCH, SUITE, PRELOAD, PACKAGES, RUNC_CAPDROP)))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    ck.exit_on_sigterm()
    try:
        if argv == ["key"]:
            Build().print_key()
        elif argv in ([], ["--no-load"]):
            Build().main(load=not argv)
        else:
            print(f"kind-node: error: unknown arguments {' '.join(argv)!r}: node-image.sh [--no-load] | key | --help",
                  file=sys.stderr)
            return 2
    except ck.Fail as e:
        say(f"error: {e}")
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
