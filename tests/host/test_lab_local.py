"""The local lab's offline parts (make lab-local): the artifact source (index, per-architecture check, air-gapped
kubeadm steps, mirrored manifests), the preflight before anything is installed, the lab's service supervisor,
the remote resource sampler's arithmetic, and the lab's nodes themselves (namespaces + sshd; seconds, no
Kubernetes). The live sweep on the lab is tests/live/test_lab_local_live.py (opt-in)."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from edgebench.errors import SpecError
from edgebench.substrates.base import Unsupported
from edgebench.substrates.clusters.install import artifacts, distributions, preflight
from edgebench.substrates.clusters import inventory
from edgebench.substrates.clusters import resources as remote
from edgebench.substrates.clusters.install.cni import render as render_cni, ClusterParams
from edgebench.substrates.clusters.install.cni import version_readback as cni_version_readback
from edgebench.substrates.clusters.provider import ClusterProvider
from edgebench.substrates.clusters.transport import FakeTransport

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "scripts" / "lab-local"
INV = inventory.parse({"target": "lab-local", "nodes": [
    {"name": "lab-cp", "address": "10.77.0.11", "arch": "amd64", "role": "server", "user": "edgebench", "port": 22},
    {"name": "lab-w1", "address": "10.77.0.12", "arch": "amd64", "role": "agent", "user": "edgebench", "port": 22},
    {"name": "pi-w2", "address": "10.77.0.13", "arch": "arm64", "role": "agent", "user": "edgebench", "port": 22},
]}, "test")


def fake_mirror(root: Path, arches=("amd64",)) -> Path:
    """Every catalog artifact as a small file, for the given architectures, and its index."""
    for name, a in artifacts.spec()["artifacts"].items():
        for arch in arches:
            p = root / a["path"].replace("{arch}", arch)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"{name} {arch}\n")
    artifacts.write_index(root)
    return root


def source(root: Path) -> artifacts.Source:
    return artifacts.Source("http://mirror.test:8089", yaml.safe_load((root / "index.yaml").read_text()))


def test_index_lists_architectures_and_checksums(tmp_path):
    idx = yaml.safe_load(fake_mirror(tmp_path).joinpath("index.yaml").read_text())
    assert idx["schema"] == artifacts.SCHEMA and idx["kubernetes_version"] == "v1.33.4"
    kubeadm = idx["artifacts"]["kubeadm"]
    assert set(kubeadm["arches"]) == {"amd64"}
    import hashlib
    assert kubeadm["arches"]["amd64"]["sha256"] == hashlib.sha256(b"kubeadm amd64\n").hexdigest()
    # an arch-independent file (no {arch} in its path) counts for every architecture
    assert set(idx["artifacts"]["kubelet-unit"]["arches"]) == {"amd64", "arm64"}
    assert idx["artifacts"]["kube-router"]["upstream_version"] == "v2.11.1"


def test_missing_architecture_is_one_message_before_anything(tmp_path):
    src = source(fake_mirror(tmp_path))
    with pytest.raises(SpecError) as e:
        artifacts.check(src, INV, "kubeadm", "flannel")
    msg = str(e.value)
    assert "node pi-w2 (arm64)" in msg and "kubeadm for arm64" in msg and "flannel for arm64" in msg
    assert "lab-cp" not in msg and "nothing was installed" in msg
    two = inventory.parse({"target": "lab-local", "nodes": [
        {"name": n.name, "address": n.address, "arch": "amd64", "role": n.role, "user": n.user} for n in INV.nodes]}, "t")
    artifacts.check(src, two, "kubeadm", "flannel")  # every node amd64: nothing missing


def test_unreadable_source_and_wrong_schema(tmp_path):
    with pytest.raises(SpecError, match="http"):
        artifacts.open_source(str(tmp_path))
    with pytest.raises(SpecError, match="cannot read"):
        artifacts.open_source("http://127.0.0.1:9/")
    with pytest.raises(SpecError, match="not an edgebench artifact index"):
        artifacts.open_source("http://x/", read=lambda url: "schema: other\n")


def test_needs_and_unavailable_cnis():
    assert "flannel-manifest" in artifacts.needed("kubeadm", "flannel")
    assert "flannel" in artifacts.needed("kubeadm", "host")  # the baseline's nodes need a CNI to be Ready
    assert {"runner", "http"} <= set(artifacts.needed("kubeadm", "kube-router"))
    with pytest.raises(SpecError, match="no install path for distribution 'k3s'"):
        artifacts.needed("k3s", "flannel")
    assert "403" in artifacts.unavailable("calico") and artifacts.unavailable("flannel") is None
    # cilium comes from the source (scripts/lab-local/cilium.sh): its two images and its chart repository
    assert artifacts.unavailable("cilium") is None
    assert {"cilium", "cilium-operator", "cilium-chart"} <= set(artifacts.needed("kubeadm", "cilium"))
    assert {"cilium", "cilium-operator"} <= set(artifacts.images_for("kubeadm", "cilium"))


def test_index_covers_cilium_images_and_its_arch_independent_chart(tmp_path):
    idx = yaml.safe_load(artifacts.write_index(fake_mirror(tmp_path)).read_text())["artifacts"]
    assert idx["cilium"]["kind"] == "image" and idx["cilium"]["ref"] == "quay.io/cilium/cilium:v1.18.0"
    assert idx["cilium-operator"]["ref"] == "quay.io/cilium/operator-generic:v1.18.0"
    assert set(idx["cilium"]["arches"]) == {"amd64"}  # built for this machine only
    assert idx["cilium-chart"]["kind"] == "chart" and set(idx["cilium-chart"]["arches"]) == {"amd64", "arm64"}
    assert idx["cilium-chart"]["arches"]["amd64"]["path"] == "charts/cilium/cilium-1.18.0.tgz"
    with pytest.raises(SpecError, match="cilium for arm64, cilium-operator for arm64, runner") as err:
        artifacts.check(source(tmp_path), INV, "kubeadm", "cilium")
    assert "cilium-chart" not in str(err.value)


def test_cilium_helm_install_takes_the_mirrors_chart_repository_and_no_digest(tmp_path):
    src = source(fake_mirror(tmp_path))
    p = ClusterParams("kubeadm", "10.77.0.11", 6443, "10.77.0.11", "/k", "10.244.0.0/16", "10.96.0.0/12")
    upstream = render_cni("kubeadm", "cilium", "vxlan", p)
    assert ["repo", "add", "cilium", "https://helm.cilium.io/"] == upstream.commands[0][3:7]
    plan = artifacts.mirror_helm(render_cni("kubeadm", "cilium", "vxlan", p), src)
    assert plan.commands[0][3:7] == ["repo", "add", "cilium", "http://mirror.test:8089/charts/cilium"]
    assert not any("helm.cilium.io" in a for argv in plan.commands for a in argv)
    install = next(argv for argv in plan.commands if "upgrade" in argv)
    assert install[install.index("upgrade") + 3:install.index("upgrade") + 6] == ["cilium/cilium", "--version", "1.18.0"]
    values = yaml.safe_load(plan.files["cni-values.yaml"])
    assert values["image"] == {"useDigest": False, "pullPolicy": "IfNotPresent"}
    assert values["operator"] == {"replicas": 1, "image": {"useDigest": False, "pullPolicy": "IfNotPresent"}}
    assert values["envoy"] == {"enabled": False} and values["l7Proxy"] is False  # the source has no Envoy image
    caps = values["securityContext"]["capabilities"]  # the lab's machine has no CAP_SYS_RESOURCE to give
    assert "SYS_RESOURCE" not in caps["ciliumAgent"] + caps["cleanCiliumState"] and "NET_ADMIN" in caps["ciliumAgent"]
    # the catalog's own values stay: tunnel mode, kube-proxy replacement, the cluster's pod CIDR
    assert values["routingMode"] == "tunnel" and values["tunnelProtocol"] == "vxlan"
    assert values["kubeProxyReplacement"] is True and plan.dist_settings["skip_kube_proxy"] is True
    assert values["ipam"]["operator"]["clusterPoolIPv4PodCIDRList"] == ["10.244.0.0/16"]
    assert cni_version_readback(plan, p)[3:5] == ["list", "--namespace"]  # the release's chart version is read back
    native = yaml.safe_load(artifacts.mirror_helm(render_cni("kubeadm", "cilium", "native", p), src).files["cni-values.yaml"])
    assert native["routingMode"] == "native" and native["image"]["useDigest"] is False


def test_provider_installs_cilium_from_the_mirror(tmp_path):
    ran, values = [], {}

    def local(argv, check=True, input=None):
        ran.append(list(argv))
        if "upgrade" in argv:  # the values file the install reads, then stop (the teardown removes the work dir)
            values.update(yaml.safe_load(Path(argv[argv.index("-f") + 1]).read_text()))
            raise RuntimeError("stop here")
        return ""
    m = fake_mirror(tmp_path / "m")
    amd64 = inventory.parse({"target": "lab-local", "nodes": [
        {"name": "lab-cp", "address": "10.77.0.11", "arch": "amd64", "role": "server", "user": "edgebench"},
        {"name": "lab-w1", "address": "10.77.0.12", "arch": "amd64", "role": "agent", "user": "edgebench"}]}, "test")
    p = ClusterProvider("ssh", "kubeadm", "cilium", "vxlan", tmp_path / "w", inventory=amd64,
                        transport=FakeTransport(), local=local, fetch=lambda url: pytest.fail("nothing is fetched"),
                        cell_id="c-test", artifacts=source(m))
    (tmp_path / "w").mkdir()
    with pytest.raises(RuntimeError, match="stop here"):
        p.install_cni()
    assert "http://mirror.test:8089/charts/cilium" in ran[0]
    assert values["image"]["useDigest"] is False and values["operator"]["image"]["pullPolicy"] == "IfNotPresent"


def test_airgapped_node_setup_takes_everything_from_the_source(tmp_path):
    src = source(fake_mirror(tmp_path, ("amd64", "arm64")))
    script = artifacts.kubeadm_node_setup(src, "flannel", ["amd64", "arm64"])
    assert "pkgs.k8s.io" not in script and "apt-get" not in script and "github.com" not in script
    assert "http://mirror.test:8089/bin/arm64/kubeadm" in script and "sha256sum -c" in script
    assert "ctr -n k8s.io images import" in script and "images/amd64/flannel.tar" in script
    assert "CGROUP_DRIVER=cgroupfs" in script and "systemctl enable --now kubelet" in script
    out = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert out.returncode == 0, out.stderr


def test_distribution_plan_with_source(tmp_path):
    src = source(fake_mirror(tmp_path, ("amd64", "arm64")))
    p = ClusterParams("kubeadm", "10.77.0.11", 6443, "10.77.0.11", "/k", "10.244.0.0/16", "10.96.0.0/12")
    plan = distributions.render("kubeadm", INV, render_cni("kubeadm", "flannel", "vxlan", p), artifacts=src)
    assert "from the artifact source" in plan.install[1].note
    assert "--kubernetes-version=v1.33.4" in plan.install[2].command
    assert not any("apt-get purge" in str(s.command) for s in plan.teardown)
    assert any("rm -f /usr/local/bin/kubeadm" in str(s.command) for s in plan.teardown)
    internet = distributions.render("kubeadm", INV, render_cni("kubeadm", "flannel", "vxlan", p))
    assert "pkgs.k8s.io" in internet.install[1].command  # without a source: the package repository, as before


def test_manifest_rewrites_and_image_patches(tmp_path):
    text = "image: docker.io/cloudnativelabs/kube-router\n        imagePullPolicy: Always\n"
    rw = artifacts.spec()["artifacts"]["kube-router-manifest"]["rewrites"]
    out = artifacts.rewrite_manifest(text, rw)
    assert "kube-router:v2.1.0" in out and "IfNotPresent" in out
    assert artifacts.rewrite_manifest(out, rw) == out  # idempotent: a tagged reference is left alone
    src = source(fake_mirror(tmp_path))
    patched = artifacts.mirror_images([{"op": "image", "image": "docker.io/cloudnativelabs/kube-router:v2.11.1"},
                                       {"op": "args"}], src)
    assert patched[0]["image"] == "docker.io/cloudnativelabs/kube-router:v2.1.0" and patched[1] == {"op": "args"}
    with pytest.raises(SpecError, match="no image of quay.io/x"):
        artifacts.mirror_images([{"op": "image", "image": "quay.io/x:1"}], src)


def test_preflight_names_each_unreachable_node_and_installs_nothing(tmp_path):
    t = FakeTransport()
    t.responses.append(("boot_id", (255, "", "ssh: connect to host 10.77.0.13 port 22: No route to host")))
    with pytest.raises(SpecError) as e:
        preflight.reach(t, INV)
    assert e.value.exit_code == 2 and "not reachable" in str(e.value) and "lab-cp" in str(e.value)
    t2 = FakeTransport()
    t2.responses.append(("boot_id", (255, "", "edgebench@10.77.0.11: Permission denied (publickey).")))
    with pytest.raises(SpecError, match="the key was refused"):
        preflight.reach(t2, INV)
    # through the provider: nothing but the probes ran
    p = ClusterProvider("ssh", "kubeadm", "flannel", "vxlan", tmp_path, inventory=INV, transport=t,
                        local=lambda *a, **k: pytest.fail("nothing may run on the runner"),
                        fetch=lambda url: pytest.fail("nothing may be fetched"), cell_id="c-test")
    with pytest.raises(SpecError):
        p.provision()
    assert {c.text for c in t.calls} == {preflight.BOOT_ID}


def test_provider_refuses_missing_artifact_before_install(tmp_path):
    t = FakeTransport()
    p = ClusterProvider("ssh", "kubeadm", "flannel", "vxlan", tmp_path, inventory=INV, transport=t,
                        local=lambda *a, **k: pytest.fail("nothing may run on the runner"),
                        fetch=lambda url: "", cell_id="c-test", artifacts=source(fake_mirror(tmp_path / "m")))
    with pytest.raises(SpecError, match="pi-w2 \\(arm64\\)"):
        p.provision()
    assert {c.text for c in t.calls} == {preflight.BOOT_ID}  # reachability only
    calico = ClusterProvider("ssh", "kubeadm", "calico", "bgp", tmp_path, inventory=INV, transport=t,
                             artifacts=source(tmp_path / "m"), cell_id="c-test")
    t.calls.clear()
    calico.provision()  # recorded, never swapped: nothing is installed ...
    with pytest.raises(Unsupported, match="403"):  # ... and its runs are unsupported with the reason
        calico.install_cni()
    assert calico.teardown() == [] and t.calls == []


# ---------------------------------------------------------------------------------------------- service supervisor
def _systemctl(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("lab_systemctl", LAB / "systemctl.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    units = tmp_path / "units"
    units.mkdir()
    monkeypatch.setattr(mod, "UNIT_DIRS", [units])
    monkeypatch.setattr(mod, "STATE", tmp_path / "state")
    monkeypatch.setattr(mod, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(mod, "WANTS", tmp_path / "wants")
    return mod, units


def test_systemctl_reads_units_like_systemd(tmp_path, monkeypatch):
    mod, units = _systemctl(tmp_path, monkeypatch)
    (units / "kubelet.service").write_text("[Service]\nExecStart=/usr/bin/kubelet\nRestart=always\nRestartSec=10\n")
    (units / "kubelet.service.d").mkdir()
    (tmp_path / "flags.env").write_text('KUBELET_KUBEADM_ARGS="--a=1 --b=2"\n')
    (units / "kubelet.service.d" / "10-kubeadm.conf").write_text(
        '[Service]\nEnvironment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"\n'
        f"EnvironmentFile=-{tmp_path}/flags.env\nEnvironmentFile=-/nonexistent\n"
        "ExecStart=\nExecStart=/usr/local/bin/kubelet $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS ${UNSET}x\n")
    svc = mod.parse("kubelet.service")
    argv, ignore = mod.command(svc["ExecStart"][-1], mod.environment(svc))
    assert argv == ["/usr/local/bin/kubelet", "--config=/var/lib/kubelet/config.yaml", "--a=1", "--b=2", "x"]
    assert not ignore and svc["Restart"] == "always" and len(svc["ExecStart"]) == 1
    with pytest.raises(SystemExit, match="not found"):
        mod.parse("nope.service")


def test_systemctl_supervises_and_stops(tmp_path, monkeypatch):
    mod, units = _systemctl(tmp_path, monkeypatch)
    marker = tmp_path / "ran"
    (units / "demo.service").write_text(f"[Service]\nExecStart=/bin/sh -c 'echo $$$$ >> {marker}; exec sleep 30'\n"
                                        "Restart=always\nRestartSec=0.1\n")
    env = {**os.environ, "PYTHONPATH": ""}
    code = (f"import importlib.util,sys; s=importlib.util.spec_from_file_location('m','{LAB / 'systemctl.py'}');"
            f"m=importlib.util.module_from_spec(s); s.loader.exec_module(m); from pathlib import Path;"
            f"m.UNIT_DIRS=[Path('{units}')]; m.STATE=Path('{tmp_path}/state'); m.LOGS=Path('{tmp_path}/logs');"
            f"m.WANTS=Path('{tmp_path}/wants'); sys.argv[0]='{LAB / 'systemctl.py'}'; sys.exit(m.main(sys.argv[1:]))")
    run = lambda *a: subprocess.run([sys.executable, "-c", code, *a], env=env, capture_output=True, text=True)  # noqa: E731
    assert run("is-active", "demo").returncode == 3  # nothing started yet
    assert run("frobnicate", "demo").returncode == 1  # an unknown verb says so
    child = subprocess.Popen([sys.executable, "-c", code, "__supervise", "demo"], env=env)
    try:
        for _ in range(600):  # a loaded machine starts Python slowly
            if marker.exists():
                break
            time.sleep(0.05)
        first = marker.read_text().split()
        os.kill(int(first[0]), 9)  # the service dies: the supervisor restarts it
        for _ in range(600):
            if len(marker.read_text().split()) >= 2:
                break
            time.sleep(0.05)
        assert len(marker.read_text().split()) >= 2
    finally:
        child.terminate()
        child.wait(30)
    pids = [int(x) for x in marker.read_text().split()]
    time.sleep(0.2)
    assert not any(Path(f"/proc/{p}").exists() and "sleep" in Path(f"/proc/{p}/cmdline").read_text() for p in pids)


# ---------------------------------------------------------------------------------------------- remote sampling
def test_remote_sampler_arithmetic():
    a = remote.parse_block(["T 100.0", "cpu  100 0 100 700 100 0 0 0 0 0", "M 8000000 6000000",
                            "P flanneld 42 500 20480", "P iperf3 77 10 1024"])
    b = remote.parse_block(["T 102.0", "cpu  300 0 200 1300 200 0 0 0 0 0", "M 8000000 5000000",
                            "P flanneld 42 600 20480", "P iperf3 78 10 1024"])
    rows = {r["name"]: r for r in remote.deltas(a, b, clk=100, ncpu=2, node="w1", with_system=True)}
    # system: busy 300 of 1000 jiffies, on 2 CPUs -> 60% of one CPU; memory used (8e6-5e6) kB
    assert rows["system@w1"]["cpu_pct"] == 60.0 and rows["system@w1"]["rss_mb"] == pytest.approx(2929.69, 0.01)
    assert rows["flanneld@w1"] == {"component": "cni", "name": "flanneld@w1", "cpu_pct": 50.0, "rss_mb": 20.0}
    assert "iperf3@w1" not in rows  # a new pid: a delta needs two readings
    assert "system@w1" not in {r["name"] for r in remote.deltas(a, b, 100, 2, "w1", with_system=False)}
    out = subprocess.run(["sh", "-n"], input=remote.script(1.0), text=True, capture_output=True)
    assert out.returncode == 0, out.stderr


def test_only_the_first_node_of_a_shared_kernel_reports_the_system_row_whoever_answers_first():
    inv = inventory.loads("target: lab-local\nnodes:\n"
                          "  - {name: cp, address: 10.0.0.1, arch: amd64, role: server, user: e}\n"
                          "  - {name: w1, address: 10.0.0.2, arch: amd64, role: agent, user: e}\n"
                          "  - {name: w2, address: 10.0.0.3, arch: amd64, role: agent, user: e}\n")
    s = remote.NodeSampler(inv, ssh_argv=None)
    cp, w1, w2 = inv.nodes
    assert s._system_here(w1, "boot-a") is False  # cp has not said its boot id yet: undecided, no row
    assert s._system_here(cp, "boot-a") is True
    assert s._system_here(w1, "boot-a") is False  # the same kernel as cp: sampled once, by cp
    assert s._system_here(w2, "boot-b") is True  # a kernel of its own (a Pi): its own row


# ---------------------------------------------------------------------------------------------- the lab's nodes
def _lab_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    missing = [c for c in ("unshare", "nsenter", "sshd", "ssh", "sudo", "ip") if not shutil.which(c)
               and not Path(f"/usr/sbin/{c}").exists()]
    return f"not installed: {', '.join(missing)}" if missing else None


@pytest.mark.skipif(_lab_reason() is not None, reason=str(_lab_reason()))
def test_lab_nodes_are_machines_of_their_own_and_leave_nothing():
    import tempfile

    # not below /tmp: every node mounts a /tmp of its own, which would hide the lab's state from it
    tmp_path = Path(tempfile.mkdtemp(prefix="edgebench-lab-test-", dir="/var/tmp"))
    env = {**os.environ, "EDGEBENCH_LAB": str(tmp_path / "lab")}
    sh = lambda *a, check=True: subprocess.run([str(LAB / "lab.sh"), *a], env=env, capture_output=True,  # noqa: E731
                                               text=True, check=check, timeout=120)
    if sh("leftovers", check=False).returncode != 0:
        pytest.skip("a lab is already up on this machine (lab.sh down first)")
    before_propagation = subprocess.run(["findmnt", "-no", "PROPAGATION", "/"], capture_output=True, text=True).stdout.split()
    try:
        sh("up", "2")
        inv = inventory.load(tmp_path / "lab" / "inventory.yaml")  # the Pi lab's format, loaded by the provider's code
        assert [n.role for n in inv.nodes] == ["server", "agent"] and inv.target == "lab-local"
        key = tmp_path / "lab" / "id_ed25519"
        ssh = ["ssh", "-i", str(key), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o",
               "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
        out = subprocess.run([*ssh, f"edgebench@{inv.nodes[1].address}", "hostname; sudo -n sh -c 'echo x > /etc/eb-test;"
                              " cat /proc/1/comm; cat /proc/self/cgroup | grep memory; findmnt -no PROPAGATION /'"],
                             capture_output=True, text=True, timeout=30, check=True).stdout.split()
        assert out[0] == "lab-w1" and out[1] == "python3" and out[2].endswith(":/")  # own hostname, PID 1, cgroup root
        assert out[3] == "shared"  # pods' Bidirectional mount propagation (cilium's bpffs); the host's / stays as it was
        assert subprocess.run(["findmnt", "-no", "PROPAGATION", "/"], capture_output=True, text=True).stdout.split() \
            == before_propagation
        assert not Path("/etc/eb-test").exists()  # the node's /etc is its own
        assert any(Path(h).joinpath("edgebench-lab", "lab-w1").is_dir() for h in ("/sys/fs/cgroup/memory",
                                                                                  "/sys/fs/cgroup/pids"))
    finally:
        down = sh("down", check=False)
    assert down.returncode == 0, down.stdout + down.stderr
    assert sh("leftovers", check=False).returncode == 0
    shutil.rmtree(tmp_path)


def test_a_runner_tool_path_is_named_by_its_name_in_the_pod():
    from edgebench import sh
    from edgebench.substrates.clusters.workload_pods import ClusterEndpoint

    ep = ClusterEndpoint("ns", "10.244.1.5", "lab-w1", "eb-w1-lab-w1", "/k")
    assert ep.cmd([f"{sh.tools_dir()}/fortio", "server"])[-2:] == ["fortio", "server"]
    assert ep.cmd(["/usr/bin/iperf3", "-s"])[-2:] == ["/usr/bin/iperf3", "-s"]  # an image path stays


def test_runs_record_the_lab_and_its_shared_kernel(tmp_path):
    """The preflight's boot ids reach the cell's state through provisioning (which first tears down, removing the
    state file): nodes with one boot id share a kernel."""
    t = FakeTransport()
    t.respond("boot_id", "6f1c0e2a-0000-4000-8000-000000000001\n")
    t.respond("cat /etc/kubernetes/admin.conf", yaml.safe_dump(
        {"clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443"}}], "users": [], "contexts": []}))
    p = ClusterProvider("ssh", "kubeadm", "flannel", "vxlan", tmp_path, inventory=INV, transport=t,
                        local=lambda *a, **k: "", fetch=lambda url: "", cell_id="c-test")
    p.provision()
    lab = p._read_state()["lab"]
    nodes = lab.pop("node_list")
    assert lab == {"target": "lab-local", "nodes": 3, "shared_kernel": True,
                   "kernel_boot_id": "6f1c0e2a-0000-4000-8000-000000000001", "node_kind": "namespace", "cpu": "native"}
    assert [(n["name"], n["kind"]) for n in nodes] == [("lab-cp", "namespace"), ("lab-w1", "namespace"),
                                                       ("pi-w2", "namespace")]


def test_a_rerun_at_a_version_the_mirror_carries_takes_that_versions_image_and_manifest(tmp_path):
    assert artifacts.needed("kubeadm", "flannel", "v0.28.9") == artifacts.needed("kubeadm", "flannel")  # the pin
    names = artifacts.needed("kubeadm", "flannel", "v0.28.10")
    assert {"flannel@v0.28.10", "flannel-manifest@v0.28.10", "flannel-cni-plugin"} <= set(names)
    assert "flannel" not in names and "flannel-manifest" not in names
    with pytest.raises(SpecError, match="carries flannel at v0.28.10, v0.28.9 only, not v0.28.11"):
        artifacts.needed("kubeadm", "flannel", "v0.28.11")
    assert artifacts.needed("kubeadm", "host", "v0.28.10") == artifacts.needed("kubeadm", "host")
    src = source(fake_mirror(tmp_path))
    script = artifacts.kubeadm_node_setup(src, "flannel", ["amd64"], "v0.28.10")
    assert "images/amd64/flannel-v0.28.10.tar" in script and "images/amd64/flannel.tar" not in script
    assert "ghcr.io/flannel-io/flannel:v0.28.10" in script
    url, art = src.manifest("flannel", lambda u: u, "v0.28.10")
    assert url.endswith("manifests/flannel/v0.28.10/kube-flannel.yml") and art["version"] == "v0.28.10"
    url, art = src.manifest("flannel", lambda u: u)
    assert url.endswith("manifests/flannel/v0.28.9/kube-flannel.yml") and art["version"] == "v0.28.9"
    # the mirror builds exactly the versions the catalog says it carries
    carried = " ".join(artifacts.spec()["versions"]["flannel"])
    # (scripts/lab-local/lablib.py's FLANNEL_EXTRA: build.sh builds them, mirror.sh makes their images and manifests)
    sys.path.insert(0, str(LAB))
    import lablib
    import mirror

    assert " ".join(lablib.FLANNEL_EXTRA) == carried
    assert {f"flannel-manifest@{v}" for v in lablib.FLANNEL_EXTRA} <= set(mirror.MANIFEST_SOURCES)
