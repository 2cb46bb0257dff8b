"""The local lab's artifact source for arm64 (a Raspberry Pi lab), built on this amd64 machine.

Offline (always): build.sh names the cross-compiled Kubernetes binaries a foreign architecture needs, mirror.sh
refuses an architecture it does not know with one message. Opt-in where `make lab-mirror-arm64` has run (about an
hour cold, too long for CI): every arm64 artifact the index lists runs here under qemu (`mirror.sh prove`), and the
index says arm64 for every artifact a kubeadm cell of each CNI needs; otherwise it skips naming what is missing.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from edgebench.substrates.clusters.install import artifacts

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "scripts" / "lab-local"
LABC = Path(os.environ.get("EDGEBENCH_LAB_CACHE", Path.home() / ".local/share/edgebench/lab"))
MIRROR = Path(os.environ.get("EDGEBENCH_MIRROR", LABC / "mirror"))
CNIS = ("flannel", "kube-router", "cilium")
FOREIGN_K8S = ["kubelet", "kubectl", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ARCH"}
    env.update(extra)
    return env


def test_build_lists_the_cross_compiled_kubernetes_binaries_of_a_foreign_arch(tmp_path):
    run = subprocess.run(["bash", str(LAB / "build.sh"), "--print"], capture_output=True, text=True, timeout=60,
                         env=_env(ARCH="arm64", EDGEBENCH_LAB_CACHE=str(tmp_path)))
    assert run.returncode == 0, run.stderr
    rows = {line.split()[1]: line.split() for line in run.stdout.splitlines()}
    for name in [*FOREIGN_K8S, "kubeadm", "etcd", "coredns", "flanneld", "kube-router", "fortio"]:
        assert rows[name][0] == "arm64" and rows[name][-1] == "missing", run.stdout
    host = subprocess.run(["bash", str(LAB / "build.sh"), "--print"], capture_output=True, text=True, timeout=60,
                          env=_env(ARCH="amd64", EDGEBENCH_LAB_CACHE=str(tmp_path))).stdout
    if subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip() == "amd64":
        # this machine's own Kubernetes binaries come from scripts/e2e-argo/build.sh, not from here
        assert "kube-apiserver" not in host and "kubeadm" in host


def test_mirror_refuses_an_unknown_architecture_with_one_message(tmp_path):
    run = subprocess.run(["bash", str(LAB / "mirror.sh"), "prove"], capture_output=True, text=True, timeout=60,
                         env=_env(ARCH="sparc", EDGEBENCH_LAB_CACHE=str(tmp_path)))
    assert run.returncode != 0
    assert run.stderr.strip().splitlines() == [
        "lab-local: mirror: error: ARCH=sparc is not supported (architectures: amd64 arm64)"]
    assert not any(tmp_path.iterdir())  # nothing was made


def _not_built() -> list[str]:
    index = MIRROR / "index.yaml"
    if not index.exists():
        return [f"{index} (make lab-mirror-arm64)"]
    doc = yaml.safe_load(index.read_text())
    need = sorted({n for cni in CNIS for n in artifacts.needed("kubeadm", cni)})
    return [f"{n} for arm64" for n in need if "arm64" not in (doc["artifacts"].get(n) or {}).get("arches", {})]


def _reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (binfmt_misc, chroot)"
    missing = _not_built()
    return ("not built (make lab-mirror-arm64, about an hour cold): " + ", ".join(missing)) if missing else None


@pytest.mark.skipif(_reason() is not None, reason=str(_reason()))
def test_every_arm64_artifact_runs_here_under_qemu():
    run = subprocess.run(["bash", str(LAB / "mirror.sh"), "prove"], capture_output=True, text=True, timeout=1800,
                         env=_env(ARCH="arm64", PY=str(REPO / ".venv" / "bin" / "python")))
    assert run.returncode == 0, run.stderr[-3000:]
    proof = (MIRROR / "proof-arm64.txt").read_text().splitlines()
    assert proof and all(line.startswith("ok ") for line in proof), proof
    names = {line.split(":")[0][3:] for line in proof}
    assert {"kubeadm", "kubelet", "kube-apiserver", "flanneld", "kube-router", "cilium-agent", "cilium-agent-clang",
            "image cilium", "image runner", "image pause"} <= names
    assert any("eBPF" in line for line in proof if line.startswith("ok cilium-agent-clang"))
