"""The local lab's artifact source: a directory laid out as containers/runner/src/edgebench/plan/catalog/
artifacts.yaml says (binaries, CNI plugins, Debian's containerd + runc, kubelet unit files, OCI image archives, CNI
manifests with their image references rewritten, cilium's Helm chart repository: cilium.sh), with an index.yaml
saying which architectures each artifact has, served over HTTP to the nodes. Everything is built here from the Go
module proxy and Debian (build.sh, scripts/e2e-argo/build.sh and images.sh), without Docker or a registry: umoci +
skopeo. Images are rebuilt when their key (NAME.tar.key: the reference, the inputs' sha256, the Debian root's stamp)
changes; every file the mirror serves is replaced whole, and only when its bytes change.
Environment: ARCH (default: this machine's), EDGEBENCH_LAB_CACHE ($LABC), EDGEBENCH_MIRROR (default $LABC/mirror),
EDGEBENCH_E2E, MIRROR_PORT (8089), RUNNER_TAR. The HTTP server's pid (its process group) is in $LABC/mirror-http.pid.
"""
from __future__ import annotations

import ipaddress
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "containers" / "runner" / "src"))
import cilium_image  # noqa: E402
import lablib as ll  # noqa: E402
import cmdkit as ck  # noqa: E402 - on sys.path through kindlib / lablib

DEFAULT_ADDR = "10.77.0.1"   # the lab's bridge
SERVE_TIMEOUT = 10   # s for the HTTP server to answer
STOP_TIMEOUT = 5   # s for it to end after SIGTERM
PROVE_TIMEOUT = 120   # s per check of `prove`
log = ck.Log("lab-local: mirror")

KUBELET_SERVICE = """[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/local/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=2

[Install]
WantedBy=multi-user.target
"""
# the documented drop-in, plus the lab's eviction thresholds (KUBELET_LAB_ARGS): the nodes' kubelets measure this
# machine's disk, shared with everything else on it; the default imagefs.available<15% evicted the workload pods
# ("The node had condition: [DiskPressure]") at 15.4 % free. Absolute sizes: systemd reads % as a specifier
KUBEADM_DROPIN = """[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
Environment="KUBELET_LAB_ARGS=--eviction-hard=memory.available<100Mi,nodefs.available<2Gi,imagefs.available<2Gi"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS $KUBELET_LAB_ARGS
"""
MANIFEST_SOURCES = {   # catalog manifest -> (module@version, the file in it)
    "flannel-manifest": (f"github.com/flannel-io/flannel@{ll.FLANNEL_VERSION}", "Documentation/kube-flannel.yml"),
    **{f"flannel-manifest@{v}": (f"github.com/flannel-io/flannel@{v}", "Documentation/kube-flannel.yml")
       for v in ll.FLANNEL_EXTRA},
    "kube-router-manifest": ("github.com/cloudnativelabs/kube-router/v2@v2.1.0", "daemonset/kubeadm-kuberouter.yaml"),
}


class Mirror:
    def __init__(self, lab: ll.Lab):
        self.lab = lab
        self.root = Path(lab.mirror)
        self.base = lab.rootfs("base")

    # ---------------------------------------------------------------------------------------------- images
    def image_key(self, ref: str, base: str, entry: str | None, files: list[tuple[str, str]]) -> str:
        """The bash `image` key: `echo "REF BASE [--config.entrypoint X]"`, `sha256sum SRC` per file, the Debian
        root's stamp for BASE=debian; sha256, first 16 hex digits."""
        text = f"{ref} {base} {'--config.entrypoint ' + entry if entry else ''}\n"
        text += "".join(ll.sha256sum_line(src) for src, _ in files)
        if base == "debian":
            text += Path(f"{self.base}/.stamp").read_text()
        return ll.key16(text)

    def image_specs(self, pause: str) -> list[tuple[str, str, str, list[tuple[str, str]], str | None]]:
        """The images `build` makes: (name, reference, base, [(source, path in the image)], entrypoint)."""
        kb, b = self.lab.k8s_bin, self.lab.bin
        conf = (f"{b}/flannel-install-conf", "/opt/bin/install-conf")
        return [
            ("pause", "registry.k8s.io/pause:3.10", "static", [(pause, "/pause")], "/pause"),
            ("etcd", "registry.k8s.io/etcd:3.5.21-0", "static", [(f"{b}/etcd", "/usr/local/bin/etcd")], None),
            ("coredns", "registry.k8s.io/coredns/coredns:v1.12.0", "static", [(f"{b}/coredns", "/coredns")],
             "/coredns"),
            *[(c, f"registry.k8s.io/{c}:{ll.K8S_VERSION}", "static", [(f"{kb}/{c}", f"/usr/local/bin/{c}")], None)
              for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")],
            ("kube-proxy", f"registry.k8s.io/kube-proxy:{ll.K8S_VERSION}", "debian",
             [(f"{kb}/kube-proxy", "/usr/local/bin/kube-proxy")], None),
            ("flannel", f"ghcr.io/flannel-io/flannel:{ll.FLANNEL_VERSION}", "debian",
             [(f"{b}/flanneld", "/opt/bin/flanneld"), conf], None),
            # a second version for paired reruns (build.sh builds flanneld-VERSION)
            *[(f"flannel-{v}", f"ghcr.io/flannel-io/flannel:{v}", "debian",
               [(f"{b}/flanneld-{v}", "/opt/bin/flanneld"), conf], None) for v in ll.FLANNEL_EXTRA],
            ("flannel-cni-plugin", "edgebench.local/flannel-cni-plugin:v0.9.1", "debian",
             [(f"{b}/flannel", "/flannel")], None),
            # the manifest gives args only: the image names the program
            ("kube-router", "docker.io/cloudnativelabs/kube-router:v2.1.0", "debian",
             [(f"{b}/kube-router", "/usr/local/bin/kube-router")], "/usr/local/bin/kube-router"),
            ("http", "ghcr.io/edgebench/edgebench-http:0.1.0", "static", [(f"{b}/fortio", "/usr/bin/fortio")],
             "/usr/bin/fortio"),
        ]

    def image(self, name: str, ref: str, base: str, files: list[tuple[str, str]], entry: str | None = None) -> None:
        """MIRROR/images/ARCH/NAME.tar: the FILES (source, path in the image) on a static or the Debian base."""
        for src, _ in files:
            if not ll.executable(src):
                log(f"{self.lab.arch} image {ref}: {src} not built, left out")
                return

        def fill(r: Path) -> None:
            if base == "debian":
                ll.run(["cp", "-a", f"{self.base}/.", f"{r}/"])
                (r / ".stamp").unlink(missing_ok=True)
            else:
                ll.base_files(r)
            for src, dest in files:
                ll.install(src, r / dest.lstrip("/"))

        config = ["--config.entrypoint", entry] if entry else []
        ll.oci_image(self.lab, log, name, ref, self.image_key(ref, base, entry, files), fill, config,
                     env_path=ll.IMAGE_PATH + ":/opt/bin")

    def base_rootfs(self) -> None:
        """A Debian bookworm root with what the network agents exec: iptables, ipset, iproute2, conntrack."""
        if os.path.exists(f"{self.base}/.stamp"):
            return
        t0, wip, arch = time.monotonic(), f"{self.base}.wip", self.lab.arch
        Path(self.base).parent.mkdir(parents=True, exist_ok=True)
        Path(self.lab.work).mkdir(parents=True, exist_ok=True)
        ll.run(["rm", "-rf", wip])
        logfile = f"{self.lab.work}/debootstrap-{arch}.log"
        log(f"debootstrap bookworm ({arch}) for the network images (a few minutes once; a foreign ARCH's second "
            "stage and apt run under qemu)")
        if not ll.debootstrap_root(self.lab, log, wip, logfile):
            raise ck.Fail(f"debootstrap failed (see {logfile})")
        shutil.copyfile("/etc/resolv.conf", f"{wip}/etc/resolv.conf")
        apt = ("export DEBIAN_FRONTEND=noninteractive; apt-get update -q && apt-get install -y -q "
               "--no-install-recommends iptables ipset iproute2 conntrack ipvsadm kmod ca-certificates nftables && "
               "apt-get clean")
        with open(logfile, "a") as f:
            ll.run(["chroot", wip, "/bin/sh", "-c", apt], stdout=f, stderr=subprocess.STDOUT,
                   fail=f"apt in the network images' root failed (see {logfile})")
        Path(f"{wip}/etc/resolv.conf").unlink(missing_ok=True)
        ll.run(["sh", "-c", 'rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/* "$1"/usr/share/doc '
                '"$1"/usr/share/man "$1"/usr/share/locale', "sh", wip])
        ll.run(["rm", "-rf", self.base])
        os.rename(wip, self.base)
        Path(f"{self.base}/.stamp").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + "\n")
        log(f"base root in {time.monotonic() - t0:.0f} s")

    def pause_bin(self) -> str:
        """The Kubernetes pause container, from the module's own source, linked statically."""
        out = f"{self.lab.bin}/pause"
        if ll.executable(out):
            return out
        src = ll.go_mod_download(f"k8s.io/kubernetes@{ll.K8S_VERSION}")["Dir"]
        cc = "aarch64-linux-gnu-gcc" if self.lab.arch == "arm64" and self.lab.host != "arm64" else "gcc"
        if shutil.which(cc) is None:
            raise ck.Fail(f"{cc} is missing (apt: gcc-aarch64-linux-gnu libc6-dev-arm64-cross)", 2)
        Path(self.lab.bin).mkdir(parents=True, exist_ok=True)
        ll.run([cc, "-Os", "-static", "-DVERSION=v3.10", "-o", out, f"{src}/build/pause/linux/pause.c"],
               stdout=sys.stderr)
        return out

    # ---------------------------------------------------------------------------------------------- files
    def debs(self) -> None:
        """Debian's containerd and runc for ARCH, as a tarball of .debs."""
        out = self.root / "debs" / self.lab.arch / "containerd.tgz"
        if out.exists():
            return
        base = f"{ll.DEBIAN}/"
        with tempfile.TemporaryDirectory(dir=self.lab.work if os.path.isdir(self.lab.work) else None) as d:
            try:
                with urllib.request.urlopen(f"{base}dists/bookworm/main/binary-{self.lab.arch}/Packages.xz",
                                            timeout=120) as r:
                    idx = lzma.decompress(r.read()).decode()
                want = {"containerd", "runc"}
                for stanza in idx.split("\n\n"):
                    f = dict(x.split(": ", 1) for x in stanza.splitlines() if ": " in x and not x.startswith(" "))
                    if f.get("Package") in want:
                        urllib.request.urlretrieve(base + f["Filename"], f"{d}/{f['Filename'].rsplit('/', 1)[1]}")
                        want.discard(f["Package"])
            except (OSError, urllib.error.URLError) as e:
                raise ck.Fail(f"Debian's containerd and runc for {self.lab.arch}: {e}") from None
            if want:
                raise ck.Fail(f"not in bookworm/{self.lab.arch}: {sorted(want)}")
            out.parent.mkdir(parents=True, exist_ok=True)
            ll.run(["tar", "-czf", f"{out}.tmp", "-C", d, "."])
            os.replace(f"{out}.tmp", out)

    def manifests(self) -> None:
        """Every manifest artifact of the catalog, from its module at the artifact's own version."""
        from edgebench.substrates.clusters.install import artifacts as a

        for name, art in a.spec()["artifacts"].items():
            if art["kind"] != "manifest":
                continue
            if name not in MANIFEST_SOURCES:
                raise ck.Fail(f"no source for manifest {name}")
            module, rel = MANIFEST_SOURCES[name]
            text = Path(ll.go_mod_download(module)["Dir"], rel).read_text()
            ll.write_text(self.root / art["path"], a.rewrite_manifest(text, art.get("rewrites", {})))

    def units(self) -> None:
        ll.write_text(self.root / "units/kubelet.service", KUBELET_SERVICE)
        ll.write_text(self.root / "units/10-kubeadm.conf", KUBEADM_DROPIN)

    def cni_tarball(self) -> None:
        """bin/ARCH/cni-plugins.tgz: the CNI plugins (`tar -czf ... -C BIN/cni .`, as before: the same bytes)."""
        tgz = subprocess.run(["tar", "-czf", "-", "-C", f"{self.lab.bin}/cni", "."], capture_output=True)
        if tgz.returncode:
            raise ck.Fail(f"tar of {self.lab.bin}/cni failed: {tgz.stderr.decode(errors='replace').strip()}")
        ll.write_bytes(self.root / "bin" / self.lab.arch / "cni-plugins.tgz", tgz.stdout)

    def runner(self) -> None:
        """The runner image of scripts/e2e-argo/images.sh (runner-ARCH.tar, or runner.tar for amd64 by older ones),
        copied when newer than the mirror's."""
        env = os.environ.get("RUNNER_TAR")
        runner = env or f"{self.lab.e2e}/images/runner-{self.lab.arch}.tar"
        if not os.path.exists(runner) and not env and self.lab.arch == "amd64":
            runner = f"{self.lab.e2e}/images/runner.tar"
        if not os.path.exists(runner):
            log(f"warning: no runner image for {self.lab.arch} ({runner}: scripts/e2e-argo/images.sh build runner); "
                "the index will say so")
            return
        out = self.root / "images" / self.lab.arch / "runner.tar"
        if out.exists() and not ll.newer(runner, out):
            return
        out.parent.mkdir(parents=True, exist_ok=True)
        Path(f"{out}.tmp").unlink(missing_ok=True)
        ll.run(["skopeo", "--insecure-policy", "copy", "--quiet", f"docker-archive:{runner}",
                f"docker-archive:{out}.tmp:ghcr.io/edgebench/edgebench-runner:0.1.0"])
        os.replace(f"{out}.tmp", out)
        log(f"{self.lab.arch} image ghcr.io/edgebench/edgebench-runner:0.1.0 (from {runner})")

    # ---------------------------------------------------------------------------------------------- commands
    def build(self) -> None:
        ll.need_root("image layers keep file ownership")
        ll.need("umoci", "skopeo", "debootstrap", "go")
        lab, kb, b = self.lab, self.lab.k8s_bin, self.lab.bin
        want = [f"{kb}/{c}" for c in ("kubelet", "kubectl", "kube-apiserver", "kube-controller-manager",
                                      "kube-scheduler", "kube-proxy")]
        want += [f"{b}/{c}" for c in ("kubeadm", "etcd", "coredns", "flanneld", "kube-router", "flannel", "fortio",
                                      "cni/bridge")]
        missing = [p for p in want if not ll.executable(p)]
        if missing:
            log(f"warning: not built yet, left out of the mirror (the index will say so): {' '.join(missing)} "
                f"(scripts/e2e-argo/build.sh --k8s; ARCH={lab.arch} scripts/lab-local/build.sh)")
        (self.root / "bin" / lab.arch).mkdir(parents=True, exist_ok=True)
        Path(lab.work).mkdir(parents=True, exist_ok=True)
        for c in ("kubeadm", "kubelet", "kubectl"):   # kubeadm: build.sh's (go1.24)
            src = next((p for p in (f"{b}/{c}", f"{kb}/{c}") if ll.executable(p)), None)
            if src:
                ll.install(src, self.root / "bin" / lab.arch / c)
        if ll.executable(f"{b}/cni/bridge"):
            self.cni_tarball()
        self.units()
        self.manifests()
        self.debs()
        self.base_rootfs()
        for spec in self.image_specs(self.pause_bin()):
            self.image(*spec)
        self.runner()
        cilium_image.Cilium(lab).build()   # binaries, agent + operator images, helm, the chart repository
        self.index()

    def index(self) -> None:
        from edgebench.substrates.clusters.install import artifacts

        import yaml

        # artifacts.write_index's text, replaced only when it changes (a served index stays as it is)
        ll.write_text(self.root / "index.yaml", yaml.safe_dump(artifacts.build_index(self.root), sort_keys=False))
        log(f"index: {self.root}/index.yaml")

    def print_index(self) -> None:
        import yaml

        index = self.root / "index.yaml"
        if not index.exists():
            raise ck.Fail(f"no index at {self.root} (mirror.sh build)", 2)
        for n, a in yaml.safe_load(index.read_text())["artifacts"].items():
            print(f"{n:26} {a.get('version', '')!s:12} {','.join(a['arches']) or 'MISSING'}")

    def prove(self) -> int:
        """Every binary of ARCH the mirror holds or puts into an image runs here (a foreign ARCH under qemu-user),
        every image archive says ARCH, the cilium agent's clang compiles a BPF program in its root. Writes
        MIRROR/proof-ARCH.txt (one line per check); 1 when a check fails."""
        lab, kb, b = self.lab, self.lab.k8s_bin, self.lab.bin
        mb = f"{self.root}/bin/{lab.arch}"
        ll.need("file", "skopeo")
        ll.ensure_emulation(lab, log)
        out, lines = self.root / f"proof-{lab.arch}.txt", []

        def record(line: str) -> None:
            lines.append(line)
            print(line, file=sys.stderr, flush=True)

        def check(name: str, path: str, *argv: str) -> None:
            if not os.path.exists(path):
                return record(f"MISSING {name} ({path})")
            kind = subprocess.run(["file", "-bL", path], capture_output=True, text=True).stdout.strip()
            if ll.ELF_MACHINE[lab.arch] not in kind:
                return record(f"WRONG-ARCH {name}: {kind[:60]}")
            rc, text = ll.run_group(list(argv), PROVE_TIMEOUT)
            first = text.split("\n", 1)[0]
            if rc == 0 and first:
                return record(f"ok {name}: {first}")
            why = f"timed out after {PROVE_TIMEOUT} s" if rc is None else (first or "no output")
            record(f"FAILED {name}: {' '.join(argv)} -> {why}")

        check("kubeadm", f"{mb}/kubeadm", f"{mb}/kubeadm", "version", "-o", "short")
        check("kubelet", f"{mb}/kubelet", f"{mb}/kubelet", "--version")
        check("kubectl", f"{mb}/kubectl", f"{mb}/kubectl", "version", "--client")
        for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"):
            check(c, f"{kb}/{c}", f"{kb}/{c}", "--version")
        check("etcd", f"{b}/etcd", f"{b}/etcd", "--version")
        check("coredns", f"{b}/coredns", f"{b}/coredns", "-version")
        check("flanneld", f"{b}/flanneld", f"{b}/flanneld", "--version")
        check("flannel-install-conf", f"{b}/flannel-install-conf", "sh", "-c",
              f"'{b}/flannel-install-conf' --help 2>&1 || true")
        check("kube-router", f"{b}/kube-router", f"{b}/kube-router", "--version")
        check("fortio", f"{b}/fortio", f"{b}/fortio", "version")
        pause = self.pause_bin()
        check("pause", pause, pause, "-v")
        with tempfile.TemporaryDirectory() as tmp:
            try:
                with tarfile.open(f"{mb}/cni-plugins.tgz") as t:
                    t.extractall(tmp)
            except (OSError, tarfile.TarError):
                pass
            check("cni-bridge", f"{tmp}/bridge", "env", "CNI_COMMAND=VERSION", f"{tmp}/bridge")
        check("flannel-cni", f"{b}/flannel", "env", "CNI_COMMAND=VERSION", f"{b}/flannel")
        cb = f"{b}/cilium"
        check("cilium-agent", f"{cb}/cilium-agent", f"{cb}/cilium-agent", "--version")
        check("cilium-operator-generic", f"{cb}/cilium-operator-generic", f"{cb}/cilium-operator-generic", "--version")
        check("cilium-cni", f"{cb}/cilium-cni", "env", "CNI_COMMAND=VERSION", f"{cb}/cilium-cni")
        agent = lab.rootfs("cilium-agent")
        if ll.executable(f"{agent}/usr/bin/clang-19"):
            Path(f"{agent}/tmp/eb-prove.c").write_text(
                '__attribute__((section("socket"), used)) int prog(void *ctx) { return 0; }\n')
            try:
                check("cilium-agent-clang", f"{agent}/usr/bin/clang-19", "sh", "-c",
                      f"chroot '{agent}' clang -target bpf -O2 -c /tmp/eb-prove.c -o /tmp/eb-prove.o "
                      f"&& file -b '{agent}/tmp/eb-prove.o'")
            finally:
                for f in ("eb-prove.c", "eb-prove.o"):
                    Path(f"{agent}/tmp/{f}").unlink(missing_ok=True)
        else:
            record(f"MISSING cilium-agent-clang ({agent}: cilium.sh rootfs)")
        for t in sorted((self.root / "images" / lab.arch).glob("*.tar")):
            p = subprocess.run(["skopeo", "inspect", "--config", f"docker-archive:{t}"], capture_output=True,
                               text=True)
            try:
                a = json.loads(p.stdout).get("architecture", "") if p.returncode == 0 else ""
            except ValueError:
                a = ""
            record(f"ok image {t.stem}: architecture {a}" if a == lab.arch
                   else f"WRONG-ARCH image {t.stem}: architecture {a or 'unreadable'}")
        ll.write_text(out, "".join(f"{x}\n" for x in lines))
        fails = sum(not x.startswith("ok ") for x in lines)
        if fails:
            log(f"{fails} check(s) failed for {lab.arch}: {out}")
            return 1
        emulated = f" (under qemu-{ll.QEMU[lab.arch]})" if lab.foreign else ""
        log(f"every {lab.arch} artifact runs here{emulated}: {out}")
        return 0


# ------------------------------------------------------------------------------------------------ the HTTP server
class Server:
    """The mirror's HTTP server: `python -m http.server` in a session (and process group) of its own, its pid (= its
    process group) in $LABC/mirror-http.pid, its log in $LABC/mirror-http.log."""

    def __init__(self, labc: str, mirror: str, port: int):
        self.pidfile, self.logfile = Path(f"{labc}/mirror-http.pid"), Path(f"{labc}/mirror-http.log")
        self.mirror, self.port = mirror, port

    def recorded(self) -> int | None:
        """The recorded server's pid when it still runs as that server (a group leader running http.server)."""
        try:
            text = self.pidfile.read_text().strip()
        except OSError:
            return None
        if not text.isdigit():
            return None
        pid = int(text)
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if os.getpgid(pid) != pid or b"http.server" not in cmd:
                return None
        except (OSError, ProcessLookupError):
            return None
        return pid

    def stop(self) -> bool:
        """SIGTERM to the recorded server's process group, up to STOP_TIMEOUT s for it to end, then SIGKILL; the pid
        file goes either way. True when a server was stopped."""
        pid = self.recorded()
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGTERM)
                ck.poll(lambda: not _alive(pid), STOP_TIMEOUT, f"the mirror's HTTP server (pid {pid}) to end")
            except ck.Timeout:
                ll.kill_group(pid)
            except ProcessLookupError:
                pass
        self.pidfile.unlink(missing_ok=True)
        return pid is not None

    def start(self, addr: str) -> None:
        self.stop()
        self.pidfile.parent.mkdir(parents=True, exist_ok=True)
        with open(self.logfile, "w") as logf:
            p = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", addr, "--directory", self.mirror,
                                  str(self.port)], stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        self.pidfile.write_text(f"{p.pid}\n")
        host = f"[{addr}]" if ":" in addr else addr
        url = f"http://{host}:{self.port}/index.yaml"

        def answers() -> bool:
            if p.poll() is not None:
                tail = self.logfile.read_text(errors="replace").strip().splitlines()[-1:]
                self.pidfile.unlink(missing_ok=True)
                raise ck.Fail(f"the mirror's HTTP server exited ({p.returncode}) on {addr}:{self.port}: "
                              f"{tail[0] if tail else 'no output'} (log: {self.logfile})")
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    return r.status == 200
            except (OSError, urllib.error.URLError):
                return False

        try:
            ck.poll(answers, SERVE_TIMEOUT, f"the mirror's HTTP server to answer {url}")
        except ck.Timeout:
            self.stop()
            raise


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def port() -> int:
    text = os.environ.get("MIRROR_PORT") or "8089"
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ck.Fail(f"MIRROR_PORT={text} is not a TCP port", 2)
    return int(text)


def mirror() -> Mirror:
    return Mirror(ll.Lab.from_env().check_arch())


def cmd_serve(addr: str = DEFAULT_ADDR) -> int:
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        raise ck.Fail(f"serve: {addr!r} is not an IP address to bind to", 2) from None
    m, p = mirror(), port()
    if not (m.root / "index.yaml").exists():
        raise ck.Fail(f"no mirror at {m.root} (mirror.sh build)", 2)
    Server(m.lab.labc, str(m.root), p).start(addr)
    log(f"serving {m.root} on http://{addr}:{p}")
    return 0


def cmd_serve_stop() -> int:
    m = mirror()
    if Server(m.lab.labc, str(m.root), 0).stop():
        log("stopped the mirror's HTTP server")
    return 0


COMMANDS = {
    "build": ck.Command(lambda: mirror().build(), "build", "assemble the mirror for ARCH (default: this machine's) "
                        "from the cached builds, then the index"),
    "index": ck.Command(lambda: mirror().index(), "index", "(re)write index.yaml from what the mirror holds"),
    "serve": ck.Command(cmd_serve, "serve [ADDR]", "serve the mirror on http://ADDR:MIRROR_PORT "
                        f"(default {DEFAULT_ADDR}, the lab's bridge; 8089); stops a server serve started before; "
                        f"waits up to {SERVE_TIMEOUT} s for it to answer", 1),
    "serve-stop": ck.Command(cmd_serve_stop, "serve-stop", "stop the server serve started (its process group)"),
    "prove": ck.Command(lambda: mirror().prove(), "prove", "every ARCH binary runs here (under qemu for a foreign "
                        "ARCH), the images say ARCH: MIRROR/proof-ARCH.txt; exit 1 when a check fails"),
    "--print": ck.Command(lambda: mirror().print_index(), "--print", "what each artifact has, per architecture"),
}

if __name__ == "__main__":
    sys.exit(ck.main("mirror.sh", "lab-local: mirror", __doc__, COMMANDS, sys.argv[1:]))
