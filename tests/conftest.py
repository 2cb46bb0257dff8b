"""Shared fixtures: fixture raw data, a warehouse built from it (once per session), a throwaway MinIO server."""
from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO / "containers" / "runner" / "src", REPO / "app"):  # in case the package is not installed
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import fixture_manifests  # noqa: E402  (tests/ is on sys.path via rootdir conftest)
from edgebench.substrates.local.testbed import Endpoint  # noqa: E402


@pytest.fixture(scope="session")
def fixture_raw_root(tmp_path_factory) -> Path:
    """A directory laid out like the bucket, holding the synthetic fixture manifests."""
    return fixture_manifests.write_tree(tmp_path_factory.mktemp("raw"))


@pytest.fixture(scope="session")
def fixture_warehouse(fixture_raw_root, tmp_path_factory) -> Path:
    """A warehouse built once per session from the fixture raw root through warehouse.build()."""
    from edgebench.results import warehouse

    path = tmp_path_factory.mktemp("wh") / "warehouse.duckdb"
    warehouse.build(warehouse_path=path, raw_root=str(fixture_raw_root), quiet=True)
    return path


def build_distributions_tree(tmp_path_factory, name: str, ms: list[dict]) -> Path:
    """A warehouse of the service-proxy / distribution manifests of test_warehouse_distributions (`ms`, a subset of
    its manifests()), each with its resources.json, built through warehouse.build()."""
    import json

    from edgebench.results import warehouse
    from test_warehouse_distributions import resources

    root = tmp_path_factory.mktemp(f"raw-{name}")
    for m in ms:
        d = root / fixture_manifests.key(m).rsplit("/", 1)[0]
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps(m))
        if m["raw_files"]:
            (d / "resources.json").write_text(json.dumps(resources(m)))
    path = tmp_path_factory.mktemp(f"wh-{name}") / "warehouse.duckdb"
    warehouse.build(warehouse_path=path, raw_root=str(root), quiet=True)
    return path


@pytest.fixture(scope="session")
def distributions_warehouse(tmp_path_factory) -> Path:
    """Every manifest of test_warehouse_distributions (clusters and testbed), built once per session."""
    from test_warehouse_distributions import manifests

    return build_distributions_tree(tmp_path_factory, "distributions", manifests())


@pytest.fixture(scope="session")
def iperf3_only_warehouse(tmp_path_factory) -> Path:
    """A warehouse built from iperf3 manifests only: no dds-samples.json / http-requests.json exists anywhere."""
    from edgebench.results import warehouse

    root = fixture_manifests.write_tree(tmp_path_factory.mktemp("raw-iperf3"), fixture_manifests.iperf3_manifests())
    path = tmp_path_factory.mktemp("wh-iperf3") / "warehouse.duckdb"
    warehouse.build(warehouse_path=path, raw_root=str(root), quiet=True)
    return path


@pytest.fixture(scope="session")
def verdict_warehouse(tmp_path_factory) -> Path:
    """A warehouse of HTTP runs only, built to give every verdict of cmp_http_vs_host (see
    fixture_manifests.VERDICT_GROUPS)."""
    from edgebench.results import warehouse

    root = fixture_manifests.write_verdict_tree(tmp_path_factory.mktemp("raw-verdicts"))
    path = tmp_path_factory.mktemp("wh-verdicts") / "warehouse.duckdb"
    warehouse.build(warehouse_path=path, raw_root=str(root), quiet=True)
    return path


@pytest.fixture(scope="session")
def intercluster_raw_root(tmp_path_factory) -> Path:
    """HTTP runs across inter-cluster tools and their one-cluster `none` baseline (fixture_manifests IC_*)."""
    return fixture_manifests.write_intercluster_tree(tmp_path_factory.mktemp("raw-intercluster"))


@pytest.fixture(scope="session")
def intercluster_warehouse(intercluster_raw_root, tmp_path_factory) -> Path:
    """A warehouse built from the inter-cluster raw tree only."""
    from edgebench.results import warehouse

    path = tmp_path_factory.mktemp("wh-intercluster") / "warehouse.duckdb"
    warehouse.build(warehouse_path=path, raw_root=str(intercluster_raw_root), quiet=True)
    return path


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
    return fixture_manifests.write_version_tree(tmp_path_factory.mktemp("raw-versions"),
                                                fixture_manifests.version_runs())


@pytest.fixture(scope="session")
def versions_warehouse(versions_raw_root, tmp_path_factory) -> Path:
    """A warehouse built from the CNI version raw tree only."""
    from edgebench.results import warehouse

    path = tmp_path_factory.mktemp("wh-versions") / "warehouse.duckdb"
    warehouse.build(warehouse_path=path, raw_root=str(versions_raw_root), quiet=True)
    return path


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
        def client(self, placement):
            return Ep()

        def peers(self, placement):
            return [Ep()]

        def multicast_reason(self, placement):
            return None

    class Ctx:
        provider = Provider()

    return Ctx()
