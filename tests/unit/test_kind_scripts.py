"""scripts/kind's Python (issue 45, item 8): the pure parts of dockerd.py, mgmt.py and node_image.py and the helpers
they share (kindlib.py): the deadline poll, the lock, the state file, the sub-command dispatcher, the node image's
cache key (unchanged from the bash script's: a machine with a built node.tar stays cached) and its file edits.
Offline: no engine, no root, nothing outside tmp_path."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KIND = REPO / "scripts" / "kind"
sys.path.insert(0, str(KIND))

import dockerd  # noqa: E402
import kindlib as kl  # noqa: E402
import cmdkit as ck  # noqa: E402 - on sys.path through kindlib / lablib
import mgmt  # noqa: E402
import node_image  # noqa: E402


# ------------------------------------------------------------------------------------------------ poll
class FakeClock:
    def __init__(self):
        self.t = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.t += s


def test_poll_returns_what_the_check_returned_once_it_is_truthy():
    clock, calls = FakeClock(), []

    def check():
        calls.append(clock.t)
        return "ready" if len(calls) == 3 else None

    assert ck.poll(check, 10, "x", interval=1, clock=clock, sleep=clock.sleep) == "ready"
    assert clock.slept == [1, 1]


def test_poll_stops_at_the_deadline_with_what_it_waited_for():
    clock = FakeClock()
    with pytest.raises(ck.Timeout, match=r"^dockerd answering: not within 2\.5 s$") as e:
        ck.poll(lambda: False, 2.5, "dockerd answering", interval=1, clock=clock, sleep=clock.sleep)
    assert e.value.code == 1
    assert clock.slept == [1, 1, 0.5] and clock.t == 102.5  # never sleeps past the deadline


def test_poll_checks_once_even_with_no_time_and_lets_a_failure_through():
    clock = FakeClock()
    assert ck.poll(lambda: 1, 0, "x", clock=clock, sleep=clock.sleep) == 1

    def died():
        raise ck.Fail("dockerd exited (code 1) before it answered")

    with pytest.raises(ck.Fail, match="exited"):
        ck.poll(died, 60, "x", clock=clock, sleep=clock.sleep)
    assert clock.slept == []


# ------------------------------------------------------------------------------------------------ the lock
def test_lock_is_exclusive_names_the_holder_and_is_flock_s(tmp_path):
    path = tmp_path / "mgmt.lock"
    first = kl.Lock(path, mgmt.BUSY).acquire()
    assert (tmp_path / "mgmt.lock.pid").read_text().strip() == str(os.getpid())
    with pytest.raises(ck.Fail) as e:
        kl.Lock(path, mgmt.BUSY).acquire()
    assert e.value.code == 2
    assert str(e.value) == (f"another mgmt.sh up/down runs (pid {os.getpid()}): wait for it, or stop it first")
    if shutil.which("flock"):  # the same lock flock(1) takes (tests/live/test_e2e_argo.py asks with it)
        assert subprocess.run(["flock", "-n", str(path), "true"]).returncode != 0
    first.release()
    assert not (tmp_path / "mgmt.lock.pid").exists()
    if shutil.which("flock"):
        assert subprocess.run(["flock", "-n", str(path), "true"]).returncode == 0
    with kl.Lock(path, mgmt.BUSY):
        pass


def test_a_lock_held_by_flock_1_without_a_note_says_so(tmp_path):
    if not shutil.which("flock"):
        pytest.skip("no flock(1)")
    path = tmp_path / "mgmt.lock"
    holder = subprocess.Popen(["flock", str(path), "sleep", "30"])
    try:
        ck.poll(lambda: subprocess.run(["flock", "-n", str(path), "true"]).returncode != 0, 10, "the holder")
        with pytest.raises(ck.Fail, match=r"runs \(pid \?\)"):
            kl.Lock(path, mgmt.BUSY).acquire()
    finally:
        holder.kill()
        holder.wait()


# ------------------------------------------------------------------------------------------------ state
def test_state_round_trip_is_one_json_file_written_whole(tmp_path):
    st = kl.State(tmp_path / "s" / "state.json")
    assert st.load() == {}
    st.save({"started_engine": True})
    st.update(sysctls={"fs.inotify.max_user_watches": "8192"})
    assert json.loads((tmp_path / "s" / "state.json").read_text()) == {
        "started_engine": True, "sysctls": {"fs.inotify.max_user_watches": "8192"}}
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["state.json"]  # no temporary left
    (tmp_path / "s" / "state.json").write_text("{half")
    with pytest.raises(ck.Fail, match="not JSON"):
        st.load()


def test_state_reads_what_the_bash_scripts_left(tmp_path):
    """A `down` after the upgrade undoes an `up` of before: the marker files of mgmt.sh and dockerd.sh."""
    d = tmp_path / "edgebench-kind-mgmt"
    d.mkdir()
    (d / "started-engine").touch()
    (d / "fs.inotify.max_user_instances").write_text("128\n")
    (d / "up-times").write_text("0 engine\n")
    got = kl.State(d / "state.json", legacy=mgmt._legacy_state).load()
    assert got == {"started_engine": True, "made_lib_modules": False,
                   "sysctls": {"fs.inotify.max_user_instances": "128"}}
    e = tmp_path / "docker" / ".edgebench"
    e.mkdir(parents=True)
    (e / "forward-policy").write_text("DROP\n")
    (e / "net.ipv4.ip_forward").write_text("0\n")
    assert kl.State(e / "host.json", legacy=dockerd._legacy_host_state).load() == {
        "forward_policy": "DROP", "sysctls": {"net.ipv4.ip_forward": "0"}}
    assert kl.State(tmp_path / "nothing" / "host.json", legacy=dockerd._legacy_host_state).load() == {}


# ------------------------------------------------------------------------------------------------ dispatcher
def _cmds(called: list):
    return {"up": ck.Command(lambda: called.append("up"), "up", "start it"),
            "submit": ck.Command(lambda *a: called.append(("submit", a)), "submit [ARGS]", "argo submit", max_args=None),
            "bad": ck.Command(lambda: (_ for _ in ()).throw(ck.Fail("no kind cluster x: make up", 2)), "bad", "f")}


def test_dispatch_usage_help_and_errors(capsys):
    called: list = []
    assert ck.main("p.sh", "p", "Doc.", _cmds(called), []) == 2
    err = capsys.readouterr().err
    assert "p.sh up" in err and "p.sh submit [ARGS]" in err and "Doc." in err
    assert ck.main("p.sh", "p", "Doc.", _cmds(called), ["--help"]) == 0
    assert "p.sh up" in capsys.readouterr().out
    assert ck.main("p.sh", "p", "Doc.", _cmds(called), ["bogus"]) == 2
    assert capsys.readouterr().err == "p: error: unknown command 'bogus' (commands: up, submit, bad; p.sh --help)\n"
    assert ck.main("p.sh", "p", "Doc.", _cmds(called), ["up", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: p.sh up\n\nstart it")
    # arguments to a command that takes none: one line, exit 2, nothing run
    assert ck.main("p.sh", "p", "Doc.", _cmds(called), ["up", "now"]) == 2
    assert capsys.readouterr().err == "p: error: up takes no arguments (got now; usage: p.sh up)\n"
    assert called == []
    assert ck.main("p.sh", "p", "Doc.", _cmds(called), ["submit", "-p", "a=b"]) == 0
    assert called == [("submit", ("-p", "a=b"))]
    assert ck.main("p.sh", "p", "Doc.", _cmds(called), ["bad"]) == 2
    assert capsys.readouterr().err == "p: error: no kind cluster x: make up\n"


@pytest.mark.parametrize("script, args, rc", [("dockerd.sh", [], 2), ("dockerd.sh", ["bogus"], 2),
                                              ("dockerd.sh", ["--help"], 0), ("dockerd.sh", ["status", "x"], 2),
                                              ("node-image.sh", ["--bogus"], 2), ("node-image.sh", ["--help"], 0),
                                              ("mgmt.sh", ["running", "x"], 2), ("mgmt.sh", ["down", "--help"], 0)])
def test_entry_points(script, args, rc):
    p = subprocess.run(["bash", str(KIND / script), *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == rc, p.stderr
    if rc == 2 and args:
        assert len(p.stderr.strip().splitlines()[0]) < 160 and "error:" in p.stderr.splitlines()[0]


def test_entry_points_are_thin():
    for sh in ("dockerd.sh", "mgmt.sh", "node-image.sh"):
        assert len((KIND / sh).read_text().splitlines()) < 100


# ------------------------------------------------------------------------------------------------ node image: key
def _bash_key(stamp: Path, recipe: str, files: list[Path], preload: list[Path]) -> str:
    """The bash script's inputs_key, its own pipeline, with the script's hash given (RECIPE)."""
    script = ('{ cat "$1"; echo "$2"; shift 2; sha256sum "$@" | cut -c1-64; echo "v0.33.0 v1.37.0 v1.33.4"; } '
              '| sha256sum | cut -c1-16')
    p = subprocess.run(["bash", "-c", script, "key", str(stamp), recipe, *map(str, files + preload)],
                       capture_output=True, text=True, check=True)
    return p.stdout.strip()


def _fake_caches(tmp_path: Path) -> dict[str, str]:
    kindc, labc = tmp_path / "kind", tmp_path / "lab"
    (kindc / "rootfs/node-base").mkdir(parents=True)
    (kindc / "rootfs/node-base/.stamp").write_text("2026-11-28T10:00:00Z\n")
    b = labc / "mirror/bin/amd64"
    b.mkdir(parents=True)
    for n in ("kubeadm", "kubelet", "kubectl", "cni-plugins.tgz"):
        (b / n).write_text(f"{n}\n")
        (b / n).chmod(0o755)
    (labc / "mirror/images/amd64").mkdir(parents=True)
    for n in node_image.PRELOAD:
        (labc / f"mirror/images/amd64/{n}.tar").write_text(f"{n} archive\n")
    (labc / "mirror/manifests/flannel/v0.28.9").mkdir(parents=True)
    (labc / "mirror/manifests/flannel/v0.28.9/kube-flannel.yml").write_text('"Network": "10.244.0.0/16"\n')
    return {"HOME": str(tmp_path), "EDGEBENCH_KIND_CACHE": str(kindc), "EDGEBENCH_LAB_CACHE": str(labc)}


def test_the_node_image_key_is_the_bash_script_s(tmp_path):
    env = _fake_caches(tmp_path)
    b = node_image.Build(env)
    files = [b.bin / "kubeadm", b.bin / "kubelet", b.bin / "kubectl", b.flannel, b.bin / "cni-plugins.tgz"]
    # runc-capdrop's line is its Go source's hash (kindlib.capdrop_key) where the bash script's sha256 was
    want = _bash_key(b.base / ".stamp", f"{node_image.RECIPE}\n{kl.capdrop_key()}", files,
                     [b.mimg / f"{n}.tar" for n in node_image.PRELOAD])
    assert b.key() == want and len(want) == 16
    # every input moves it
    (b.mimg / "pause.tar").write_text("another pause\n")
    assert b.key() != want
    p = subprocess.run([sys.executable, str(KIND / "node_image.py"), "key"], env={**os.environ, **env},
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout.strip() == b.key()


def test_node_image_key_without_the_inputs_names_them_and_exits_2(tmp_path):
    env = {"HOME": str(tmp_path), "EDGEBENCH_KIND_CACHE": str(tmp_path / "k"), "EDGEBENCH_LAB_CACHE": str(tmp_path)}
    p = subprocess.run([sys.executable, str(KIND / "node_image.py"), "key"], env={**os.environ, **env},
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert p.stderr.startswith("kind-node: error: missing ") and "kubeadm" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == []  # nothing made


def test_recipe_is_the_bash_script_s_hash_and_changes_with_the_recipe():
    old_sh = "81cbba9:scripts/kind/node-image.sh"
    if shutil.which("git") and subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", old_sh],
                                              capture_output=True).returncode == 0:
        old = subprocess.run(["git", "-C", str(REPO), "show", old_sh],
                             capture_output=True, check=True).stdout
        assert hashlib.sha256(old).hexdigest() == node_image.RECIPE
    got = node_image.recipe_fingerprint()
    assert got == node_image.RECIPE_FINGERPRINT, (
        f"the node image's recipe changed (fingerprint {got}): if what goes into the image changed, give "
        "node_image.RECIPE a new value (a cached node.tar is then rebuilt); then set RECIPE_FINGERPRINT to {got}")


# ------------------------------------------------------------------------------------------------ node image: edits
KIND_TOML = """version = 2

[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = false
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.test-handler.options]
  SystemdCgroup = true

[proxy_plugins]
  [proxy_plugins."fuse-overlayfs"]
    type = "snapshot"
    address = "/run/containerd-fuse-overlayfs.sock"

[plugins."io.containerd.internal.v1.opt"]
  path = "/opt/containerd"
"""


def test_containerd_config_edit_is_the_bash_script_s():
    got = node_image.containerd_config(KIND_TOML)
    assert "proxy_plugins" not in got and "fuse-overlayfs" not in got
    assert "restrict_oom_score_adj = true" in got and got.count('  BinaryName = "/usr/local/sbin/runc-capdrop"') == 2
    assert '[plugins."io.containerd.internal.v1.opt"]' in got
    if shutil.which("awk") and shutil.which("sed"):
        bash = subprocess.run(
            ["bash", "-c", r"""awk '/^\[proxy_plugins/ {skip = 1; next} /^\[/ && !/^\[proxy_plugins/ {skip = 0} !skip' \
              | sed -e 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' \
                    -e 's/^\(\s*\)SystemdCgroup = true/\1SystemdCgroup = true\n"""
                    r"""\1BinaryName = "\/usr\/local\/sbin\/runc-capdrop"/'"""],
            input=KIND_TOML, capture_output=True, text=True, check=True).stdout
        assert got == bash


def test_containerd_config_edit_refuses_a_config_it_cannot_change():
    with pytest.raises(ck.Fail, match="BinaryName not set twice"):
        node_image.containerd_config(KIND_TOML.replace("  SystemdCgroup = true\n", "", 1))
    with pytest.raises(ck.Fail, match="restrict_oom_score_adj"):
        node_image.containerd_config(KIND_TOML.replace("restrict_oom_score_adj = false", ""))


def test_default_cni_is_marked_for_kind_s_template():
    got = node_image.default_cni('net-conf.json: |\n  { "Network": "10.244.0.0/16" }\n', "f.yml")
    assert got.splitlines()[0] == "# would you kindly template this file"
    assert '"Network": "{{ .PodSubnet }}"' in got and "10.244.0.0/16" not in got
    with pytest.raises(ck.Fail, match='no "Network" line'):
        node_image.default_cni("kind: DaemonSet\n", "f.yml")
    with pytest.raises(ck.Fail, match="template braces"):
        node_image.default_cni('"Network": "10.244.0.0/16" {{ x }}\n', "f.yml")


def test_base_spec_adds_kind_s_hook_and_drops_rlimits():
    spec = {"process": {"rlimits": [{"type": "RLIMIT_NOFILE"}], "cwd": "/"},
            "hooks": {"createContainer": [{"path": "/a"}]}}
    got = node_image.base_spec(spec)
    assert got["hooks"]["createContainer"] == [{"path": "/a"}, {"path": "/kind/bin/mount-product-files.sh"}]
    assert got["process"] == {"cwd": "/"}
    assert node_image.base_spec({"process": {}})["hooks"] == {
        "createContainer": [{"path": "/kind/bin/mount-product-files.sh"}]}


# ------------------------------------------------------------------------------------------------ dockerd
def test_daemon_config_and_environment(tmp_path):
    e = dockerd.Engine({"EDGEBENCH_DOCKER_DATA": str(tmp_path / "d"), "EDGEBENCH_DOCKER_RUN": str(tmp_path / "r"),
                        "EDGEBENCH_DOCKER_IPTABLES": "false"})
    c = e.config()
    assert c["data-root"] == str(tmp_path / "d") and c["pidfile"] == f"{tmp_path / 'r'}/dockerd.pid"
    assert c["iptables"] is False and c["default-runtime"] == "edgebench-runc"
    assert c["cgroup-parent"] == "/edgebench-docker" and c["default-address-pools"] == [
        {"base": "172.30.0.0/16", "size": 24}]
    assert e.log_path == Path(f"{tmp_path / 'r'}.log") and e.state.path == tmp_path / "d/.edgebench/host.json"
    with pytest.raises(ck.Fail, match="EDGEBENCH_DOCKER_IPTABLES=yes: true or false") as err:
        dockerd.Engine({"EDGEBENCH_DOCKER_IPTABLES": "yes"})
    assert err.value.code == 2


def test_iptables_listing_parsers():
    listing = """Chain FORWARD (policy DROP)
num  target     prot opt source               destination
1    DOCKER-USER  all  --  0.0.0.0/0            0.0.0.0/0
2    ACCEPT     all  --  0.0.0.0/0            0.0.0.0/0
3    MASQUERADE  all  --  172.30.0.0/16        0.0.0.0/0
4    MASQUERADE  all  --  10.0.0.0/8           0.0.0.0/0
5    DOCKER-ISOLATION-STAGE-1  all  --  0.0.0.0/0  0.0.0.0/0
"""
    assert dockerd.rule_numbers(listing, "172.30.") == [1, 3, 5]
    rules = "-P INPUT ACCEPT\n-N DOCKER\n-N DOCKER-USER\n-N KUBE-FW\n-A DOCKER-USER -j RETURN\n"
    assert dockerd.docker_chains(rules) == ["DOCKER", "DOCKER-USER"]


def test_cgroup_hierarchy_choice():
    mounts = ("cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0\n"
              "cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,xattr,name=systemd 0 0\n"
              "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n")
    assert kl.cgroup_v1_hierarchy(("name=systemd", "pids"), mounts) == "/sys/fs/cgroup/systemd"
    assert kl.cgroup_v1_hierarchy(("name=systemd", "pids"), mounts.splitlines()[0]) == "/sys/fs/cgroup/pids"
    assert kl.cgroup_v1_hierarchy(("name=systemd", "pids"), mounts.splitlines()[2]) is None


def test_stop_ends_a_process_group_that_ignores_sigterm(tmp_path):
    p = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 60 & wait"], start_new_session=True)
    try:
        kl.stop(p.pid, 0.5, "a stubborn shell", group=True)
        assert p.wait(timeout=10) != 0
    finally:
        if p.poll() is None:
            p.kill()


# ------------------------------------------------------------------------------------------------ mgmt
def test_mgmt_reads_its_environment(tmp_path):
    m = mgmt.Mgmt({"HOME": str(tmp_path), "CLUSTER": "c1", "EDGEBENCH_TOOLS": str(tmp_path / "t")},
                  state_dir=tmp_path / "state", lock=tmp_path / "lock")
    assert m.kind == tmp_path / "t" / "kind-v0.33.0" and m.cluster == "c1"
    assert m.kubectl == tmp_path / ".local/share/edgebench/lab/mirror/bin/amd64/kubectl"
    assert m.config == REPO / "kustomize/overlays/kind/kind-cluster.local.yaml"
    assert not m.running()
    with pytest.raises(ck.Fail, match="^no kind cluster c1: make up$"):
        m.need_cluster()
    assert not (tmp_path / "t").exists() and not (tmp_path / "state").exists()


def test_sigterm_runs_the_cleanup(tmp_path):
    """A program killed with SIGTERM leaves through its finally clauses (the chroot's mounts, the lock's note)."""
    marker = tmp_path / "cleaned"
    prog = (f"import sys, time; sys.path.insert(0, {str(KIND)!r}); import kindlib, cmdkit\n"
            "cmdkit.exit_on_sigterm()\n"
            f"try:\n    print('ready', flush=True); time.sleep(60)\nfinally:\n    open({str(marker)!r}, 'w').close()\n")
    p = subprocess.Popen([sys.executable, "-c", prog], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.terminate()
    assert p.wait(timeout=10) == 143 and marker.exists()
