"""The same build through a real MinIO: dbt-duckdb reads s3://<bucket>/runs/... via httpfs."""
from __future__ import annotations

import io

import duckdb
import pytest
from minio import Minio

import fixture_manifests as fx
from edgebench.results import warehouse
from edgebench.results.report.marts import summaries


@pytest.fixture
def s3_env(minio_server, monkeypatch):
    for name, value in minio_server["env"].items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("EDGEBENCH_RAW_ROOT", raising=False)  # default: s3://<bucket>
    return minio_server


def _client(srv) -> Minio:
    return Minio(srv["endpoint"].split("://", 1)[1], srv["access_key"], srv["secret_key"], secure=False)


def test_build_from_minio(s3_env, tmp_path):
    client = _client(s3_env)
    # empty bucket first: a clear "no results yet" error, nothing written
    with pytest.raises(warehouse.NoResultsError, match="make sweep"):
        warehouse.build(warehouse_path=tmp_path / "wh.duckdb", quiet=True)
    assert not (tmp_path / "wh.duckdb").exists()

    for key, data in fx.fixture_objects().items():
        client.put_object(s3_env["bucket"], key, io.BytesIO(data), len(data), content_type="application/json")
    warehouse.build(warehouse_path=tmp_path / "wh.duckdb", quiet=True)

    with duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from fct_iperf3_runs").fetchone() == (fx.N_IPERF3_RUNS,)
        path = con.execute("select manifest_path from stg_edgebench__runs limit 1").fetchone()[0]
        assert path.startswith(f"s3://{s3_env['bucket']}/runs/")
        overhead = con.execute("""select overhead_pct from cmp_iperf3_vs_host
                                  where substrate='local' and cni='flannel' and protocol='tcp'""").fetchone()[0]
    assert overhead == pytest.approx(fx.OVERHEAD_LOCAL_TCP_FLANNEL)
    summary = summaries.iperf3_summary(tmp_path / "wh.duckdb")
    assert sum(r["n_ok"] + r["n_invalid"] + r["n_failed"] + r["n_unsupported"] for r in summary) == fx.N_IPERF3_RUNS


def test_wrong_credentials_fail_clearly(s3_env, monkeypatch, tmp_path):
    monkeypatch.setenv("EDGEBENCH_S3_SECRET_KEY", "wrong-secret")
    with pytest.raises(warehouse.WarehouseError) as exc:
        warehouse.build(warehouse_path=tmp_path / "wh.duckdb", quiet=True)
    assert not isinstance(exc.value, warehouse.NoResultsError)
    assert not (tmp_path / "wh.duckdb").exists()
