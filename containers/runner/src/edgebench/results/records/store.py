"""The raw results store: a local spool first, then MinIO/S3 (bucket `edgebench`, see docs/results-layout.md).

Every object is written to the spool before it is uploaded, so an object-store outage loses nothing: the next
`edgebench sweep` (or `edgebench upload`) sends what is left. Uploads are idempotent (deterministic keys).
"""

from __future__ import annotations

import io
import json
import os
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from edgebench.errors import EdgebenchError
from edgebench.results.records.manifest import RunManifest


def repo_root() -> Path:
    env = os.environ.get("EDGEBENCH_HOME")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "workflows").is_dir() and (parent / "Makefile").exists():
            return parent
    return Path.cwd()


def state_dir() -> Path:
    return Path(os.environ.get("EDGEBENCH_STATE", repo_root() / ".edgebench"))


@dataclass(frozen=True)
class S3Config:
    endpoint: str
    access_key: str
    secret_key: str
    bucket: str

    @classmethod
    def from_env(cls) -> "S3Config":
        return cls(
            endpoint=os.environ.get("EDGEBENCH_S3_ENDPOINT", "http://127.0.0.1:9000"),
            access_key=os.environ.get("EDGEBENCH_S3_ACCESS_KEY", "edgebench"),
            secret_key=os.environ.get("EDGEBENCH_S3_SECRET_KEY", "edgebench-secret"),
            bucket=os.environ.get("EDGEBENCH_BUCKET", "edgebench"),
        )

    def client(self):
        """A MinIO client for this endpoint (http:// unless the endpoint says https://)."""
        from minio import Minio  # imported here so the CLI's validation paths do not need it

        url = urlparse(self.endpoint if "://" in self.endpoint else "http://" + self.endpoint)
        return Minio(url.netloc, access_key=self.access_key, secret_key=self.secret_key, secure=url.scheme == "https")


def statuses(manifests: dict[str, RunManifest]) -> dict[str, dict[str, Any]]:
    """run_id -> {status, attempt} of stored manifests (ResultStore.run_manifests)."""
    return {rid: {"status": doc.get("status", "unknown"), "attempt": int(doc.get("attempt", 1))}
            for rid, doc in manifests.items()}


class StoreError(EdgebenchError):
    pass


class ResultStore:
    def __init__(self, cfg: S3Config | None = None, spool: Path | None = None, attempts: int = 4):
        self.cfg = cfg or S3Config.from_env()
        self.client = self.cfg.client()
        self.spool = spool or state_dir() / "spool"
        self.attempts = attempts

    def check(self) -> None:
        """Reach the store and make sure the bucket exists; StoreError with a hint otherwise."""
        try:
            if not self.client.bucket_exists(self.cfg.bucket):
                self.client.make_bucket(self.cfg.bucket)
        except Exception as exc:  # connection refused, bad credentials, ...
            raise StoreError(
                f"cannot reach the object store at {self.cfg.endpoint} (bucket {self.cfg.bucket}): {exc}. "
                "Start the local MinIO with `make minio`, or set EDGEBENCH_S3_ENDPOINT/ACCESS_KEY/SECRET_KEY."
            ) from None

    # writing ---------------------------------------------------------------------------------------
    def put_run(self, prefix: str, manifest: RunManifest, raw: dict[str, bytes]) -> None:
        """Spool raw files and the manifest (manifest last: its presence marks a complete run), then upload."""
        for name, data in raw.items():
            self._spool(prefix + name, data)
        self._spool(prefix + "manifest.json", json.dumps(manifest, indent=2, sort_keys=True).encode())
        self.flush()

    def put_json(self, key: str, doc: dict[str, Any]) -> None:
        self._spool(key, json.dumps(doc, indent=2, sort_keys=True).encode())
        self.flush()

    def _spool(self, key: str, data: bytes) -> None:
        path = self.spool / key
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        tmp.write_bytes(data)
        tmp.replace(path)

    def pending(self, prefix: str = "") -> list[Path]:
        root = self.spool / prefix if prefix else self.spool
        files = [p for p in root.rglob("*") if p.is_file() and not p.name.endswith(".part")]
        # raw files before manifests, so a manifest never points at objects that are not there yet
        return sorted(files, key=lambda p: (p.name == "manifest.json", str(p)))

    def flush(self, prefix: str = "") -> int:
        """Upload everything in the spool (or only the objects under key `prefix`, e.g. one finished run's
        directory); remove what was uploaded. Returns the number of objects sent."""
        sent = 0
        for path in self.pending(prefix):
            key = path.relative_to(self.spool).as_posix()
            data = path.read_bytes()
            for attempt in range(1, self.attempts + 1):
                try:
                    ctype = "application/json" if key.endswith(".json") else "application/octet-stream"
                    self.client.put_object(self.cfg.bucket, key, io.BytesIO(data), len(data), content_type=ctype)
                    break
                except Exception as exc:
                    if attempt == self.attempts:
                        raise StoreError(
                            f"upload of {key} to {self.cfg.endpoint} failed after {attempt} attempts: {exc}; "
                            f"it stays in {self.spool} and is sent by the next `edgebench upload`"
                        ) from None
                    time.sleep(0.5 * 2 ** (attempt - 1))
            path.unlink()
            sent += 1
        return sent

    # reading ---------------------------------------------------------------------------------------
    def run_manifests(self, sweep_id: str) -> dict[str, RunManifest]:
        """run_id -> the manifest of every run already stored for this sweep."""
        out = {}
        for obj in self.client.list_objects(self.cfg.bucket, prefix=f"runs/{sweep_id}/", recursive=True):
            if obj.object_name.endswith("/manifest.json"):
                doc = self.get_json(obj.object_name)
                if doc is not None:
                    out[obj.object_name.split("/")[-2]] = doc
        return out

    def run_statuses(self, sweep_id: str) -> dict[str, dict[str, Any]]:
        """run_id -> {status, attempt} of every manifest already stored for this sweep."""
        return statuses(self.run_manifests(sweep_id))

    def get_json(self, key: str) -> dict[str, Any] | None:
        """A stored JSON object, or None when there is none under that key."""
        from minio.error import S3Error  # as client(): only what talks to the store needs the MinIO client

        try:
            resp = self.client.get_object(self.cfg.bucket, key)
        except S3Error as exc:
            if exc.code in ("NoSuchKey", "NoSuchObject"):
                return None
            raise
        try:
            return json.loads(resp.read())
        finally:
            resp.close()
            resp.release_conn()

    def keys(self, prefix: str = "") -> list[str]:
        return sorted(o.object_name for o in self.client.list_objects(self.cfg.bucket, prefix=prefix, recursive=True))


class BackgroundUploader:
    """Uploads finished runs from the spool in a thread of its own, so the next run measures while the last one is
    sent. Only complete run directories are handed over (`submit(prefix)` after the manifest is written), never a
    directory still being written. An upload that fails leaves its objects in the spool (nothing measured is lost);
    the first error is kept and reported, and `close()` waits for the queue, then flushes what is left in the
    caller's thread, raising StoreError as a direct flush would."""

    def __init__(self, store: ResultStore, log=None):
        self.store = store
        self.log = log
        self.error: Exception | None = None
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="edgebench-upload", daemon=True)
        self._thread.start()

    def submit(self, prefix: str) -> None:
        self._queue.put(prefix)

    def _loop(self) -> None:
        while (prefix := self._queue.get()) is not None:
            if self.error is not None:  # the store is failing: leave the rest in the spool for close()
                continue
            try:
                self.store.flush(prefix)
            except Exception as exc:  # kept in the spool; reported once, retried by close()
                self.error = exc
                if self.log:
                    self.log(f"upload failed ({exc}); results stay in the spool and are sent at the end")

    def close(self) -> int:
        """Wait for every submitted upload, then upload whatever is still in the spool (raises StoreError)."""
        self._queue.put(None)
        self._thread.join()
        return self.store.flush()
