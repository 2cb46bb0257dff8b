"""scripts/lab-local's Python (issue 45, item 8): the pure parts of mirror.py, labbuild.py, cilium_image.py and
lablib.py. The cache keys and stamps are the bash scripts' (checked against the same shell pipelines the bash
scripts ran: a machine's built images and binaries stay cached), index.yaml from a temp tree, argument parsing and
bad input (exit 2, nothing made). Offline: no root, no Go, nothing outside tmp_path."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "scripts" / "lab-local"
sys.path.insert(0, str(LAB))

import cilium_image  # noqa: E402
import labbuild  # noqa: E402
import lablib as ll  # noqa: E402
import cmdkit as ck  # noqa: E402 - on sys.path through kindlib / lablib
import mirror as mm  # noqa: E402
from edgebench.substrates.clusters.install import artifacts  # noqa: E402


def lab(tmp: Path, arch: str = "amd64", host: str = "amd64", **env: str) -> ll.Lab:
    base = {"HOME": str(tmp / "home"), "ARCH": arch, "EDGEBENCH_LAB_CACHE": str(tmp / "lab"),
            "EDGEBENCH_E2E": str(tmp / "e2e"), **env}
    return ll.Lab.from_env(base, host=host)


def binary(path: Path, text: str = "x") -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {text}\n")
    path.chmod(0o755)
    return str(path)


def sh(script: str, *args: str) -> str:
    return subprocess.run(["bash", "-c", script, "bash", *args], capture_output=True, text=True,
                          check=True).stdout.strip()


# ------------------------------------------------------------------------------------------------ the cache layout
def test_lab_paths_are_the_bash_scripts_strings_unnormalised(tmp_path):
    lb = lab(tmp_path, EDGEBENCH_LAB_CACHE=f"{tmp_path}/lab/")   # a trailing slash stays (it is in the keys)
    assert lb.bin == f"{tmp_path}/lab//bin/amd64" and lb.mirror == f"{tmp_path}/lab//mirror"
    assert lb.k8s_bin == f"{tmp_path}/e2e/bin"   # this machine's Kubernetes: scripts/e2e-argo's
    arm = lab(tmp_path, arch="arm64")
    assert arm.foreign and arm.k8s_bin == f"{tmp_path}/lab/bin/arm64/k8s"
    assert arm.rootfs("base") == f"{tmp_path}/lab/rootfs/base-arm64"
    with pytest.raises(ck.Fail, match=r"^ARCH=sparc is not supported \(architectures: amd64 arm64\)$") as e:
        lab(tmp_path, arch="sparc").check_arch()
    assert e.value.code == 2


# ------------------------------------------------------------------------------------------------ image keys
BASH_IMAGE_KEY = """ref=$1 base=$2 entry=$3 root=$4; shift 4
{ echo "$ref $base $entry"; for f in "$@"; do sha256sum "$f"; done
  if [[ $base == debian ]]; then cat "$root/.stamp"; fi; } | sha256sum | cut -c1-16"""


@pytest.mark.parametrize("base,entry", [("static", "/pause"), ("static", None), ("debian", None),
                                        ("debian", "/usr/local/bin/kube-router")])
def test_image_key_is_the_bash_image_key(tmp_path, base, entry):
    m = mm.Mirror(lab(tmp_path))
    Path(m.base).mkdir(parents=True)
    Path(m.base, ".stamp").write_text("2026-11-28T08:26:32Z\n")
    files = [(binary(Path(m.lab.bin) / "flanneld", "a"), "/opt/bin/flanneld"),
             (binary(Path(m.lab.bin) / "flannel-install-conf", "b"), "/opt/bin/install-conf")]
    want = sh(BASH_IMAGE_KEY, "ghcr.io/flannel-io/flannel:v0.28.9", base,
              f"--config.entrypoint {entry}" if entry else "", m.base, *(s for s, _ in files))
    assert m.image_key("ghcr.io/flannel-io/flannel:v0.28.9", base, entry, files) == want
    # an input's bytes, the Debian root's stamp (debian only) and the entrypoint change the key
    before = m.image_key("r", base, entry, files)
    Path(m.base, ".stamp").write_text("2026-11-29T00:00:00Z\n")
    assert (m.image_key("r", base, entry, files) != before) == (base == "debian")
    binary(Path(files[0][0]), "changed")
    assert m.image_key("r", base, entry, files) != before
    assert m.image_key("r", base, "/other", files) != m.image_key("r", base, entry, files)


def test_image_specs_name_every_catalog_image_the_mirror_builds(tmp_path):
    m = mm.Mirror(lab(tmp_path))
    specs = {name: (ref, base, files, entry) for name, ref, base, files, entry in m.image_specs("/p/pause")}
    catalog = artifacts.spec()["artifacts"]
    for name, (ref, *_rest) in specs.items():
        art = next((a for a in catalog.values() if a.get("path") == f"images/{{arch}}/{name}.tar"), None)
        assert art is not None and art["ref"] == ref, name
    assert specs["flannel-v0.28.10"][2][0] == (f"{m.lab.bin}/flanneld-v0.28.10", "/opt/bin/flanneld")
    assert specs["kube-apiserver"][2] == [(f"{m.lab.k8s_bin}/kube-apiserver", "/usr/local/bin/kube-apiserver")]


BASH_AGENT_KEY = """version=$1 root=$2 bin=$3
{ echo "agent $version"; cat "$root/.stamp"; sha256sum "$bin"/cilium-* | cut -d' ' -f1; } | sha256sum | cut -c1-16"""
BASH_OPERATOR_KEY = """{ echo "operator $1"; sha256sum "$2/cilium-operator-generic" | cut -d' ' -f1; } | sha256sum |
cut -c1-16"""


def test_cilium_image_keys_are_the_bash_keys(tmp_path):
    c = cilium_image.Cilium(lab(tmp_path), version="1.18.0")
    for name in cilium_image.BINARIES:
        binary(Path(c.bin) / name, name)
        Path(c.bin, f".{name}.version").write_text("1.18.0\n")   # dot files are not in the key
    Path(c.rootfs_dir).mkdir(parents=True)
    Path(c.rootfs_dir, ".stamp").write_text("2026-11-28T08:36:48Z\n")
    assert c.agent_key() == sh(BASH_AGENT_KEY, "1.18.0", c.rootfs_dir, c.bin)
    assert c.operator_key() == sh(BASH_OPERATOR_KEY, "1.18.0", c.bin)
    assert cilium_image.Cilium(lab(tmp_path), version="1.18.1").agent_key() != c.agent_key()


def test_envoy_sha_is_the_dockerfiles_tag_suffix():
    sha = "266d5a01d1d55bd1d60148f991b98dac0390d363"
    text = (f"FROM x\nARG CILIUM_ENVOY_IMAGE=quay.io/cilium/cilium-envoy:v1.34.4-1753677767-{sha}"
            "@sha256:aa11 # comment\nARG OTHER=1\n")
    assert cilium_image.envoy_sha(text) == sha
    assert cilium_image.envoy_sha("FROM x\n") == ""


# ------------------------------------------------------------------------------------------------ stamps
def test_build_stamps_are_the_bash_stamps(tmp_path):
    b = labbuild.Builder(lab(tmp_path), "v1.33.4")
    stamps = {os.path.basename(b.stamp(i)) for i in b.items()}
    assert stamps == {".etcd-v3.5.21", ".coredns-v1.12.0", ".flanneld-v0.28.9", ".flanneld-extra-v0.28.10",
                      ".kube-router-v2.1.0", ".cni-plugins-v1.1.1", ".flannel-cni-v0.9.1", ".fortio-v1.66.5",
                      ".kubeadm-go1.24-v1.33.4"}
    foreign = labbuild.Builder(lab(tmp_path, arch="arm64"), "v1.33.4")
    extra = {os.path.basename(foreign.stamp(i)) for i in foreign.items()} - stamps
    assert extra == {f".k8s-{c}-v1.33.4" for c in labbuild.K8S_FOREIGN}
    assert all(foreign.stamp(i).startswith(f"{tmp_path}/lab/bin/arm64/.") for i in foreign.items())


def _script(name: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """bash NAME ARGS with none of the caller's lab settings: every path under tmp_path (HOME too)."""
    lab_vars = ("ARCH", "PY", "MIRROR_PORT", "RUNNER_TAR", "CILIUM_VERSION", "K8S_VERSION")
    full = {k: v for k, v in os.environ.items() if k not in lab_vars and not k.startswith("EDGEBENCH_")}
    home = Path(env["EDGEBENCH_LAB_CACHE"]).parent / "home"
    full.update(env, PY=sys.executable, HOME=str(home))
    return subprocess.run(["bash", str(LAB / name), *args], capture_output=True, text=True, env=full, timeout=60)


def test_build_print_says_cached_for_a_stamp_and_builds_nothing(tmp_path):
    out = tmp_path / "lab" / "bin" / "amd64"
    out.mkdir(parents=True)
    (out / ".etcd-v3.5.21").touch()
    (out / ".flanneld-extra-v0.28.10").touch()
    before = sorted(p.name for p in out.iterdir())
    run = _script("build.sh", {"ARCH": "amd64", "EDGEBENCH_LAB_CACHE": str(tmp_path / "lab")}, "--print")
    assert run.returncode == 0, run.stderr
    rows = {(r.split()[1], r.split()[2]): r.split()[3] for r in run.stdout.splitlines()}
    assert rows[("etcd", "v3.5.21")] == "cached" and rows[("flanneld", "v0.28.10")] == "cached"
    assert rows[("flanneld", "v0.28.9")] == "missing" and rows[("kubeadm", "v1.33.4")] == "missing"
    assert sorted(p.name for p in out.iterdir()) == before and not (tmp_path / "lab" / "src").exists()


# ------------------------------------------------------------------------------------------------ index.yaml
def test_index_is_write_index_and_is_left_alone_when_unchanged(tmp_path):
    root = tmp_path / "mirror"
    binary(root / "bin/amd64/kubeadm")
    binary(root / "bin/arm64/kubeadm", "arm")
    (root / "charts/cilium").mkdir(parents=True)
    (root / "charts/cilium/cilium-1.18.0.tgz").write_bytes(b"chart")
    m = mm.Mirror(lab(tmp_path, EDGEBENCH_MIRROR=str(root)))
    m.index()
    ours = (root / "index.yaml").read_bytes()
    artifacts.write_index(root)
    assert (root / "index.yaml").read_bytes() == ours   # the bytes artifacts.write_index writes
    doc = yaml.safe_load(ours)["artifacts"]
    assert set(doc["kubeadm"]["arches"]) == {"amd64", "arm64"} and doc["etcd"]["arches"] == {}
    assert set(doc["cilium-chart"]["arches"]) == {"amd64", "arm64"}   # arch-independent
    inode = (root / "index.yaml").stat().st_ino
    m.index()
    assert (root / "index.yaml").stat().st_ino == inode   # unchanged: not rewritten
    binary(root / "bin/amd64/kubelet")
    m.index()
    assert "amd64" in yaml.safe_load((root / "index.yaml").read_text())["artifacts"]["kubelet"]["arches"]


def test_files_are_replaced_whole_and_only_when_they_change(tmp_path):
    p = tmp_path / "units" / "kubelet.service"
    assert ll.write_text(p, "a\n") and p.read_text() == "a\n"
    inode = p.stat().st_ino
    assert not ll.write_text(p, "a\n") and p.stat().st_ino == inode
    assert ll.write_text(p, "b\n") and p.stat().st_ino != inode
    src = binary(tmp_path / "kubeadm")
    assert ll.install(src, tmp_path / "m/bin/kubeadm") and not ll.install(src, tmp_path / "m/bin/kubeadm")
    assert (tmp_path / "m/bin/kubeadm").stat().st_mode & 0o777 == 0o755
    assert not [f for f in (tmp_path / "m/bin").iterdir() if f.name.startswith(".")]   # no temporary left


def test_newer_is_bash_nt(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.touch()
    assert ll.newer(a, b)   # B missing
    b.touch()
    os.utime(a, ns=(10**18, 10**18))
    os.utime(b, ns=(10**18 + 1, 10**18 + 1))
    assert ll.newer(b, a) and not ll.newer(a, b) and not ll.newer(tmp_path / "none", a)


# ------------------------------------------------------------------------------------------------ the server state
def test_serve_stop_never_signals_a_pid_that_is_not_the_recorded_server(tmp_path):
    srv = mm.Server(str(tmp_path), str(tmp_path), 18089)
    srv.pidfile.write_text(f"{os.getpid()}\n")   # this test's process: not an http.server group leader
    assert srv.recorded() is None
    assert srv.stop() is False and not srv.pidfile.exists()   # the stale file goes, nothing is killed
    srv.pidfile.write_text("garbage\n")
    assert srv.recorded() is None


def test_poll_gives_up_at_the_deadline_with_what_it_waited_for():
    t = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        t[0] += s

    with pytest.raises(ck.Timeout, match="the server to answer: not within 1 s"):
        ck.poll(lambda: False, 1, "the server to answer", interval=0.3, clock=lambda: t[0], sleep=sleep)
    assert sum(slept) == pytest.approx(1.0)
    assert ck.poll(lambda: "yes", 1, "x", clock=lambda: t[0], sleep=sleep) == "yes"


# ------------------------------------------------------------------------------------------------ arguments
@pytest.mark.parametrize("args,env,message", [
    (["serve", "not-an-address"], {}, "lab-local: mirror: error: serve: 'not-an-address' is not an IP address"),
    (["serve", "127.0.0.1", "extra"], {}, "lab-local: mirror: error: serve takes 1 argument"),
    (["serve", "127.0.0.1"], {"MIRROR_PORT": "http"}, "lab-local: mirror: error: MIRROR_PORT=http is not a TCP port"),
    (["serve", "127.0.0.1"], {}, "lab-local: mirror: error: no mirror at"),
    (["index", "x"], {}, "lab-local: mirror: error: index takes no arguments"),
    (["prove"], {"ARCH": "sparc"}, "lab-local: mirror: error: ARCH=sparc is not supported"),
    (["--print"], {}, "lab-local: mirror: error: no index at"),
    (["bogus"], {}, "lab-local: mirror: error: unknown command 'bogus'"),
])
def test_mirror_bad_input_is_one_line_exit_2_and_changes_nothing(tmp_path, args, env, message):
    run = _script("mirror.sh", {"EDGEBENCH_LAB_CACHE": str(tmp_path / "lab"), **env}, *args)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines()[0].startswith(message) and len(run.stderr.splitlines()) == 1, run.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("name,commands", [
    ("mirror.sh", ["build", "index", "serve", "serve-stop", "prove", "--print"]),
    ("cilium.sh", ["build", "bins", "rootfs", "images", "chart", "helm"]),
    ("build.sh", ["build", "--print"]),
])
def test_every_command_has_its_help(tmp_path, name, commands):
    env = {"EDGEBENCH_LAB_CACHE": str(tmp_path / "lab")}
    top = _script(name, env, "--help")
    assert top.returncode == 0 and all(f"{name} {c}" in top.stdout or f"{name} [{c}]" in top.stdout
                                       for c in commands), top.stdout
    for c in commands:
        one = _script(name, env, c, "--help")
        assert one.returncode == 0 and one.stdout.startswith(f"usage: {name} "), (c, one.stdout, one.stderr)
    assert _script(name, env, "nope").returncode == 2
    assert not any(tmp_path.iterdir())


def test_entry_points_are_thin():
    for name in ("mirror.sh", "build.sh", "cilium.sh"):
        assert len((LAB / name).read_text().splitlines()) < 100
