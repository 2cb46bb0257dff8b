"""Build (once, cached) the binaries of the local lab's artifact source, from the Go module proxy, for one
architecture (ARCH=amd64|arm64; Go cross-compiles): etcd, CoreDNS, flanneld (the pin and FLANNEL_EXTRA's versions),
kube-router, the CNI plugins, flannel's CNI plugin, fortio and kubeadm (with go1.24.7). Kubernetes' other binaries
come from scripts/e2e-argo/build.sh for this machine's architecture; a foreign one's (ARCH=arm64) are
cross-compiled here from the same wrapper module, into $LABC/bin/ARCH/k8s. Each module is required at its pinned
version by a small wrapper module in $LABC/src (dependencies' replace directives stay out of the way), built with
CGO_ENABLED=0, and stamped ($LABC/bin/ARCH/.NAME-VERSION): a rerun builds nothing.
Environment: ARCH, EDGEBENCH_LAB_CACHE ($LABC), EDGEBENCH_E2E, K8S_VERSION, GOSUMDB.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lablib as ll  # noqa: E402
import cmdkit as ck  # noqa: E402 - on sys.path through kindlib / lablib

ETCD_VERSION = "v3.5.21"         # kubeadm v1.33's etcd (registry.k8s.io/etcd:3.5.21-0)
COREDNS_VERSION = "v1.12.0"      # kubeadm v1.33's CoreDNS
KUBE_ROUTER_VERSION = "v2.1.0"   # the catalog pins v2.11.1; the module proxy answers 403 for its go.mod
CNI_PLUGINS_VERSION = "v1.1.1"   # Debian bookworm's containernetworking-plugins
FLANNEL_CNI_VERSION = "v0.9.1"   # the last containernetworking/plugins with meta/flannel (flannel-io/cni-plugin: 403)
FORTIO_VERSION = "v1.66.5"       # the HTTP test services (the Makefile's pin), static for a distroless-like image
# kubeadm v1.33.4 with go1.24.7: its preflight check HTTPProxyCIDR formats an IPv4 address (16-byte form) as
# "https://[10.96.0.1]:1234/", which net/url rejects from go1.24.8 / go1.25.2 on (the bracketed-host fix of
# CVE-2025-47912): built by this machine's Go, kubeadm init fails with "[ERROR HTTPProxyCIDR] ... invalid
# IP-literal". go1.24.7 is the last toolchain that parses it; it comes from the module proxy (golang.org/toolchain).
KUBEADM_GOTOOLCHAIN = "go1.24.7"
K8S_FOREIGN = ("kubelet", "kubectl", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy")
CNI_PLUGINS = {"main": ("bridge", "host-device", "ipvlan", "loopback", "macvlan", "ptp", "vlan"),
               "ipam": ("host-local", "static", "dhcp"),
               "meta": ("bandwidth", "firewall", "portmap", "sbr", "tuning", "vrf")}
ETCD_MAIN = """package main

import (
\t"os"

\t"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }"""
TENCENT_VPC = "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc"
log = ck.Log("lab-local")


@dataclass(frozen=True)
class Item:
    """One cached build: `label version` in the status lines, stamped OUT/.STAMP-VERSION."""
    label: str
    stamp: str
    version: str
    build: Callable[["Builder"], None]


class Builder:
    def __init__(self, lab: ll.Lab, k8s_version: str):
        self.lab, self.k8s_version = lab, k8s_version
        self.out, self.src = lab.bin, f"{lab.labc}/src"
        self.k8s_src = f"{lab.e2e}/src/k8s-{k8s_version}"
        self.env = {**os.environ, "GOFLAGS": "-buildvcs=false -mod=mod", "CGO_ENABLED": "0", "GOOS": "linux",
                    "GOARCH": lab.arch, "GOSUMDB": os.environ.get("GOSUMDB") or "off"}

    def items(self) -> list[Item]:
        k = self.k8s_version
        items = [
            Item("etcd", "etcd", ETCD_VERSION, Builder.etcd),
            Item("coredns", "coredns", COREDNS_VERSION, Builder.coredns),
            Item("flanneld", "flanneld", ll.FLANNEL_VERSION, Builder.flanneld),
            *[Item("flanneld", "flanneld-extra", v, Builder.flanneld_extra) for v in ll.FLANNEL_EXTRA],
            Item("kube-router", "kube-router", KUBE_ROUTER_VERSION, Builder.kube_router),
            Item("cni-plugins", "cni-plugins", CNI_PLUGINS_VERSION, Builder.cni_plugins),
            Item("flannel-cni", "flannel-cni", FLANNEL_CNI_VERSION, Builder.flannel_cni),
            Item("fortio", "fortio", FORTIO_VERSION, Builder.fortio),
            Item("kubeadm", "kubeadm-go1.24", k, Builder.kubeadm)]
        if self.lab.foreign:   # this machine's come from scripts/e2e-argo/build.sh
            items += [Item(c, f"k8s-{c}", k, Builder.k8s_foreign) for c in K8S_FOREIGN]
        return items

    def stamp(self, item: Item) -> str:
        return ll.stamp(self.out, item.stamp, item.version)

    def cached(self, item: Item) -> bool:
        return os.path.exists(self.stamp(item))

    # ---------------------------------------------------------------------------------------------- helpers
    def wrapper(self, name: str, module: str, version: str, main_go: str | None = None,
                imports: str | None = None) -> str:
        """$LABC/src/NAME-VERSION: a module requiring MODULE@VERSION, with MAIN_GO as main.go or a tools.go
        importing IMPORTS; `go mod tidy`."""
        d = Path(f"{self.src}/{name}-{version}")
        d.mkdir(parents=True, exist_ok=True)
        (d / "go.mod").write_text(f"module edgebench.local/lab/{name}\n\ngo 1.24.0\n\nrequire {module} {version}\n")
        if main_go is not None:
            (d / "main.go").write_text(main_go + "\n")
        else:
            (d / "tools.go").write_text(f'package tools\n\nimport _ "{imports}"\n')
        tidy = ["go", "mod", "tidy"]
        if subprocess.run(tidy, cwd=d, env=self.env, capture_output=True).returncode:
            ll.run(tidy, cwd=d, env=self.env, fail=f"go mod tidy in {d} failed")   # again, with its output
        return str(d)

    def go_build(self, cwd: str, out: str, pkg: str, ldflags: str = "-s -w", **env: str) -> None:
        ll.run(["go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg], cwd=cwd, env={**self.env, **env},
               fail=f"go build {pkg} ({self.lab.arch}) failed")

    def cgo(self) -> str:   # flannel's udp backend is cgo on the host's architecture
        return "1" if not self.lab.foreign else "0"

    def need_k8s_src(self) -> None:
        if not os.path.exists(f"{self.k8s_src}/go.mod"):
            raise ck.Fail(f"{self.k8s_src} is missing: run scripts/e2e-argo/build.sh --k8s first", 2)

    # ---------------------------------------------------------------------------------------------- the builds
    def etcd(self, item: Item) -> None:
        d = self.wrapper("etcd", "go.etcd.io/etcd/server/v3", item.version, main_go=ETCD_MAIN)
        self.go_build(d, f"{self.out}/etcd", ".")

    def coredns(self, item: Item) -> None:
        d = self.wrapper("coredns", "github.com/coredns/coredns", item.version,
                         imports="github.com/coredns/coredns/core/plugin")
        self.go_build(d, f"{self.out}/coredns", "github.com/coredns/coredns")

    def _flannel(self, name: str, version: str, out: str) -> str:
        d = self.wrapper(name, "github.com/flannel-io/flannel", version,
                         imports="github.com/flannel-io/flannel/pkg/version")
        # flannel links every backend; the module proxy answers 403 for the Tencent Cloud VPC SDK it pins (v1.3.149),
        # so the tencentvpc backend (a cloud route table API, never used here) builds against v1.0.1000 instead.
        # The udp backend is cgo on amd64: flanneld is linked against the Debian root's glibc (the image has it).
        gomod = Path(d) / "go.mod"
        if "tencentcloud/vpc" not in gomod.read_text():
            with gomod.open("a") as f:
                f.write(f"\nreplace {TENCENT_VPC} => {TENCENT_VPC} v1.0.1000\n")
        self.go_build(d, out, "github.com/flannel-io/flannel",
                      f"-s -w -X github.com/flannel-io/flannel/pkg/version.Version={version}", CGO_ENABLED=self.cgo())
        return d

    def flanneld(self, item: Item) -> None:
        d = self._flannel("flannel", item.version, f"{self.out}/flanneld")
        # the manifest's install-cni init container runs /opt/bin/install-conf (cmd/install_conf, as flannel's image)
        self.go_build(d, f"{self.out}/flannel-install-conf", "github.com/flannel-io/flannel/cmd/install_conf",
                      CGO_ENABLED="0")

    def flanneld_extra(self, item: Item) -> None:   # flanneld-VERSION, for paired reruns (mirror.py makes its image)
        self._flannel(f"flannel-{item.version}", item.version, f"{self.out}/flanneld-{item.version}")

    def kube_router(self, item: Item) -> None:
        mod = "github.com/cloudnativelabs/kube-router/v2"
        d = self.wrapper("kube-router", mod, item.version, imports=f"{mod}/pkg/version")
        self.go_build(d, f"{self.out}/kube-router", f"{mod}/cmd/kube-router",
                      f"-s -w -X {mod}/pkg/version.Version={item.version}")

    def cni_plugins(self, item: Item) -> None:
        mod = "github.com/containernetworking/plugins"
        d = self.wrapper("cni-plugins", mod, item.version, imports=f"{mod}/pkg/ip")
        Path(f"{self.out}/cni").mkdir(parents=True, exist_ok=True)
        for kind, names in CNI_PLUGINS.items():
            for p in names:
                self.go_build(d, f"{self.out}/cni/{p}", f"{mod}/plugins/{kind}/{p}")

    def flannel_cni(self, item: Item) -> None:
        mod = "github.com/containernetworking/plugins"
        d = self.wrapper("flannel-cni", mod, item.version, imports=f"{mod}/pkg/ip")
        self.go_build(d, f"{self.out}/flannel", f"{mod}/plugins/meta/flannel")

    def fortio(self, item: Item) -> None:
        d = self.wrapper("fortio", "fortio.org/fortio", item.version, imports="fortio.org/fortio/version")
        self.go_build(d, f"{self.out}/fortio", "fortio.org/fortio")

    def kubeadm(self, item: Item) -> None:   # only kubeadm is built with go1.24.7; the rest are the e2e build's
        self.need_k8s_src()
        self.go_build(self.k8s_src, f"{self.out}/kubeadm", "k8s.io/kubernetes/cmd/kubeadm",
                      f"-s -w -X k8s.io/component-base/version.gitVersion={item.version}",
                      GOTOOLCHAIN=KUBEADM_GOTOOLCHAIN, GONOSUMDB="golang.org/toolchain", GOSUMDB="sum.golang.org")

    def k8s_foreign(self, item: Item) -> None:   # into OUT/k8s, where mirror.py looks for a foreign ARCH's
        self.need_k8s_src()
        self.go_build(self.k8s_src, f"{self.out}/k8s/{item.label}", f"k8s.io/kubernetes/cmd/{item.label}",
                      f"-s -w -X k8s.io/component-base/version.gitVersion={item.version}")


def builder() -> Builder:
    return Builder(ll.Lab.from_env().check_arch(), os.environ.get("K8S_VERSION") or ll.K8S_VERSION)


def cmd_build() -> int:
    b = builder()
    todo = [i for i in b.items() if not b.cached(i)]
    for i in b.items():
        if b.cached(i):
            print(f"lab-local: {b.lab.arch} {i.label} {i.version} cached", flush=True)
    if todo:
        ll.need("go")
        Path(b.out).mkdir(parents=True, exist_ok=True)
        Path(b.src).mkdir(parents=True, exist_ok=True)
    for i in todo:
        t0 = time.monotonic()
        i.build(b, i)
        Path(b.stamp(i)).touch()
        print(f"lab-local: {b.lab.arch} {i.label} {i.version} built in {time.monotonic() - t0:.0f} s", flush=True)
    print(f"lab-local: {b.lab.arch} binaries in {b.out}")
    return 0


def cmd_print() -> int:
    b = builder()
    for i in b.items():
        print(f"{b.lab.arch} {i.label} {i.version} {'cached' if b.cached(i) else 'missing'}")
    return 0


COMMANDS = {
    "build": ck.Command(cmd_build, "[build]", "build what is not cached (one status line per binary: cached or built "
                        "in N s); the default"),
    "--print": ck.Command(cmd_print, "--print", "what is cached, what is missing, one line per binary: ARCH NAME "
                          "VERSION cached|missing; builds nothing"),
}

if __name__ == "__main__":
    sys.exit(ck.main("build.sh", "lab-local: build", __doc__, COMMANDS, sys.argv[1:], default="build"))
