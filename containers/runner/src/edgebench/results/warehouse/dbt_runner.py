"""Running dbt for the warehouse build (results/warehouse/builder.py): one invocation whose interpreter imports dbt ahead of
its arguments (Dbt), or a worker that keeps one interpreter, and the project dbt parsed, across the builds of a
follower (DbtWorker: `edgebench warehouse --follow`).

Importing dbt and its DuckDB adapter takes about 2 s here and reading the project about 1 s more, a large part of
a small incremental build. Dbt starts the interpreter before the raw cache is synced, so the import and the sync
overlap. DbtWorker also keeps the parsed project (dbt's Manifest) between builds and gives it to the next one, so
only the first build of a follower parses; build() starts a new worker when the analytics project changed.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from edgebench import sh
from edgebench.results.warehouse.raw_cache import WarehouseError


def _dbt_executable() -> str:
    exe = Path(sys.executable).parent / "dbt"
    if exe.exists():
        return str(exe)
    if found := sh.which("dbt"):
        return found
    raise WarehouseError(f"dbt not found next to {sys.executable} nor on PATH; run `make venv`")


def _has_dbt() -> bool:
    return importlib.util.find_spec("dbt.cli") is not None


# What the `dbt` entry point does, after importing dbt and its DuckDB adapter and then waiting for its arguments on
# stdin. An empty line (the build stopped before dbt was needed) exits at once.
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

DONE = "\x1eedgebench-dbt-done "  # the worker's end-of-invocation line: DONE + exit code

# The worker: one JSON line per invocation ({"env": {...}, "args": [...], "parse": [...], "record": path or null})
# -> dbt's output, then DONE + the exit code (0 success, 1 dbt reported failures, 2 dbt raised). The project parsed
# by the first invocation is given to the next ones (dbtRunner(manifest=...)); after every invocation the adapter
# drops its DuckDB environment, so no handle on a warehouse file outlives its build. With "record", every statement
# dbt sent to DuckDB ([connection name, sql, bindings], in execution order) is written to that path as JSON when the
# invocation succeeded: results/warehouse/replay.py runs a refresh's model statements again.
_WORKER = """\
import json, os, sys, threading
from dbt.cli.main import dbtRunner
import dbt.adapters.duckdb
from dbt.adapters.duckdb.connections import DuckDBConnectionManager
manifest = None
recorded = None
lock = threading.Lock()
add_query = DuckDBConnectionManager.add_query
def recording_add_query(self, sql, auto_begin=True, bindings=None, *args, **kwargs):
    out = add_query(self, sql, auto_begin, bindings, *args, **kwargs)
    if recorded is not None:
        with lock:
            recorded.append([self.get_thread_connection().name, sql, bindings])
    return out
DuckDBConnectionManager.add_query = recording_add_query
for line in sys.stdin:
    msg = json.loads(line)
    os.environ.update(msg["env"])
    code = 2
    recorded = [] if msg.get("record") else None
    try:
        if manifest is None:
            parsed = dbtRunner().invoke(["parse", *msg["parse"]])
            manifest = parsed.result if parsed.success else None
        res = dbtRunner(manifest=manifest).invoke(msg["args"])
        code = 0 if res.success else (2 if res.exception is not None else 1)
        if res.exception is not None:
            print(f"error: {res.exception}")
        if code == 0 and recorded is not None:
            try:
                text = json.dumps(recorded)
            except (TypeError, ValueError):
                text = None  # a bound value JSON cannot carry: no record, the next refresh runs dbt again
            if text is not None:
                with open(msg["record"], "w") as f:
                    f.write(text)
    except BaseException as exc:
        print(f"error: {exc!r}")
    finally:
        recorded = None
        DuckDBConnectionManager.close_all_connections()
    print(%r + str(code), flush=True)
""" % DONE


def _read(stream, quiet: bool, until: str | None = None) -> tuple[list[str], int | None]:
    """dbt's output lines (echoed unless quiet) up to EOF, or up to the `until` line (its code returned)."""
    lines = []
    for line in stream:
        if until is not None and line.startswith(until):
            return lines, int(line[len(until):].strip() or 2)
        lines.append(line)
        if not quiet:
            sys.stdout.write(line)
    return lines, None


class Dbt:
    """One `dbt` invocation whose interpreter starts (and imports dbt) ahead of run(). When this interpreter has no
    dbt (dbt found only on PATH), run() starts that executable then instead."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.proc = None
        if _has_dbt():
            self.proc = sh.popen([sys.executable, "-c", _DBT_PRELUDE], env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def run(self, args: list[str], quiet: bool, env: dict[str, str] | None = None,
            parse_args: list[str] | None = None, record: str | None = None) -> tuple[int, str]:
        """Run `dbt <args>`; returns the exit code and the output (also printed unless quiet). `env`, `parse_args`
        and `record` are the worker's (the environment is fixed when the interpreter starts; nothing is recorded)."""
        if self.proc is None:
            self.proc = sh.popen([_dbt_executable(), *args], env=self.env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        else:
            try:
                self.proc.stdin.write(json.dumps(args) + "\n")
                self.proc.stdin.close()
            except BrokenPipeError:  # dbt failed to import: its output says why
                pass
        lines, _ = _read(self.proc.stdout, quiet)
        return self.proc.wait(), "".join(lines)

    def close(self) -> None:
        """Stop an interpreter that was never given its arguments (or is still running after a failure)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc is not None and self.proc.stdout:
            self.proc.stdout.close()


class DbtWorker:
    """dbt invocations in one long-lived interpreter that keeps the parsed project (see the module docstring), for
    the builds of one follower of one warehouse and project. `key` names what it was started for (the project's
    hash): build() replaces a worker whose key differs. Falls back to Dbt where this interpreter has no dbt."""

    def __init__(self, env: dict[str, str], key: str):
        self.key = key
        self.proc = None
        if _has_dbt():
            self.proc = sh.popen([sys.executable, "-c", _WORKER], env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def run(self, args: list[str], quiet: bool, env: dict[str, str] | None = None,
            parse_args: list[str] | None = None, record: str | None = None) -> tuple[int, str]:
        """As Dbt.run; with `record`, the statements dbt ran are written there as JSON if it succeeded."""
        if not self.alive():
            raise WarehouseError("the dbt worker is not running (dbt could not be imported, or it died)")
        self.proc.stdin.write(json.dumps({"env": env or {}, "args": args, "parse": parse_args or [],
                                          "record": record}) + "\n")
        self.proc.stdin.flush()
        lines, code = _read(self.proc.stdout, quiet, until=DONE)
        if code is None:  # EOF: the worker died
            self.proc.wait()
            return (self.proc.returncode or 2), "".join(lines)
        return code, "".join(lines)

    def close(self) -> None:
        """Kept for the next build (see stop())."""

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.stdin.close()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc.stdout.close()
