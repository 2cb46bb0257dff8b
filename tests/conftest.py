"""Shared fixtures: fixture raw data, a warehouse built from it (once per session), a throwaway MinIO server.

Tests live in a folder per kind:
  unit/       pure code: parsers, plans, the catalog, the rule, the docs;
  warehouse/  a warehouse built from fixture data through dbt, and what reads its marts;
  portal/     the portal's pages under streamlit's AppTest;
  host/       what uses the machine itself: network namespaces, the testbed, cgroups, nftables, processes, ports,
              kustomize and the Go tools (and anything not yet shown to touch nothing of the machine);
  live/       opt-in live runs (a kind or kubeadm cluster, Argo): they skip naming what is missing.
`make test` runs the suite in two processes (pytest-xdist, `--dist loadgroup`): each test file is one group, kept
in one process (its module fixtures are built once), and every file in host/ and live/ is in the one group "host",
run one test after another in one process; the other folders touch nothing but their own temporary files and run
beside it. A new test file that uses the machine goes to host/. The session warehouses below are built once for
both processes (`_built_once`).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO / "containers" / "runner" / "src", REPO / "app"):  # in case the package is not installed
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))
# Folders whose files use the machine (see the module's docstring): one group, one test at a time.
ONE_AT_A_TIME = frozenset({"host", "live"})
KINDS = ("unit", "warehouse", "portal", "host", "live")
for kind in KINDS:  # a test may reuse another file's fakes (`from test_clusters import FakeKubectl`), in any folder
    if str(REPO / "tests" / kind) not in sys.path:
        sys.path.append(str(REPO / "tests" / kind))

import fixture_manifests  # noqa: E402  (tests/ is on sys.path via rootdir conftest)
from edgebench.substrates.local.testbed import Endpoint  # noqa: E402


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    """One xdist group per file, "host" for every file in host/ or live/ (inert without -n / --dist loadgroup)."""
    for item in items:
        one_at_a_time = item.path.parent.name in ONE_AT_A_TIME
        item.add_marker(pytest.mark.xdist_group("host" if one_at_a_time else item.path.name))


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _built_once(tmp_path_factory, name: str, build) -> Path:
    """`build(directory)` once for the whole run, in whichever process needs it first (under pytest-xdist the
    workers share the run's base directory; the others wait on the lock, then reuse the result read-only)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    done = root / f"{name}.done"
    with _locked(root / f"{name}.lock"):
        if not done.exists():
            target = root / name
            if target.exists():  # a build that failed half-way in another process: start again
                shutil.rmtree(target)
            target.mkdir()
            build(target)
            done.touch()
    return root / name


def _warehouse_of(raw_root: Path, directory: Path) -> None:
    from edgebench.results import warehouse

    warehouse.build(warehouse_path=directory / "warehouse.duckdb", raw_root=str(raw_root), quiet=True)


@pytest.fixture(scope="session")
def fixture_raw_root(tmp_path_factory) -> Path:
    """A directory laid out like the bucket, holding the synthetic fixture manifests."""
    return _built_once(tmp_path_factory, "raw", fixture_manifests.write_tree)


@pytest.fixture(scope="session")
def fixture_warehouse(fixture_raw_root, tmp_path_factory) -> Path:
    """A warehouse built once per session from the fixture raw root through warehouse.build()."""
    return _built_once(tmp_path_factory, "wh", lambda d: _warehouse_of(fixture_raw_root, d)) / "warehouse.duckdb"


def _distributions_tree(directory: Path, ms: list[dict]) -> Path:
    """The raw tree of the service-proxy / distribution manifests `ms` (each with its resources.json) and the
    warehouse built from it, under `directory`; returns the warehouse."""
    import json

    from test_warehouse_distributions import resources

    root = directory / "raw"
    for m in ms:
        d = root / fixture_manifests.key(m).rsplit("/", 1)[0]
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps(m))
        if m["raw_files"]:
            (d / "resources.json").write_text(json.dumps(resources(m)))
    _warehouse_of(root, directory)
    return directory / "warehouse.duckdb"


def build_distributions_tree(tmp_path_factory, name: str, ms: list[dict]) -> Path:
    """A warehouse of the service-proxy / distribution manifests of test_warehouse_distributions (`ms`, a subset of
    its manifests()), each with its resources.json, built through warehouse.build()."""
    return _distributions_tree(tmp_path_factory.mktemp(f"wh-{name}"), ms)


@pytest.fixture(scope="session")
def distributions_warehouse(tmp_path_factory) -> Path:
    """Every manifest of test_warehouse_distributions (clusters and testbed), built once per session."""
    from test_warehouse_distributions import manifests

    return _built_once(tmp_path_factory, "wh-distributions",
                       lambda d: _distributions_tree(d, manifests())) / "warehouse.duckdb"


@pytest.fixture(scope="session")
def iperf3_only_warehouse(tmp_path_factory) -> Path:
    """A warehouse built from iperf3 manifests only: no dds-samples.json / http-requests.json exists anywhere."""
    def build(d: Path) -> None:
        _warehouse_of(fixture_manifests.write_tree(d / "raw", fixture_manifests.iperf3_manifests()), d)

    return _built_once(tmp_path_factory, "wh-iperf3", build) / "warehouse.duckdb"


@pytest.fixture(scope="session")
def verdict_warehouse(tmp_path_factory) -> Path:
    """A warehouse of HTTP runs only, built to give every verdict of cmp_http_vs_host (see
    fixture_manifests.VERDICT_GROUPS)."""
    def build(d: Path) -> None:
        _warehouse_of(fixture_manifests.write_verdict_tree(d / "raw"), d)

    return _built_once(tmp_path_factory, "wh-verdicts", build) / "warehouse.duckdb"


@pytest.fixture(scope="session")
def intercluster_raw_root(tmp_path_factory) -> Path:
    """HTTP runs across inter-cluster tools and their one-cluster `none` baseline (fixture_manifests IC_*)."""
    return _built_once(tmp_path_factory, "raw-intercluster", fixture_manifests.write_intercluster_tree)


@pytest.fixture(scope="session")
def intercluster_warehouse(intercluster_raw_root, tmp_path_factory) -> Path:
    """A warehouse built from the inter-cluster raw tree only."""
    return _built_once(tmp_path_factory, "wh-intercluster",
                       lambda d: _warehouse_of(intercluster_raw_root, d)) / "warehouse.duckdb"


@pytest.fixture(scope="session")
def minio_server(tmp_path_factory):
    """A throwaway MinIO (binary from EDGEBENCH_MINIO_BIN) on a free port with an empty bucket `edgebench`.

    Yields {endpoint, access_key, secret_key, bucket, env}; env holds the matching EDGEBENCH_* variables.
    Fails (does not skip) when the binary is missing: `make test` always builds it.
    """
    from servers import ServerError, throwaway_minio

    try:
        with throwaway_minio(tmp_path_factory.mktemp("minio-data")) as server:
            yield server
    except ServerError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def versions_raw_root(tmp_path_factory) -> Path:
    """CNI modes measured at several versions (fixture_manifests VERSION_*): the regression-card fixture."""
    return _built_once(tmp_path_factory, "raw-versions",
                       lambda d: fixture_manifests.write_version_tree(d, fixture_manifests.version_runs()))


@pytest.fixture(scope="session")
def versions_warehouse(versions_raw_root, tmp_path_factory) -> Path:
    """A warehouse built from the CNI version raw tree only."""
    return _built_once(tmp_path_factory, "wh-versions",
                       lambda d: _warehouse_of(versions_raw_root, d)) / "warehouse.duckdb"


# ---------------------------------------------------------------------------------------------- Argo schema versions
def pytest_report_header(config):
    """Which Argo schemas this run can validate against (argo_schemas.py: ../shared/vendor, else the Go modules)."""
    import argo_schemas

    return ["argo schemas: " + line for line in argo_schemas.report_lines()]


def pytest_terminal_summary(terminalreporter):
    """Which Argo schemas the manifests of this run were validated against (or why a family had none)."""
    import argo_schemas

    terminalreporter.section("Argo schemas", sep="-", bold=False)
    for family, (project, _, _) in argo_schemas.PROJECTS.items():
        src = argo_schemas.used.get(family)
        found = argo_schemas.find(family)
        if src is not None:
            terminalreporter.write_line(f"validated against {src.describe()}")
        elif isinstance(found, str):
            terminalreporter.write_line(f"{project}: none, the tests needing it skipped ({found})")
        else:
            terminalreporter.write_line(f"{project}: not needed by the tests run ({found.describe()} available)")


def _sh(*argv):
    subprocess.run(argv, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pair():
    """Two `ebs-` network namespaces joined by a veth pair (10.199.7.1 and .2): the DDS drivers' real runs."""
    tag = uuid.uuid4().hex[:4]
    a, b = f"ebs-{tag}a", f"ebs-{tag}b"
    va, vb = f"ebs{tag}a", f"ebs{tag}b"
    try:
        _sh("ip", "netns", "add", a)
        _sh("ip", "netns", "add", b)
        _sh("ip", "link", "add", va, "netns", a, "type", "veth", "peer", "name", vb, "netns", b)
        for ns, dev, ip in ((a, va, "10.199.7.1/24"), (b, vb, "10.199.7.2/24")):
            _sh("ip", "-n", ns, "addr", "add", ip, "dev", dev)
            _sh("ip", "-n", ns, "link", "set", dev, "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield Endpoint(a, "10.199.7.1", 0), Endpoint(b, "10.199.7.2", 1)
    finally:
        for ns in (a, b):
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                subprocess.run(["kill", "-9", pid], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.fixture
def dds_ctx():
    """A sweep context whose provider hands the DDS workload placeholder endpoints (one address) and carries
    multicast: for workload.measure() calls that must decide before any process starts, or with the drivers
    replaced."""
    class Ep:
        ip = "10.0.0.1"

    class Provider:
        name = "local"

        def client(self, placement):
            return Ep()

        def peers(self, placement):
            return [Ep()]

        def multicast_reason(self, placement):
            return None

        def flush_services(self):  # a DDS run first clears what earlier runs left (nothing here)
            pass

    class Ctx:
        provider = Provider()

    return Ctx()
