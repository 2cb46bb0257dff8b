"""Streamlit glue shared by the pages: the cached read-only connection and cached queries over app/data.py."""
from __future__ import annotations

import duckdb
import streamlit as st

import data


@st.cache_resource(max_entries=2)
def _connection(path: str, mtime_ns: int) -> duckdb.DuckDBPyConnection:
    # keyed on the file's mtime: a rebuilt warehouse (atomically swapped in) gets a fresh connection
    return data.connect(path)


@st.cache_data(ttl=60, show_spinner=False)
def _query(fn: str, db_path: str, db_mtime_ns: int, **kwargs):  # kwargs are filters such as path=...
    return getattr(data, fn)(_connection(db_path, db_mtime_ns).cursor(), **kwargs)


@st.cache_data(ttl=60, show_spinner=False)
def _sql(sql: str, params: tuple, db_path: str, db_mtime_ns: int):
    return _connection(db_path, db_mtime_ns).cursor().execute(sql, list(params)).df()


def sql(statement: str, *params):
    """A page's own query on the warehouse's marts (cached like query()); a page keeps its SQL beside its layout."""
    db_path, db_mtime_ns = require_warehouse()
    try:
        return _sql(statement, tuple(params), db_path, db_mtime_ns)
    except duckdb.Error as exc:
        st.error(f"The warehouse at `{db_path}` cannot be read ({exc.__class__.__name__}: {exc}). "
                 "Rebuild it with `make sweep`.")
        st.stop()


def require_warehouse() -> tuple[str, int]:
    """Path and mtime of the warehouse; shows the friendly message and stops the page when there is none."""
    path = data.warehouse_path()
    if not path.is_file():
        st.info(data.MISSING_WAREHOUSE.format(path=path), icon=":material/info:")
        st.stop()
    return str(path), path.stat().st_mtime_ns


def query(fn: str, **kwargs):
    """Run data.<fn>(cursor, **kwargs) with caching; a warehouse without the expected tables stops the page."""
    db_path, db_mtime_ns = require_warehouse()
    try:
        return _query(fn, db_path, db_mtime_ns, **kwargs)
    except duckdb.Error as exc:
        st.error(f"The warehouse at `{db_path}` cannot be read ({exc.__class__.__name__}: {exc}). "
                 "Rebuild it with `make sweep`.")
        st.stop()


def local_banner(substrate: str) -> None:
    if substrate == "local":
        st.warning(data.LOCAL_BANNER, icon=":material/lan:")
