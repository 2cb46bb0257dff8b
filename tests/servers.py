"""Throwaway servers for the tests and the benchmarks: a free port, waiting until a server answers, a MinIO with an
empty bucket. Failures raise ServerError (conftest turns it into a test failure, the benchmarks into a row)."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

MINIO_USER, MINIO_PASSWORD, MINIO_BUCKET = "edgebench", "edgebench-secret", "edgebench"


class ServerError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(proc: subprocess.Popen, url: str, what: str, timeout: float = 60, why=lambda: "") -> None:
    """Poll `url` until it answers 200; ServerError if `proc` exits first or `timeout` s pass (`why()` says more)."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise ServerError(f"{what} exited with {proc.returncode}{why()}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise ServerError(f"{what} did not answer {url} within {timeout:.0f} s{why()}")
        time.sleep(0.2)


def stop(proc: subprocess.Popen, grace: float = 15) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def minio_binary() -> Path:
    return Path(os.environ.get("EDGEBENCH_MINIO_BIN", Path.home() / ".local/share/edgebench/tools/minio"))


@contextlib.contextmanager
def throwaway_minio(data_dir: Path):
    """A MinIO (minio_binary()) on a free port over `data_dir`, with an empty bucket; its log beside data_dir.
    Yields {endpoint, access_key, secret_key, bucket, env}; env holds the matching EDGEBENCH_* variables."""
    from minio import Minio

    binary = minio_binary()
    if not os.access(binary, os.X_OK):
        raise ServerError(f"MinIO binary not found at {binary} (set EDGEBENCH_MINIO_BIN, or build it with "
                          "`make tools`; `make test` does)")
    port = free_port()
    log = open(data_dir.parent / "minio.log", "wb")
    env = {**os.environ, "MINIO_ROOT_USER": MINIO_USER, "MINIO_ROOT_PASSWORD": MINIO_PASSWORD,
           "MINIO_BROWSER": "off", "MINIO_UPDATE": "off"}
    proc = subprocess.Popen([str(binary), "server", str(data_dir), "--address", f"127.0.0.1:{port}", "--quiet"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, f"{endpoint}/minio/health/ready", "MinIO", why=lambda: f"; see {log.name}")
        Minio(f"127.0.0.1:{port}", MINIO_USER, MINIO_PASSWORD, secure=False).make_bucket(MINIO_BUCKET)
        yield {"endpoint": endpoint, "access_key": MINIO_USER, "secret_key": MINIO_PASSWORD, "bucket": MINIO_BUCKET,
               "env": {"EDGEBENCH_S3_ENDPOINT": endpoint, "EDGEBENCH_S3_ACCESS_KEY": MINIO_USER,
                       "EDGEBENCH_S3_SECRET_KEY": MINIO_PASSWORD, "EDGEBENCH_BUCKET": MINIO_BUCKET}}
    finally:
        stop(proc)
        log.close()
