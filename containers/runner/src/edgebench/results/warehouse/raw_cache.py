"""The warehouse's raw cache (schema edgebench_raw_cache, see builder.py's docstring) and its errors: list the raw
files under the raw root (names, sizes, times) and bring the cache in step with them, reading only what is new or
changed."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

try:  # optional: the runner image carries no analytics extra (reading or building a warehouse then fails)
    import duckdb
except ImportError:  # pragma: no cover - exercised in the runner image
    duckdb = None

from edgebench.errors import EdgebenchError
from edgebench.results.records.store import S3Config


class WarehouseError(EdgebenchError):
    """dbt build failed, or the warehouse cannot be read."""


class NoResultsError(WarehouseError):
    """The raw root holds no run manifests yet."""


def sql_string(text: str) -> str:
    """A SQL string literal ('...' with embedded quotes doubled), for the DuckDB statements that take no parameters
    (CREATE SECRET, INSTALL ... FROM, a list of file names): here and in warehouse.ensure_httpfs."""
    return "'" + text.replace("'", "''") + "'"


RAW_CACHE_SCHEMA = "edgebench_raw_cache"
# source table (analytics/models/staging/_edgebench__sources.yml) -> the raw file it reads beside each manifest
RAW_FILES = {"run_manifests": "manifest.json", "dds_samples": "dds-samples.json",
             "http_requests": "http-requests.json", "resource_samples": "resources.json"}


def _s3_secret_sql() -> str:
    """The S3 secret of analytics/profiles.yml, for reading an s3:// raw root outside dbt."""
    endpoint = os.environ.get("EDGEBENCH_S3_ENDPOINT", "http://127.0.0.1:9000")
    return ("create or replace secret edgebench_raw (type s3, "
            f"key_id {sql_string(os.environ.get('EDGEBENCH_S3_ACCESS_KEY', 'edgebench'))}, "
            f"secret {sql_string(os.environ.get('EDGEBENCH_S3_SECRET_KEY', 'edgebench-secret'))}, "
            f"region 'us-east-1', endpoint {sql_string(endpoint.split('://')[-1].rstrip('/'))}, "
            f"url_style 'path', use_ssl {'true' if endpoint.startswith('https://') else 'false'})")


def list_raw(root: str) -> dict[str, list[tuple[str, int, datetime.datetime]]]:
    """{source table: [(filename, size, last-modified)]} of the raw files under root/runs/*/*/*/, names as
    DuckDB's read_text reports them. One object listing for s3:// (sizes and times come with it), a directory walk
    with stat() for a local root: DuckDB's read_text(glob) opened every file just to report its size and time,
    which was most of an incremental build's time."""
    by_name = {name: table for table, name in RAW_FILES.items()}
    out: dict[str, list] = {table: [] for table in RAW_FILES}
    if root.startswith("s3://"):
        from minio.error import S3Error  # optional: only an s3:// root needs the MinIO client

        bucket, _, prefix = root[len("s3://"):].partition("/")
        prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        client = S3Config.from_env().client()
        try:
            for obj in client.list_objects(bucket, prefix=f"{prefix}runs/", recursive=True):
                parts = obj.object_name[len(prefix):].split("/")
                if len(parts) == 5 and parts[4] in by_name:
                    out[by_name[parts[4]]].append((f"s3://{bucket}/{obj.object_name}", obj.size, obj.last_modified))
        except (S3Error, OSError, ValueError) as exc:
            raise WarehouseError(f"cannot list the raw results under {root}: {exc}") from exc
        return out
    runs = Path(root) / "runs"
    utc = datetime.timezone.utc
    for sweep in _dirs(runs):
        for cell in _dirs(sweep):
            for run in _dirs(cell):
                with os.scandir(run) as it:
                    for e in it:
                        if e.name in by_name and e.is_file():
                            st = e.stat()
                            out[by_name[e.name]].append(
                                (e.path, st.st_size, datetime.datetime.fromtimestamp(st.st_mtime, utc)))
    return out


def _dirs(path: Path) -> list[Path]:
    try:
        with os.scandir(path) as it:
            return sorted(Path(e.path) for e in it if e.is_dir())
    except FileNotFoundError:
        return []


def sync_raw_cache(db_path: Path, root: str) -> dict:
    """Bring the raw cache in db_path in step with the raw root: list every raw file the sources read (name, size,
    last-modified; no content; list_raw), delete cached objects that are gone or whose size or time changed, read
    the new or changed ones, and list every object deleted or read in edgebench_raw_cache.changed (what the
    incremental staging models redo). Returns {source table: (objects listed, objects read)}."""
    import pyarrow as pa

    listing_by_table = list_raw(root)
    con = duckdb.connect(str(db_path))
    stats = {}
    try:
        con.execute("set enable_progress_bar = false")
        if "://" in root:
            con.execute("load httpfs")
            con.execute(_s3_secret_sql())
        con.execute(f"create schema if not exists {RAW_CACHE_SCHEMA}")
        # the objects this sync deleted or read: the incremental staging models redo exactly these
        # (analytics/macros/raw_incremental.sql)
        con.execute(f"create or replace table {RAW_CACHE_SCHEMA}.changed (filename varchar)")
        for table in RAW_FILES:
            t = f"{RAW_CACHE_SCHEMA}.{table}"
            con.execute(f"create table if not exists {t} "
                        "(filename varchar, content varchar, size bigint, last_modified timestamptz)")
            rows = listing_by_table[table]
            listed = pa.table({"filename": pa.array([r[0] for r in rows], pa.string()),
                               "size": pa.array([r[1] for r in rows], pa.int64()),
                               "last_modified": pa.array([r[2] for r in rows], pa.timestamp("us", tz="UTC"))})
            con.register("listed", listed)
            con.execute("create or replace temp table listing as select * from listed")
            con.unregister("listed")
            stale = (f"not exists (select 1 from listing l where l.filename = {t}.filename "
                     f"and l.size = {t}.size and l.last_modified = {t}.last_modified)")
            con.execute(f"insert into {RAW_CACHE_SCHEMA}.changed select filename from {t} where {stale}")
            con.execute(f"delete from {t} where {stale}")
            new = [r[0] for r in con.execute(
                f"select filename from listing l anti join {t} c on c.filename = l.filename order by 1").fetchall()]
            for i in range(0, len(new), 5000):
                files = "[" + ", ".join(sql_string(f) for f in new[i:i + 5000]) + "]"
                # size and time as listed (not as read_text reports them): the next listing compares with these
                con.execute(f"insert into {t} select r.filename, r.content, l.size, l.last_modified "
                            f"from read_text({files}) r join listing l on l.filename = r.filename")
            if new:
                con.execute(f"insert into {RAW_CACHE_SCHEMA}.changed select unnest(?::varchar[])", [new])
            stats[table] = (len(rows), len(new))
        con.execute("drop table listing")
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot read the raw results under {root}: {exc}") from exc
    finally:
        con.close()
    return stats
