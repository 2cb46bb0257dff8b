"""The local lab (`make lab-local`): a control-plane node and workers on this machine, each a machine of its own as
far as one kernel allows (node-init.sh): its own PID, mount, network, UTS, IPC and cgroup namespaces, its own
/etc, /var/lib, /run, /opt/cni, hostname and cgroup parent (/edgebench-lab/<node> in every hierarchy), sshd
with a generated key and a user `edgebench` with sudo - what the `ssh` substrate expects of a Pi lab. The nodes
hang off one bridge (the emulated LAN; each node's uplink is the host-side veth eblab-<n>, where link conditions
and rate limits apply as on the testbed). It writes an inventory in the Pi lab's format.

The nodes share this machine's kernel and cores, and have no systemd (PID 1 here is not systemd): a minimal
service supervisor (systemctl.py) answers the systemctl verbs the provider's steps use.

  lab.sh up [N]        start N nodes (default 3: lab-cp, lab-w1, lab-w2); prints the inventory path
  lab.sh down          stop every node and remove everything (processes, mounts, namespaces, veths, cgroups);
                       refused while a live sweep holds the lab's lease (FORCE=1 overrides)
  lab.sh status        the nodes and whether sshd answers
  lab.sh exec NODE CMD run CMD inside a node (as root, in its namespaces and cgroup)
  lab.sh leftovers     print what a lab left on this machine; exit 1 if anything
  lab.sh env           print the variables a sweep needs (EDGEBENCH_INVENTORY, EDGEBENCH_SSH_KEY, EDGEBENCH_KNOWN_HOSTS)
  lab.sh vm CMD ...    VM nodes with a kernel of their own (qemu, TCG): vm up x86:1,arm64:1 | down | status | ...
                       (scripts/lab-local/vm.py --help); VMS=x86:1 lab.sh up [N] starts them after the N nodes
"""
# (the text above is `lab.sh --help`.) This module is what lab.sh was in bash; lab.sh is its entry point. Environment:
# EDGEBENCH_LAB (the lab's state, default /srv/edgebench-lab), EDGEBENCH_LAB_FREEZER_PARENT, VMS, FORCE; lab.sh
# passes its own path as EDGEBENCH_LAB_SH (the name the messages give it). Stdlib only: it runs as root under the
# system Python.
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # scripts/: cmdkit

import cmdkit as ck  # noqa: E402
from labhost import cg_dirs, cgroup_procs, cmdlines, exited, hierarchies, kill, links, mounts, spawn_init  # noqa: E402
from lablib import host_arch  # noqa: E402

BRIDGE = "eblab0"
NET = "10.77.0"
HOST_IP = f"{NET}.1"
CG = "edgebench-lab"
USAGE = "usage: lab.sh up [N]|down|status|exec NODE CMD|leftovers|env|vm CMD (--help)"
log = ck.Log("lab-local")


def die(msg: str) -> ck.Fail:
    """The bash version's `die`: one line, exit 2."""
    return ck.Fail(msg, 2)


def lab_dir() -> str:
    return os.environ.get("EDGEBENCH_LAB") or "/srv/edgebench-lab"


# ------------------------------------------------------------------------------------------------ one node
class Lab:
    """The lab's state directory and its nodes: $LAB/nodes/NODE (pid, init.log, ready, host key, overlays)."""

    def __init__(self, lab: str | None = None, prog: str | None = None):
        self.dir = lab or lab_dir()
        self.prog = prog or str(HERE / "lab.sh")   # lab.sh as it was called, for messages
        self.vm = [sys.executable, str(HERE / "vm.py")]   # the VM nodes' lifecycle (qemu argv, images, taps, state)

    def path(self, *parts: str) -> Path:
        return Path(self.dir, *parts)

    def init_pid(self, node: str) -> int | None:
        try:
            return int(self.path("nodes", node, "pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def alive(self, node: str) -> bool:
        pid = self.init_pid(node)
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True

    def join(self, node: str, pid: int, dirs: list[str]) -> None:
        """PID into /edgebench-lab/NODE of every hierarchy in DIRS that has it; a refusal is said on stderr and
        skipped (as the bash version's `echo $$ > .../cgroup.procs`). Safe between fork and exec."""
        for h in dirs:
            d = f"{h}/{CG}/{node}"
            if os.path.isdir(d):
                try:
                    with open(f"{d}/cgroup.procs", "w") as f:
                        f.write(f"{pid}\n")
                except OSError as e:
                    os.write(2, f"lab-local: {d}/cgroup.procs: {e.strerror}\n".encode())

    def make_cgroups(self, node: str) -> None:
        for h in cg_dirs(self.dir):
            os.makedirs(f"{h}/{CG}/{node}", exist_ok=True)
            if os.path.exists(f"{h}/cpuset.cpus"):   # cgroup v1 cpuset: a child needs cpus and mems before a task
                for d in (f"{h}/{CG}", f"{h}/{CG}/{node}"):
                    for f in ("cpuset.cpus", "cpuset.mems"):
                        Path(d, f).write_text(Path(h, f).read_text())

    def exec_argv(self, node: str, argv: list[str]) -> tuple[int, list[str]]:
        """nsenter's command line for ARGV in NODE's namespaces (and the init's PID); the node must run."""
        if not self.alive(node):
            raise die(f"node {node} is not running (lab.sh up)")
        pid = self.init_pid(node)
        return pid, ["nsenter", "-t", str(pid), "-a", "--", *argv]

    def node_exec(self, node: str, argv: list[str]) -> int:
        """ARGV in NODE's namespaces and cgroup: this process joins the cgroup, then becomes nsenter."""
        _pid, cmd = self.exec_argv(node, argv)
        self.join(node, os.getpid(), cg_dirs(self.dir))
        return become(cmd)

    def node_output(self, node: str, argv: list[str]) -> str:
        """ARGV's stdout in NODE's namespaces and cgroup (its stderr dropped, a failure is no output)."""
        _pid, cmd = self.exec_argv(node, argv)
        dirs = cg_dirs(self.dir)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           preexec_fn=lambda: self.join(node, os.getpid(), dirs))
        return p.stdout if p.returncode == 0 else ""

    def node_addr(self, node: str) -> str:
        try:
            lines = self.path("hosts").read_text().splitlines()
        except OSError:
            return ""
        return next((ln.split()[0] for ln in lines if ln[:1].isdigit() and ln.split()[1:2] == [node]), "")

    def log_tail(self, st: Path) -> str:
        """The last 3 lines of a node's init.log, each followed by a space (`tail -n 3 | tr '\\n' ' '`)."""
        try:
            text = (st / "init.log").read_text(errors="replace")
        except OSError:
            return ""
        return "".join(f"{ln} " for ln in text.splitlines()[-3:])

    # -------------------------------------------------------------------------------------------- up
    def up(self, n_arg: str = "3") -> int:
        """Start N nodes (those already up stay), write the inventory, the hosts and known_hosts files; then the
        VM nodes of $VMS. vm.py's exit status when it fails."""
        if os.geteuid() != 0:
            raise die("the lab needs root (namespaces, mounts, cgroups)")
        if self.dir.startswith(("/tmp/", "/run/")):
            raise die(f"EDGEBENCH_LAB={self.dir}: not below /tmp or /run (each node mounts its own)")
        try:
            n = int(n_arg)
        except ValueError:
            n = 0   # bash's arithmetic on a word that is not a number
        if n < 2:
            raise die(f"a lab needs at least 2 nodes (1 control plane + workers); got {n_arg}")
        if n > 9:
            raise die(f"at most 9 nodes (2 cores here); got {n_arg}")
        for c in ("unshare", "nsenter", "ip", "sshd", "ssh", "ssh-keygen", "sudo", "python3"):
            if shutil.which(c) is None:
                raise die(f"{c} is not installed (make lab-local installs openssh-server, sudo, util-linux)")
        self.path("nodes").mkdir(parents=True, exist_ok=True)
        fp = os.environ.get("EDGEBENCH_LAB_FREEZER_PARENT", "")
        if fp:
            if not os.path.isdir(f"/sys/fs/cgroup/freezer/{fp}"):
                raise die(f"EDGEBENCH_LAB_FREEZER_PARENT={fp}: no such freezer cgroup")
            self.path("freezer-parent").write_text(f"{fp}\n")
        elif not self.alive("lab-cp"):
            self.path("freezer-parent").unlink(missing_ok=True)
        # host-wide sysctls a CNI agent writes from a node (one kernel): kept to be restored by `down` (cilium sets
        # kernel.timer_migration=0; its kernel.unprivileged_bpf_disabled=1 cannot be undone before a reboot)
        if not self.path("host-sysctls").exists():
            try:
                tm = Path("/proc/sys/kernel/timer_migration").read_text().strip()
            except OSError:
                tm = "1"
            self.path("host-sysctls").write_text(f"kernel.timer_migration={tm}\n")
        key = self.path("id_ed25519")
        if not key.exists():
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "edgebench-lab", "-f", str(key)])
        key.chmod(0o600)
        if subprocess.run(["ip", "link", "show", BRIDGE], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode:
            run(["ip", "link", "add", BRIDGE, "type", "bridge"])
            run(["ip", "addr", "add", f"{HOST_IP}/24", "dev", BRIDGE])
            run(["ip", "link", "set", BRIDGE, "up"])
        # kube-proxy and the CNIs expect bridged traffic to pass the nodes' iptables; the host's own rules stay off it
        subprocess.run(["modprobe", "br_netfilter"], stderr=subprocess.DEVNULL)
        names = node_names(n)
        hosts = "".join(f"{NET}.{11 + i} {node}\n" for i, node in enumerate(names))
        self.path("cgroups").write_text(hierarchies())
        pubkey = self.path("id_ed25519.pub").read_text().rstrip("\n")
        for i, node in enumerate(names):
            addr = f"{NET}.{11 + i}"
            if self.alive(node):
                log(f"{node} already up ({addr})")
                continue
            pid = self.start(node, addr, f"eblab-{i}", hosts, pubkey)
            log(f"{node} up: {addr} (PID {pid}, cgroup /{CG}/{node}, uplink eblab-{i})")
        self.inventory(names)
        for node in names:
            self.wait_ssh(node)
        # every `up` gives the nodes new host keys: pin this lab's in a known_hosts of its own (the sweep's
        # --known-hosts), or the user's ~/.ssh/known_hosts, which accepted the previous lab's keys for the same
        # addresses, refuses them
        pins = []
        for node in names:
            first = self.path("nodes", node, "host_ed25519.pub").read_text().splitlines()
            pins += [f"{self.node_addr(node)} {' '.join(ln.split(' ')[:2])}\n" for ln in first]
        self.path("known_hosts").write_text("".join(pins))
        log(f"inventory: {self.dir}/inventory.yaml; key: {self.dir}/id_ed25519; host keys: {self.dir}/known_hosts")
        vms = os.environ.get("VMS", "")
        if vms:   # VM nodes join the inventory as agents
            return subprocess.run([*self.vm, "up", vms]).returncode
        return 0

    def start(self, node: str, addr: str, veth: str, hosts: str, pubkey: str) -> int:
        """NODE's init (node-init.sh) in new namespaces, its uplink VETH on the bridge, until it says it is ready.
        The init's PID (in this machine's PID namespace)."""
        st = self.path("nodes", node)
        st.mkdir(parents=True, exist_ok=True)
        (st / "ready").unlink(missing_ok=True)
        shutil.copyfile(self.path("cgroups"), st / "cgroups")
        # the node mounts its own /tmp and /run: what it needs from this checkout (which may live there) is copied
        shutil.copyfile(HERE / "systemctl.py", st / "systemctl.py")
        os.chmod(st / "systemctl.py", 0o755)
        self.make_cgroups(node)
        # the new process joins the node's cgroup before unshare, so its cgroup namespace is rooted there. The
        # directories are read here, before the child exists (d9d28c2: the bash version's child forked helpers)
        dirs = cg_dirs(self.dir)

        def enter() -> None:   # in the child, between fork and exec: only the child's own writes, no fork
            for h in dirs:
                try:
                    with open(f"{h}/{CG}/{node}/cgroup.procs", "w") as f:
                        f.write(f"{os.getpid()}\n")
                except OSError as e:
                    os.write(2, f"lab-local: {h}/{CG}/{node}/cgroup.procs: {e.strerror}\n".encode())

        argv = ["unshare", "--fork", "--pid", "--mount", "--net", "--uts", "--ipc", "--cgroup", "--propagation",
                "private", str(HERE / "node-init.sh"), node, str(st), addr, pubkey, hosts, str(st / "systemctl.py")]
        pid = spawn_init(argv, st / "init.log", enter)
        if pid is None:
            raise die(f"{node} did not start: {self.log_tail(st)}(log: {st}/init.log)")
        pidfd = os.pidfd_open(pid)   # the init itself, whatever becomes of its PID number
        try:
            self.path("nodes", node, "pid").write_text(f"{pid}\n")
            subprocess.run(["ip", "link", "del", veth], stderr=subprocess.DEVNULL)
            run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", str(pid)])
            run(["ip", "link", "set", veth, "master", BRIDGE, "up"])
            run(["nsenter", "-t", str(pid), "-n", "sh", "-c", f"ip link set lo up && ip addr add {addr}/24 dev eth0 "
                 f"&& ip link set eth0 up && ip route add default via {HOST_IP}"])

            def ready() -> bool:
                if (st / "ready").exists():
                    return True
                if exited(pidfd):
                    raise die(f"{node} did not come up: {self.log_tail(st)}(log: {st}/init.log)")
                return False

            try:
                ck.poll(ready, 60, f"{node} to come up")
            except ck.Timeout:
                raise die(f"{node} did not come up: {self.log_tail(st)}(log: {st}/init.log)") from None
        finally:
            os.close(pidfd)
        return pid

    def inventory(self, names: list[str]) -> None:
        """$LAB/inventory.yaml (the Pi lab's format) and $LAB/hosts ("ADDRESS NODE" lines)."""
        arch = host_arch()
        lines = ["# written by scripts/lab-local/lab.sh: the local lab's nodes share this machine's kernel and cores",
                 "target: lab-local",
                 f"artifact_source: http://{HOST_IP}:8089   # the lab's mirror (mirror.sh serve {HOST_IP}), for "
                 "sweeps and Argo",
                 "nodes:"]
        for i, node in enumerate(names):
            role = "server" if i == 0 else "agent"
            lines.append(f"  - {{name: {node}, address: {NET}.{11 + i}, arch: {arch}, role: {role}, user: edgebench, "
                         "port: 22}")
        self.path("hosts").write_text("".join(f"{NET}.{11 + i} {node}\n" for i, node in enumerate(names)))
        self.path("inventory.yaml").write_text("".join(f"{ln}\n" for ln in lines))

    def wait_ssh(self, node: str) -> None:
        addr = self.node_addr(node)
        argv = ["ssh", "-i", str(self.path("id_ed25519")), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=2", "-o", "LogLevel=ERROR",
                f"edgebench@{addr}", "--", "sudo", "-n", "true"]
        try:
            ck.poll(lambda: subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL).returncode == 0, 60, "sshd", interval=0.2)
        except ck.Timeout:
            raise die(f"sshd on {node} ({addr}) does not answer (see {self.dir}/nodes/{node}/init.log and its "
                      "/var/log/sshd.log)") from None

    # -------------------------------------------------------------------------------------------- down
    def held_by(self) -> str:
        """The live holder of the lab's lease (substrates/clusters/lease.py: /var/lib/edgebench/lab.lease on lab-cp,
        renewed by the sweep that drives the lab), or "" when the lab is free, down, or the lease has lapsed."""
        if not self.alive("lab-cp"):
            return ""
        return self.node_output("lab-cp", ["sh", "-c", LEASE_SH]).rstrip("\n")

    def down(self) -> int:
        """Stop every node (VM nodes through vm.py) and remove what the lab made; exit 2 if something is left."""
        holder = self.held_by()
        if holder and os.environ.get("FORCE", "0") != "1":
            raise die(f"the lab is in use by {holder}: stop that sweep first (it tears its cluster down), or FORCE=1 "
                      f"{self.prog} down")
        if holder:
            log(f"FORCE=1: removing the lab under its holder {holder}")
        if subprocess.run([*self.vm, "down"]).returncode:
            log("down: the VM nodes were not all removed (vm.py down, above)")
        nodes = self.path("nodes")
        for d in sorted(nodes.iterdir()) if nodes.is_dir() else []:
            pid = self.init_pid(d.name) if d.is_dir() else None
            if pid:   # PID 1 of the node's PID namespace: when it dies, the kernel kills every process of the node
                kill(pid)
        # processes that entered a node's cgroup without its PID namespace (lab.sh exec of an old lab): killed too
        dirs = cg_dirs(self.dir)

        def none_left() -> bool:
            left = [t for h in dirs if os.path.isdir(f"{h}/{CG}") for t in cgroup_procs(f"{h}/{CG}")]
            for t in left:
                kill(int(t))
            return not left

        try:
            ck.poll(none_left, 3, "the lab's cgroups to empty", interval=0.3)
        except ck.Timeout:
            pass   # what stays is named by the leftovers check below
        for h in dirs:
            for root, _dirs, _files in os.walk(f"{h}/{CG}", topdown=False):
                try:
                    os.rmdir(root)
                except OSError:
                    pass
        for v in links():
            if v.startswith("eblab-"):
                subprocess.run(["ip", "link", "del", v], stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "link", "del", BRIDGE], stderr=subprocess.DEVNULL)
        sys.stdout.flush()
        subprocess.run([str(HERE / "mirror.sh"), "serve-stop"], stderr=subprocess.DEVNULL)
        # the nodes' state (overlay upper dirs, containerd's images, etcd); the mirror and the key stay (cached)
        below = f"{self.dir}/nodes"
        for m in sorted((f[1] for f in mounts() if f[1].startswith(below)), reverse=True):
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)
        shutil.rmtree(nodes, ignore_errors=True)
        for f in ("hosts", "inventory.yaml", "cgroups", "known_hosts"):
            self.path(f).unlink(missing_ok=True)
        sysctls = self.path("host-sysctls")
        if sysctls.exists():   # what a CNI agent changed on the shared kernel (up kept the values)
            if subprocess.run(["sysctl", "-q", "-p", str(sysctls)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode:
                log(f"down: could not restore {sysctls.read_text().replace(chr(10), ' ')}")
            sysctls.unlink()
        if not self.leftovers(show=False):
            log("down: nothing of the lab is left")
            return 0
        self.leftovers(show=True)
        raise die("down: something of the lab is left (above)")

    def leftovers(self, show: bool = True) -> bool:
        """What the lab leaves on the machine, one line per thing on stdout (if SHOW); True if anything."""
        lines = []

        def say(line: str) -> None:
            lines.append(line)
            if show:
                print(line, flush=True)

        for h in cg_dirs(self.dir):
            if os.path.isdir(f"{h}/{CG}"):
                say(f"cgroup: {h}/{CG} ({len(cgroup_procs(f'{h}/{CG}'))} processes)")
        for v in links():
            if re.match(rf"^(eblab-[0-9]|{BRIDGE}$)", v):
                say(f"interface: {v}")
        # qemu processes, taps (eblab-v*), overlays and state of VM nodes
        vm_left = subprocess.run([*self.vm, "leftovers"], stdout=None if show else subprocess.DEVNULL).returncode
        for f in mounts():
            if f[1].startswith(self.dir):
                say(f"mount: {f[1]}")
        pattern = re.compile(rf"{re.escape(str(HERE))}/node-init\.sh|{re.escape(self.dir)}/nodes/.*/systemctl\.py")
        for pid, cmd in sorted(cmdlines().items()):
            if pid != os.getpid() and pattern.search(cmd):
                say(f"process: {pid} {cmd}")
        if self.path("nodes").is_dir():
            say(f"state: {self.dir}/nodes")
        return bool(lines) or vm_left != 0

    def status(self) -> int:
        hosts = self.path("hosts")
        if hosts.exists():
            for line in hosts.read_text().splitlines():
                addr, node = (line.split(None, 1) + ["", ""])[:2]   # `read -r addr node`
                node = node.strip()
                print(f"{node} {addr} up (PID {self.init_pid(node)})" if self.alive(node) else f"{node} {addr} down")
        else:
            print("no lab (lab.sh up)")
        sys.stdout.flush()
        return subprocess.run([*self.vm, "status"]).returncode if self.path("vms").is_dir() else 0

    def env(self) -> int:
        print(f"export EDGEBENCH_INVENTORY={self.dir}/inventory.yaml EDGEBENCH_SSH_KEY={self.dir}/id_ed25519 "
              f"EDGEBENCH_KNOWN_HOSTS={self.dir}/known_hosts")
        return 0


# the lease file on lab-cp: "HOLDER (lease lapses in N s unless renewed)" while it is live
LEASE_SH = '''f=/var/lib/edgebench/lab.lease; [ -f $f ] || exit 0
    exp=$(sed -n "s/^expires=//p" $f); now=$(date +%s)
    [ "${exp:-0}" -gt "$now" ] && echo "$(sed -n "s/^holder=//p" $f) (lease lapses in $((exp - now)) s unless renewed)"'''


# ------------------------------------------------------------------------------------------------ helpers
def node_names(n: int) -> list[str]:
    """lab-cp lab-w1 ... lab-w(N-1)."""
    return ["lab-cp", *(f"lab-w{i}" for i in range(1, n))]


def run(argv: list[str]) -> None:
    """A step `up` cannot go on without (bash's `set -e`): its failure ends the program with its exit status."""
    try:
        rc = subprocess.run(argv).returncode
    except FileNotFoundError:
        raise die(f"{argv[0]} is not installed") from None
    if rc:
        raise ck.Fail(f"{' '.join(argv[:4])} failed (exit {rc})", rc if rc > 0 else 1)


def become(argv: list[str]) -> int:
    """Replace this process with ARGV (bash's `exec`), with the signal dispositions a shell gives a command: Python
    ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec."""
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    sys.stdout.flush()
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        raise ck.Fail(f"{argv[0]}: {e.strerror}", 127) from None


def main(argv: list[str]) -> int:
    """lab.sh's commands, arguments, messages and exit statuses (see the module's docstring)."""
    cmd, rest = (argv[0], argv[1:]) if argv else ("", [])
    ck.exit_on_sigterm()
    lab = Lab(prog=os.environ.pop("EDGEBENCH_LAB_SH", ""))
    os.environ["EDGEBENCH_LAB"] = lab.dir   # vm.py and the nodes' processes read the same lab
    try:
        if cmd == "up":
            return lab.up(*rest[:1])
        if cmd == "down":
            return lab.down()
        if cmd == "status":
            return lab.status()
        if cmd == "exec":
            if len(rest) < 2:
                raise die("usage: lab.sh exec NODE CMD...")
            return lab.node_exec(rest[0], rest[1:])
        if cmd == "leftovers":
            return 1 if lab.leftovers() else 0
        if cmd == "vm":
            return become([*lab.vm, *rest])
        if cmd == "env":
            return lab.env()
        if cmd in ("-h", "--help", "help"):
            print(__doc__.rstrip("\n"))
            return 0
        print(USAGE, file=sys.stderr)
        return 2
    except ck.Fail as e:
        print(f"lab-local: error: {e}", file=sys.stderr, flush=True)
        return e.code
    except OSError as e:
        print(f"lab-local: error: {e}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("lab-local: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
