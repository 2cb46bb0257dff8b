"""The warehouse, built from the raw store: the build (builder: dbt on DuckDB, atomically swapped in), the dbt
invocations it runs (dbt_runner), the raw cache that makes builds incremental (raw_cache), a follower's fast
refresh (replay) and `edgebench warehouse --follow` (follow).

The package exports the build's API, so `from edgebench.results import warehouse; warehouse.build(...)` reads as
before; the follower and the other parts are imported as modules of the package."""

from edgebench.results.warehouse.builder import (RAW_CACHE_SCHEMA, RAW_FILES, DbtSlot, NoResultsError,
                                                 WarehouseError, analytics_dir, build, check_rule, default_raw_root,
                                                 default_warehouse_path, ensure_httpfs, list_raw, project_hash,
                                                 sync_raw_cache)

__all__ = ["DbtSlot", "NoResultsError", "RAW_CACHE_SCHEMA", "RAW_FILES", "WarehouseError", "analytics_dir", "build",
           "check_rule", "default_raw_root", "default_warehouse_path", "ensure_httpfs", "list_raw", "project_hash",
           "sync_raw_cache"]
