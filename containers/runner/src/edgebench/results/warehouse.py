"""Build the DuckDB warehouse from the raw results (dbt project in analytics/) and read a summary from it.

Environment (the contract with the runner; defaults in parentheses):
  EDGEBENCH_S3_ENDPOINT (http://127.0.0.1:9000), EDGEBENCH_S3_ACCESS_KEY (edgebench),
  EDGEBENCH_S3_SECRET_KEY (edgebench-secret), EDGEBENCH_BUCKET (edgebench),
  EDGEBENCH_WAREHOUSE (<repo>/.edgebench/warehouse.duckdb), EDGEBENCH_RAW_ROOT (s3://<bucket>, or a local
  directory laid out like the bucket), EDGEBENCH_ANALYTICS_DIR (<repo>/analytics).

The build writes a temporary DuckDB file beside the warehouse and swaps it in with os.replace() only when
`dbt build` (models + data tests + unit tests) passed and found at least one run: readers such as the portal see
the old or the new warehouse, never a half-built one, and a failed build leaves the previous warehouse in place.

Incremental: the warehouse keeps a raw cache (schema edgebench_raw_cache: every manifest.json, dds-samples.json,
http-requests.json and resources.json as text, with the object's size and last-modified time). A build starts from
a copy of the previous warehouse, lists the raw root (names, sizes, times only), drops cached objects that are gone
or changed, reads only the new or changed ones (listed in edgebench_raw_cache.changed), and runs dbt on the cache:
the staging models and the per-sample models redo only the changed objects or their runs (analytics/macros/
raw_incremental.sql), every other model is rebuilt; tests/test_warehouse_incremental.py checks that the result equals
a full build. The unit tests (which test the SQL on
fixed inputs, not the data) are skipped when the analytics project is the one of the previous build, whose unit tests
passed, or one whose unit tests passed in any build on this machine (a record per project hash in
$XDG_CACHE_HOME/edgebench/dbt-unit-tests-passed/). A changed analytics project (hash of analytics/, dbt and DuckDB
versions) or `full_refresh=True` starts from an empty file.

dbt's interpreter is started when the build starts and imports dbt (about 2 s) while the raw cache syncs; it is given
its arguments once the cache is ready (_Dbt), and stopped if the build ends before.

Beside the warehouse, `.<name>.dbt/` keeps dbt's partial-parse state of the last good build (dbt then re-parses only
what changed, by its own checks) and a lock: builds of one warehouse run one at a time, in a fixed build directory
`.<name>.build/`, so the profile dbt sees does not change between builds.
"""
from __future__ import annotations

import datetime
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

from edgebench.errors import EdgebenchError


class WarehouseError(EdgebenchError):
    """dbt build failed, or the warehouse cannot be read."""


class NoResultsError(WarehouseError):
    """The raw root holds no run manifests yet."""


def analytics_dir() -> Path:
    """The dbt project: EDGEBENCH_ANALYTICS_DIR, else <repo>/analytics next to this source tree."""
    if env := os.environ.get("EDGEBENCH_ANALYTICS_DIR"):
        return Path(env).resolve()
    # containers/runner/src/edgebench/results/warehouse.py -> parents[5] is the repository root
    for candidate in (Path(__file__).resolve().parents[5] / "analytics", Path.cwd() / "analytics"):
        if (candidate / "dbt_project.yml").is_file():
            return candidate
    raise WarehouseError("cannot find the dbt project analytics/; set EDGEBENCH_ANALYTICS_DIR")


def default_warehouse_path() -> Path:
    if env := os.environ.get("EDGEBENCH_WAREHOUSE"):
        return Path(env).resolve()
    return analytics_dir().parent / ".edgebench" / "warehouse.duckdb"


def default_raw_root() -> str:
    return os.environ.get("EDGEBENCH_RAW_ROOT") or f"s3://{os.environ.get('EDGEBENCH_BUCKET', 'edgebench')}"


def ensure_httpfs() -> None:
    """Install DuckDB's httpfs extension from the duckdb-extension-httpfs wheel, offline and idempotently.

    DuckDB's extension site is not reachable here. The wheel ships the extension binary; laid out as a local
    repository (<dir>/v<version>/<platform>/httpfs.duckdb_extension) it installs with INSTALL ... FROM '<dir>'
    into ~/.duckdb/extensions, after which a plain INSTALL/LOAD httpfs (as dbt-duckdb does) stays offline.
    """
    con = duckdb.connect()
    try:
        installed = con.execute(
            "select installed from duckdb_extensions() where extension_name = 'httpfs'").fetchone()
        if not (installed and installed[0]):
            spec = importlib.util.find_spec("duckdb_extension_httpfs")
            files = sorted(Path(spec.submodule_search_locations[0]).rglob("httpfs.duckdb_extension")) \
                if spec and spec.submodule_search_locations else []
            if not files:
                raise WarehouseError("httpfs is not installed and the duckdb-extension-httpfs package "
                                     "(with httpfs.duckdb_extension) is missing; run `make venv`")
            platform = con.execute("pragma platform").fetchone()[0]
            with tempfile.TemporaryDirectory(prefix="edgebench-duckdb-ext-") as repo:
                target = Path(repo) / f"v{duckdb.__version__}" / platform / "httpfs.duckdb_extension"
                target.parent.mkdir(parents=True)
                shutil.copyfile(files[0], target)
                # INSTALL takes no prepared parameter: the repository is a quoted SQL string literal
                con.execute(f"INSTALL httpfs FROM {_sql_string(repo)}")
        con.execute("LOAD httpfs")
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot install/load DuckDB httpfs: {exc}") from exc
    finally:
        con.close()


def _sql_string(text: str) -> str:
    """A SQL string literal ('...' with embedded quotes doubled)."""
    return "'" + text.replace("'", "''") + "'"


def _dbt_executable() -> str:
    exe = Path(sys.executable).parent / "dbt"
    if exe.exists():
        return str(exe)
    if found := shutil.which("dbt"):
        return found
    raise WarehouseError(f"dbt not found next to {sys.executable} nor on PATH; run `make venv`")


# What the `dbt` entry point does, after importing dbt and its DuckDB adapter (about 2 s here, a third of an
# incremental build) and then waiting for its arguments on stdin: _Dbt starts it before the raw cache is synced, so
# the import and the sync overlap. An empty line (the build stopped before dbt was needed) exits at once.
_DBT_PRELUDE = """\
import json, sys
from dbt.cli.main import cli
import dbt.adapters.duckdb
line = sys.stdin.readline()
if not line.strip():
    sys.exit(0)
sys.argv = ["dbt", *json.loads(line)]
sys.exit(cli())
"""


class _Dbt:
    """One `dbt` invocation whose interpreter starts (and imports dbt) ahead of run(). When this interpreter has no
    dbt (dbt found only on PATH), run() starts that executable then instead."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.proc = None
        if importlib.util.find_spec("dbt.cli") is not None:
            self.proc = subprocess.Popen([sys.executable, "-c", _DBT_PRELUDE], env=env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def run(self, args: list[str], quiet: bool) -> tuple[int, str]:
        """Run `dbt <args>`; returns the exit code and the output (also printed unless quiet)."""
        if self.proc is None:
            self.proc = subprocess.Popen([_dbt_executable(), *args], env=self.env, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True)
        else:
            try:
                self.proc.stdin.write(json.dumps(args) + "\n")
                self.proc.stdin.close()
            except BrokenPipeError:  # dbt failed to import: its output says why
                pass
        lines = []
        for line in self.proc.stdout:
            lines.append(line)
            if not quiet:
                sys.stdout.write(line)
        return self.proc.wait(), "".join(lines)

    def close(self) -> None:
        """Stop an interpreter that was never given its arguments (or is still running after a failure)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc is not None and self.proc.stdout:
            self.proc.stdout.close()


def _failure_lines(output: str, limit: int = 40) -> str:
    lines = [ln.rstrip() for ln in output.splitlines() if ln.strip() and not re.fullmatch(r"[\d:]+", ln.strip())]
    for i, ln in enumerate(lines):  # dbt's own summary of what failed
        if "Completed with" in ln and "error" in ln:
            return "\n".join(lines[i:])[-6000:]
    picked = [ln for ln in lines if "rror" in ln or "FAIL" in ln]
    return "\n".join((picked or lines)[-limit:])


def _failing_rows(run_results: Path, db: Path, limit: int = 5) -> str:
    """What each failed data test found: its query rerun on the half-built warehouse, first rows (dbt itself only
    counts them). For a column_contract test these name the column, the rule and the offending values."""
    try:
        results = json.loads(run_results.read_text())["results"]
    except (OSError, ValueError, KeyError):
        return ""
    failed = [r for r in results if r.get("status") == "fail" and r.get("compiled_code")]
    if not failed:
        return ""
    out = []
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error:
        return ""
    try:
        for r in failed:
            name = r["unique_id"].split(".")[2]
            try:
                cur = con.execute(f"select * from ({r['compiled_code']}) limit {limit}")
                cols = [d[0] for d in cur.description]
                rows = cur.fetchall()
            except duckdb.Error as e:
                out.append(f"  {name}: (could not rerun: {str(e).splitlines()[0]})")
                continue
            out.append(f"  {name}:")
            out += ["    " + ", ".join(f"{c}={v}" for c, v in zip(cols, row)) for row in rows]
    finally:
        con.close()
    return "failing rows (first %d per test):\n" % limit + "\n".join(out) + "\n"


RAW_CACHE_SCHEMA = "edgebench_raw_cache"
PARTIAL_PARSE = "partial_parse.msgpack"
# source table (analytics/models/staging/_edgebench__sources.yml) -> the raw file it reads beside each manifest
RAW_FILES = {"run_manifests": "manifest.json", "dds_samples": "dds-samples.json",
             "http_requests": "http-requests.json", "resource_samples": "resources.json"}


def project_hash(project: Path | None = None) -> str:
    """A hash of the analytics project (every file but dbt's own output) and of the dbt / DuckDB versions: a build
    whose hash differs from the previous warehouse's starts from scratch."""
    project = project or analytics_dir()
    h = hashlib.sha256()
    for p in sorted(project.rglob("*")):
        rel = p.relative_to(project)
        if rel.parts[0] in ("target", "logs", "dbt_packages") or not p.is_file():
            continue
        h.update(rel.as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    for dist in ("dbt-core", "dbt-duckdb"):
        try:
            h.update(f"{dist} {importlib.metadata.version(dist)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            pass
    h.update(f"duckdb {duckdb.__version__}".encode())
    return h.hexdigest()


def _unit_tests_record(phash: str) -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "edgebench" / "dbt-unit-tests-passed" / phash


def _unit_tests_passed(phash: str) -> bool:
    """The dbt unit tests of the analytics project with this hash (which covers the project's files and the dbt and
    DuckDB versions) passed in an earlier build on this machine: they test the SQL on fixed inputs, so they would
    pass again. A changed project has another hash and runs them."""
    return _unit_tests_record(phash).exists()


def _record_unit_tests_passed(phash: str) -> None:
    try:
        f = _unit_tests_record(phash)
        f.parent.mkdir(parents=True, exist_ok=True)
        f.touch()
    except OSError:  # a read-only home only costs the next build its unit tests
        pass


def _previous_build(path: Path) -> dict | None:
    """The build info of an existing warehouse with a raw cache, else None."""
    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return None
    try:
        row = con.execute(f"select project_hash, ran_unit_tests from {RAW_CACHE_SCHEMA}.build_info").fetchone()
        return {"project_hash": row[0], "ran_unit_tests": row[1]} if row else None
    except duckdb.Error:
        return None
    finally:
        con.close()


def _s3_secret_sql() -> str:
    """The S3 secret of analytics/profiles.yml, for reading an s3:// raw root outside dbt."""
    endpoint = os.environ.get("EDGEBENCH_S3_ENDPOINT", "http://127.0.0.1:9000")
    return ("create or replace secret edgebench_raw (type s3, "
            f"key_id {_sql_string(os.environ.get('EDGEBENCH_S3_ACCESS_KEY', 'edgebench'))}, "
            f"secret {_sql_string(os.environ.get('EDGEBENCH_S3_SECRET_KEY', 'edgebench-secret'))}, "
            f"region 'us-east-1', endpoint {_sql_string(endpoint.split('://')[-1].rstrip('/'))}, "
            f"url_style 'path', use_ssl {'true' if endpoint.startswith('https://') else 'false'})")


def list_raw(root: str) -> dict[str, list[tuple[str, int, datetime.datetime]]]:
    """{source table: [(filename, size, last-modified)]} of the raw files under root/runs/*/*/*/, names as
    DuckDB's read_text reports them. One object listing for s3:// (sizes and times come with it), a directory walk
    with stat() for a local root: DuckDB's read_text(glob) opened every file just to report its size and time,
    which was most of an incremental build's time."""
    by_name = {name: table for table, name in RAW_FILES.items()}
    out: dict[str, list] = {table: [] for table in RAW_FILES}
    if root.startswith("s3://"):
        from minio.error import S3Error
        from edgebench.results.store import S3Config

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
                files = "[" + ", ".join(_sql_string(f) for f in new[i:i + 5000]) + "]"
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


def build(warehouse_path: str | os.PathLike | None = None, raw_root: str | None = None,
          quiet: bool = False, full_refresh: bool = False) -> dict:
    """Run `dbt build` for analytics/ and atomically replace the warehouse with the result.

    Starts from a copy of the previous warehouse (its raw cache: only new or changed raw objects are read; see the
    module docstring) unless there is none, the analytics project changed, or full_refresh. Returns what was done:
    {"mode": "full" | "incremental", "raw": {source table: (objects, read)}, "unit_tests": bool}.
    Raises NoResultsError when the raw root holds no manifest (an empty warehouse would only hide a wrong
    bucket/endpoint/root; the previous warehouse is kept), WarehouseError when dbt fails (with dbt's failing lines).
    """
    ensure_httpfs()
    project = analytics_dir()
    target = Path(warehouse_path).resolve() if warehouse_path else default_warehouse_path()
    root = raw_root or default_raw_root()
    if "://" not in root:  # a local directory laid out like the bucket
        root = str(Path(root).resolve())
    target.parent.mkdir(parents=True, exist_ok=True)

    work = tempfile.mkdtemp(prefix="edgebench-dbt-")  # dbt target/ and logs/
    cache = target.parent / f".{target.name}.dbt"  # dbt's partial-parse state between builds, and the build lock
    cache.mkdir(exist_ok=True)
    lock = open(cache / "lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build of a warehouse at a time: the next one waits
        # dbt names the DuckDB catalog after the file, so the temporary file keeps the final name and lives in a
        # sibling directory (same filesystem, so os.replace() is an atomic rename). The directory's name is fixed
        # (the lock makes that safe): the profile, and with it dbt's partial parsing, stays the same between builds.
        build_dir = target.parent / f".{target.name}.build"
        shutil.rmtree(build_dir, ignore_errors=True)  # left by a killed build
        build_dir.mkdir()
        dbt = None
        try:
            tmp_db = build_dir / target.name
            env = {**os.environ,
                   "EDGEBENCH_WAREHOUSE": str(tmp_db),
                   "EDGEBENCH_RAW_ROOT": root,
                   "EDGEBENCH_RAW_CACHE": "1",
                   "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
                   "DBT_USE_COLORS": "false",
                   "DBT_TARGET_PATH": str(Path(work) / "target"),  # a fresh target/ (compiled SQL) per build
                   "DBT_LOG_PATH": str(Path(work) / "logs")}
            dbt = _Dbt(env)  # imports dbt while the raw cache syncs
            phash = project_hash(project)
            previous = None if full_refresh else _previous_build(target)
            incremental = previous is not None and previous["project_hash"] == phash
            if incremental:  # the previous warehouse was checkpointed before it was swapped in: one file, no WAL
                shutil.copyfile(target, tmp_db)
            raw = sync_raw_cache(tmp_db, root)
            if raw["run_manifests"][0] == 0:
                raise NoResultsError(_no_results(root))
            # unit tests test the SQL on fixed inputs, not the data: skipped if they passed for this very project
            # already (the previous build of this warehouse, or any build on this machine: _unit_tests_passed)
            run_unit_tests = not (incremental and previous["ran_unit_tests"] or _unit_tests_passed(phash))
            if (cache / PARTIAL_PARSE).exists():  # dbt re-parses only what changed since (its own checks)
                (Path(work) / "target").mkdir(exist_ok=True)
                shutil.copyfile(cache / PARTIAL_PARSE, Path(work) / "target" / PARTIAL_PARSE)
            args = ["build", "--project-dir", str(project), "--profiles-dir", str(project)]
            if not run_unit_tests:
                args += ["--exclude-resource-type", "unit_test"]
            code, text = dbt.run(args, quiet)
            if code != 0:
                if "No files found that match the pattern" in text:
                    raise NoResultsError(_no_results(root))
                rows = _failing_rows(Path(work) / "target" / "run_results.json", tmp_db)
                kept = target.parent / "dbt-last-failure"  # logs + compiled SQL of the failed build
                shutil.rmtree(kept, ignore_errors=True)
                shutil.move(work, kept)
                raise WarehouseError(f"dbt build failed (exit {code}):\n"
                                     f"{_failure_lines(text).replace(work, str(kept))}\n{rows}"
                                     f"(dbt logs and compiled SQL: {kept})")
            con = duckdb.connect(str(tmp_db))
            try:
                n_manifests = con.execute("select count(*) from stg_edgebench__runs").fetchone()[0]
                con.execute(f"create or replace table {RAW_CACHE_SCHEMA}.build_info as select ? as project_hash, "
                            "true as ran_unit_tests, ? as mode, now() as built_at",
                            [phash, "incremental" if incremental else "full"])
                con.execute("checkpoint")
            finally:
                con.close()
            if n_manifests == 0:
                raise NoResultsError(_no_results(root))
            stale_wal = target.with_name(target.name + ".wal")
            if stale_wal.exists():  # a WAL of the file being replaced must not be replayed onto the new one
                stale_wal.unlink()
            os.replace(tmp_db, target)
            if run_unit_tests:
                _record_unit_tests_passed(phash)
            parsed = Path(work) / "target" / PARTIAL_PARSE
            if parsed.exists():
                shutil.copyfile(parsed, cache / PARTIAL_PARSE)
        finally:
            if dbt is not None:
                dbt.close()
            shutil.rmtree(build_dir, ignore_errors=True)
    finally:
        lock.close()
        shutil.rmtree(work, ignore_errors=True)
    return {"mode": "incremental" if incremental else "full", "raw": raw, "unit_tests": run_unit_tests}


def _no_results(root: str) -> str:
    return (f"no results yet: no runs/*/*/*/manifest.json under {root}. "
            "Run `make sweep` first (the warehouse was left unchanged).")


_SUMMARY_KEYS = ("substrate", "distribution", "netem_scenario", "tuning_profile", "protocol", "path", "placement",
                 "length_bytes", "cni", "cni_mode")

# Run counts by status from fct_iperf3_runs, figures from the cmp_iperf3_vs_host mart (no second computation).
def _verdict(significant: str, better: str, is_host: str, host_value: str) -> str:
    """SQL for a comparison's verdict from the mart's significance flag (95% intervals of CNI and host do not
    overlap): baseline / better / worse / indistinguishable; 'no baseline' without a host run under the same
    conditions, 'n < 2' when either side has no interval."""
    return (f"case when {is_host} then 'baseline' when {host_value} is null then 'no baseline' "
            f"when {significant} is null then 'n < 2' "
            f"when not {significant} then 'indistinguishable' when {better} then 'better' else 'worse' end as verdict")


_SUMMARY_SQL = f"""
with status as (
    select {', '.join(_SUMMARY_KEYS)},
           count(*) filter (where status = 'ok')          as n_ok,
           count(*) filter (where status = 'failed')      as n_failed,
           count(*) filter (where status = 'unsupported') as n_unsupported,
           any_value(error) filter (where status <> 'ok') as error
    from fct_iperf3_runs
    group by all
)
select status.*, o.throughput_mbps, o.throughput_ci95_mbps, o.host_throughput_mbps, o.overhead_pct,
       o.is_significant,
       {_verdict("o.is_significant", "o.throughput_mbps > o.host_throughput_mbps", "status.cni = 'host'",
                "o.host_throughput_mbps")}
from status left join cmp_iperf3_vs_host as o using ({', '.join(_SUMMARY_KEYS)})
order by substrate, distribution, netem_scenario, tuning_profile, protocol, path, placement, length_bytes,
         cni = 'host' desc, cni, cni_mode
"""


def iperf3_summary(warehouse_path: str | os.PathLike | None = None) -> list[dict]:
    """One row per configuration and CNI mode: run counts by status (with an error text when some failed or are
    unsupported) and, from the cmp_iperf3_vs_host mart, mean throughput, its 95% CI, the host baseline and
    overhead_pct. For the table printed after a sweep."""
    return _query(_SUMMARY_SQL, warehouse_path)


def _query(sql: str, warehouse_path: str | os.PathLike | None) -> list[dict]:
    return _query_params(sql, [], warehouse_path)


def dds_summary(warehouse_path: str | os.PathLike | None = None) -> list[dict]:
    """DDS latency per configuration and CNI mode from cmp_dds_vs_host (p50/p90/p99 and the p90 overhead vs
    host, Table II of seed 000), for the table printed after a sweep."""
    return _query(f"""
        select substrate, distribution, netem_scenario, tuning_profile, reliability, transport, placement, security,
               length_bytes, cni, cni_mode, n_runs, latency_p50_us, latency_p90_us, latency_p90_ci95_us,
               latency_p99_us, latency_p90_overhead_pct,
               {_verdict("is_significant", "latency_p90_us < host_latency_p90_us", "cni = 'host'", "host_latency_p90_us")}
        from cmp_dds_vs_host where dds_mode = 'latency'
        order by all""", warehouse_path)


def http_summary(warehouse_path: str | os.PathLike | None = None) -> list[dict]:
    """HTTP response times per configuration and CNI mode from cmp_http_vs_host."""
    return _query("""
        select substrate, distribution, netem_scenario, tuning_profile, service, path, placement, length_bytes,
               cni, cni_mode, n_runs, n_requests, n_errors, response_p50_ms, response_p50_ci95_ms, response_p90_ms,
               response_p50_overhead_pct,
               coalesce(response_p50_verdict, case when host_response_p50_ms is null then 'no baseline'
                                                   else 'n < 2' end) as verdict
        from cmp_http_vs_host
        order by all""", warehouse_path)


def intercluster_summary(warehouse_path: str | os.PathLike | None = None) -> list[dict]:
    """HTTP response time across each inter-cluster tool against the one-cluster `none` runs from
    cmp_intercluster_vs_none, only for conditions under which some tool was measured: n runs / requests, the mean
    of per-run medians with its 95% CI, the difference to none with its 95% CI, the verdict (baseline / better /
    worse / indistinguishable / below resolution / no baseline / n < 2) and the share of requests beyond the two
    limits. Rows in display order: conditions, netem scenario (catalog order), the none baseline first."""
    from edgebench.plan.netem import display_order

    rows = _query("""
        select substrate, distribution, cni, cni_mode, tuning_profile, service, path, placement, length_bytes,
               netem_scenario, intercluster, intercluster_implementation, is_emulated, intercluster_model, is_baseline,
               n_runs, n_requests, n_errors, request_median_ms, request_p95_ms, response_p50_ms,
               response_p50_ci95_ms, none_n_runs, response_p50_diff_ms, response_p50_diff_ci95_ms,
               response_p50_diff_pct, response_p50_diff_ci95_pct, verdict, vehicle_assist_limit_ms,
               share_requests_over_vehicle_assist, share_runs_median_over_vehicle_assist,
               remote_maintenance_limit_ms, share_requests_over_remote_maintenance,
               share_runs_median_over_remote_maintenance
        from cmp_intercluster_vs_none
        where n_tools > 0 or not is_baseline""", warehouse_path)
    order = {n: i for i, n in enumerate(display_order(r["netem_scenario"] for r in rows))}
    return sorted(rows, key=lambda r: (r["substrate"], r["distribution"], r["cni"], r["cni_mode"],
                                       r["tuning_profile"], r["service"], r["path"], r["placement"],
                                       r["length_bytes"], order[r["netem_scenario"]], not r["is_baseline"],
                                       r["intercluster"], r["intercluster_implementation"]))


VERDICT_ORDER = {"worse": 0, "better": 1, "indistinguishable": 2, "n < 2": 3}


def version_regressions(warehouse_path: str | os.PathLike | None = None, cni: str | None = None) -> list[dict]:
    """The CNI version regression cards from cmp_cni_version_regressions: one dict per card (substrate, cni, cni_mode,
    previous_version, new_version, n_versions, version_source, ..., card_n_* counts) with its comparisons under
    "rows" (one per configuration x metric: n, means, diff with its 95% interval, diff_pct, verdict), worse rows
    first. Cards with worse rows come first. `cni` keeps the cards of one CNI ("calico") or mode ("calico:vxlan").
    Raises WarehouseError when there is no warehouse or it predates the mart."""
    where, params = "", []
    if cni:
        name, _, mode = cni.partition(":")
        where = "where cni = ?" + (" and cni_mode = ?" if mode else "")
        params = [name, mode] if mode else [name]
    rows = _query_params(f"select * from cmp_cni_version_regressions {where}", params, warehouse_path)
    card_keys = ("substrate", "cni", "cni_mode", "datapath", "previous_version", "new_version", "n_versions",
                 "version_source", "previous_version_source", "new_version_source", "new_trigger_source",
                 "new_trigger_previous_version", "new_triggered_at", "card_n_comparisons", "card_n_worse",
                 "card_n_better", "card_n_indistinguishable", "card_n_too_few_runs", "card_expected_false_alarms")
    cards: dict[tuple, dict] = {}
    for r in rows:
        card = cards.setdefault((r["substrate"], r["cni"], r["cni_mode"]),
                                {**{k: r[k] for k in card_keys}, "rows": []})
        card["rows"].append({"config": config_label(r), **{k: v for k, v in r.items() if k not in card_keys}})
    for card in cards.values():
        card["rows"].sort(key=lambda r: (VERDICT_ORDER.get(r["verdict"], 9), r["config"], r["metric"]))
    return sorted(cards.values(), key=lambda c: (-c["card_n_worse"], c["substrate"], c["cni"], c["cni_mode"]))


# variant parameters a card's configuration line names only when they differ from these (duration and request
# counts never: they are part of the configuration key, not of what a reader compares)
_VARIANT_DEFAULTS = {"reliability": "reliable", "transport": "unicast", "subscribers": "1", "security": "none",
                     "rate": "inf", "connections": "1"}
_VARIANT_HIDDEN = ("mode", "service", "duration_s", "requests")


def config_label(r: dict) -> str:
    """A comparison configuration as one line: workload, its mode / service / protocol, path, placement, length, the
    parameters that are not the defaults, and the conditions that are not (distribution, netem, tuning, tool)."""
    variant = dict(kv.split("=", 1) for kv in (r.get("variant") or "").split() if "=" in kv)
    workload = r.get("workload") or "?"
    kind = {"dds": variant.get("mode"), "http": variant.get("service")}.get(workload, r.get("protocol"))
    parts = [workload, kind, r.get("path"), r.get("placement")]
    if (r.get("length_bytes") if r.get("length_bytes") is not None else -1) >= 0:
        parts.append(f"{r['length_bytes']} B")
    parts += [f"{k} {v}" for k, v in variant.items()
              if k not in _VARIANT_HIDDEN and _VARIANT_DEFAULTS.get(k) != v]
    for col, default in (("distribution", "none"), ("netem_scenario", "none"), ("tuning_profile", "default_settings"),
                         ("intercluster", "none")):
        if r.get(col) not in (None, default):
            parts.append(f"{col.split('_')[0]}={r[col]}")
    return " ".join(str(p) for p in parts if p)


def _query_params(sql: str, params: list, warehouse_path: str | os.PathLike | None) -> list[dict]:
    path = Path(warehouse_path) if warehouse_path else default_warehouse_path()
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path}; run `make sweep`")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot open warehouse {path}: {exc}") from exc
    try:
        cur = con.execute(sql, params)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]
    except duckdb.CatalogException as exc:
        raise WarehouseError(f"the warehouse at {path} has no {_missing_table(str(exc))} (built by an older edgebench);"
                             " rebuild it with `make warehouse`") from exc
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot read {path}: {exc}") from exc
    finally:
        con.close()


def _missing_table(message: str) -> str:
    m = re.search(r"Table with name (\w+) does not exist", message)
    return f"table {m.group(1)}" if m else "table it needs"
