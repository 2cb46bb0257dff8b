"""A run's record, the writing side of results: the run manifest's fields (manifest: RunManifest), the manifest and
run directory every writer builds (runstore), the machine and tool versions behind a run (provenance), the raw
store (store: a local spool, then MinIO/S3), and tool outputs made elsewhere turned into runs (parsing, importer).
Nothing here reads the warehouse: it is built from what these modules write."""
