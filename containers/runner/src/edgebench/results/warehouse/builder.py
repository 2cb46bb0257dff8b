"""Build the DuckDB warehouse from the raw results (dbt project in analytics/); results/report/marts/summaries.py reads it.

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
raw_incremental.sql), every other model is rebuilt; tests/warehouse/test_warehouse_incremental.py checks that the result equals
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

import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import yaml

try:  # optional: the runner image carries no analytics extra (reading or building a warehouse then fails)
    import duckdb
except ImportError:  # pragma: no cover - exercised in the runner image
    duckdb = None

from edgebench.results.report.verdict import CPU_HEADROOM_FLOOR_PCT, MARGINS_PCT, POOL_PRIOR_DF
from edgebench.results.warehouse.dbt_runner import Dbt, DbtWorker
from edgebench.results.warehouse.raw_cache import (RAW_CACHE_SCHEMA, RAW_FILES, NoResultsError, WarehouseError,
                                                   list_raw, sql_string, sync_raw_cache)
from edgebench.results.warehouse.replay import Plan, ReplayError, read_record

__all__ = ["DbtSlot", "NoResultsError", "RAW_CACHE_SCHEMA", "RAW_FILES", "WarehouseError", "analytics_dir", "build",
           "check_rule", "default_raw_root", "default_warehouse_path", "ensure_httpfs", "list_raw", "project_hash",
           "sync_raw_cache"]


PARTIAL_PARSE = "partial_parse.msgpack"  # dbt's partial-parse state, kept beside the warehouse between builds


def analytics_dir() -> Path:
    """The dbt project: EDGEBENCH_ANALYTICS_DIR, else <repo>/analytics next to this source tree."""
    if env := os.environ.get("EDGEBENCH_ANALYTICS_DIR"):
        return Path(env).resolve()
    # containers/runner/src/edgebench/results/warehouse/builder.py -> parents[6] is the repository root
    for candidate in (Path(__file__).resolve().parents[6] / "analytics", Path.cwd() / "analytics"):
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
                con.execute(f"INSTALL httpfs FROM {sql_string(repo)}")
        con.execute("LOAD httpfs")
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot install/load DuckDB httpfs: {exc}") from exc
    finally:
        con.close()


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


class DbtSlot:
    """Where a follower keeps its dbt worker, and the plan of its refreshes, between builds (build(dbt_slot=...));
    stop() ends the worker."""

    def __init__(self) -> None:
        self.worker: DbtWorker | None = None
        self.plan: Plan | None = None  # the statements of the last incremental build, replayed by the next refreshes

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None


def check_rule(project: Path) -> None:
    """The one verdict rule's numbers are defined once, in results/report/verdict.py (MARGINS_PCT,
    CPU_HEADROOM_FLOOR_PCT, POOL_PRIOR_DF); the dbt project's vars must hold the same before a build, else one WarehouseError naming
    both (nothing is built). Checked on every build, so a warehouse is never judged by other margins than the CLI's."""
    vars_ = (yaml.safe_load((project / "dbt_project.yml").read_text()) or {}).get("vars") or {}
    want = {"verdict_margins_pct": MARGINS_PCT, "cpu_headroom_floor_pct": CPU_HEADROOM_FLOOR_PCT,
            "verdict_pool_prior_df": POOL_PRIOR_DF}
    got = {k: vars_.get(k) for k in want}
    if got != want:
        raise WarehouseError(f"{project / 'dbt_project.yml'} vars {got} differ from the one verdict rule's "
                             f"(results/report/verdict.py): {want}; make them equal (nothing was built)")


def build(warehouse_path: str | os.PathLike | None = None, raw_root: str | None = None,
          quiet: bool = False, full_refresh: bool = False, checked: bool = True,
          dbt_slot: DbtSlot | None = None) -> dict:
    """Run `dbt build` for analytics/ and atomically replace the warehouse with the result.

    Starts from a copy of the previous warehouse (its raw cache: only new or changed raw objects are read; see the
    module docstring) unless there is none, the analytics project changed, or full_refresh. Returns what was done:
    {"mode": "full" | "incremental", "raw": {source table: (objects, read)}, "unit_tests": bool, "checked": bool}.

    checked=False (a follower's refresh while runs land): an incremental build runs the models only, not the data
    tests, the unit tests or the seeds (the seeds are the previous build's: the project is the same), and with 4
    threads; build_info.checked says so, and the follower checks the same data once the store is quiet. A full
    build is always checked. dbt_slot: keep dbt's interpreter and parsed project for the next build (DbtSlot), and
    the statements of its incremental builds: a later refresh of the same project runs them again without dbt
    (results/warehouse/replay.py; "replayed" in the result says so).
    Raises NoResultsError when the raw root holds no manifest (an empty warehouse would only hide a wrong
    bucket/endpoint/root; the previous warehouse is kept), WarehouseError when dbt fails (with dbt's failing lines).
    """
    ensure_httpfs()
    project = analytics_dir()
    check_rule(project)
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
            phash = project_hash(project)
            dbt = _dbt_for(env, phash, dbt_slot)  # imports dbt while the raw cache syncs
            previous = None if full_refresh else _previous_build(target)
            incremental = previous is not None and previous["project_hash"] == phash
            checked = checked or not incremental
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
            if not run_unit_tests or not checked:
                args += ["--exclude-resource-type", "unit_test"]
            if not checked:
                args += ["--exclude-resource-type", "test", "--exclude-resource-type", "seed", "--threads", "4"]
            plan = dbt_slot.plan if dbt_slot is not None and incremental and not checked else None
            replayed = False
            if plan is not None and plan.key == phash:  # a plan of another project is replaced by the next record
                try:  # the statements dbt ran for the models of an earlier refresh (results/warehouse/replay.py)
                    plan.replay(tmp_db)
                    replayed = True
                except ReplayError:
                    dbt_slot.plan = None  # this refresh runs dbt, which records a new plan
            record = str(Path(work) / "record.json") if dbt_slot is not None and incremental else None
            code, text = (0, "") if replayed else dbt.run(args, quiet, env=env, parse_args=args[1:5], record=record)
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
            if record is not None and not replayed and (got := read_record(Path(record), phash)) is not None:
                dbt_slot.plan = got
            con = duckdb.connect(str(tmp_db))
            try:
                n_manifests = con.execute("select count(*) from stg_edgebench__runs").fetchone()[0]
                con.execute(f"create or replace table {RAW_CACHE_SCHEMA}.build_info as select ? as project_hash, "
                            "true as ran_unit_tests, ? as mode, ? as checked, now() as built_at",
                            [phash, "incremental" if incremental else "full", checked])
                con.execute("checkpoint")
            finally:
                con.close()
            if n_manifests == 0:
                raise NoResultsError(_no_results(root))
            stale_wal = target.with_name(target.name + ".wal")
            if stale_wal.exists():  # a WAL of the file being replaced must not be replayed onto the new one
                stale_wal.unlink()
            os.replace(tmp_db, target)
            if run_unit_tests and checked:
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
    return {"mode": "incremental" if incremental else "full", "raw": raw,
            "unit_tests": run_unit_tests and checked, "checked": checked, "replayed": replayed}


def _dbt_for(env: dict[str, str], phash: str, slot: DbtSlot | None) -> Dbt | DbtWorker:
    """A one-shot dbt, or the slot's worker (a new one when there is none, it died, or the project changed)."""
    if slot is None:
        return Dbt(env)
    if slot.worker is None or slot.worker.key != phash or not slot.worker.alive():
        slot.stop()
        slot.worker = DbtWorker(env, phash)
        if not slot.worker.alive():  # no dbt in this interpreter: one-shot invocations of the dbt on PATH
            slot.worker = None
            return Dbt(env)
    return slot.worker


def _no_results(root: str) -> str:
    return (f"no results yet: no runs/*/*/*/manifest.json under {root}. "
            "Run `make sweep` first (the warehouse was left unchanged).")
