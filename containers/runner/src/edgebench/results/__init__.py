"""Results: a run's record (runstore, provenance), the raw store (local spool, then MinIO), the warehouse (dbt on
DuckDB), tool outputs made elsewhere (parsing, importer), and reading the warehouse (report/)."""
