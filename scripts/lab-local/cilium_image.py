"""Cilium for the local lab's artifact source, from the Go module github.com/cilium/cilium (no registry, no GitHub):
  - the binaries (agent, operator-generic, CNI plugin, health, dbg, mount, sysctlfix, bugtool), built as upstream's
    Makefile.defs does (static, -tags osusergo, the version and Envoy SHA in the ldflags), in $LABC/bin/ARCH/cilium;
  - the agent image quay.io/cilium/cilium:VERSION: a Debian bookworm root (the mirror's base root) with clang-19 (the
    agent compiles its BPF programs at run time), bpftool and iptables-wrapper (images/runtime), the binaries, the BPF
    sources in /var/lib/cilium/bpf and the chart's init scripts; the operator image quay.io/cilium/operator-generic:
    VERSION: the operator on a static base. No Envoy (the lab's values turn the L7 proxy off), no Hubble;
  - helm (helm.sh/helm/v3, in the tools directory if missing) and the Helm chart install/kubernetes/cilium as a chart
    repository (mirror/charts/cilium: the packaged chart + index.yaml), so that `helm repo add` takes the mirror.
Called by mirror.sh build; every step is cached (binaries by version, the agent root by its stamp, images by key).
Environment: ARCH, EDGEBENCH_LAB_CACHE, EDGEBENCH_MIRROR, EDGEBENCH_TOOLS, CILIUM_VERSION.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lablib as ll  # noqa: E402
import cmdkit as ck  # noqa: E402 - on sys.path through kindlib / lablib

HELM_VERSION = "v3.18.4"
BINARIES = {"cilium-agent": "./daemon", "cilium-cni": "./plugins/cilium-cni",
            "cilium-operator-generic": "./operator", "cilium-health": "./cilium-health",
            "cilium-health-responder": "./cilium-health/responder", "cilium-dbg": "./cilium-dbg",
            "cilium-mount": "./tools/mount", "cilium-sysctlfix": "./tools/sysctlfix", "cilium-bugtool": "./bugtool"}
AGENT_BINARIES = ("cilium-agent", "cilium-dbg", "cilium-health", "cilium-health-responder", "cilium-bugtool",
                  "cilium-mount", "cilium-sysctlfix")
log = ck.Log("lab-local: cilium")


class Cilium:
    def __init__(self, lab: ll.Lab, version: str | None = None):
        self.lab = lab
        self.version = version or os.environ.get("CILIUM_VERSION") or "1.18.0"
        self.bin = f"{lab.bin}/cilium"
        self.src = f"{lab.labc}/src/cilium-v{self.version}"
        self.base, self.rootfs_dir = lab.rootfs("base"), lab.rootfs("cilium-agent")

    # ---------------------------------------------------------------------------------------------- keys
    def agent_key(self) -> str:
        """{ echo "agent VERSION"; cat ROOTFS/.stamp; sha256sum BIN/cilium-* | cut -d' ' -f1; } | sha256sum."""
        bins = sorted(p for p in os.listdir(self.bin) if p.startswith("cilium-"))
        text = f"agent {self.version}\n" + Path(f"{self.rootfs_dir}/.stamp").read_text()
        return ll.key16(text + "".join(ll.sha256_file(f"{self.bin}/{b}") + "\n" for b in bins))

    def operator_key(self) -> str:
        return ll.key16(f"operator {self.version}\n{ll.sha256_file(f'{self.bin}/cilium-operator-generic')}\n")

    # ---------------------------------------------------------------------------------------------- steps
    def source(self) -> None:
        """A writable copy of the module (the module cache is read-only; no vendor/: built with -mod=mod)."""
        if os.path.exists(f"{self.src}/.edgebench-src"):
            return
        mod = ll.go_mod_download(f"github.com/cilium/cilium@v{self.version}")
        if not os.path.isdir(mod.get("Dir", "")):
            raise ck.Fail(f"go mod download github.com/cilium/cilium@v{self.version} failed")
        ll.run(["rm", "-rf", self.src])
        Path(self.src).parent.mkdir(parents=True, exist_ok=True)
        ll.run(["cp", "-a", mod["Dir"], self.src])
        ll.run(["chmod", "-R", "u+w", self.src])
        # Makefile.defs' GIT_VERSION ("<short hash> <date>", the agent parses it) from the proxy's .info of the tag
        info = json.loads(Path(mod["Info"]).read_text())
        Path(f"{self.src}/GIT_VERSION").write_text(f"{info['Origin']['Hash'][:8]} {info['Time']}\n")
        Path(f"{self.src}/.edgebench-src").write_text(mod["Dir"] + "\n")

    def envoy_sha(self) -> str:
        """images/cilium/Dockerfile's Envoy image tag: its SHA is what the agent checks an external Envoy against."""
        return envoy_sha((Path(self.src) / "images/cilium/Dockerfile").read_text())

    def bins(self) -> None:
        self.source()
        git = Path(f"{self.src}/GIT_VERSION").read_text().rstrip("\n")
        ld = (f"-s -w -X 'github.com/cilium/cilium/pkg/version.ciliumVersion={self.version} {git}'"
              f" -X github.com/cilium/cilium/pkg/envoy.requiredEnvoyVersionSHA={self.envoy_sha()}")
        Path(self.bin).mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "GOFLAGS": "-mod=mod", "GOSUMDB": "off", "CGO_ENABLED": "0", "GOOS": "linux",
               "GOARCH": self.lab.arch}
        for name, pkg in BINARIES.items():
            stamp = Path(f"{self.bin}/.{name}.version")
            if ll.executable(f"{self.bin}/{name}") and stamp.is_file() and stamp.read_text().strip() == self.version:
                continue
            tags = "osusergo" + (",ipam_provider_operator" if name == "cilium-operator-generic" else "")
            t0, logfile = time.monotonic(), f"{self.bin}/.{name}.log"
            with open(logfile, "w") as f:
                rc = subprocess.run(["nice", "-n", "10", "go", "build", "-ldflags", ld, "-tags", tags, "-o",
                                     f"{self.bin}/{name}", pkg], cwd=self.src, env=env, stdout=f,
                                    stderr=subprocess.STDOUT).returncode
            if rc:
                sys.stderr.write("".join(Path(logfile).read_text().splitlines(True)[-20:]))
                raise ck.Fail(f"go build {name} failed (see {logfile})")
            stamp.write_text(f"{self.version}\n")
            log(f"{name} ({time.monotonic() - t0:.0f} s)")

    def rootfs(self) -> None:
        """The agent's root: the lab's Debian base + clang-19 and bpftool from Debian, iptables-wrapper."""
        stamp = f"{self.rootfs_dir}/.stamp"
        if os.path.exists(stamp) and ll.newer(stamp, f"{self.base}/.stamp"):
            return
        if not os.path.exists(f"{self.base}/.stamp"):
            raise ck.Fail(f"no base root {self.base} (mirror.sh build makes it)", 2)
        self.source()
        t0, r, work = time.monotonic(), f"{self.rootfs_dir}.wip", self.lab.work
        aptlog = f"{work}/cilium-agent-apt.log"
        Path(work).mkdir(parents=True, exist_ok=True)
        ll.run(["rm", "-rf", r])
        ll.run(["cp", "-a", f"{self.base}/.", f"{r}/"])
        Path(f"{r}/.stamp").unlink(missing_ok=True)
        ll.run(["cp", "/etc/resolv.conf", f"{r}/etc/resolv.conf"])
        ll.ensure_emulation(self.lab, log)
        log("clang-19 and bpftool into the agent's root (apt, a few minutes once; under qemu for a foreign ARCH: "
            "longer)")
        with open(aptlog, "w") as f:
            apt = ("export DEBIAN_FRONTEND=noninteractive; apt-get update -q && apt-get install -y -q "
                   "--no-install-recommends clang-19 bpftool && apt-get purge -y -q --auto-remove llvm-19 "
                   "llvm-19-runtime 2>/dev/null; apt-get clean")
            ll.run(["chroot", r, "/bin/sh", "-c", apt], stdout=f, stderr=subprocess.STDOUT,
                   fail=f"apt in the agent's root failed (see {aptlog})")
        os.symlink("clang-19", f"{r}/usr/bin/clang.tmp")
        os.replace(f"{r}/usr/bin/clang.tmp", f"{r}/usr/bin/clang")
        # images/runtime/Dockerfile: iptables (legacy or nft, whichever the node uses) through iptables-wrapper
        ll.install(f"{self.src}/images/runtime/iptables-wrapper-installer.sh", f"{r}/iptables-wrapper-installer.sh")
        with open(aptlog, "a") as f:
            ll.run(["chroot", r, "/iptables-wrapper-installer.sh", "--no-sanity-check"], stdout=f,
                   stderr=subprocess.STDOUT, fail=f"iptables-wrapper-installer.sh failed (see {aptlog})")
        for p in ("iptables-wrapper-installer.sh", "etc/resolv.conf"):
            Path(r, p).unlink(missing_ok=True)
        ll.run(["sh", "-c", 'rm -rf "$1"/var/lib/apt/lists/* "$1"/usr/share/doc "$1"/usr/share/man '
                '"$1"/usr/share/locale', "sh", r])
        ll.run(["rm", "-rf", self.rootfs_dir])
        os.rename(r, self.rootfs_dir)
        Path(stamp).write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + "\n")
        log(f"agent root in {time.monotonic() - t0:.0f} s")

    def fill_agent(self, r: Path) -> None:
        ll.run(["cp", "-a", f"{self.rootfs_dir}/.", f"{r}/"])
        (r / ".stamp").unlink(missing_ok=True)
        for f in AGENT_BINARIES:
            ll.install(f"{self.bin}/{f}", r / "usr/bin" / f)
        # plugins/cilium-cni: the plugin and its default config; images/cilium/Dockerfile: the scripts the chart runs
        src = Path(self.src)
        ll.install(f"{self.bin}/cilium-cni", r / "opt/cni/bin/cilium-cni")
        ll.install(src / "plugins/cilium-cni/05-cilium-cni.conf", r / "etc/cni/net.d/05-cilium-cni.conf", 0o644)
        for s in ("images/cilium/init-container.sh", "plugins/cilium-cni/install-plugin.sh",
                  "plugins/cilium-cni/cni-uninstall.sh"):
            ll.install(src / s, r / Path(s).name)
        # install-plugin.sh copies /cni/loopback to a node that lacks one (upstream: the CNI plugins' release)
        if ll.executable(f"{self.lab.bin}/cni/loopback"):
            ll.install(f"{self.lab.bin}/cni/loopback", r / "cni/loopback")
        # Makefile install-bpf: the BPF sources the agent compiles, /var/lib/cilium/bpf
        (r / "var/lib/cilium").mkdir(parents=True, exist_ok=True)
        os.chmod(r / "var/lib/cilium", 0o750)
        for p in sorted((src / "bpf").rglob("*")):
            if p.is_file() and p.suffix not in (".o", ".i", ".s") and p.name != ".gitignore":
                ll.install(p, r / "var/lib/cilium" / p.relative_to(src), 0o644)
        for d in ("home/cilium", "var/run/cilium"):
            (r / d).mkdir(parents=True, exist_ok=True)

    def fill_operator(self, r: Path) -> None:
        ll.base_files(r)
        (r / "usr/bin").mkdir(parents=True, exist_ok=True)
        (r / "home/gops").mkdir(parents=True, exist_ok=True)
        os.chmod(r / "home/gops", 0o777)
        ll.install(f"{self.bin}/cilium-operator-generic", r / "usr/bin/cilium-operator-generic")

    def images(self) -> None:
        v = self.version
        ll.oci_image(self.lab, log, "cilium", f"quay.io/cilium/cilium:v{v}", self.agent_key(), self.fill_agent,
                     ["--config.env", "INITSYSTEM=SYSTEMD", "--config.env",
                      "HUBBLE_SERVER=unix:///var/run/cilium/hubble.sock", "--config.workingdir", "/home/cilium",
                      "--config.cmd", "/usr/bin/cilium-dbg"])
        ll.oci_image(self.lab, log, "operator-generic", f"quay.io/cilium/operator-generic:v{v}", self.operator_key(),
                     self.fill_operator, ["--config.env", "GOPS_CONFIG_DIR=/home/gops", "--config.workingdir", "/",
                                          "--config.cmd", "/usr/bin/cilium-operator-generic"])

    def helm(self) -> str:
        """helm for the runner (it installs the chart) in the tools directory, where edgebench.sh.which looks."""
        helm = f"{self.lab.tools}/helm"
        if ll.executable(helm):
            return helm
        t0 = time.monotonic()
        Path(self.lab.tools).mkdir(parents=True, exist_ok=True)
        ll.run(["nice", "-n", "10", "go", "install", f"helm.sh/helm/v3/cmd/helm@{HELM_VERSION}"], cwd="/tmp",
               env={**os.environ, "GOBIN": self.lab.tools, "GOFLAGS": "-mod=mod"}, stdout=sys.stderr,
               fail=f"go install helm.sh/helm/v3/cmd/helm@{HELM_VERSION} failed")
        log(f"helm {HELM_VERSION} into {self.lab.tools} ({time.monotonic() - t0:.0f} s)")
        return helm

    def chart(self) -> None:
        """The chart repository MIRROR/charts/cilium: cilium-VERSION.tgz + index.yaml."""
        self.source()
        helm, out = self.helm(), Path(self.lab.mirror) / "charts/cilium"
        tgz = out / f"cilium-{self.version}.tgz"
        if tgz.exists() and (out / "index.yaml").exists():
            return
        out.mkdir(parents=True, exist_ok=True)
        ll.run([helm, "package", f"{self.src}/install/kubernetes/cilium", "--destination", out], quiet=True)
        if not tgz.exists():
            raise ck.Fail(f"helm package did not write {tgz}")
        ll.run([helm, "repo", "index", out])
        log(f"chart repository {out} (cilium-{self.version}.tgz)")

    def build(self) -> None:
        ll.need_root("chroot, image layers keep file ownership")
        ll.need("umoci", "skopeo", "go", "chroot")
        self.bins()
        self.rootfs()
        self.images()
        self.chart()


def envoy_sha(dockerfile: str) -> str:
    """The SHA of `ARG CILIUM_ENVOY_IMAGE=REPO/NAME:vX.Y.Z-DATE-SHA@sha256:...` (the last dash-separated part of the
    tag), as images/cilium/Makefile's sed takes it; '' when the Dockerfile has none."""
    for line in dockerfile.splitlines():
        m = re.match(r"ARG CILIUM_ENVOY_IMAGE=([^ ]*)", line)
        if m:
            tag = re.search(r"[^/]*/[^:]*:(.*-)?([^:@]*)", m.group(1) + line[m.end():])
            return tag.group(2) if tag else ""
    return ""


def cilium() -> Cilium:
    return Cilium(ll.Lab.from_env().check_arch())


def _helm() -> int:
    print(cilium().helm())
    return 0


COMMANDS = {
    "build": ck.Command(lambda: cilium().build(), "[build]",
                        "bins, rootfs, images and chart, each cached; the default"),
    "bins": ck.Command(lambda: cilium().bins(), "bins", "the binaries into $LABC/bin/ARCH/cilium (each stamped with "
                       "the version in .NAME.version, its build log in .NAME.log)"),
    "rootfs": ck.Command(lambda: cilium().rootfs(), "rootfs", "the agent's root $LABC/rootfs/cilium-agent-ARCH: the "
                         "base root + clang-19, bpftool, iptables-wrapper (rebuilt when the base root's stamp is "
                         "newer)"),
    "images": ck.Command(lambda: cilium().images(), "images", "the agent and operator images into MIRROR/images/ARCH "
                         "(rebuilt when their key, in NAME.tar.key, changes)"),
    "chart": ck.Command(lambda: cilium().chart(), "chart", "the chart repository MIRROR/charts/cilium"),
    "helm": ck.Command(_helm, "helm", "helm in the tools directory (go install when missing); prints its path"),
}

if __name__ == "__main__":
    sys.exit(ck.main("cilium.sh", "lab-local: cilium", __doc__, COMMANDS, sys.argv[1:], default="build"))
