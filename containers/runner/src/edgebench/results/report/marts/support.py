"""The functional support matrix (fct_cni_support, issue 47) for `edgebench report --support` and the portal's Support
page: one row per CNI mode of the catalog (every mode it knows, also the ones never run), one column per node kind,
each cell `works` (an ok run exists: n and the sweeps), `fails` (runs exist, none ok: the latest error),
`unsupported` (the recorded reason) or `never tried`.

The node kinds (fct_runs.node_kind): a namespace node of the local lab (this machine's kernel, shared), an x86 VM node
(Debian's stock kernel, emulated CPU), an arm64 VM node (a Raspberry Pi stand-in, emulated CPU), a lab of real
machines (a Pi lab), and the namespace testbed. A cell that mixed kinds (a VM node joined to the lab's namespace
nodes) is filed under its VM kind and names the kinds of its nodes. Runs on emulated CPUs are here only: every
performance comparison leaves them out (stg_edgebench__runs makes them invalid)."""

from __future__ import annotations

from typing import Any

from edgebench.plan import catalog
from edgebench.results.report.marts import Fetch, fetcher

# column -> heading, in the matrix's order; kinds found in the runs beyond these (kind) follow
NODE_KINDS = {
    "namespace": "namespace node (shared kernel)",
    "vm-x86": "x86 VM (stock kernel)",
    "vm-arm64": "arm64 VM",
    "machine": "real machine lab",
    "testbed": "testbed",
}
NEVER = "never tried"
SUPPORT_SQL = """
select cni, cni_mode, node_kind, support, n_runs, n_ok, n_failed, n_unsupported, ok_sweeps, sweeps, labs, node_kinds,
       node_arches, node_kernels, cpu_emulated, reason, reason_sweep_id, reason_nodes, last_finished_at
from fct_cni_support
order by cni, cni_mode, node_kind
"""


def catalog_modes() -> list[tuple[str, str]]:
    """Every (cni, mode) of the catalog (plan/catalog/cnis.yaml), in its order."""
    return [(name, mode) for name, info in catalog.cnis().items() for mode in info["modes"]]


def _short(text: str | None, limit: int = 160) -> str:
    line = " ".join((text or "").split())
    if line.lower().startswith("unsupported: "):
        line = line[len("unsupported: "):]
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _sweeps(ids: str | None, shown: int = 3) -> str:
    """The first `shown` sweep ids of a comma-separated list, then how many more (a matrix cell stays a few lines;
    --json keeps them all)."""
    names = [n.strip() for n in (ids or "").split(",") if n.strip()]
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def cell_text(cell: dict[str, Any] | None, kind: str | None = None) -> str:
    """One matrix cell as text: `works (n 3 of 4; sweeps a, b)`, `fails: <error>`, `unsupported: <reason>` or
    `never tried`; a cell whose nodes were of several kinds says which."""
    if not cell:
        return NEVER
    if cell["support"] == "works":
        text = f"works (n {cell['n_ok']} of {cell['n_runs']}; {_sweeps(cell['ok_sweeps'])})"
    else:
        text = f"{cell['support']}: {_short(cell['reason']) or 'no error recorded'}"
    kinds = {k for part in (cell.get("node_kinds") or "").split(" / ") for k in part.split(",") if k}
    if kind and kinds - {kind}:
        text += f" [nodes: {cell['node_kinds']}]"
    return text


def support_matrix(fetch: Fetch) -> dict[str, Any]:
    """{columns: [{kind, label}], rows: [{cni, cni_mode, in_catalog, cells: {kind: cell or None}}],
    counts: {support: n}}: every catalog mode (plus modes with runs the catalog no longer lists), every node kind
    (plus kinds found in the runs); a cell is fct_cni_support's row with its text, or None (never tried)."""
    found = fetch(SUPPORT_SQL, [])
    kinds = list(NODE_KINDS) + sorted({r["node_kind"] for r in found} - set(NODE_KINDS))
    by_mode: dict[tuple[str, str], dict[str, dict]] = {}
    for r in found:
        by_mode.setdefault((r["cni"], r["cni_mode"]), {})[r["node_kind"]] = r
    known = catalog_modes()
    modes = known + sorted(set(by_mode) - set(known))
    rows, counts = [], {"works": 0, "fails": 0, "unsupported": 0, NEVER: 0}
    for cni, mode in modes:
        cells = {}
        for kind in kinds:
            cell = by_mode.get((cni, mode), {}).get(kind)
            cells[kind] = {**cell, "text": cell_text(cell, kind)} if cell else None
            counts[cell["support"] if cell else NEVER] += 1
        rows.append({"cni": cni, "cni_mode": mode, "in_catalog": (cni, mode) in known, "cells": cells})
    return {"columns": [{"kind": k, "label": NODE_KINDS.get(k, k)} for k in kinds], "rows": rows, "counts": counts}


def support_matrix_of(con) -> dict[str, Any]:
    """support_matrix on an open connection (the portal's cached read-only one)."""
    return support_matrix(fetcher(con))


def support_table(matrix: dict[str, Any]) -> list[dict[str, str]]:
    """The matrix as flat rows of text (`CNI mode`, then one column per node kind, headed by its label)."""
    return [{"CNI mode": f"{r['cni']}:{r['cni_mode']}" + ("" if r["in_catalog"] else " (not in the catalog)"),
             **{c["label"]: (r["cells"][c["kind"]] or {}).get("text", NEVER) for c in matrix["columns"]}}
            for r in matrix["rows"]]


def support_json(matrix: dict[str, Any]) -> list[dict[str, Any]]:
    """`report --support --json`: one object per CNI mode and node kind, never-tried cells included."""
    out = []
    for r in matrix["rows"]:
        for c in matrix["columns"]:
            cell = r["cells"][c["kind"]]
            out.append({"cni": r["cni"], "cni_mode": r["cni_mode"], "node_kind": c["kind"],
                        "support": cell["support"] if cell else NEVER,
                        **({k: v for k, v in cell.items() if k not in ("cni", "cni_mode", "node_kind", "support")}
                           if cell else {"text": NEVER})})
    return out
