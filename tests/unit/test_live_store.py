"""Runs kept as they finish on Argo (sweep/live_store.py): a run-workloads pod sends each finished run to the artifact
repository, so a pod deleted mid-cell loses only the run in flight, and collect-results records the rest failed with
why the pod ended. Checked against a throwaway MinIO and the phase commands as the templates run them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from edgebench.plan.cells import from_json, runs_for
from edgebench.results.records.runstore import manifest, now
from edgebench.sweep import live_store
from edgebench.sweep.phases import CellContext

ROOT = Path(__file__).resolve().parents[2]
CONFIGMAP = ROOT / "kustomize" / "base" / "config" / "artifact-repositories-configmap.yaml"


def _cli(*args, env):
    return subprocess.run([sys.executable, "-m", "edgebench.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def _cell(tmp_path):
    out = _cli("cells", str(ROOT / "workflows" / "sweep.yaml"), "--local", "-p", "repetitions=3", "-p",
               'cnis=["flannel:vxlan"]', "-p", 'workloads=["iperf3:tcp"]', "-p",
               'iperf3-paths=["pod-to-pod:cross-node"]', "-p", "sweep-id=live-store", env={}).stdout
    text = json.dumps(json.loads(out)[0])
    (tmp_path / "cell.json").write_text(text)
    return from_json(text)


def _mount(tmp_path, endpoint: str, bucket: str | None = None) -> Path:
    """The ConfigMap as Argo's volume would mount it, pointed at the throwaway MinIO (and a bucket of its own: the
    session's MinIO is shared, and other tests expect its `edgebench` bucket empty)."""
    data = yaml.safe_load(CONFIGMAP.read_text())["data"]
    mount = tmp_path / "artifact-repositories"
    mount.mkdir()
    for key, text in data.items():
        doc = yaml.safe_load(text)
        doc["s3"]["endpoint"] = endpoint.split("://", 1)[1]
        if bucket:
            doc["s3"]["bucket"] = bucket
        (mount / key).write_text(yaml.safe_dump(doc))
    return mount


def test_repository_is_read_from_the_mounted_configmap(tmp_path):
    mount = _mount(tmp_path, "http://minio.edgebench.svc:9000")
    env = {live_store.ENV_MOUNT: str(mount), "EDGEBENCH_S3_ACCESS_KEY": "a", "EDGEBENCH_S3_SECRET_KEY": "s"}
    cfg = live_store.repository(env)
    assert (cfg.endpoint, cfg.bucket, cfg.access_key) == ("http://minio.edgebench.svc:9000", "edgebench", "a")
    # without the credentials or the mount, nothing is sent early (the output artifact alone carries the runs)
    assert live_store.repository({live_store.ENV_MOUNT: str(mount)}) is None
    assert live_store.repository({**env, live_store.ENV_MOUNT: str(tmp_path / "absent")}) is None


def test_the_templates_mount_the_repository_the_configmap_names():
    cm = yaml.safe_load(CONFIGMAP.read_text())
    assert cm["metadata"]["annotations"]["workflows.argoproj.io/default-artifact-repository"] == live_store.REPOSITORY_KEY
    assert live_store.REPOSITORY_KEY in cm["data"]
    for name in ("cell-phase", "collect-results"):
        tmpl = yaml.safe_load((ROOT / "templates" / f"{name}.yaml").read_text())["spec"]["templates"][0]
        mounts = {m["name"]: m["mountPath"] for m in tmpl["container"]["volumeMounts"]}
        assert mounts["artifact-repositories"] == str(live_store.REPOSITORY_MOUNT)
        vols = {v["name"]: v for v in tmpl["volumes"]}
        assert vols["artifact-repositories"]["configMap"] == {"name": "artifact-repositories", "optional": True}
        env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in tmpl["container"]["env"] if "valueFrom" in e}
        secret = cm["data"][live_store.REPOSITORY_KEY]
        for var, ref in env.items():
            assert ref["name"] == yaml.safe_load(secret)["s3"]["accessKeySecret"]["name"] and ref["optional"] is True
        assert {"EDGEBENCH_S3_ACCESS_KEY", "EDGEBENCH_S3_SECRET_KEY"} <= set(env)
    phases = yaml.safe_load((ROOT / "templates" / "cell-phases.yaml").read_text())
    collect = next(t for tp in phases["spec"]["templates"] for t in tp.get("dag", {}).get("tasks", [])
                   if t["name"] == "collect-results")
    params = {p["name"]: p["value"] for p in collect["arguments"]["parameters"]}
    assert params["run-workloads-status"] == "{{tasks.run-workloads.status}}"
    assert params["run-workloads-exit-code"] == "{{tasks.run-workloads.exitCode}}"


def test_a_deleted_run_pod_loses_only_the_run_in_flight(tmp_path, minio_server):
    sweep, cell = _cell(tmp_path)
    runs = runs_for(sweep, cell)
    assert len(runs) == 3
    env = {live_store.ENV_MOUNT: str(_mount(tmp_path, minio_server["endpoint"], bucket="live-store-test")),
           "EDGEBENCH_S3_ACCESS_KEY": minio_server["access_key"], "EDGEBENCH_S3_SECRET_KEY": minio_server["secret_key"]}
    # the run-workloads pod: two runs finish and are sent as they finish; then the pod is gone (no artifact)
    live = live_store.LiveStore(live_store.repository(env), spool=tmp_path / "spool", log=lambda m: None)
    if not live.client.bucket_exists("live-store-test"):
        live.client.make_bucket("live-store-test")
    pod = CellContext(sweep, cell, workdir=tmp_path / "pod-work", results=tmp_path / "pod-out", provider=None)
    pod.sink = live.sink(pod.results)
    for run in runs[:2]:
        pod.store(run, manifest(run, "ok", now(), metrics={"x": 1}), {"iperf3-client.json": b"{}"})
    # collect-results, a new pod: its own state (from before run-workloads), no results artifact
    common = ["--cell", f"@{tmp_path / 'cell.json'}", "--workdir", str(tmp_path / "collect-work"),
              "--results", str(tmp_path / "collect-out"), "--from", str(tmp_path / "no-artifact")]
    # what Argo gave for the pod deleted mid-run (observed): the task Failed, its main container exit code 130
    proc = _cli("collect-results", *common, "--run-workloads-status", "Failed", "--run-workloads-exit-code", "130",
                env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 runs of cell" in proc.stdout
    cell_dir = tmp_path / "collect-out" / "runs" / sweep.sweep_id / cell.cell_id
    docs = {d.name: json.loads((d / "manifest.json").read_text()) for d in cell_dir.iterdir()}
    assert [docs[r.run_id]["status"] for r in runs] == ["ok", "ok", "failed"]
    assert (cell_dir / runs[0].run_id / "iperf3-client.json").read_bytes() == b"{}"
    assert docs[runs[2].run_id]["error"] == ("the run-workloads step ended Failed before this run finished: its pod "
                                             "was stopped (SIGTERM: the pod deleted or evicted, or the workflow "
                                             "stopped)")


def test_without_the_repository_the_reason_still_says_how_the_step_ended(tmp_path):
    sweep, cell = _cell(tmp_path)
    common = ["--cell", f"@{tmp_path / 'cell.json'}", "--workdir", str(tmp_path / "w"), "--results", str(tmp_path / "o")]
    for status, code, words in (("Failed", "1", "exited with code 1"), ("Failed", "137", "SIGKILL"),
                                ("Error", "", "its pod ended in Error"),
                                # observed: a deleted pod's task is Error and Argo leaves its exit code unresolved
                                ("Error", "{{tasks.run-workloads.exitCode}}", "with no exit code of its own (the pod "
                                 "deleted or evicted, or its node lost)"), ("Succeeded", "0", "no manifest was written"),
                                ("", "", "no manifest")):
        proc = _cli("collect-results", *common, "--run-workloads-status", status, "--run-workloads-exit-code", code,
                    env={live_store.ENV_MOUNT: str(tmp_path / "absent")})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        cell_dir = tmp_path / "o" / "runs" / sweep.sweep_id / cell.cell_id
        docs = [json.loads((d / "manifest.json").read_text()) for d in cell_dir.iterdir()]
        assert len(docs) == 3 and all(words in d["error"] for d in docs), (status, docs[0]["error"])
        for d in cell_dir.iterdir():  # the next status starts from nothing stored
            for f in d.iterdir():
                f.unlink()
            d.rmdir()
        (tmp_path / "w" / "state.json").unlink()
