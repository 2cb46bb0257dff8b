"""`edgebench warehouse --follow`: keep the warehouse in step with a running sweep.

Every `interval` seconds the raw root is listed (names, sizes and times only: raw_cache.list_raw). When anything
changed since the last build, the warehouse is rebuilt incrementally (builder.build: only the new or changed raw
files are read, the previous warehouse is swapped out atomically, so the portal never sees a half-built one). While
runs land, a rebuild runs the models only (checked=False: no data tests, no seeds, 4 threads) in one dbt
interpreter that keeps the parsed project between builds (builder.DbtSlot), and from the second refresh on the
statements dbt ran for the models of the previous one are run again without dbt (results/warehouse/replay.py: under 2 s
where dbt took about 7 s); once nothing landed for CHECK_AFTER_S, the same data is built again with its data
tests, and a failure is reported. Next to the warehouse it writes <warehouse>.live.json: when it last looked and
built, and every sweep still in progress in the object store (its runs stored / planned, elapsed time and an ETA
from the pace so far), which the portal's overview shows with a progress bar. A failed build is reported and retried at the next change; the last good
warehouse stays.

Runs are visible before the rebuild: the live file also lists the newest runs stored since the follower started
(`just_in`: each run's cell, workload variant, status and headline figure, read from its manifest as soon as the
listing shows it, and whether the warehouse holds it yet). It is written before the rebuild starts, so the portal
shows a stored run within one look (`interval`), and its comparisons once the rebuild is swapped in.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from edgebench import workloads
from edgebench.errors import EdgebenchError
from edgebench.results.records.store import ResultStore, S3Config
from edgebench.results.report import sweep_status
from edgebench.results.warehouse import builder, raw_cache

Log = Callable[[str], None]


def live_path(warehouse_path: Path) -> Path:
    return warehouse_path.with_name(warehouse_path.name + ".live.json")


JUST_IN = 30  # the newest stored runs the live file lists
CHECK_AFTER_S = 60.0  # a refresh without data tests is checked after this long without new runs (or no sweep running)


def fingerprint(root: str, listing: dict | None = None) -> str:
    """A digest of the raw files' names, sizes and times: it changes when a run is stored, changed or removed."""
    h = hashlib.sha256()
    for table, rows in sorted((listing if listing is not None else raw_cache.list_raw(root)).items()):
        h.update(table.encode())
        for name, size, modified in sorted(rows):
            h.update(f"{name}\0{size}\0{modified}\n".encode())
    return h.hexdigest()


def _read(name: str) -> dict[str, Any]:
    """A raw object as list_raw names it (s3://bucket/key or a local path), parsed as JSON."""
    if name.startswith("s3://"):
        bucket, _, key = name[len("s3://"):].partition("/")
        resp = S3Config.from_env().client().get_object(bucket, key)
        try:
            return json.loads(resp.read())
        finally:
            resp.close()
            resp.release_conn()
    return json.loads(Path(name).read_text())


def just_in_row(doc: dict[str, Any], seen_at: dt.datetime) -> dict[str, Any]:
    """What the portal lists of a run just stored: where, what, and its headline figure (or why it has none)."""
    w = workloads.REGISTRY.get(doc.get("workload"))
    ok = doc.get("status") == "ok"
    try:
        head = w.headline(doc.get("metrics") or {}) if (w and ok) else (doc.get("error") or doc.get("status") or "")
    except (KeyError, TypeError, ValueError):
        head = "(no headline figure)"
    what = " ".join(str(x) for x in (doc.get("protocol"), doc.get("path"), doc.get("placement")) if x)
    if doc.get("length_bytes") is not None:
        what += f" {doc['length_bytes']} B"
    return {"sweep_id": doc.get("sweep_id"), "run_id": doc.get("run_id"),
            "cell": f"{doc.get('cni')}:{doc.get('cni_mode')}", "substrate": doc.get("substrate"),
            "workload": doc.get("workload"), "variant": what.strip(), "repetition": doc.get("repetition"),
            "status": doc.get("status"), "headline": str(head)[:200], "finished_at": doc.get("finished_at"),
            "seen_at": seen_at, "in_warehouse": False}


def _parse_time(text: str | None) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def progress(status: sweep_status.SweepStatus, now: dt.datetime) -> dict[str, Any] | None:
    """A sweep in progress (planned runs not all stored) as the portal shows it; None when done or unplanned."""
    t = status.totals()
    if not t["planned"] or not t["left"]:
        return None
    done = t["planned"] - t["left"]
    started = _parse_time((status.plan or {}).get("written_at"))
    elapsed = (now - started).total_seconds() if started else None
    eta = elapsed / done * t["left"] if elapsed and done else None
    cells_done = sum(1 for c in status.cells if c.left == 0)
    return {"sweep_id": status.sweep_id, "runs_done": done, "runs_planned": t["planned"], "failed": t["failed"],
            "unsupported": t["unsupported"], "cells_done": cells_done, "cells": len(status.cells),
            "elapsed_s": elapsed, "eta_s": eta}


def in_progress(store: ResultStore, now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Every sweep of the object store that has a plan and runs still to store."""
    now = now or dt.datetime.now(dt.timezone.utc)
    out = []
    for sid in sweep_status.sweep_ids(store):
        p = progress(sweep_status.sweep_status(store, sid), now)
        if p:
            out.append(p)
    return out


def write_live(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True, default=str))
    os.replace(tmp, path)


def follow(warehouse_path: Path | None = None, raw_root: str | None = None, interval: float = 2.0,
           log: Log = print, stop: Callable[[], bool] = lambda: False, store: ResultStore | None = None) -> int:
    """Rebuild the warehouse whenever the raw root changes, until stop() (or Ctrl-C); returns the builds made."""
    target = Path(warehouse_path or builder.default_warehouse_path())
    root = raw_root or builder.default_raw_root()
    remote = "://" in root
    store = store or (ResultStore() if remote else None)
    log(f"following {root}: looked at every {interval:g} s; the warehouse {target} is rebuilt when runs were stored "
        "(Ctrl-C stops)")
    slot = builder.DbtSlot()  # one dbt interpreter, and the project it parsed, for all the builds
    died: Exception | None = None
    try:
        return _loop(target, root, interval, log, stop, store, slot)
    except Exception as exc:
        died = exc
        raise
    finally:
        slot.stop()
        if died is None:  # stopped by the user (or Ctrl-C): nobody follows, the portal shows no progress
            live_path(target).unlink(missing_ok=True)
        else:  # died: the portal says it is not following any more, and why
            write_live(live_path(target), {"updated_at": dt.datetime.now(dt.timezone.utc), "interval_s": interval,
                                           "raw_root": root, "sweeps": [], "just_in": [],
                                           "stopped": f"{type(died).__name__}: {died}".splitlines()[0]})


def _loop(target: Path, root: str, interval: float, log: Log, stop: Callable[[], bool],
          store: ResultStore | None, slot: "builder.DbtSlot") -> int:
    last, builds, built_at, last_error = None, 0, None, None
    unchecked = False  # the warehouse swapped in last was built without its data tests (runs were landing)
    changed_at = time.monotonic()  # when the store last changed
    seen: set[str] | None = None  # the manifests listed so far; those of the first look are not "just in"
    just_in: list[dict[str, Any]] = []

    def live(sweeps: list) -> None:
        write_live(live_path(target), {"updated_at": dt.datetime.now(dt.timezone.utc), "built_at": built_at,
                                       "interval_s": interval, "raw_root": root, "error": last_error,
                                       "sweeps": sweeps, "just_in": just_in})

    sweeps: list = []

    def look() -> None:
        nonlocal last, builds, built_at, last_error, unchecked, changed_at, seen, sweeps
        try:
            listing = raw_cache.list_raw(root)
            now_fp = fingerprint(root, listing)
        except Exception as exc:  # the store is down for a moment: say so and keep following
            listing, now_fp, last_error = None, last, f"cannot list {root}: {exc}"
        if listing is not None:
            manifests = sorted(listing.get("run_manifests", []), key=lambda r: r[2])
            names = {r[0] for r in manifests}
            new = [] if seen is None else [r[0] for r in manifests if r[0] not in seen]
            seen = names
            now = dt.datetime.now(dt.timezone.utc)
            for name in new[-JUST_IN:]:
                try:
                    just_in.insert(0, just_in_row(_read(name), now))
                except Exception as exc:  # a manifest that cannot be read now is read by the rebuild anyway
                    log(f"cannot read {name} yet: {exc}")
            del just_in[JUST_IN:]
            if new:
                live(sweeps)  # the new runs are visible now, before the rebuild
        # runs landed: a refresh of the models only. The same data is checked (the data tests run) once nothing
        # landed for CHECK_AFTER_S: not between two cells of a running sweep, where it would delay the next refresh
        if now_fp != last:
            changed_at = time.monotonic()
        check = unchecked and now_fp == last and time.monotonic() - changed_at >= CHECK_AFTER_S
        if now_fp != last or check:
            try:
                t0 = time.monotonic()
                res = builder.build(warehouse_path=target, raw_root=root, quiet=True, checked=check,
                                      dbt_slot=slot)
                unchecked = not res["checked"]
                builds, built_at, last_error = builds + 1, dt.datetime.now(dt.timezone.utc), None
                n_read = sum(r[1] for r in res["raw"].values())
                how = ("data tests run" if res["checked"] else
                       ("models only, dbt's SQL replayed" if res.get("replayed") else "models only, by dbt")
                       + ", checked once runs stop landing")
                log(f"{built_at:%H:%M:%S} warehouse rebuilt ({res['mode']}, {how}, "
                    f"{n_read} raw file(s) read) in {time.monotonic() - t0:.1f} s")
                last = now_fp
                for row in just_in:
                    row["in_warehouse"] = True  # every run listed before the build started is in it
            except builder.NoResultsError:
                last = now_fp
            except EdgebenchError as exc:  # the build or its data tests failed: retried at the next change
                last, last_error, unchecked = now_fp, str(exc).splitlines()[0], False
                log((f"the data tests failed on the runs the warehouse shows (built from them without the tests): "
                     if check else "warehouse build failed (the previous warehouse is kept; retried at the next "
                     "change): ") + last_error)
        if store is not None:
            try:
                sweeps = in_progress(store)
            except Exception as exc:  # the store is down for a moment: the sweeps shown stay the last known
                last_error = f"cannot read the sweeps in progress: {(str(exc).splitlines() or [type(exc).__name__])[0]}"
        live(sweeps)

    while not stop():
        started = time.monotonic()
        try:
            look()
        except Exception as exc:  # anything else a look raised (the store went away mid-build, say): said in the
            # live file and the log; the last good warehouse stays, and the next look tries again
            last_error = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
            log(f"follower: {last_error} (the previous warehouse is kept; trying again in {interval:g} s)")
            live(sweeps)
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
    return builds
