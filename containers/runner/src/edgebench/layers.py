"""The package's layers, lowest first: a module may import its own layer's modules and any lower layer's, never a
higher one's, and the imports form no cycle (tests/unit/test_layers.py parses every module and checks both, plus that
no edgebench import sits inside a function). Pure data: this module imports nothing."""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("edgebench", "edgebench.errors", "edgebench.console", "edgebench.sh", "edgebench.layers"),  # base utilities
    ("edgebench.plan",),  # what to run: catalog, parameters, cells, runs (pure, no side effect)
    ("edgebench.substrates",),  # where cells run: the local testbed, kind and ssh clusters
    ("edgebench.drivers", "edgebench.workloads"),  # how a run is measured: tool drivers and the workloads
    ("edgebench.results.records",),  # a run's record: the typed manifest, run directories, the raw store, provenance
    ("edgebench.results",),  # the warehouse built from the records (warehouse/) and reading it (report/)
    ("edgebench.sweep",),  # phases, the local runner, the version watch
    ("edgebench.cli",),  # the command line: the app (cli/__init__.py) and its sub-command modules
)


def layer_of(module: str) -> int:
    """The layer index of a dotted module name: the longest prefix named in LAYERS decides."""
    best, rank = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    if rank < 0:
        raise KeyError(f"{module} is in no layer of edgebench.layers.LAYERS")
    return rank
