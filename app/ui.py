"""Streamlit glue shared by the pages: the cached read-only connection and cached queries over the data modules
(app/data/): a page passes the query function itself, imported from the module of its page."""
from __future__ import annotations

from typing import Callable

import duckdb
import streamlit as st

from edgebench.plan.dimensions import DIMENSIONS

from data.common import LAB_BANNER, LOCAL_BANNER, MISSING_WAREHOUSE, connect, shared_kernel_labs, warehouse_path


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


def choose(prefix: str, substrates_fn: Callable, values_fn: Callable, filters: dict[str, str], empty: str
           ) -> tuple[str, dict]:
    """The selection every comparison page starts with: one substrate (never mixed), then the conditions it holds
    fixed, each offering only values that exist given the ones to its left. Stops the page with `empty` when the
    warehouse has nothing for it. Widget keys: <prefix>_substrate, <prefix>_<column> (no prefix: bare names)."""
    require_warehouse()
    substrates = query(substrates_fn)
    if not substrates:
        st.info(empty)
        st.stop()
    key = (lambda name: f"{prefix}_{name}") if prefix else (lambda name: name)
    substrate = st.selectbox("Substrate", substrates, key=key("substrate"),
                             help="Results of different substrates are never compared with each other.")
    local_banner(substrate)
    chosen: dict = {}
    for col, (name, label) in zip(st.columns(len(filters)), filters.items()):
        values = query(values_fn, substrate=substrate, column=name, **chosen)
        chosen[name] = col.selectbox(label, values, key=key(name)) if values else None
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
