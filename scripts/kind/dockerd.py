"""A Docker engine of edgebench's own on a machine whose PID 1 is not systemd, for kind (issue 44; docs/substrates.md,
"kind on this machine"). Debian's docker.io (dockerd 20.10.24, containerd 1.6.20, runc 1.1.5), its own data and exec
roots, its own cgroup parent, and runc-capdrop (built from its Go source beside this file) as the default OCI
runtime, so that `docker run --privileged` (kind's nodes) works although this machine's capability bounding set
lacks CAP_SYS_RESOURCE. Everything it starts or creates is removed by `down`, which leaves the image cache (data root)
unless PURGE=1.

Environment: EDGEBENCH_DOCKER_DATA (/var/lib/edgebench-docker), EDGEBENCH_DOCKER_RUN (/run/edgebench-docker: exec
root, dockerd.pid), EDGEBENCH_DOCKER_SOCK (/var/run/docker.sock), EDGEBENCH_DOCKER_POOL (172.30.0.0/16),
EDGEBENCH_DOCKER_WRAPPER (/usr/local/lib/edgebench/runc-capdrop), EDGEBENCH_DOCKER_IPTABLES (true), PURGE.
State: $EDGEBENCH_DOCKER_DATA/.edgebench/host.json (what `up` found on the host, restored by `down`)."""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kindlib as kl  # noqa: E402
import cmdkit as ck  # noqa: E402 - on sys.path through kindlib / lablib

HERE = Path(__file__).resolve().parent
CGROUP_PARENT = "/edgebench-docker"  # every container under /edgebench-docker in each hierarchy
# dockerd and what it starts (containerd, the shims, which leave its process group; docker-proxy) in a cgroup of their
# own, in a cgroup v1 hierarchy that tracks processes without controlling them: `down` kills what is left in it
ENGINE_CGROUP = "/edgebench-docker-engine"
ENGINE_HIERARCHIES = ("name=systemd", "pids")
HOST_SYSCTLS = ("net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables")
BRIDGE = re.compile(r"^(br-[0-9a-f]{12}|docker0)$")
UP_TIMEOUT = 60     # s for `docker info` to answer after dockerd started
STOP_TIMEOUT = 30   # s for dockerd to end after SIGTERM
CGROUP_TIMEOUT = 10  # s for the processes left in the engine's cgroups to die
log = ck.Log("dockerd")


def _legacy_host_state(d: Path) -> dict:
    """The bash script's $DATA/.edgebench: forward-policy and one file per sysctl."""
    got: dict = {}
    try:
        got["forward_policy"] = (d / "forward-policy").read_text().strip() or None
    except OSError:
        pass
    sysctls = {}
    for s in HOST_SYSCTLS:
        try:
            v = (d / s).read_text().strip()
        except OSError:
            continue
        if v:
            sysctls[s] = v
    if sysctls:
        got["sysctls"] = sysctls
    return got


class Engine:
    def __init__(self, env: dict[str, str] | None = None):
        env = os.environ if env is None else env
        self.data = env.get("EDGEBENCH_DOCKER_DATA", "/var/lib/edgebench-docker")  # images, containers (kept)
        self.run = env.get("EDGEBENCH_DOCKER_RUN", "/run/edgebench-docker")  # exec root: containerd, netns, pid
        self.sock = env.get("EDGEBENCH_DOCKER_SOCK", "/var/run/docker.sock")  # kind and the runner call `docker`
        self.pool = env.get("EDGEBENCH_DOCKER_POOL", "172.30.0.0/16")  # user networks (kind's "kind" network)
        self.wrapper = env.get("EDGEBENCH_DOCKER_WRAPPER", "/usr/local/lib/edgebench/runc-capdrop")
        self.iptables = env.get("EDGEBENCH_DOCKER_IPTABLES", "true")  # false: no DOCKER chains (untested)
        self.purge = env.get("PURGE", "0") == "1"
        if self.iptables not in ("true", "false"):
            raise ck.Fail(f"EDGEBENCH_DOCKER_IPTABLES={self.iptables}: true or false", 2)
        self.log_path = Path(f"{self.run}.log")  # beside the exec root: survives its removal
        self.state_dir = Path(self.data) / ".edgebench"
        self.state = kl.State(self.state_dir / "host.json", legacy=_legacy_host_state)

    # -------------------------------------------------------------------------------------------- queries
    def docker(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", "-H", f"unix://{self.sock}", *args], **kw)

    def answers(self) -> bool:
        try:
            return self.docker("info", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        except FileNotFoundError:
            return False

    def info(self, fmt: str) -> str:
        return kl.out(["docker", "-H", f"unix://{self.sock}", "info", "-f", fmt]).strip()

    def pid(self) -> int | None:
        return kl.read_pid(Path(self.run) / "dockerd.pid")

    def running(self) -> bool:
        p = self.pid()
        return p is not None and kl.alive(p)

    def recorded_pids(self) -> list[int]:
        """The managed containerd's pid (and a shim's, where it keeps one), from the pid files in the exec root;
        each only while its command line still names the exec root (a pid file can outlive its process)."""
        files = [f"{self.run}/containerd/containerd.pid",
                 *glob.glob(f"{self.run}/containerd/daemon/io.containerd.runtime.v*.task/*/*/shim.pid")]
        pids = []
        for f in files:
            p = kl.read_pid(Path(f))
            if p and kl.alive(p) and self.run in kl.cmdline(p):
                pids.append(p)
        return sorted(set(pids))

    def engine_processes(self) -> list[int]:
        """What runs with this engine's containerd socket on its command line (a check for `leftovers`; nothing is
        killed by it)."""
        needle = f"{self.run}/containerd/containerd.sock"
        return sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and needle in kl.cmdline(int(p)))

    def engine_cgroup(self) -> Path | None:
        h = kl.cgroup_v1_hierarchy(ENGINE_HIERARCHIES)
        return Path(f"{h}{ENGINE_CGROUP}") if h else None

    def cgroup_dirs(self) -> list[str]:
        return [m for _, m, t in kl.mounts() if t in ("cgroup", "cgroup2")]

    def cgroup_pids(self) -> list[int]:
        pids: set[int] = set()
        for h in self.cgroup_dirs():
            for procs in glob.glob(f"{h}{CGROUP_PARENT}/**/cgroup.procs", recursive=True):
                try:
                    pids.update(int(x) for x in Path(procs).read_text().split())
                except (OSError, ValueError):
                    pass
        return sorted(pids)

    def engine_mounts(self) -> list[str]:
        return [m for _, m, _ in kl.mounts() if kl.under(m, [self.data, self.run])]

    def bridges(self) -> list[str]:
        names = []
        for line in kl.out(["ip", "-o", "link", "show", "type", "bridge"]).splitlines():
            parts = line.split(": ")
            if len(parts) > 1 and BRIDGE.match(parts[1].split("@")[0]):
                names.append(parts[1].split("@")[0])
        return names

    # -------------------------------------------------------------------------------------------- commands
    def install(self) -> None:
        kl.need_root()
        if shutil.which("dockerd") is None:
            # the package's maintainer scripts must not start a default dockerd (/var/lib/docker, docker0): a
            # policy-rc.d that refuses, only if there is none, removed afterwards
            prc = Path("/usr/sbin/policy-rc.d")
            made = not prc.exists()
            if made:
                prc.write_text("#!/bin/sh\nexit 101\n")
                prc.chmod(0o755)
            try:
                kl.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", "docker.io"],
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, fail="apt-get install docker.io failed")
            finally:
                if made:
                    prc.unlink(missing_ok=True)
        dst = Path(self.wrapper)
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(dst.name + ".tmp")
        shutil.copyfile(kl.capdrop_bin(), tmp)
        tmp.chmod(0o755)
        os.replace(tmp, dst)

    def config(self) -> dict:
        return {
            "data-root": self.data, "exec-root": self.run, "pidfile": f"{self.run}/dockerd.pid",
            "hosts": [f"unix://{self.sock}"], "storage-driver": "overlay2",
            "exec-opts": ["native.cgroupdriver=cgroupfs"], "cgroup-parent": CGROUP_PARENT,
            "default-cgroupns-mode": "private", "runtimes": {"edgebench-runc": {"path": self.wrapper}},
            "default-runtime": "edgebench-runc", "default-address-pools": [{"base": self.pool, "size": 24}],
            "bridge": "none", "iptables": self.iptables == "true", "ip-forward": True, "live-restore": False,
            "log-driver": "json-file", "log-opts": {"max-size": "20m", "max-file": "2"},
            "features": {"buildkit": False},
        }

    def up(self) -> None:
        kl.need_root()
        if shutil.which("dockerd") is None:
            raise ck.Fail("dockerd is not installed: dockerd.sh install", 2)
        if not os.access(self.wrapper, os.X_OK):
            raise ck.Fail(f"{self.wrapper} is missing: dockerd.sh install", 2)
        if self.running():
            log(f"already running (pid {self.pid()})")
            return
        if Path(self.sock).is_socket() and self.answers():
            raise ck.Fail(f"another engine answers on {self.sock}", 2)
        Path(self.run).mkdir(parents=True, exist_ok=True)
        Path(self.data).mkdir(parents=True, exist_ok=True)
        cfg = Path(self.run) / "daemon.json"
        cfg.write_text(json.dumps(self.config(), indent=2) + "\n")
        # remember what dockerd may change on the host, for down
        policy = None
        for line in kl.out(["iptables", "-S", "FORWARD"]).splitlines():
            f = line.split()
            if f[:1] == ["-P"] and len(f) >= 3:
                policy = f[2]
        sysctls = {s: v for s in HOST_SYSCTLS if (v := kl.sysctl_get(s)) is not None}
        self.state.save({"forward_policy": policy, "sysctls": sysctls})
        # cpuset: a cgroup v1 child needs cpus and mems before it takes a task (runc copies them for the container's
        # own cgroup; the parent is created here so that its values are the root's)
        for h in (m for _, m, t in kl.mounts() if t == "cgroup"):
            child = Path(f"{h}{CGROUP_PARENT}")
            child.mkdir(parents=True, exist_ok=True)
            if (Path(h) / "cpuset.cpus").exists():
                (child / "cpuset.cpus").write_text((Path(h) / "cpuset.cpus").read_text())
                (child / "cpuset.mems").write_text((Path(h) / "cpuset.mems").read_text())
        cg = self.engine_cgroup()
        if cg is not None:
            cg.mkdir(exist_ok=True)
        procs = str(cg / "cgroup.procs") if cg is not None else None

        def join() -> None:  # in the child, before exec: dockerd and all it starts are in the engine's cgroup
            fd = os.open(procs, os.O_WRONLY)
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
        log(f"starting dockerd (data {self.data}, exec root {self.run}, socket {self.sock}; log {self.log_path})")
        # PATH: the package's binaries (dockerd, containerd, containerd-shim-runc-v2, runc, docker-proxy, docker-init)
        with open(self.log_path, "wb") as logf:
            proc = subprocess.Popen(["dockerd", "--config-file", str(cfg)], stdin=subprocess.DEVNULL, stdout=logf,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=join if procs else None,
                                    env={**os.environ, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        t0 = time.monotonic()

        def ready() -> bool:
            if proc.poll() is not None:
                raise ck.Fail(f"dockerd exited (code {proc.returncode}) before it answered (log: {self.log_path})")
            return self.answers()

        try:
            ck.poll(ready, UP_TIMEOUT, "dockerd answering on " + self.sock, interval=1)
        except ck.Timeout:
            raise ck.Fail(f"dockerd did not answer within {UP_TIMEOUT} s (log: {self.log_path})") from None
        log(f"up in {time.monotonic() - t0:.0f} s (pid {self.pid()}); default runtime: "
            f"{self.info('{{.DefaultRuntime}}')}")
        if self.sock != "/var/run/docker.sock":
            print(f"export DOCKER_HOST=unix://{self.sock}")

    def down(self) -> None:
        log("stopping the engine and removing what it left")
        dhost = {**os.environ, "DOCKER_HOST": f"unix://{self.sock}"}
        if self.running():
            # kind clusters first (their nodes' systemd stops on SIGRTMIN+3), then whatever else runs
            if shutil.which("kind"):
                for c in kl.out(["kind", "get", "clusters"], env=dhost).split():
                    kl.run(["kind", "delete", "cluster", "--name", c], check=False, env=dhost)
            ids = self.docker("ps", "-aq", capture_output=True, text=True).stdout.split()
            if ids:
                self.docker("rm", "-f", "-v", *ids, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for what in ("network", "volume"):
                self.docker(what, "prune", "-f", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            p = self.pid()
            if p:  # dockerd leads its own process group (up started it with setsid): TERM it, then KILL the group
                kl.stop(p, STOP_TIMEOUT, "dockerd", group=os.getpgid(p) == p if kl.alive(p) else False)
        # the managed containerd and shims that outlived dockerd: by the pid file containerd keeps in the exec root,
        # and whatever is still in the engine's cgroup (the shims leave dockerd's process group)
        for p in self.recorded_pids():
            kl.signal_pid(p, signal.SIGKILL)
        cg = self.engine_cgroup()
        if cg is not None and cg.is_dir():
            def engine_gone() -> bool:
                pids = kl.cgroup_procs(cg)
                for p in pids:
                    kl.signal_pid(p, signal.SIGKILL)
                return not pids

            try:
                ck.poll(engine_gone, CGROUP_TIMEOUT, f"the engine's processes in {cg} to die", interval=0.3)
                cg.rmdir()
            except (ck.Timeout, OSError) as e:
                log(str(e))
        # processes still in the engine's cgroups (a node's systemd, kubelet, pods), then the cgroups, deepest first
        def emptied() -> bool:
            pids = self.cgroup_pids()
            for p in pids:
                kl.signal_pid(p, signal.SIGKILL)
            return not pids

        try:
            ck.poll(emptied, CGROUP_TIMEOUT, f"the processes in the cgroups {CGROUP_PARENT} to die", interval=0.3)
        except ck.Timeout as e:
            log(str(e))
        for h in self.cgroup_dirs():
            top = Path(f"{h}{CGROUP_PARENT}")
            if top.is_dir():
                for d in sorted((Path(r) for r, _, _ in os.walk(top)), key=lambda x: len(x.parts), reverse=True):
                    try:
                        d.rmdir()
                    except OSError:
                        pass
        # mounts below the data and exec roots (overlay2 merged dirs, netns files, shm), deepest first
        for m in sorted(self.engine_mounts(), reverse=True):
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)
        # interfaces: the bridges of its networks (br-<12 hex>, docker0 if ever made) and veths still attached
        for br in self.bridges():
            for line in kl.out(["ip", "-o", "link", "show", "master", br]).splitlines():
                parts = line.split(": ")
                if len(parts) > 1:
                    subprocess.run(["ip", "link", "del", parts[1].split("@")[0]], stderr=subprocess.DEVNULL)
            subprocess.run(["ip", "link", "del", br], stderr=subprocess.DEVNULL)
        self.iptables_clean()
        # what dockerd changed on the host
        st = self.state.load()
        if st.get("forward_policy"):
            subprocess.run(["iptables", "-P", "FORWARD", st["forward_policy"]], stderr=subprocess.DEVNULL)
        for s, v in (st.get("sysctls") or {}).items():
            try:
                kl.sysctl_set(s, v)
            except OSError:
                pass
        shutil.rmtree(self.run, ignore_errors=True)
        shutil.rmtree(self.data if self.purge else self.state_dir, ignore_errors=True)
        left = self.leftover_lines()
        if not left:
            log("down: nothing of the engine is left")
            return
        sys.stderr.write("".join(f"{x}\n" for x in left))
        raise ck.Fail("down: something of the engine is left (above)")

    def iptables_clean(self) -> None:
        """The jumps into DOCKER* chains and the MASQUERADE rules for its pool, then the chains."""
        pool = self.pool.split("/")[0][:7]
        for ipt in ("iptables", "ip6tables"):
            if shutil.which(ipt) is None:
                continue
            for table in ("filter", "nat"):
                for chain in ("INPUT", "OUTPUT", "FORWARD", "PREROUTING", "POSTROUTING"):
                    listing = kl.out([ipt, "-t", table, "-L", chain, "-n", "--line-numbers"])
                    for n in sorted(rule_numbers(listing, pool), reverse=True):
                        subprocess.run([ipt, "-t", table, "-D", chain, str(n)], stderr=subprocess.DEVNULL)
                for flag in ("-F", "-X"):
                    for chain in docker_chains(kl.out([ipt, "-t", table, "-S"])):
                        subprocess.run([ipt, "-t", table, flag, chain], stderr=subprocess.DEVNULL)

    def leftover_lines(self) -> list[str]:
        lines = [f"process: {p} {kl.cmdline(p)[:80]}" for p in self.engine_processes()]
        if self.running():
            lines.append(f"process: {self.pid()} dockerd")
        for h in self.cgroup_dirs():
            top = Path(f"{h}{CGROUP_PARENT}")
            if top.is_dir():
                n = sum(len(Path(f).read_text().split()) for f in glob.glob(f"{top}/**/cgroup.procs", recursive=True))
                lines.append(f"cgroup: {top} ({n} processes)")
        cg = self.engine_cgroup()
        if cg is not None and cg.is_dir():
            lines.append(f"cgroup: {cg} ({len(kl.cgroup_procs(cg))} processes)")
        lines += [f"mount: {m}" for m in self.engine_mounts()]
        for line in kl.out(["ip", "-o", "link", "show"]).splitlines():
            parts = line.split(": ")
            if len(parts) > 1 and BRIDGE.match(parts[1].split("@")[0]):
                lines.append(f"interface: {parts[1].split('@')[0]}")
        for table, name in (("filter", "filter"), ("nat", "nat")):
            if docker_chains(kl.out(["iptables", "-t", table, "-S"])):
                lines.append(f"iptables: DOCKER chains ({name})")
        if Path(self.run).is_dir():
            lines.append(f"state: {self.run}")
        return lines

    def leftovers(self) -> int:
        left = self.leftover_lines()
        sys.stdout.write("".join(f"{x}\n" for x in left))
        return 1 if left else 0

    def status(self) -> None:
        if self.running():
            print(f"dockerd running (pid {self.pid()}, socket {self.sock})")
            print(self.info("runtimes: {{range $k, $v := .Runtimes}}{{$k}} {{end}}default: {{.DefaultRuntime}} "
                            "cgroup: {{.CgroupDriver}} v{{.CgroupVersion}}"))
        else:
            print("dockerd stopped")


def rule_numbers(listing: str, pool_prefix: str) -> list[int]:
    """The line numbers in `iptables -L CHAIN -n --line-numbers` of jumps into DOCKER* chains and of MASQUERADE
    rules that name the pool (its first 7 characters, as the bash script matched)."""
    nums = []
    for line in listing.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0].isdigit() and (f[1].startswith("DOCKER")
                                               or (f[1] == "MASQUERADE" and pool_prefix in line)):
            nums.append(int(f[0]))
    return nums


def docker_chains(rules: str) -> list[str]:
    """The DOCKER* chains `iptables -S` declares (-N DOCKER...)."""
    return [line.split()[1] for line in rules.splitlines() if line.startswith("-N DOCKER") and len(line.split()) > 1]


def commands(engine_factory=Engine) -> dict[str, ck.Command]:
    def e() -> Engine:
        return engine_factory()

    return {
        "install": ck.Command(lambda: e().install(), "install",
                              "apt: docker.io without starting it (policy-rc.d), the wrapper runc-capdrop into "
                              "$EDGEBENCH_DOCKER_WRAPPER"),
        "up": ck.Command(lambda: e().up(), "up",
                         f"start dockerd (idempotent) and wait for `docker info` (at most {UP_TIMEOUT} s); prints "
                         "the DOCKER_HOST to use when the socket is not the default one"),
        "down": ck.Command(lambda: e().down(), "down",
                           "stop every container, remove networks, stop dockerd, remove what it left "
                           "(PURGE=1: images too); fails naming whatever is still left"),
        "status": ck.Command(lambda: e().status(), "status",
                             "running or not, and `docker info`'s runtimes and cgroup driver"),
        "leftovers": ck.Command(lambda: e().leftovers(), "leftovers",
                                "what an engine left on this machine, one line each; exit 1 if anything"),
    }


def main(argv: list[str] | None = None) -> int:
    return ck.main("dockerd.sh", "dockerd", __doc__, commands(), sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
