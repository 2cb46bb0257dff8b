"""`make lab-local` live: one flannel:vxlan cell on the local lab through the ssh substrate (kubeadm over SSH from
the artifact mirror, real pods), then teardown, then the leftover check. Opt-in (EDGEBENCH_LAB_LIVE=1) and only
where the builds are cached (~40 min cold); otherwise it skips naming what is missing."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from edgebench.substrates.clusters.install import artifacts

REPO = Path(__file__).resolve().parents[2]
LABC = Path(os.environ.get("EDGEBENCH_LAB_CACHE", Path.home() / ".local/share/edgebench/lab"))
MIRROR = Path(os.environ.get("EDGEBENCH_MIRROR", LABC / "mirror"))


def _not_cached() -> list[str]:
    index = MIRROR / "index.yaml"
    if not index.exists():
        return [f"{index} (scripts/lab-local/mirror.sh build)"]
    doc = yaml.safe_load(index.read_text())
    need = artifacts.needed("kubeadm", "flannel")
    return [f"{n} for amd64" for n in need if "amd64" not in doc["artifacts"].get(n, {}).get("arches", {})]


def _reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    missing = _not_cached()
    if missing:
        return "not cached: " + ", ".join(missing)
    if os.environ.get("EDGEBENCH_LAB_LIVE") != "1":
        return "opt-in: EDGEBENCH_LAB_LIVE=1 (a kubeadm cluster per cell, minutes)"
    return None


@pytest.mark.skipif(_reason() is not None, reason=str(_reason()))
def test_one_real_cell_through_the_ssh_substrate():
    env = {**os.environ, "CNIS": '["flannel:vxlan"]', "REPS": "1", "SKIP_TESTBED": "1",
           "SWEEP_ID": "lab-live-test"}
    run = subprocess.run([str(REPO / "scripts/lab-local/run.sh")], env=env, capture_output=True, text=True,
                         timeout=3600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "down: nothing of the lab is left" in run.stderr
    report = json.loads((REPO / ".edgebench/lab-local/report.json").read_text())
    assert report["sweep_lab"] > 0


# ------------------------------------------------------------------------------------------------ fault test
LABSH = REPO / "scripts/lab-local/lab.sh"
LAB_DIR = Path(os.environ.get("EDGEBENCH_LAB", "/srv/edgebench-lab"))


def _lab(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(LABSH), *args], capture_output=True, text=True, check=check, timeout=timeout)


def _lab_client_pid(previous: int | None) -> tuple[int, str] | None:
    """A run's iperf3 client on a lab node (its cgroup says which node): (pid, node), or None."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == previous:
            continue
        try:
            if (d / "comm").read_text().strip() != "iperf3" or b"--client" not in (d / "cmdline").read_bytes():
                continue
            cg = (d / "cgroup").read_text()
        except OSError:
            continue
        m = re.search(r"edgebench-lab/(lab-[a-z0-9]+)", cg)
        if m:
            return int(d.name), m.group(1)
    return None


def _kill_mid_run(daemons: list[str], log: list[str], stop: threading.Event) -> None:
    """For each daemon: wait for a new run's iperf3 client, 5 s into it `pkill -x DAEMON` on the client's node."""
    previous = None
    for daemon in daemons:
        while not stop.is_set():
            found = _lab_client_pid(previous)
            if found:
                break
            time.sleep(0.3)
        else:
            return
        previous, node = found
        t0 = time.monotonic()
        time.sleep(5)
        kill = _lab("exec", node, "pkill", "-x", daemon, check=False)
        log.append(f"{daemon} on {node}: pkill exit {kill.returncode} at {time.monotonic() - t0:.1f} s into the run")
        while Path(f"/proc/{previous}").exists() and not stop.is_set():
            time.sleep(0.3)


def _iptables_chains() -> set[str]:
    out = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith(":")}


@pytest.mark.skipif(_reason() is not None, reason=str(_reason()))
def test_a_node_daemon_killed_mid_run_fails_the_run_with_the_reason_and_leaves_nothing(minio_server, tmp_path):
    """The fault test (docs/lab-local.md, Faults): one flannel:vxlan cell, 3 iperf3 runs of 20 s; 5 s into the first
    the client node's containerd is killed, into the second its kubelet (the node's supervisor restarts both). Those
    two runs are recorded failed with the reason, the third is measured, the sweep ends (no hang), and the lab's
    teardown leaves no process, cgroup, interface, mount, iptables chain of this machine's or state."""
    if _lab("leftovers", check=False).returncode != 0:
        pytest.skip("a lab is already up on this machine (lab.sh down first)")
    chains_before = _iptables_chains()
    sweep_id = f"lab-fault-{int(time.time())}"
    env = {**os.environ, **minio_server["env"], "EDGEBENCH_STATE": str(tmp_path / "state"),
           "EDGEBENCH_KNOWN_HOSTS": str(LAB_DIR / "known_hosts"),
           "PYTHONPATH": str(REPO / "containers/runner/src"),
           "PATH": f"{Path.home() / '.local/share/edgebench/e2e-argo/bin'}:{os.environ['PATH']}"}
    log: list[str] = []
    stop = threading.Event()
    try:
        _lab("up", "3")
        subprocess.run([str(REPO / "scripts/lab-local/mirror.sh"), "serve", "10.77.0.1"], check=True, timeout=60)
        killer = threading.Thread(target=_kill_mid_run, args=(["containerd", "kubelet"], log, stop), daemon=True)
        killer.start()
        t0 = time.monotonic()
        sweep = subprocess.run(
            [sys.executable, "-m", "edgebench.cli", "sweep", str(REPO / "workflows/sweep.yaml"), "-p", "substrate=ssh",
             "-p", "distribution=kubeadm", "-p", 'cnis=["flannel:vxlan"]', "-p", 'workloads=["iperf3:tcp"]',
             "-p", 'iperf3-paths=["pod-to-pod:cross-node"]', "-p", "repetitions=3", "-p", "duration=20",
             "-p", "target=lab-local", "-p", f"sweep-id={sweep_id}", "--inventory", str(LAB_DIR / "inventory.yaml"),
             "--ssh-key", str(LAB_DIR / "id_ed25519"), "--artifact-source", "http://10.77.0.1:8089"],
            env=env, capture_output=True, text=True, timeout=1200)
        elapsed = time.monotonic() - t0
    finally:
        stop.set()
        down = _lab("down", check=False)
    print(f"sweep {elapsed:.0f} s; " + "; ".join(log) + "\n" + sweep.stdout[-3000:])
    assert len(log) == 2, log
    assert sweep.returncode == 1, sweep.stdout[-3000:] + sweep.stderr[-3000:]  # failed runs: exit 1, not a crash
    from minio import Minio

    mc = Minio(minio_server["endpoint"].split("://")[-1], access_key=minio_server["access_key"],
               secret_key=minio_server["secret_key"], secure=False)
    manifests = [json.loads(mc.get_object(minio_server["bucket"], o.object_name).read())
                 for o in mc.list_objects(minio_server["bucket"], prefix=f"runs/{sweep_id}/", recursive=True)
                 if o.object_name.endswith("/manifest.json")]
    assert sorted(m["status"] for m in manifests) == ["failed", "failed", "ok"], [m["error"] for m in manifests]
    for m in manifests:
        if m["status"] == "failed":
            assert "exited 0 without output" in m["error"] and "kubelet or container runtime" in m["error"], m["error"]
    assert down.returncode == 0 and "down: nothing of the lab is left" in down.stderr, down.stdout + down.stderr
    assert _lab("leftovers", check=False).returncode == 0
    assert _iptables_chains() <= chains_before, sorted(_iptables_chains() - chains_before)
