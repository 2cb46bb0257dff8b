"""kind offline (issue 44): the kind substrate with an artifact source (the node image built here, the CNI's and
the workloads' images loaded from the source), the management cluster's scripts and config, the tiny sweep's one
definition. Offline and quick: no engine, no cluster (make e2e-kind runs them for real)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from edgebench.errors import SpecError
from edgebench.substrates.clusters.install import artifacts
from edgebench.substrates.clusters.install import kind as kind_mod
from edgebench.plan.matrix import distributions
from edgebench.substrates.clusters.provider import ClusterProvider
from test_clusters import SAMPLE_FLANNEL, FakeKubectl
from test_lab_local import fake_mirror

REPO = Path(__file__).resolve().parents[2]
KIND = REPO / "scripts" / "kind"


def file_source(tmp_path: Path) -> artifacts.Source:
    root = fake_mirror(tmp_path / "mirror")
    return artifacts.Source(f"file://{root}", yaml.safe_load((root / "index.yaml").read_text()))


# ------------------------------------------------------------------------------------------ fetch_archive
def test_fetch_archive_checks_and_caches(tmp_path):
    src = file_source(tmp_path)
    cache = tmp_path / "cache"
    got = artifacts.fetch_archive(src, "flannel", "amd64", cache)
    assert got.read_text() == "flannel amd64\n"
    assert got.name.startswith(hashlib.sha256(b"flannel amd64\n").hexdigest())
    # cached by checksum: the source's file is not read again
    (tmp_path / "mirror" / artifacts.spec()["artifacts"]["flannel"]["path"].replace("{arch}", "amd64")).unlink()
    assert artifacts.fetch_archive(src, "flannel", "amd64", cache) == got


def test_fetch_archive_refuses_a_bad_checksum_and_leaves_nothing(tmp_path):
    src = file_source(tmp_path)
    src.index["artifacts"]["runner"]["arches"]["amd64"]["sha256"] = "0" * 64
    cache = tmp_path / "cache"
    with pytest.raises(SpecError, match="runner: checksum mismatch"):
        artifacts.fetch_archive(src, "runner", "amd64", cache)
    assert not any(cache.iterdir())
    with pytest.raises(SpecError, match="has no runner for arm64"):
        artifacts.fetch_archive(src, "runner", "arm64", cache)


# ------------------------------------------------------------------------------------------ the provider
def test_kind_cell_offline_loads_the_source_images_into_the_local_node_image(tmp_path, monkeypatch):
    monkeypatch.delenv(kind_mod.ENV_NODE_IMAGE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    k = FakeKubectl()
    p = ClusterProvider("kind", "kind", "flannel", "vxlan", tmp_path / "w", local=k, cell_id="c-kindoff",
                        fetch=lambda url: SAMPLE_FLANNEL, artifacts=file_source(tmp_path))
    p.provision()
    cfg = yaml.safe_load((tmp_path / "w" / "kind-config.yaml").read_text())
    assert {n["image"] for n in cfg["nodes"]} == {distributions()["kind"]["node_image_local"]}
    loads = [c for c in k.calls if c[:3] == ["kind", "load", "image-archive"]]
    # the CNI's images and the workloads', each into the cell's cluster, from the cache
    assert [Path(c[3]).name.split(".", 1)[1] for c in loads] == ["flannel", "flannel-cni-plugin", "runner", "http"]
    assert all(c[4:] == ["--name", "eb-kindoff"] for c in loads)
    k.calls.clear()
    k.nodes = list(p.inventory.nodes)
    boot = "6f1c0e2a-0000-4000-8000-00000000000b"
    p.local = lambda argv, input=None, check=True: (boot + "\n" if "kernel/random/boot_id" in " ".join(argv)
                                                    else k(argv, input=input, check=check))
    state = p.install_cni()
    # no CNI plugins from GitHub: the node image carries the mirror's; the one docker exec reads the kernel's boot id
    execs = [c for c in k.calls if c[:2] == ["docker", "exec"]]
    assert execs == [] or all("boot_id" in " ".join(c) for c in execs)
    assert state["cluster"]["shared_kernel"] is True and state["cluster"]["nodes"] == 3
    assert state["cluster"]["kernel_boot_id"] == boot  # from the control-plane node: kind beside a lab of one boot
    assert state["cluster"]["artifact_source"].startswith("file://")


def test_kind_host_cell_offline_needs_only_the_workload_images():
    assert artifacts.images_for("kind", "host") == ["runner", "http"]


def test_node_image_choice(monkeypatch):
    d = distributions()["kind"]
    monkeypatch.delenv(kind_mod.ENV_NODE_IMAGE, raising=False)
    assert kind_mod.node_image() == d["node_image"] and kind_mod.node_image(offline=True) == d["node_image_local"]
    monkeypatch.setenv(kind_mod.ENV_NODE_IMAGE, "example.test/node:v1")
    assert kind_mod.node_image() == kind_mod.node_image(offline=True) == "example.test/node:v1"


# ------------------------------------------------------------------------------------------ the management cluster
def test_local_management_cluster_config_uses_the_image_built_here():
    cfg = yaml.safe_load((REPO / "kustomize" / "overlays" / "kind" / "kind-cluster.local.yaml").read_text())
    assert cfg["kind"] == "Cluster" and cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert {n["image"] for n in cfg["nodes"]} == {distributions()["kind"]["node_image_local"]}
    assert [n["role"] for n in cfg["nodes"]].count("control-plane") == 1
    # the image's default CNI is flannel: kind must apply it (a disabled default CNI leaves the nodes NotReady)
    assert not cfg.get("networking", {}).get("disableDefaultCNI")
    node_image_py = (KIND / "node_image.py").read_text()
    assert f'K8S_VERSION = "{cfg["nodes"][0]["image"].split(":")[-1]}"' in node_image_py  # the same Kubernetes version


@pytest.mark.parametrize("args, rc", [([], 2), (["bogus"], 2), (["--help"], 0)])
def test_mgmt_usage(args, rc):
    p = subprocess.run(["bash", str(KIND / "mgmt.sh"), *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == rc
    text = p.stdout + p.stderr
    if args == ["bogus"]:  # one line: the error and the commands there are
        assert text.startswith("mgmt: error: unknown command 'bogus' (commands: up, down, ") and text.count("\n") == 1
        assert all(f" {c}," in text for c in ("up", "down", "e2e", "lab"))
    else:
        for word in ("mgmt.sh up", "mgmt.sh down", "mgmt.sh e2e", "mgmt.sh lab"):
            assert word in text
    assert "set -euo" not in text


@pytest.mark.skipif(os.geteuid() != 0, reason="dockerd.sh install needs root")
def test_dockerd_install_puts_the_wrapper_and_returns(tmp_path):
    # a stub dockerd on PATH: install then only puts runc-capdrop in place (it once called itself forever)
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "dockerd").write_text("#!/bin/sh\nexit 0\n")
    (stub / "dockerd").chmod(0o755)
    wrapper = tmp_path / "lib" / "runc-capdrop"
    env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}", "EDGEBENCH_DOCKER_WRAPPER": str(wrapper)}
    sys.path.insert(0, str(KIND))
    import kindlib

    built = kindlib.capdrop_bin()   # the Go build (once per source) is not what the time limit is about
    t0 = time.monotonic()
    p = subprocess.run(["bash", str(KIND / "dockerd.sh"), "install"], env=env, capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    assert time.monotonic() - t0 < 10
    assert wrapper.read_bytes() == built.read_bytes() and os.access(wrapper, os.X_OK)


# ------------------------------------------------------------------------------------------ the tiny sweep
def test_tiny_sweep_has_one_definition():
    import importlib.util

    spec = importlib.util.spec_from_file_location("e2e", REPO / "scripts" / "e2e-argo" / "e2e.py")
    e2e = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(e2e)
    params = yaml.safe_load((REPO / "workflows" / "tiny.params.yaml").read_text())
    assert e2e.TINY == {k: str(v) for k, v in params.items()}
    known = {p["name"] for p in yaml.safe_load((REPO / "workflows" / "sweep.yaml").read_text())
             ["spec"]["arguments"]["parameters"]}
    assert set(params) <= known, set(params) - known
    assert params["substrate"] == "local"


# ------------------------------------------------------------------------------------------ the warehouse
def test_kind_is_a_real_lab_of_its_own_in_the_emulation_marts(tmp_path):
    """Testbed runs against kind runs and a kubeadm lab's: kind is a real_lab of its own, never pooled with the lab."""
    import duckdb

    import fixture_manifests as fx

    # per substrate: the host's throughput and flannel's share of it
    flannel = ("flannel", "vxlan", "bridge-vxlan")
    db = fx.substrate_iperf3_warehouse(tmp_path, [("local", "none", 1000.0, 0.80, flannel),
                                                  ("kind", "kind", 900.0, 0.70, flannel),
                                                  ("ssh", "kubeadm", 800.0, 0.50, flannel)])
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select real_lab, cni, testbed_overhead_pct, real_overhead_pct "
                           "from cmp_emulation_overhead where workload = 'iperf3' order by real_lab").fetchall()
    by_lab = {lab: (cni, t, r) for lab, cni, t, r in rows}
    assert set(by_lab) == {"kind", "unnamed"}, rows
    for lab, want_real in (("kind", 30.0), ("unnamed", 50.0)):  # the runs' +rep offsets move them a hair
        cni, t, r = by_lab[lab]
        assert cni == "flannel" and abs(t - 20.0) < 0.5 and abs(r - want_real) < 0.5, by_lab


def test_kind_cell_offline_without_the_node_image_stops_before_anything(tmp_path, monkeypatch):
    monkeypatch.delenv(kind_mod.ENV_NODE_IMAGE, raising=False)
    k = FakeKubectl(fail_on="docker image inspect")
    p = ClusterProvider("kind", "kind", "flannel", "vxlan", tmp_path / "w", local=k, cell_id="c-kindoff",
                        fetch=lambda url: SAMPLE_FLANNEL, artifacts=file_source(tmp_path))
    with pytest.raises(SpecError, match="kind node image edgebench.local/kind-node:v1.33.4 is not in the Docker"):
        p.provision()
    assert [c[:3] for c in k.calls] == [["docker", "image", "inspect"]]  # no kind command ran


def test_sweep_on_kind_without_the_node_image_exits_2_before_anything(tmp_path):
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "docker").write_text('#!/bin/sh\necho "Error: No such image: $6" >&2\nexit 1\n')
    (stub / "docker").chmod(0o755)
    (stub / "kind").write_text(f"#!/bin/sh\ntouch {tmp_path}/kind-ran\n")
    (stub / "kind").chmod(0o755)
    env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}", "EDGEBENCH_ARTIFACT_SOURCE": "http://127.0.0.1:9/",
           "EDGEBENCH_HOME": str(tmp_path / "home"), "EDGEBENCH_S3_ENDPOINT": "127.0.0.1:9"}
    exe = Path(os.sys.executable).parent / "edgebench"
    p = subprocess.run([str(exe), "sweep", str(REPO / "workflows" / "sweep.yaml"), "-p", "substrate=kind",
                        "-p", "distribution=kind", "-p", 'cnis=["flannel:vxlan"]', "-p", 'workloads=["iperf3:tcp"]',
                        "-p", "repetitions=1", "-p", "sweep-id=kind-no-image"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "kind node image edgebench.local/kind-node:v1.33.4 is not in the Docker engine" in p.stderr
    assert not (tmp_path / "kind-ran").exists()


# ------------------------------------------------------------------------------------------ kindnet, a row of its own
def test_kindnet_is_kinds_own_cni_and_offline_it_is_recorded_unsupported_with_the_refusal(tmp_path, monkeypatch):
    from edgebench.plan.matrix import compatibility
    from edgebench.substrates.base import Unsupported

    monkeypatch.delenv(kind_mod.ENV_NODE_IMAGE, raising=False)
    # upstream's node image carries it: kind's default CNI stays on, nothing is installed over it
    up = ClusterProvider("kind", "kind", "kindnet", "ptp", tmp_path / "up", local=FakeKubectl(), cell_id="c-kindnet")
    assert up.cni_plan().via == "builtin" and up.kind_config()["networking"]["disableDefaultCNI"] is False
    flannel = ClusterProvider("kind", "kind", "flannel", "vxlan", tmp_path / "fl", local=FakeKubectl(), cell_id="c-fl")
    assert flannel.kind_config()["networking"]["disableDefaultCNI"] is True
    # a distribution other than kind: impossible, with the reason
    assert "kind's own CNI" in compatibility("kubeadm", "kindnet", "ptp")
    # offline (the node image built here has no kindnetd): no cluster is created, the runs say why
    k = FakeKubectl()
    p = ClusterProvider("kind", "kind", "kindnet", "ptp", tmp_path / "w", local=k, cell_id="c-kindnet",
                        fetch=lambda url: "", artifacts=file_source(tmp_path))
    p.provision()
    assert not [c for c in k.calls if c[:2] == ["kind", "create"]]
    with pytest.raises(Unsupported) as e:
        p.install_cni()
    assert "kindest/kindnetd" in str(e.value) and "403" in str(e.value)


def test_kind_runs_sample_the_machine_s_cpu_for_the_headroom_gate(tmp_path, monkeypatch):
    from edgebench.substrates.base import Unsupported

    p = ClusterProvider("kind", "kind", "flannel", "vxlan", tmp_path / "w", local=FakeKubectl(), cell_id="c-kcpu")
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    s = p.resource_sampler(interval_s=0.1, idle=[{"t_s": 0.0, "phase": "idle", "component": "system",
                                                  "name": "system", "cpu_pct": 1.0, "rss_mb": 1.0, "cpus": 2}])
    s.start()
    time.sleep(0.45)
    rows = s.stop()
    run = [r for r in rows if r["phase"] == "run"]
    assert run and all(r["component"] == "system" and r["cpus"] == os.cpu_count() for r in run)
    assert all(0.0 <= r["cpu_pct"] <= 100.0 * os.cpu_count() for r in run)
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.9:2376")
    with pytest.raises(Unsupported, match="remote Docker engine"):
        p.resource_sampler()


@pytest.mark.skipif(os.geteuid() != 0, reason="mgmt.sh up/down need root")
def test_a_second_up_or_down_stops_with_the_holder_instead_of_touching_the_first(tmp_path):
    # the first `up` holds the lock (here: a process of the test); a second `down` must not stop its engine
    # its own process group: flock(1) hands the lock to its `sleep`, which must go with it
    holder = subprocess.Popen(["flock", "/run/edgebench-kind-mgmt.lock", "sleep", "30"], start_new_session=True)
    try:
        time.sleep(0.5)
        state = Path("/var/lib/edgebench-kind-mgmt")
        before = state.exists()
        for cmd in ("down", "up"):
            p = subprocess.run(["bash", str(KIND / "mgmt.sh"), cmd], capture_output=True, text=True, timeout=30)
            assert p.returncode == 2, p.stderr
            assert "another mgmt.sh up/down runs" in p.stderr and len(p.stderr.strip().splitlines()) == 1
        assert state.exists() == before
    finally:
        os.killpg(holder.pid, 9)
        holder.wait()
