"""What a sweep planned, what is stored and what is left (`edgebench status`), read from the results store: the
object store (MinIO) and the local spool (runs measured but not uploaded yet; they count as stored).

The plan is the sweep's record, sweeps/<sweep_id>/sweep.json (its parameters and cells, written when the sweep
starts: by the local runner, on Argo by expand-matrix; docs/results-layout.md); a run of a planned cell is stored once
its manifest is (ok, failed or unsupported), and left while it has none, which is what a killed sweep leaves. A sweep
without that record (or one without cells, written by an older version) shows what is stored; what is left is then
unknown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from edgebench.errors import EdgebenchError
from edgebench.plan.cells import from_json, runs_for
from edgebench.results.records.store import ResultStore

STATUSES = ("ok", "failed", "unsupported")


@dataclass
class CellStatus:
    cell_id: str
    label: str
    planned: set[str] | None = None  # the planned run ids; None: not known
    stored: dict[str, str] = field(default_factory=dict)  # run id -> status of its manifest
    spooled: int = 0  # of the stored: manifests only in the local spool (not uploaded yet)

    def count(self, status: str) -> int:
        return sum(1 for s in self.stored.values() if s == status)

    @property
    def left(self) -> int | None:
        return None if self.planned is None else len(self.planned - set(self.stored))

    def to_json(self) -> dict[str, Any]:
        return {"cell_id": self.cell_id, "label": self.label,
                "planned": None if self.planned is None else len(self.planned),
                **{s: self.count(s) for s in STATUSES}, "left": self.left, "spooled": self.spooled}


@dataclass
class SweepStatus:
    sweep_id: str
    plan: dict[str, Any] | None  # sweeps/<id>/sweep.json, None if not stored
    cells: list[CellStatus]
    remote: bool  # the object store was read (else the spool only)

    @property
    def found(self) -> bool:
        return self.plan is not None or any(c.stored for c in self.cells)

    def totals(self) -> dict[str, int | None]:
        planned = [c.planned for c in self.cells]
        return {"cells": len(self.cells),
                "planned": None if any(p is None for p in planned) else sum(len(p) for p in planned),
                **{s: sum(c.count(s) for c in self.cells) for s in STATUSES},
                "left": None if any(c.left is None for c in self.cells) else sum(c.left for c in self.cells),
                "spooled": sum(c.spooled for c in self.cells)}

    def to_json(self) -> dict[str, Any]:
        plan = self.plan or {}
        return {"sweep_id": self.sweep_id, "plan_known": bool(plan.get("cells")), "source": plan.get("source"),
                "written_at": plan.get("written_at"), "object_store_read": self.remote, "totals": self.totals(),
                "cells": [c.to_json() for c in self.cells]}


def plan_record(sweep: Any, cells: list, written_at: str) -> dict[str, Any]:
    """The sweep's record, sweeps/<sweep_id>/sweep.json: its parameters and the cells it plans (what status reads)."""
    return {"sweep_id": sweep.sweep_id, "source": sweep.source, "parameters": sweep.raw, "written_at": written_at,
            "cells": [c.to_json() for c in cells]}


def reachable(store: ResultStore) -> bool:
    """Whether the object store answers (read only: the bucket is not created)."""
    try:
        store.client.bucket_exists(store.cfg.bucket)
        return True
    except Exception:
        return False


def _get_json(store: ResultStore, key: str, remote: bool) -> dict[str, Any] | None:
    path = store.spool / key
    try:
        if path.is_file():
            return json.loads(path.read_text())
        if not remote:
            return None
        resp = store.client.get_object(store.cfg.bucket, key)
    except Exception:  # missing (NoSuchKey), or unreadable: no record
        return None
    try:
        return json.loads(resp.read())
    except ValueError:
        return None
    finally:
        resp.close()
        resp.release_conn()


def _names(store: ResultStore, prefix: str, remote: bool, recursive: bool) -> list[str]:
    if not remote:
        return []
    try:
        return [o.object_name for o in store.client.list_objects(store.cfg.bucket, prefix=prefix, recursive=recursive)]
    except Exception as exc:
        raise EdgebenchError(f"cannot list {prefix} in the object store at {store.cfg.endpoint}: {exc}") from None


def sweep_ids(store: ResultStore, remote: bool = True) -> list[str]:
    """Every sweep with a record or runs, in the object store or the spool."""
    ids = {name.rstrip("/").split("/")[1] for top in ("sweeps/", "runs/")
           for name in _names(store, top, remote, recursive=False) if name.endswith("/")}
    for top in ("sweeps", "runs"):
        if (store.spool / top).is_dir():
            ids |= {p.name for p in (store.spool / top).iterdir() if p.is_dir()}
    return sorted(ids)


def _planned(plan: dict[str, Any]) -> list[CellStatus]:
    """The plan's cells with their run ids (each cell's runs as the sweep expands them; unknown if it cannot)."""
    params = {k: v for k, v in (plan.get("parameters") or {}).items() if k != "cnis"}
    out = []
    for doc in plan.get("cells") or []:
        label = f"{doc.get('cni')}:{doc.get('cni_mode')}"
        try:
            sweep, cell = from_json({**doc, "parameters": params})
            out.append(CellStatus(cell.cell_id, cell.label, {r.run_id for r in runs_for(sweep, cell)}))
        except EdgebenchError:  # a record this version cannot expand any more: what is stored still shows
            out.append(CellStatus(doc.get("cell_id", "?"), label))
    return out


def _manifests(store: ResultStore, sweep_id: str, remote: bool) -> dict[tuple[str, str], tuple[str, bool]]:
    """(cell id, run id) -> (status, only in the spool) of every stored run of the sweep."""
    found: dict[tuple[str, str], tuple[str, bool]] = {}
    for name in _names(store, f"runs/{sweep_id}/", remote, recursive=True):
        parts = name.split("/")
        if len(parts) == 5 and parts[4] == "manifest.json":
            doc = _get_json(store, name, remote) or {}
            found[(parts[2], parts[3])] = (str(doc.get("status", "unknown")), False)
    root = store.spool / "runs" / sweep_id
    if root.is_dir():
        for path in root.glob("*/*/manifest.json"):
            try:
                status = str(json.loads(path.read_text()).get("status", "unknown"))
            except (OSError, ValueError):
                continue
            key = (path.parent.parent.name, path.parent.name)
            found[key] = (status, key not in found)  # the spool's copy is the newer one
    return found


def sweep_status(store: ResultStore, sweep_id: str, remote: bool = True) -> SweepStatus:
    plan = _get_json(store, f"sweeps/{sweep_id}/sweep.json", remote)
    cells = _planned(plan or {})
    by_id = {c.cell_id: c for c in cells}
    for (cell_id, run_id), (status, spooled) in sorted(_manifests(store, sweep_id, remote).items()):
        if cell_id not in by_id:  # stored, but not in the plan (or no plan): a cell of its own
            by_id[cell_id] = CellStatus(cell_id, _label_of(store, sweep_id, cell_id, run_id, remote))
            cells.append(by_id[cell_id])
        by_id[cell_id].stored[run_id] = status
        by_id[cell_id].spooled += spooled
    return SweepStatus(sweep_id, plan, cells, remote)


def _label_of(store: ResultStore, sweep_id: str, cell_id: str, run_id: str, remote: bool) -> str:
    doc = _get_json(store, f"runs/{sweep_id}/{cell_id}/{run_id}/manifest.json", remote) or {}
    return f"{doc.get('cni', '?')}:{doc.get('cni_mode', '?')}"

