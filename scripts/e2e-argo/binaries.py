"""Build (once, cached) from the Go module proxy the binaries of the management cluster's images and of the lab's
mirror: Kubernetes control plane + kubelet + kube-proxy + kubectl + kubeadm ($K8S_VERSION: the mirror's images and
packages, the kind node image), Argo Workflows' controller, executor and CLI ($ARGO_E2E_VERSION) and the NATS server
($NATS_VERSION, JetStream for Argo Events' EventBus), into $EDGEBENCH_E2E/bin. A binary is cached when its stamp
bin/.NAME-VERSION exists. Kubernetes and Argo carry `replace` directives, so `go install mod@version` refuses them:
a small wrapper module that repeats the replaces builds them instead (NATS: go install). CoreDNS is the lab's build
(scripts/lab-local/build.sh). The entry point is build.sh beside it.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from imagelib import HERE, say  # noqa: E402 - first: puts scripts/ (cmdkit) and scripts/lab-local on sys.path

import cmdkit as ck  # noqa: E402
import lablib as ll  # noqa: E402

K8S_CMDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl",
            "kubeadm")  # kubeadm: the local lab (make lab-local)
ARGO_CMDS = ("workflow-controller", "argoexec", "argo")  # argo: the CLI Argo Events' argoWorkflow trigger runs
PROXY = "https://proxy.golang.org"


class Versions:
    def __init__(self, env: dict[str, str] | None = None):
        env = os.environ if env is None else env
        self.e2e = env.get("EDGEBENCH_E2E") or f"{env.get('HOME') or Path.home()}/.local/share/edgebench/e2e-argo"
        self.k8s = env.get("K8S_VERSION") or "v1.33.4"
        self.argo = env.get("ARGO_E2E_VERSION") or "v3.7.9"
        self.nats = env.get("NATS_VERSION") or "v2.10.29"
        self.bin = f"{self.e2e}/bin"

    def stamp(self, cmd: str, version: str) -> str:
        return ll.stamp(self.bin, cmd, version)

    def missing(self, version: str, cmds: tuple[str, ...]) -> list[str]:
        return [c for c in cmds if not os.path.exists(self.stamp(c, version))]

    def rows(self) -> list[tuple[str, str]]:
        return [(c, self.k8s) for c in K8S_CMDS] + [(c, self.argo) for c in ARGO_CMDS] + [("nats-server", self.nats)]


def k8s_gomod(version: str, upstream_mod: str) -> str:
    """The wrapper module of Kubernetes: k8s.io/kubernetes, each staging module it replaces with ./staging/src/...
    replaced by the same code published as v0.x."""
    staging = "v0." + version.removeprefix("v1.")
    replaces = [f"replace {line.split()[0]} => {line.split()[0]} {staging}\n" for line in upstream_mod.splitlines()
                if "=> ./staging/src/" in line]
    return f"module edgebench.local/e2e/k8s\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes {version}\n\n" + "".join(replaces)


def argo_gomod(version: str, upstream_mod: str) -> str:
    """The wrapper module of Argo Workflows: upstream's replaces, the module itself from a patched local copy."""
    replaces = [f"{line}\n" for line in upstream_mod.splitlines() if line.startswith("replace ")]
    return (f"module edgebench.local/e2e/argo\n\ngo 1.24.10\n\nrequire github.com/argoproj/argo-workflows/v3 {version}"
            "\n\n" + "".join(replaces) + "replace github.com/argoproj/argo-workflows/v3 => ./argo-workflows\n")


def go_mod_of(module: str, version: str) -> str:
    return ll.out(["curl", "-fsS", f"{PROXY}/{module}/@v/{version}.mod"], fail=f"no go.mod of {module}@{version}")


def build_cmds(v: Versions, mod: str, version: str, var: str, prefix: str, cmds: list[str]) -> None:
    """`go build` each command from the wrapper module MOD (VERSION linked into VAR) into bin/, then its stamp."""
    ll.run(["go", "mod", "tidy"], cwd=mod)
    for c in cmds:
        t0 = time.monotonic()
        ll.run(["go", "build", "-trimpath", "-ldflags", f"-s -w -X {var}={version}", "-o", f"{v.bin}/{c}",
                f"{prefix}/{c}"], cwd=mod)
        Path(v.stamp(c, version)).touch()
        print(f"e2e-argo: {c} built in {time.monotonic() - t0:.0f} s", flush=True)


def build_k8s(v: Versions) -> None:
    missing = v.missing(v.k8s, K8S_CMDS)
    if not missing:
        return
    mod = f"{v.e2e}/src/k8s-{v.k8s}"
    os.makedirs(mod, exist_ok=True)
    Path(f"{mod}/go.mod").write_text(k8s_gomod(v.k8s, go_mod_of("k8s.io/kubernetes", v.k8s)))
    Path(f"{mod}/tools.go").write_text('package e2e\n\nimport _ "k8s.io/kubernetes/cmd/kubelet/app"\n')
    print(f"e2e-argo: building {' '.join(missing)} {v.k8s} (wrapper module {mod}; ~7 min cold on 2 cores)", flush=True)
    build_cmds(v, mod, v.k8s, "k8s.io/component-base/version.gitVersion", "k8s.io/kubernetes/cmd", missing)


def build_argo(v: Versions) -> None:
    missing = v.missing(v.argo, ARGO_CMDS)
    if not missing:
        return
    module = "github.com/argoproj/argo-workflows/v3"
    mod = f"{v.e2e}/src/argo-{v.argo}"
    os.makedirs(mod, exist_ok=True)
    Path(f"{mod}/go.mod").write_text(argo_gomod(v.argo, go_mod_of(module, v.argo)))
    # a writable copy of the module with our build patches (patches/argo-<version>/: files the proxy's copy lacks
    # for Linux)
    ll.run(["go", "mod", "download", f"{module}@{v.argo}"], cwd="/tmp")
    shutil.rmtree(f"{mod}/argo-workflows", ignore_errors=True)
    cache = ll.out(["go", "env", "GOMODCACHE"]).strip()
    ll.run(["cp", "-r", f"{cache}/{module}@{v.argo}", f"{mod}/argo-workflows"])
    ll.run(["chmod", "-R", "u+w", f"{mod}/argo-workflows"])
    patches = HERE / "patches" / f"argo-{v.argo}"
    if patches.is_dir():
        ll.run(["cp", "-r", f"{patches}/.", f"{mod}/argo-workflows/"])
    # cmd/argo embeds the web UI's build (ui/dist/app, not in the module): a placeholder page, the CLI is all that
    # is used
    os.makedirs(f"{mod}/argo-workflows/ui/dist/app", exist_ok=True)
    Path(f"{mod}/argo-workflows/ui/dist/app/index.html").write_text(
        "<!doctype html><title>Argo UI not built (edgebench e2e)</title>\n")
    Path(f"{mod}/tools.go").write_text(f'package e2e\n\nimport _ "{module}/workflow/controller"\n')
    print(f"e2e-argo: building {' '.join(missing)} {v.argo} (wrapper module {mod}; ~5 min cold)", flush=True)
    build_cmds(v, mod, v.argo, f"{module}.version", f"{module}/cmd", missing)


def build_nats(v: Versions) -> None:
    if os.path.exists(v.stamp("nats-server", v.nats)):
        return
    print(f"e2e-argo: building nats-server {v.nats} (go install; ~1 min cold)", flush=True)
    t0 = time.monotonic()
    ll.run(["go", "install", f"github.com/nats-io/nats-server/v2@{v.nats}"], cwd="/tmp",
           env={**os.environ, "GOBIN": v.bin})
    Path(v.stamp("nats-server", v.nats)).touch()
    print(f"e2e-argo: nats-server built in {time.monotonic() - t0:.0f} s", flush=True)


def cmd_print() -> None:
    v = Versions()
    for c, version in v.rows():
        print(f"{c} {version} {'cached' if os.path.exists(v.stamp(c, version)) else 'missing'}")


def cmd_build(k8s_only: bool = False) -> None:
    v = Versions()
    if shutil.which("go") is None:
        raise ck.Fail("go is not installed (make apt installs golang-go)", 2)
    os.makedirs(v.bin, exist_ok=True)
    os.makedirs(f"{v.e2e}/src", exist_ok=True)
    os.environ.update(GOFLAGS="-buildvcs=false -mod=mod", CGO_ENABLED="0")
    # the wrapper modules have no go.sum of their own and this machine's checksum-database mirror answers 404 for
    # some k8s.io modules (seen: k8s.io/cloud-provider v0.33.5); v1.33.4 because the proxy refuses some v0.33.5
    # staging modules (k8s.io/endpointslice: 403); the modules still come from the module proxy
    os.environ.setdefault("GOSUMDB", "off")
    build_k8s(v)
    if k8s_only:
        say(f"Kubernetes binaries in {v.bin} (--k8s: Argo and NATS not built)")
        return
    build_argo(v)
    build_nats(v)
    say(f"binaries in {v.bin}")


COMMANDS = {
    "build": ck.Command(cmd_build, "[build]", "build what is not cached (Kubernetes, Argo, NATS); the default"),
    "--k8s": ck.Command(lambda: cmd_build(k8s_only=True), "--k8s", "only the Kubernetes binaries, what the local "
                        "lab needs"),
    "--print": ck.Command(cmd_print, "--print", "one line per binary: NAME VERSION cached|missing; builds nothing"),
}

if __name__ == "__main__":
    sys.exit(ck.main("build.sh", "e2e-argo", __doc__, COMMANDS, sys.argv[1:], default="build"))
