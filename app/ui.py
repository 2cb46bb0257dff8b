"""Streamlit glue shared by the pages: the cached read-only connection and cached queries (the read API,
edgebench.results.report.marts, and app/data/'s shaping of its rows): a page passes the query function itself."""
from __future__ import annotations

import datetime as dt
import re
import time
from typing import Callable

import duckdb
import pandas as pd
import streamlit as st

from edgebench.plan.dimensions import DIMENSIONS
from edgebench.results.report import marts
from edgebench.results.report.marts import Choices
from edgebench.results.report.marts.runs import shared_kernel_labs

from data.common import (LAB_BANNER, LOCAL_BANNER, MISSING_WAREHOUSE, connect, eta_text, follower_gone, live_status,
                         warehouse_path)


@st.cache_resource(max_entries=2)
def _connection(path: str, mtime_ns: int) -> duckdb.DuckDBPyConnection:
    # keyed on the file's mtime: a rebuilt warehouse (atomically swapped in) gets a fresh connection
    return connect(path)


@st.cache_data(ttl=60, show_spinner=False)
def _query(name: str, db_path: str, db_mtime_ns: int, _fn: Callable, **kwargs):  # kwargs are filters such as path=...
    # cached on the query's qualified name (the function itself, _fn, is not hashed) and its arguments
    return _fn(_connection(db_path, db_mtime_ns).cursor(), **kwargs)


def require_warehouse() -> tuple[str, int]:
    """Path and mtime of the warehouse; shows the friendly message and stops the page when there is none."""
    path = warehouse_path()
    if not path.is_file():
        st.info(MISSING_WAREHOUSE.format(path=path), icon=":material/info:")
        st.stop()
    return str(path), path.stat().st_mtime_ns


def query(fn: Callable, **kwargs):
    """Run fn(cursor, **kwargs) (a query of a data module) with caching; a warehouse without the expected tables stops
    the page."""
    db_path, db_mtime_ns = require_warehouse()
    try:
        return _query(f"{fn.__module__}.{fn.__qualname__}", db_path, db_mtime_ns, fn, **kwargs)
    except duckdb.Error as exc:
        st.error(f"The warehouse at `{db_path}` cannot be read ({exc.__class__.__name__}: {exc}). "
                 "Rebuild it with `make sweep`.")
        st.stop()


def substrates(choices: Choices) -> list[str]:
    """The substrates a page's selection offers (marts.substrates, cached)."""
    return query(marts.substrates, relation=choices.relation)


def values(choices: Choices, substrate: str, column: str, **chosen) -> list:
    """The values of one condition given the ones chosen before it (marts.filter_values, cached)."""
    return query(marts.filter_values, relation=choices.relation, allowed=choices.allowed, substrate=substrate,
                 column=column, chosen=chosen, order=choices.order)


def choose(prefix: str, choices: Choices, empty: str) -> tuple[str, dict]:
    """The selection every comparison page starts with: one substrate (never mixed), then the conditions it holds
    fixed (choices.filters), each offering only values that exist given the ones to its left. Stops the page with
    `empty` when the warehouse has nothing for it. Widget keys: <prefix>_substrate, <prefix>_<column> (no prefix:
    bare names)."""
    require_warehouse()
    found = substrates(choices)
    if not found:
        st.info(empty)
        st.stop()
    key = (lambda name: f"{prefix}_{name}") if prefix else (lambda name: name)
    substrate = st.selectbox("Substrate", found, key=key("substrate"),
                             help="Results of different substrates are never compared with each other.")
    local_banner(substrate)
    chosen: dict = {}
    for col, (name, label) in zip(st.columns(len(choices.filters)), choices.filters.items()):
        offered = values(choices, substrate, name, **chosen)
        chosen[name] = col.selectbox(label, offered, key=key(name)) if offered else None
    lab_banner(chosen.get("lab"))
    dimension_notes(chosen)
    return substrate, chosen


def dimension_notes(chosen: dict) -> None:
    """The warning a cell dimension declares (Dimension.note, e.g. the CPU-limited emulation's), wherever one of its
    values other than the neutral one is chosen."""
    for dim in DIMENSIONS:
        value = chosen.get(dim.warehouse_column)
        if dim.note and value not in (None, dim.neutral):
            st.warning(dim.note(value), icon=dim.note_icon)


def lab_banner(lab: str | None) -> None:
    """The local lab's warning (its nodes share this machine's kernel and cores), as the testbed's banner."""
    if lab is not None and lab in query(shared_kernel_labs):
        st.warning(LAB_BANNER, icon=":material/dns:")


def local_banner(substrate: str) -> None:
    if substrate == "local":
        st.warning(LOCAL_BANNER, icon=":material/lan:")


def freshness() -> None:
    """The sidebar's line on how fresh the data is (and whether `edgebench warehouse --follow` keeps it so); reruns
    the page as soon as a new warehouse is swapped in (looked at every 3 s), so a running sweep's cells appear
    without a reload."""
    path = warehouse_path()

    @st.fragment(run_every=3)
    def watch() -> None:
        if not path.is_file():
            return
        mtime = path.stat().st_mtime_ns
        seen = st.session_state.setdefault("_warehouse_mtime", mtime)
        if mtime != seen:
            st.session_state["_warehouse_mtime"] = mtime
            st.rerun()
        age = time.time() - mtime / 1e9
        when = dt.datetime.fromtimestamp(mtime / 1e9, dt.timezone.utc)
        line = f"Data as of {when:%H:%M:%S} UTC ({age:.0f} s ago)"
        live = live_status(path)
        if live:
            line += f"; following the store (looked at every {live['interval_s']:g} s, rebuilt when runs land)"
            if live.get("error"):
                line += f". Last problem: {live['error']}"
        st.caption(line)
        gone = follower_gone(path)
        if gone:
            st.warning(gone)

    with st.sidebar:
        watch()


@st.fragment(run_every=2)
def sweeps_in_progress() -> None:
    """The sweeps still running (from the follower's last look at the object store), each with a progress bar, and
    the runs stored since the follower started with their headline figures, before the rebuild takes them in (looked
    at every 2 s)."""
    live = live_status(warehouse_path())
    for sw in (live or {}).get("sweeps") or []:
        share = sw["runs_done"] / sw["runs_planned"] if sw["runs_planned"] else 0.0
        st.progress(min(1.0, share), text=(
            f"**{sw['sweep_id']}** running: {sw['runs_done']}/{sw['runs_planned']} runs, cells "
            f"{sw['cells_done']}/{sw['cells']}, {sw['failed']} failed, {sw['unsupported']} unsupported; "
            f"{eta_text(sw.get('eta_s'))}"))
    rows = (live or {}).get("just_in") or []
    if rows:
        st.caption("Just stored: each run's own figure as soon as it is stored; its comparisons (n, 95% CI, "
                   "verdict) appear on the pages once the warehouse rebuild takes it in.")
        st.dataframe(pd.DataFrame([{"sweep": r["sweep_id"], "cell": r["cell"], "workload": r["workload"],
                                    "variant": r["variant"], "round": r["repetition"], "status": r["status"],
                                    "headline": r["headline"],
                                    "in warehouse": "yes" if r.get("in_warehouse") else "not yet"}
                                   for r in rows]), hide_index=True)


STATIC_ROWS = 40  # tables up to this many rows are drawn as static HTML (ui.table)


_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")  # what st.table's cells would read as Markdown


def _cell_format(fmt: str | None) -> Callable:
    """A static table's cell as text: the number format, floats to 3 decimals, nothing for a missing value, and every
    Markdown character escaped (st.table renders cells as Markdown: `1. x` would become a list, `a*b*` emphasis)."""
    def show(v):
        if v is None or (isinstance(v, float) and pd.isna(v)):
            return ""
        if fmt and isinstance(v, (int, float)):
            text = fmt % v
        elif isinstance(v, float):
            text = f"{v:.3f}".rstrip("0").rstrip(".")
        else:
            text = str(v)
        return _MARKDOWN.sub(r"\\\1", text)
    return show


def table(data, column_config: dict | None = None, where=None, **kwargs) -> None:
    """A table of a page: static HTML (st.table) when it is a plain frame of at most STATIC_ROWS rows whose columns
    keep their names, else st.dataframe (scrolling, sorting). A static table needs none of the interactive grid's
    code in the browser, which is much of what a page opened by URL waits for (docs/benchmarks.md). column_config as
    st.dataframe's: a number format carries over, a column's help goes in a caption under the table. Styled frames
    (a Styler), relabelled or progress columns and long frames stay interactive (st.table draws a column's own
    name). where: a container (e.g. a column) to draw in."""
    where = where or st
    config = {col: ({"label": c} if isinstance(c, str) else (c or {})) for col, c in (column_config or {}).items()}
    static = (isinstance(data, pd.DataFrame) and len(data) <= STATIC_ROWS and not kwargs
              and all(c.get("label") in (None, "", col)  # a label that is the column's own name changes nothing
                      and (c.get("type_config") or {}).get("type") in ("number", "text", None)
                      for col, c in config.items()))
    if not static:
        where.dataframe(data, hide_index=True, column_config=column_config, **kwargs)
        return
    fmt = {col: _cell_format((config.get(col, {}).get("type_config") or {}).get("format")) for col in data.columns}
    where.table(data.reset_index(drop=True).style.format(fmt), hide_index=True)
    helps = [f"{col}: {c['help']}" for col, c in config.items() if c.get("help")]
    if helps:
        where.caption(" · ".join(helps))


def on_demand(label: str, key: str) -> bool:
    """A switch for a page's secondary part (a detail table, the rows behind a chart): off when the page opens, so
    the part is neither sent to the browser nor drawn until asked for. What a page opened by URL waits for is
    mostly the browser drawing what the script sent, hidden parts included (an expander's content is sent and laid
    out even while it is closed): docs/benchmarks.md."""
    return st.toggle(label, value=False, key=key)
