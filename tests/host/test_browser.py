"""The portal in a real browser: `streamlit run` against the fixture warehouse, every page opened in headless
Chromium (Selenium, offline). A page passes when it loads without an exception or an error box, draws its charts,
shows its n / confidence-interval annotations, and (on the pages tested for it) a filter changes what is drawn.

AppTest (tests/portal/test_portal*.py) runs the scripts; this test sees what the frontend makes of them. Skipped, with the
install command, only where no Chromium / chromedriver is installed; `make test` installs both on Debian/Ubuntu.
"""
from __future__ import annotations

import pytest

import browser_support as bs

_missing = bs.missing_browser()
pytestmark = pytest.mark.skipif(bool(_missing), reason=f"the browser test needs Chromium: {_missing}")

# Per page on the fixture warehouse: its title, how many charts it draws, and texts that must be visible (page text or
# table headers / cells): the n and confidence-interval annotations where the page compares, its empty-state
# message where the fixtures hold nothing for it.
EXPECT = {
    "": ("edgebench", 4, ["The answer", "On the local testbed", "margin ±5 %", "Runs", "Sweeps",
                          "Runs by substrate and status"]),
    "cni_datapaths": ("CNI datapaths", 1, ["95% CI", "± 95% CI", "n_runs", "host_n_runs"]),
    "dds": ("DDS pub/sub", 3, ["95% interval", "(n 2/2)", " ± "]),
    "http": ("HTTP services", 1, ["p50 ± 95% CI", "p90 ± 95% CI", "n_runs", "host runs"]),
    "loaded_latency": ("Latency under load", 0, ["95% interval", "No latency-under-load runs yet"]),
    "link_conditions": ("Link conditions", 1, ["runs", "iperf3 runs", "none", "edg10"]),
    "tuning": ("Tuning efficiency", 1, ["n_runs", "throughput_efficiency_pct"]),
    "resources": ("Resources", 3, ["n_runs", "cpu_run_pct"]),
    "intercluster": ("Inter-cluster tools", 0, ["95% CI", "n runs",
                                                "no HTTP runs across an inter-cluster tool"]),
    "distributions": ("Distributions", 0, ["± 95% CI", "n_runs", "reference_n_runs", "verdict"]),
    "cni_versions": ("CNI versions", 0, ["95% CI", "n runs", "No CNI mode has been measured at two versions"]),
    "papers": ("Papers", 1, ["± 95% CI", "n (CNI/host)", "95% CI"]),
}
assert set(EXPECT) == set(bs.PAGES)


@pytest.fixture(scope="module")
def driver():
    try:
        import selenium  # noqa: F401
    except ImportError:  # a pinned requirement: a venv without it is a broken setup, not a missing browser
        pytest.fail("selenium is not installed in this venv: pip install -r requirements.txt (`make venv` does)",
                    pytrace=False)
    with bs.browser() as d:
        yield d


@pytest.fixture(scope="module")
def portal_url(fixture_warehouse, tmp_path_factory):
    with bs.portal(fixture_warehouse, log=tmp_path_factory.mktemp("portal") / "streamlit.log") as url:
        yield url


@pytest.fixture(scope="module")
def intercluster_url(intercluster_warehouse, tmp_path_factory):
    with bs.portal(intercluster_warehouse, log=tmp_path_factory.mktemp("portal-ic") / "streamlit.log") as url:
        yield url


QUIET = 0.5  # seconds a page must stay unchanged, with every expected chart drawn, to count as loaded


def open_page(driver, url: str, path: str) -> bs.PageLoad:
    n_charts = EXPECT[path][1] if path in EXPECT else 0
    return bs.load(driver, url, path, quiet=QUIET, ready=lambda s: s["charts"] >= n_charts)


def visible(page: bs.PageLoad) -> str:
    """The page's text with its tables' cells (st.dataframe draws on a canvas; its accessible grid holds them)."""
    return page.text + "\n" + "\n".join("\t".join(row) for table in page.tables for row in table)


def assert_clean(page: bs.PageLoad) -> None:
    assert not page.timed_out, f"/{page.path} did not settle; it showed:\n{page.text[:2000]}"
    assert not page.exceptions, f"/{page.path} raised:\n" + "\n".join(page.exceptions)
    assert not page.errors, f"/{page.path} shows an error box:\n" + "\n".join(page.errors)


@pytest.mark.parametrize("path", bs.PAGES, ids=lambda p: p or "overview")
def test_page_loads_draws_its_charts_and_annotations(driver, portal_url, path):
    title, n_charts, texts = EXPECT[path]
    page = open_page(driver, portal_url, path)
    assert_clean(page)
    assert page.title == title
    assert page.charts == n_charts, f"/{path}: {page.charts} charts, expected {n_charts}"
    assert page.charts_drawn == page.charts, f"/{path}: {page.charts - page.charts_drawn} charts not drawn"
    shown = visible(page)
    missing = [t for t in texts if t not in shown]
    assert not missing, f"/{path} does not show {missing}"


def test_pages_by_sidebar_navigation(driver, portal_url):
    """Moving between pages inside one session (what a user does) works as well as opening them by URL."""
    open_page(driver, portal_url, "")
    for path in ("cni_datapaths", "papers", "resources", ""):
        page = bs.navigate(driver, path, quiet=QUIET, ready=lambda s: s["charts"] >= EXPECT[path][1])
        assert_clean(page)
        assert page.title == EXPECT[path][0] and page.charts == page.charts_drawn == EXPECT[path][1]


def table_with(page: bs.PageLoad | dict, header: str) -> list[list[str]]:
    tables = page["tables"] if isinstance(page, dict) else page.tables
    return next((t for t in tables if t and header in t[0]), [])


def table_changes(driver, before: bs.PageLoad, header: str) -> dict | None:
    """The page state once the table with `header` shows other cells than before (the grid redraws after the run)."""
    old = table_with(before, header)
    return bs.wait_for(driver, lambda s: (new := table_with(s, header)) and new != old)


def test_cni_protocol_filter_changes_chart_and_table(driver, portal_url):
    before = open_page(driver, portal_url, "cni_datapaths")
    option, after = bs.select_option(driver, "Protocol", "udp", quiet=QUIET)
    assert_clean(after)
    assert after.charts == after.charts_drawn == 1
    assert after.chart_marks != before.chart_marks, "the chart did not change with the protocol"
    assert table_changes(driver, before, "overhead %"), "the overhead table did not change with the protocol"
    # tcp: the ipip run is unsupported; udp: a failed run (tests/portal/test_portal.py checks the same through AppTest)
    assert "unsupported" in str(table_with(before, "error"))
    assert bs.wait_for(driver, lambda s: "failed" in str(table_with(s, "error")))


def test_dds_reliability_filter_changes_the_table(driver, portal_url):
    before = open_page(driver, portal_url, "dds")
    _, after = bs.select_option(driver, "Reliability", "best-effort", quiet=QUIET)
    assert_clean(after)
    rows = lambda p: [r[0] for r in table_with(p, "64 B")[1:]]  # noqa: E731
    assert sorted(rows(before)) == ["calico / bgp", "flannel / vxlan"]
    # only flannel ran best-effort
    assert bs.wait_for(driver, lambda s: rows(s) == ["flannel / vxlan"]), rows(bs.page_state(driver))


def test_link_conditions_metric_filter_changes_the_chart(driver, portal_url):
    before = open_page(driver, portal_url, "link_conditions")
    _, after = bs.select_option(driver, "Metric", quiet=QUIET)  # the next metric, whichever it is
    assert_clean(after)
    assert after.charts == after.charts_drawn == 1 and after.chart_marks != before.chart_marks
    assert table_changes(driver, before, "edg10"), "the metric table did not change with the metric"


def test_intercluster_page_chart_annotations_and_payload_filter(driver, intercluster_url):
    """The fixture warehouse holds no inter-cluster runs: this page is checked on the inter-cluster one."""
    before = bs.load(driver, intercluster_url, "intercluster", quiet=QUIET, ready=lambda s: s["charts"] >= 1)
    assert_clean(before)
    assert before.charts == before.charts_drawn == 1
    shown = visible(before)
    assert "95% CI" in shown and "n = runs" in shown and "emulated" in shown
    _, after = bs.select_option(driver, "Payload (bytes)", "1000000", quiet=QUIET)
    assert_clean(after)
    assert "Response time, 1000000 B payload" in after.text
    assert after.charts == after.charts_drawn == 1 and after.chart_marks != before.chart_marks
