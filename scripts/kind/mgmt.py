"""The kind management cluster from this machine's own builds, offline (issue 44): what `make up` and `make down`
run where no container registry answers.

Inputs, built once and cached (cold: about 30 min for Kubernetes and Argo, docs/e2e-argo.md; then seconds):
  scripts/lab-local/mirror.sh build   the control plane, etcd, CoreDNS, pause, kube-proxy and flannel archives,
                                      kubeadm/kubelet/kubectl, the CNI plugins
  scripts/e2e-argo/build.sh, images.sh build, images.sh build events
                                      Argo's controller and executor, MinIO, mc, NATS, Argo Events, the runner
Every step of `up` prints its elapsed time; the times of the last `up` go to $STATE/up-times.
One `up` or `down` at a time (the lock /run/edgebench-kind-mgmt.lock); a second one stops naming the holder.
Environment: CLUSTER (edgebench), KIND_CONFIG, SWEEP, PY, PURGE, EDGEBENCH_E2E, EDGEBENCH_LAB_CACHE, EDGEBENCH_TOOLS.
State: /var/lib/edgebench-kind-mgmt (state.json: what up changed on the host; up-times; kubeconfig)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dockerd  # noqa: E402
import kindlib as kl  # noqa: E402
import cmdkit as ck  # noqa: E402 - on sys.path through kindlib / lablib
import node_image  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
KIND_VERSION = "v0.33.0"
ARCH = "amd64"
STATE = Path("/var/lib/edgebench-kind-mgmt")  # what up changed on the host, for down
LOCK = Path("/run/edgebench-kind-mgmt.lock")
BUSY = "another mgmt.sh up/down runs (pid {pid}): wait for it, or stop it first"
IMAGES = ("workflow-controller", "argoexec", "minio", "mc", "runner", "nats", "argo-events")
INOTIFY = {"fs.inotify.max_user_instances": 512, "fs.inotify.max_user_watches": 524288}
T0 = time.monotonic()
log = ck.Log("mgmt")


def _legacy_state(d: Path) -> dict:
    """The bash script's marker files: started-engine, made-lib-modules, one file per sysctl."""
    got: dict = {"started_engine": (d / "started-engine").exists(),
                 "made_lib_modules": (d / "made-lib-modules").exists()}
    saved = {}
    for s in INOTIFY:
        try:
            v = (d / s).read_text().strip()
        except OSError:
            continue
        if v:
            saved[s] = v
    got["sysctls"] = saved
    return got


class Mgmt:
    def __init__(self, env: dict[str, str] | None = None, state_dir: Path = STATE, lock: Path = LOCK):
        env = os.environ if env is None else env
        home = Path(env.get("HOME", str(Path.home())))
        share = home / ".local/share/edgebench"
        self.env = env
        self.e2e = Path(env.get("EDGEBENCH_E2E", share / "e2e-argo"))
        self.labc = Path(env.get("EDGEBENCH_LAB_CACHE", share / "lab"))
        self.tools = Path(env.get("EDGEBENCH_TOOLS", share / "tools"))
        self.cluster = env.get("CLUSTER") or "edgebench"
        self.config = Path(env.get("KIND_CONFIG") or REPO / "kustomize/overlays/kind/kind-cluster.local.yaml")
        self.kind = self.tools / f"kind-{KIND_VERSION}"
        self.kubectl = self.labc / "mirror/bin" / ARCH / "kubectl"
        self.py = env.get("PY") or str(REPO / ".venv/bin/python")
        self.state_dir = state_dir
        self.state = kl.State(state_dir / "state.json", legacy=_legacy_state)
        self.lock = kl.Lock(lock, BUSY)

    # -------------------------------------------------------------------------------------------- helpers
    def step(self, what: str) -> None:
        t = int(time.monotonic() - T0)
        log(f"== {what} ({t} s)")
        with open(self.state_dir / "up-times", "a") as f:
            f.write(f"{t} {what}\n")

    def k(self, *args: str) -> None:
        kl.run([str(self.kubectl), "--context", f"kind-{self.cluster}", *args], code=2)

    @staticmethod
    def engine_answers() -> bool:
        try:
            return subprocess.run(["docker", "info"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL).returncode == 0
        except FileNotFoundError:
            return False

    def clusters(self) -> list[str]:
        return kl.out([str(self.kind), "get", "clusters"]).split()

    def running(self) -> bool:
        return os.access(self.kind, os.X_OK) and self.engine_answers() and self.cluster in self.clusters()

    def need_cluster(self) -> None:
        if not self.running():
            raise ck.Fail(f"no kind cluster {self.cluster}: make up", 2)

    def script(self, rel: str, *args: str, quiet: bool = False) -> None:
        kl.run([str(REPO / rel), *args], quiet=quiet, code=2)

    # -------------------------------------------------------------------------------------------- up
    def kind_bin(self) -> None:
        if not os.access(self.kind, os.X_OK):
            log(f"kind {KIND_VERSION}: go install from the module proxy (about a minute once)")
            tmp = self.tools / "kind.tmp"
            tmp.mkdir(parents=True, exist_ok=True)
            kl.run(["go", "install", f"sigs.k8s.io/kind@{KIND_VERSION}"], cwd="/tmp", code=2,
                   env={**os.environ, "GOBIN": str(tmp), "GOFLAGS": "-mod=mod"},
                   fail=f"go install sigs.k8s.io/kind@{KIND_VERSION} failed")
            os.replace(tmp / "kind", self.kind)
            tmp.rmdir()
        link = self.tools / "kind"
        if not (link.is_symlink() and os.readlink(link) == self.kind.name):
            tmp = self.tools / "kind.link"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(self.kind.name)
            os.replace(tmp, link)

    def mirror_missing(self) -> bool:
        imgs = self.labc / "mirror/images" / ARCH
        need = [imgs / f"{n}.tar" for n in ("kube-apiserver", "etcd", "coredns", "pause", "flannel",
                                            "flannel-cni-plugin")]
        need.append(self.labc / "mirror/manifests/flannel/v0.28.9/kube-flannel.yml")
        return not os.access(self.kubectl, os.X_OK) or not all(p.is_file() for p in need)

    def inputs(self) -> None:
        """The mirror when it is missing; the image builders always, as each rebuilds only what changed."""
        if self.mirror_missing():
            # the mirror is assembled from the builds (as make lab-local does): Kubernetes, then the lab's binaries
            # (etcd, CoreDNS, flannel, kube-router, cilium, the CNI plugins), then the runner image
            self.step("the lab's mirror: Kubernetes v1.33.4 from source (scripts/e2e-argo/build.sh --k8s; cold: "
                      "about 30 min)")
            self.script("scripts/e2e-argo/build.sh", "--k8s")
            self.step("the lab's mirror: the node and CNI binaries (scripts/lab-local/build.sh; cold: about 20 min)")
            self.script("scripts/lab-local/build.sh")
            self.script("scripts/e2e-argo/images.sh", "build", "runner", quiet=True)
            self.step("the lab's mirror (scripts/lab-local/mirror.sh build)")
            self.script("scripts/lab-local/mirror.sh", "build")
        # each builder keeps a hash of its inputs beside its outputs and rebuilds only what changed (the runner
        # image after a change of the project's code: seconds)
        self.step("Argo, MinIO, NATS and the runner images (scripts/e2e-argo: build.sh, images.sh; cold: about "
                  "30 min)")
        self.script("scripts/e2e-argo/build.sh", quiet=True)
        self.script("scripts/e2e-argo/images.sh", "build", quiet=True)
        self.script("scripts/e2e-argo/images.sh", "build", "events", quiet=True)

    def host_prepare(self) -> None:
        st = self.state.load()
        # kind bind-mounts /lib/modules read-only into every node; a host without it gets an empty one
        if not os.path.lexists("/lib/modules"):
            os.mkdir("/lib/modules")
            st["made_lib_modules"] = True
        # kind's known issue "too many open files": inotify limits are per uid, and uid 0 is shared by host and nodes
        saved = st.setdefault("sysctls", {})
        for s, want in INOTIFY.items():
            v = kl.sysctl_get(s)
            if v is None:
                continue
            saved.setdefault(s, v)
            if int(v) < want:
                kl.sysctl_set(s, str(want))
        self.state.save(st)

    def host_restore(self) -> None:
        st = self.state.load()
        for s, v in (st.get("sysctls") or {}).items():
            try:
                kl.sysctl_set(s, v)
            except OSError as e:
                log(f"could not restore {s}={v}: {e}")
        if st.get("made_lib_modules"):
            try:
                os.rmdir("/lib/modules")
            except OSError:
                pass

    def up(self) -> None:
        kl.need_root("an engine of its own, a node image built with chroot")
        with self.lock:
            kl.need_commands(["go", "umoci", "skopeo", "debootstrap", "jq"], " (make setup installs it)")
            if not self.config.is_file():
                raise ck.Fail(f"no kind config at {self.config}", 2)
            self.state_dir.mkdir(parents=True, exist_ok=True)
            (self.state_dir / "up-times").write_text("")
            self.step("engine")
            if self.engine_answers() and not self.state.load().get("started_engine"):
                ver = kl.out(["docker", "info", "-f", "{{.ServerVersion}}, default runtime {{.DefaultRuntime}}"])
                log(f"using the Docker engine that answers ({ver.strip()})")
            else:
                eng = dockerd.Engine()
                eng.install()
                eng.up()
                self.state.update(started_engine=True)
                log("started edgebench's own engine (scripts/kind/dockerd.sh; make down stops it)")
            self.host_prepare()
            self.kind_bin()
            self.inputs()
            self.step("node image (scripts/kind/node-image.sh; cached after the first build)")
            node_image.Build().main()
            self.step(f"kind cluster {self.cluster}")
            if self.cluster in self.clusters():
                log(f"cluster {self.cluster} exists")
            else:
                p = kl.run([str(self.kind), "create", "cluster", "--name", self.cluster, "--config", str(self.config),
                            "--retain"], check=False)
                if p.returncode:
                    log(f"kind create failed; the nodes' logs: {self.kind} export logs --name {self.cluster}")
                    raise ck.Fail("kind create cluster failed", 2)
            self.step("the nodes Ready (the image's default CNI: flannel vxlan from the lab's mirror)")
            self.k("-n", "kube-flannel", "rollout", "status", "ds/kube-flannel-ds", "--timeout=300s")
            self.k("wait", "--for=condition=Ready", "node", "--all", "--timeout=300s")
            self.step("load the project's images (kind load image-archive)")
            for n in IMAGES:
                kl.run([str(self.kind), "load", "image-archive", str(self.e2e / "images" / f"{n}-{ARCH}.tar"),
                        "--name", self.cluster], code=2)
            self.step("Argo Workflows v3.7.9, Argo Events v1.9.11, MinIO and edgebench (scripts/e2e-argo/install.sh)")
            self.script("scripts/e2e-argo/install.sh", str(self.kubectl), "--context", f"kind-{self.cluster}")
            self.step(f"ready: kubectl --context kind-{self.cluster}; make submit")

    # -------------------------------------------------------------------------------------------- down
    def down(self) -> None:
        kl.need_root()
        with self.lock:
            if self.running():
                log(f"deleting kind cluster {self.cluster}")
                kl.run([str(self.kind), "delete", "cluster", "--name", self.cluster], code=2)
            if self.state.load().get("started_engine"):
                dockerd.Engine().down()
            else:
                log("the engine was not started by mgmt.sh up: left running")
            self.host_restore()
            shutil.rmtree(self.state_dir, ignore_errors=True)
            for n in ("upstream", "upstream-events"):
                (REPO / "kustomize/overlays/e2e/argo" / n).unlink(missing_ok=True)
            log("down")

    # -------------------------------------------------------------------------------------------- the rest
    def kubeconfig(self) -> str:
        """kind's kubeconfig for the cluster, in the state dir (kind also merges it into ~/.kube/config)."""
        p = subprocess.run([str(self.kind), "get", "kubeconfig", "--name", self.cluster], capture_output=True,
                           text=True)
        if p.returncode:
            raise ck.Fail(f"no kind cluster {self.cluster}: mgmt.sh up", 2)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        path = self.state_dir / "kubeconfig"
        path.write_text(p.stdout)
        return str(path)

    def print_kubeconfig(self) -> None:
        self.need_cluster()
        print(self.kubeconfig())

    def gateway(self) -> str:
        """The kind network's gateway: the host address the pods reach (index servers, the lab's mirror)."""
        gw = kl.out(["docker", "network", "inspect", "kind", "-f",
                     "{{range .IPAM.Config}}{{.Gateway}} {{end}}"]).split()
        if not gw:
            raise ck.Fail("no kind network: mgmt.sh up", 2)
        return gw[0]

    def submit(self, *args: str) -> None:
        argo = self.e2e / "bin/argo"
        argo_s = str(argo) if os.access(argo, os.X_OK) else shutil.which("argo")
        if not argo_s:
            raise ck.Fail("no argo CLI: scripts/e2e-argo/build.sh builds it", 2)
        sweep = self.env.get("SWEEP") or str(REPO / "workflows/sweep.yaml")
        kc = self.kubeconfig()
        sys.stdout.flush()
        os.execv(argo_s, [argo_s, "--kubeconfig", kc, "-n", "edgebench", "submit", sweep,
                          "--serviceaccount", "edgebench-runner", "--watch", *args])

    def e2e(self, *args: str) -> None:
        gw = self.gateway()
        kc = self.kubeconfig()
        os.execve(self.py, [self.py, str(REPO / "scripts/e2e-argo/e2e.py"), "--kubeconfig", kc,
                            "--minio-port-forward", "--index-host", gw,
                            "--report", str(REPO / ".edgebench/e2e-kind/report.json"), *args],
                  {**os.environ, "KUBECTL": str(self.kubectl)})

    def lab(self, *args: str) -> None:
        self.need_cluster()
        gw = self.gateway()
        log(f"the runner image (rebuilt if this checkout changed) loaded into {self.cluster}")
        self.script("scripts/e2e-argo/images.sh", "build", "runner", quiet=True)
        kl.run([str(self.kind), "load", "image-archive", str(self.e2e / "images" / f"runner-{ARCH}.tar"),
                "--name", self.cluster], code=2)
        kc = self.kubeconfig()
        os.execve(self.py, [self.py, str(REPO / "scripts/lab-local/argo.py"), "--kubeconfig", kc,
                            "--minio-port-forward", "--index-host", gw, *args],
                  {**os.environ, "KUBECTL": str(self.kubectl), "PATH": f"{self.e2e / 'bin'}:{os.environ['PATH']}"})

    def status(self) -> None:
        if not self.engine_answers():
            print("engine: not running")
            return
        ver = kl.out(["docker", "info", "-f", "{{.ServerVersion}}, default runtime {{.DefaultRuntime}}"]).strip()
        print(f"engine: {ver}")
        if os.access(self.kind, os.X_OK):
            print(f"kind clusters: {' '.join(self.clusters())} ")


def commands() -> dict[str, ck.Command]:
    m = Mgmt
    return {
        "up": ck.Command(lambda: m().up(), "up", """
            a Docker engine (the one running, else dockerd.sh's own), kind v0.33.0 (Go module proxy), the node image
            (node-image.sh), the cluster (kustomize/overlays/kind/kind-cluster.local.yaml: 1 control plane + 1
            worker; the image's default CNI: flannel), the project's images loaded (`kind load image-archive`),
            Argo Workflows v3.7.9, Argo Events v1.9.11, MinIO and edgebench (kustomize/overlays/e2e: the images
            built here); idempotent"""),
        "down": ck.Command(lambda: m().down(), "down", """
            the cluster deleted, then the engine stopped if up started it, and what up changed on the host
            restored; PURGE=1 also drops the engine's image cache"""),
        "submit": ck.Command(lambda *a: m().submit(*a), "submit [ARGS]", """
            argo submit $SWEEP --watch on the cluster (the argo CLI v3.7.9 scripts/e2e-argo built); ARGS go to
            argo submit""", max_args=None),
        "e2e": ck.Command(lambda *a: m().e2e(*a), "e2e [ARGS]", """
            scripts/e2e-argo/e2e.py on the cluster: the smoke workflow, the tiny sweep, a CNI version bump that
            Argo Events reruns, the warehouse (make e2e-kind: up, e2e, down)""", max_args=None),
        "lab": ck.Command(lambda *a: m().lab(*a), "lab [ARGS]", """
            the local lab's sweep submitted here (make lab-argo): the runner image rebuilt if the checkout changed
            and loaded, then scripts/lab-local/argo.py with this cluster's kubeconfig, MinIO through a
            port-forward and the kind network's gateway as the host address pods reach""", max_args=None),
        "running": ck.Command(lambda: 0 if m().running() else 1, "running", "exit 0 when the cluster exists"),
        "kubeconfig": ck.Command(lambda: m().print_kubeconfig(), "kubeconfig",
                                 "write the cluster's kubeconfig and print its path"),
        "status": ck.Command(lambda: m().status(), "status", "what runs: the engine, kind's clusters"),
    }


def main(argv: list[str] | None = None) -> int:
    return ck.main("mgmt.sh", "mgmt", __doc__, commands(), sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
