"""Results, by direction: writing a run's record (records/: the typed run manifest, run directories, the raw store,
provenance, tool outputs made elsewhere), building the warehouse from the raw store (warehouse/: dbt on DuckDB, the
raw cache, the follower), and reading it (report/: one read API over the marts, verdicts, ranking, papers)."""
