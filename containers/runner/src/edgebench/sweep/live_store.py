"""Runs kept the moment they finish, on Argo.

A run-workloads pod writes its runs into its `results` output artifact, which Argo saves only when the pod ends.
A pod that is deleted, evicted or loses its node mid-cell would take every run it had finished with it. So the pod
also sends each run, as soon as its manifest is written, to the artifact repository itself (the namespace's
ConfigMap `artifact-repositories`, mounted read-only, and the MinIO credentials from its Secret, both optional),
under the key collect-results stores it at anyway (`runs/<sweep>/<cell>/<run>/`). collect-results then counts the
runs already there as stored, and only the runs nobody finished are recorded failed, with why the pod ended.

Without the mount or the credentials (another artifact repository kind, a template without them) nothing is sent
early and the output artifact alone carries the runs, as before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from edgebench.plan.cells import Run
from edgebench.results.records.store import ResultStore, S3Config, StoreError

# where cell-phase.yaml and collect-results.yaml mount ConfigMap artifact-repositories, and the key they read: the
# ConfigMap's default (its annotation; tests/host/test_templates.py checks that they agree)
REPOSITORY_MOUNT = Path("/etc/edgebench/artifact-repositories")
REPOSITORY_KEY = "default-v1"
ENV_MOUNT, ENV_KEY = "EDGEBENCH_ARTIFACT_REPOSITORIES", "EDGEBENCH_ARTIFACT_REPOSITORY_KEY"  # other mounts and keys

Log = Callable[[str], None]


def repository(env: Mapping[str, str] = os.environ) -> S3Config | None:
    """The artifact repository's S3 endpoint and bucket (from the mounted ConfigMap) with the credentials from the
    environment (EDGEBENCH_S3_ACCESS_KEY / _SECRET_KEY, from the repository's Secret); None when either is absent
    or the repository is not S3."""
    path = Path(env.get(ENV_MOUNT, REPOSITORY_MOUNT)) / env.get(ENV_KEY, REPOSITORY_KEY)
    access, secret = env.get("EDGEBENCH_S3_ACCESS_KEY"), env.get("EDGEBENCH_S3_SECRET_KEY")
    if not (path.is_file() and access and secret):
        return None
    s3 = (yaml.safe_load(path.read_text()) or {}).get("s3")
    if not isinstance(s3, dict) or not s3.get("endpoint") or not s3.get("bucket"):
        return None
    endpoint = s3["endpoint"]
    if "://" not in endpoint:
        endpoint = ("http://" if s3.get("insecure") else "https://") + endpoint
    return S3Config(endpoint=endpoint, access_key=access, secret_key=secret, bucket=s3["bucket"])


class LiveStore:
    """Send finished runs to the artifact repository (sink), and take the ones already there back (fetch)."""

    def __init__(self, cfg: S3Config, spool: Path, log: Log = print):
        # results.store's own upload (raw files first, the manifest last), once per object: a store that is away
        # costs each run one try, and the output artifact carries the runs all the same
        self.store = ResultStore(cfg, spool=spool, attempts=1)
        self.cfg, self.client = cfg, self.store.client
        self.log = log
        self.failed = False  # the first failure is said once

    def sink(self, results: Path) -> Callable[[Run, dict[str, Any]], None]:
        """A CellContext sink: the run's manifest and the raw files beside it under `results`, sent as one run."""

        def send(run: Run, doc: dict[str, Any]) -> None:
            directory = results / run.prefix
            raw = {p.name: p.read_bytes() for p in directory.iterdir()
                   if p.is_file() and p.name != "manifest.json" and not p.name.endswith(".part")}
            try:
                self.store.put_run(run.prefix, doc, raw)
            except StoreError as exc:  # the store is away: the run stays in the output artifact, as without us
                if not self.failed:
                    self.log(f"could not send {run.prefix} to {self.cfg.endpoint} as it finished ({exc}); "
                             "the runs go with the step's output artifact instead")
                self.failed = True

        return send

    def fetch(self, prefix: str, results: Path) -> list[str]:
        """Copy every complete run (one with a manifest) under key `prefix` (runs/<sweep>/<cell>/) into `results`,
        at the same relative paths; return their run ids."""
        names = [o.object_name for o in self.client.list_objects(self.cfg.bucket, prefix=prefix, recursive=True)]
        complete = {n.rsplit("/", 2)[-2] for n in names if n.endswith("/manifest.json")}
        for name in names:
            run_id = name[len(prefix):].split("/", 1)[0]
            if run_id in complete:
                dest = results / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                self.client.fget_object(self.cfg.bucket, name, str(dest))
        return sorted(complete)


def ended_reason(status: str | None, exit_code: str | None = None) -> str | None:
    """Why a run without a manifest never finished, from how the run-workloads step ended as Argo gives it to
    collect-results (the task's status and exit code); None for a step that Succeeded (nothing to add)."""
    if not status or status == "Succeeded":
        return None
    code = (exit_code or "").strip()
    if not code.lstrip("-").isdigit():  # none: Argo leaves the variable unresolved when the pod never exited itself
        code = ""
    if code in ("130", "143"):  # SIGTERM (edgebench turns it into an interrupt: 130)
        how = "its pod was stopped (SIGTERM: the pod deleted or evicted, or the workflow stopped)"
    elif code == "137":
        how = "its pod was killed (SIGKILL: out of memory, or it did not stop within its grace period)"
    elif code and code != "0":
        how = f"the step exited with code {code} (its log has the reason)"
    elif status == "Error":
        how = "its pod ended in Error with no exit code of its own (the pod deleted or evicted, or its node lost)"
    else:
        how = "the workflow's run-workloads node has Argo's message"
    return f"the run-workloads step ended {status} before this run finished: {how}"
