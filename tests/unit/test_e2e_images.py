"""scripts/e2e-argo/images.py (issue 45): the image builder ported from bash. The keys are the bash version's byte for
byte (expected values below were printed by the bash lib/*.sh of commit e5ec3be for the same inputs: the tarballs
and runner stages a machine has cached stay cached), the recipe guard, the runner's one definition
(containers/runner/image.toml: the Dockerfile is generated from it), argument parsing and bad input (one error line,
exit 2, nothing made). Offline: no root, no umoci, nothing outside tmp_path."""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
E2E_SCRIPTS = REPO / "scripts" / "e2e-argo"
sys.path.insert(0, str(E2E_SCRIPTS))

import imagelib as il  # noqa: E402 - first: puts scripts/ (cmdkit) and scripts/lab-local on sys.path
import cmdkit as ck  # noqa: E402
import imagekeys as ik  # noqa: E402
import imagerecipes as ir  # noqa: E402
import images  # noqa: E402
import runner_image as ri  # noqa: E402
import binaries  # noqa: E402

INPUTS = "arch amd64\nsome input 0123"
MIRROR, SECURITY = "http://mirror.example/debian", "http://mirror.example/debian-security"
# what the bash images.sh computed for INPUTS (image_key, runner_base_tag with these mirrors and packages,
# runner_venv_tag)
BASH_KEYS = {
    "workflow-controller": "2add927537cebb1e158d6ccf0a958080986c5efb01e27a5ab84a1c92b34fa748",
    "argoexec": "2add927537cebb1e158d6ccf0a958080986c5efb01e27a5ab84a1c92b34fa748",
    "minio": "445d732a853a6ae4298c497b18cf90e5c76d8a87d12bc260d00156216723a720",
    "mc": "445d732a853a6ae4298c497b18cf90e5c76d8a87d12bc260d00156216723a720",
    "runner": "6601356913bad3540885cd0c4fc19fac5e25847fc0e11e871d23cb1169d56578",
    "nats": "a1a550b752beb93ea6f0b4ddeadc703d31122da6cd4fae66859670de4370aded",
    "argo-events": "cba719c677d0b2b87290724398023c64be74862cabda7010f268fec982c33410",
}
BASH_BASE = {"amd64": "runner-base-amd64-5d587258c0538f2c", "arm64": "runner-base-arm64-f1978cdbd48f9233"}
BASH_VENV = {"amd64": "runner-venv-amd64-3fdb0e116e021d0e", "arm64": "runner-venv-arm64-3fdb0e116e021d0e"}
# the bash images.sh's RUNNER_PACKAGES: the Dockerfile's apt-get list (awk), then python3 python3-venv
BASH_PACKAGES = ("ca-certificates curl cyclonedds-tools ethtool iperf3 iproute2 iptables iputils-ping nftables "
                 "openssh-client ipvsadm openssl procps runc sockperf sysbench clang libbpf-dev python3 python3-venv")


# ------------------------------------------------------------------------------------------------ keys
@pytest.mark.parametrize("name", sorted(BASH_KEYS))
def test_image_keys_are_the_bash_ones(name):
    assert ik.image_key(name, INPUTS) == BASH_KEYS[name]


@pytest.mark.parametrize("arch", ["amd64", "arm64"])
def test_runner_stage_tags_are_the_bash_ones(arch):
    packages = ["ca-certificates", "curl", "python3", "python3-venv"]
    assert ik.runner_base_tag(arch, MIRROR, SECURITY, packages) == BASH_BASE[arch]
    assert ik.runner_venv_tag(arch, INPUTS) == BASH_VENV[arch]
    # every input counts
    assert ik.runner_base_tag(arch, MIRROR, SECURITY, packages[::-1]) != BASH_BASE[arch]
    assert ik.runner_base_tag(arch, MIRROR + "/", SECURITY, packages) != BASH_BASE[arch]
    assert ik.runner_venv_tag(arch, INPUTS + "x") != BASH_VENV[arch]


def test_a_recipe_revision_changes_only_its_own_key(monkeypatch):
    monkeypatch.setitem(ik.RECIPE_REVISIONS, "mc", "busybox applets added")
    assert ik.image_key("mc", INPUTS) != BASH_KEYS["mc"]
    assert ik.image_key("minio", INPUTS) == BASH_KEYS["minio"]
    monkeypatch.setitem(ik.RECIPE_REVISIONS, "runner-base", "a package")
    assert ik.runner_base_tag("amd64", MIRROR, SECURITY, ["ca-certificates", "curl", "python3", "python3-venv"]) \
        != BASH_BASE["amd64"]


def test_the_frozen_recipe_text_is_checked(tmp_path, monkeypatch):
    assert hashlib.sha256(ik.RECIPE_V1.read_bytes()).hexdigest() == ik.RECIPE_V1_SHA256
    assert set(ik.FUNCTIONS) == {n for fns in (*ik.IMAGE_FNS.values(), ik.BASE_FNS, ik.VENV_FNS) for n in fns}
    edited = tmp_path / "recipe-v1.txt"
    edited.write_text(ik.RECIPE_V1.read_text().replace(" \n", "\n"))  # an editor that strips trailing blanks
    monkeypatch.setattr(ik, "RECIPE_V1", edited)
    with pytest.raises(ck.Fail, match="was edited"):
        ik._functions()


def test_recipe_fingerprint_guards_the_python_recipes():
    got = images.recipe_fingerprint()
    assert got == ik.RECIPE_FINGERPRINT, (
        f"what goes into an image changed (fingerprint {got}): give each image or stage whose content changed an "
        f"entry in imagekeys.RECIPE_REVISIONS (its cached tarball or stage is then rebuilt); then set "
        f"RECIPE_FINGERPRINT to {got}")


def test_runner_sources_sum_is_sha256sum_of_the_sorted_files(tmp_path):
    (tmp_path / "containers/runner/src/pkg/__pycache__").mkdir(parents=True)
    (tmp_path / "requirements.txt").write_text("a==1\n")
    (tmp_path / "containers/runner/pyproject.toml").write_text("[project]\n")
    for rel, text in (("src/pkg/b.py", "b"), ("src/pkg/a.py", "a"), ("src/pkg/_z.py", "z"),
                      ("src/pkg/a.pyc", "junk"), ("src/pkg/__pycache__/a.cpython.pyc", "junk")):
        (tmp_path / "containers/runner" / rel).write_text(text)
    lines = subprocess.run(
        ["bash", "-c", "cd \"$1\" && { sha256sum requirements.txt containers/runner/pyproject.toml; "
         "find containers/runner/src -type f ! -name '*.pyc' ! -path '*/__pycache__/*' ! -path '*.egg-info/*' "
         "-print0 | LC_ALL=C sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-64", "sh", str(tmp_path)],
        capture_output=True, text=True, check=True).stdout.strip()
    assert ik.runner_sources_sum(tmp_path) == lines


# ------------------------------------------------------------------------------------------------ the runner's spec
def test_the_dockerfile_is_generated_from_the_spec():
    spec = ri.load()
    assert ri.DOCKERFILE.read_text() == ri.dockerfile(spec), \
        "containers/runner/Dockerfile differs from containers/runner/image.toml: run scripts/e2e-argo/images.sh dockerfile"


def test_the_dockerfile_installs_the_spec_s_packages_tools_and_user():
    spec, text = ri.load(), ri.DOCKERFILE.read_text()
    apt = re.search(r"apt-get install -y --no-install-recommends \\\n(.*?)&& rm -rf", text, re.S)[1]
    assert apt.replace("\\", " ").split() == spec["packages"]
    for name, tool in spec["tools"].items():
        assert f"/usr/local/bin/{name}" in text or f"/out/{name}" in text, name
        if "version" in tool:
            assert tool["version"] in text
    assert f"USER {spec['user']['uid']}:{spec['user']['uid']}" in text


def test_offline_packages_keep_the_bash_order():
    assert " ".join(ri.offline_packages(ri.load())) == BASH_PACKAGES


def test_makefile_fortio_pin_is_the_spec_s():
    pin = re.search(r"^FORTIO_VERSION\s*:?=\s*(\S+)", (REPO / "Makefile").read_text(), re.M)[1]
    assert pin == ri.load()["tools"]["fortio"]["version"]


def test_the_runner_config_is_the_bash_one():
    assert ir.runner_config(ri.load(), "abc1234") == [
        "--config.env", "PATH=/opt/edgebench/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "--config.env", "EDGEBENCH_COMMIT=abc1234", "--config.env", "PYTHONUNBUFFERED=1",
        "--config.env", "HOME=/home/edgebench", "--config.env", "LANG=C.UTF-8", "--config.workingdir",
        "/home/edgebench", "--config.user", "10001:10001", "--config.entrypoint", "edgebench", "--config.cmd=--help"]


def test_a_broken_spec_is_one_message(tmp_path):
    bad = tmp_path / "image.toml"
    bad.write_text(ri.SPEC.read_text().replace('tools = ["fortio",', 'tools = ["fortoi",'))
    with pytest.raises(ck.Fail, match="tool fortoi is not in"):
        ri.load(bad)
    bad.write_text("packages = [\n")
    with pytest.raises(ck.Fail, match=str(bad)):
        ri.load(bad)


def test_host_extra_only_what_this_host_built(tmp_path):
    (tmp_path / "bin").mkdir()
    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.write_text("#!/bin/sh\n")
    kubectl.chmod(0o755)
    assert ri.host_extra(ri.load(), str(tmp_path), str(tmp_path / "tools")) == [str(kubectl)]


# ------------------------------------------------------------------------------------------------ pure helpers
def test_expand_names():
    assert images.expand_names(["events", "nats", "core"]) == ["nats", "argo-events", *images.CORE_NAMES]
    assert images.expand_names(["all"]) == list(images.NAMES)
    with pytest.raises(ck.Fail) as e:
        images.expand_names(["runner", "nope"])
    assert e.value.code == 2 and "unknown image nope" in str(e.value)


def test_conf_reads_the_environment_and_uname_names():
    c = il.Conf.from_env({"HOME": "/h", "ARCH": "aarch64"}, host="amd64")
    assert (c.arch, c.foreign, c.tools_dir, c.tar_of("runner")) == (
        "arm64", True, "/h/.local/share/edgebench/tools/linux-arm64",
        "/h/.local/share/edgebench/e2e-argo/images/runner-arm64.tar")
    assert images.arch_names(c) == ("runner",)
    assert images.ref_of(c, "nats") == "edgebench.local/nats:2.10.29"
    with pytest.raises(ck.Fail, match="ARCH=mips is not supported"):
        il.Conf.from_env({"HOME": "/h", "ARCH": "mips"}, host="amd64").check_arch()


def test_chroot_argv_and_ldd_libs():
    assert il.chroot_argv("/r", ["apt-get", "clean"], ["A=1"]) == [
        "chroot", "/r", "/usr/bin/env", "-i", f"PATH={il.CHROOT_PATH}", "HOME=/root", "LANG=C.UTF-8",
        "DEBIAN_FRONTEND=noninteractive", "A=1", "apt-get", "clean"]
    ldd = ("\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n"
           "\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n")
    assert il.ldd_libs(ldd) == ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]


def test_build_one_up_to_date_builds_nothing(tmp_path, monkeypatch, capsys):
    c = il.Conf.from_env({"HOME": str(tmp_path), "ARCH": "amd64"}, host="amd64")
    im = images.Images(c)
    monkeypatch.setattr(im.inputs, "of", lambda name: f"arch amd64\n{name} 1")
    monkeypatch.setattr(im, "recipe", lambda *a: pytest.fail("rebuilt a cached image"))
    tar = Path(c.tar_of("minio"))
    tar.parent.mkdir(parents=True)
    tar.write_bytes(b"x")
    Path(f"{tar}.inputs").write_text(f"key {ik.image_key('minio', 'arch amd64' + chr(10) + 'minio 1')}\n")
    assert im.build_one("minio")
    assert "minio: up to date" in capsys.readouterr().out


def test_the_runner_recipe_gets_the_venv_stage_s_inputs(tmp_path, monkeypatch):
    im = images.Images(il.Conf.from_env({"HOME": str(tmp_path), "ARCH": "amd64"}, host="amd64"))
    got = []
    monkeypatch.setattr(im.recipes, "runner", lambda w, venv, spec: got.append(venv))
    im.recipe("runner", "/w", "arch amd64\nbase b\nsources s\nfortio f\nvenv v\ncommit c")
    assert got == ["base b\nsources s\nfortio f"]


# ------------------------------------------------------------------------------------------------ the command line
def _images_sh(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "ARCH" and not k.startswith("EDGEBENCH_")}
    full.update(HOME=str(tmp_path / "home"), EDGEBENCH_E2E=str(tmp_path / "e2e"), PY=sys.executable, **env)
    return subprocess.run(["bash", str(E2E_SCRIPTS / "images.sh"), *args], capture_output=True, text=True, env=full,
                          timeout=60)


def test_every_command_has_its_help(tmp_path):
    top = _images_sh(tmp_path, "--help")
    assert top.returncode == 0 and top.stdout.startswith("Usage: scripts/e2e-argo/images.sh [--arch ARCH]")
    for c in ("build", "list", "prove-arm64", "dockerfile"):
        assert f"images.sh {c}" in top.stdout
        one = _images_sh(tmp_path, c, "--help")
        assert one.returncode == 0 and one.stdout.startswith(f"usage: images.sh {c}"), one.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("args,env,message", [
    (["nope"], {}, "e2e-argo: error: unknown command 'nope'"),
    (["list", "extra"], {}, "e2e-argo: error: list takes no arguments"),
    (["build", "nope"], {}, "e2e-argo: error: unknown image nope"),
    (["list"], {"ARCH": "mips"}, "e2e-argo: error: ARCH=mips is not supported (architectures: amd64 arm64)"),
    (["--arch", "riscv64", "build"], {}, "e2e-argo: error: ARCH=riscv64 is not supported"),
    (["--arch"], {}, "e2e-argo: error: --arch needs an architecture"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, env, message):
    p = _images_sh(tmp_path, *args, **env)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith(message) and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not any(tmp_path.iterdir())


def test_no_command_prints_the_usage_and_exits_2(tmp_path):
    p = _images_sh(tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("Usage:")


def test_list_of_an_empty_cache(tmp_path):
    p = _images_sh(tmp_path, "--arch=arm64", "list")
    rows = {line.split()[0]: line.split()[2] for line in p.stdout.splitlines()[1:]}
    assert p.returncode == 0 and rows == {n: "missing" if n == "runner" else "no-recipe" for n in images.NAMES}
    assert not (tmp_path / "e2e").exists()


def test_e2e_argo_scripts_stay_short():
    for sh in E2E_SCRIPTS.glob("*.sh"):
        assert len(sh.read_text().splitlines()) < 100, sh.name
    assert len((E2E_SCRIPTS / "images.sh").read_text().splitlines()) < 10
    for py in E2E_SCRIPTS.glob("*.py"):
        assert len(py.read_text().splitlines()) <= 600, py.name


# ------------------------------------------------------------------------------------------------ build.sh

UPSTREAM_K8S_MOD = """module k8s.io/kubernetes

go 1.24.0

require (
\tgithub.com/x/y v1.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
)
"""
UPSTREAM_ARGO_MOD = "module github.com/argoproj/argo-workflows/v3\n\nreplace a.b/c => a.b/c v1.2.3\n\nrequire x v1\n"


def test_wrapper_go_mods_are_the_bash_ones():
    k8s = subprocess.run(
        ["bash", "-c", 'K8S_VERSION=v1.33.4; staging=v0.${K8S_VERSION#v1.}; { echo "module edgebench.local/e2e/k8s"; '
         'echo; echo "go 1.24.0"; echo; echo "require k8s.io/kubernetes $K8S_VERSION"; echo; '
         "awk -v v=\"$staging\" '/=> \\.\\/staging\\/src\\//{print \"replace \" $1 \" => \" $1 \" \" v}'; }"],
        input=UPSTREAM_K8S_MOD, capture_output=True, text=True, check=True).stdout
    assert binaries.k8s_gomod("v1.33.4", UPSTREAM_K8S_MOD) == k8s
    assert "replace k8s.io/api => k8s.io/api v0.33.4\n" in k8s
    argo = subprocess.run(
        ["bash", "-c", 'v=v3.7.9; { echo "module edgebench.local/e2e/argo"; echo; echo "go 1.24.10"; echo; '
         'echo "require github.com/argoproj/argo-workflows/v3 $v"; echo; awk \'/^replace /{print}\'; '
         'echo "replace github.com/argoproj/argo-workflows/v3 => ./argo-workflows"; }'],
        input=UPSTREAM_ARGO_MOD, capture_output=True, text=True, check=True).stdout
    assert binaries.argo_gomod("v3.7.9", UPSTREAM_ARGO_MOD) == argo


def _build_sh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("EDGEBENCH_")}
    full.update(HOME=str(tmp_path / "home"), EDGEBENCH_E2E=str(tmp_path / "e2e"), PY=sys.executable)
    return subprocess.run(["bash", str(E2E_SCRIPTS / "build.sh"), *args], capture_output=True, text=True, env=full,
                          timeout=60)


def test_build_sh_print_reads_the_stamps_and_builds_nothing(tmp_path):
    (tmp_path / "e2e" / "bin").mkdir(parents=True)
    (tmp_path / "e2e" / "bin" / ".kubectl-v1.33.4").touch()
    (tmp_path / "e2e" / "bin" / ".nats-server-v2.10.29").touch()
    p = _build_sh(tmp_path, "--print")
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert len(lines) == 11 and "kubectl v1.33.4 cached" in lines and "nats-server v2.10.29 cached" in lines
    assert "argoexec v3.7.9 missing" in lines and "kube-apiserver v1.33.4 missing" in lines
    assert sorted(os.listdir(tmp_path / "e2e" / "bin")) == [".kubectl-v1.33.4", ".nats-server-v2.10.29"]


def test_build_sh_help_and_bad_input(tmp_path):
    top = _build_sh(tmp_path, "--help")
    assert top.returncode == 0 and all(f"build.sh {c}" in top.stdout for c in ("[build]", "--k8s", "--print"))
    bad = _build_sh(tmp_path, "nope")
    assert bad.returncode == 2 and bad.stderr.startswith("e2e-argo: error: unknown command 'nope'")
    assert len(bad.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())


def test_cached_stamps_on_this_machine_keep_their_keys():
    """Every stamp images.sh left in the cache (bash-built ones included) recomputes to the key it records."""
    cache = Path(os.environ.get("EDGEBENCH_E2E") or Path.home() / ".local/share/edgebench/e2e-argo") / "images"
    stamps = [s for s in sorted(cache.glob("*.tar.inputs")) if s.name.rsplit("-", 1)[0] in ik.IMAGE_FNS]
    if not stamps:
        pytest.skip(f"no cached image stamps in {cache}")
    for s in stamps:
        key, inputs = s.read_text().rstrip("\n").split("\n", 1)
        assert key == f"key {ik.image_key(s.name.rsplit('-', 1)[0], inputs)}", s
