"""Part "portal": every portal page in headless Chromium against a 10,000-run warehouse, beside the same page on the
small fixture warehouse, in the same run.

Two `streamlit run` servers (one per warehouse) and one browser. First every page is opened once on each server
(the first load: the browser fetches the frontend, each page's queries fill the server's cache). Then, for ROUNDS
rounds, each page is opened by its URL on the 10k server, then on the fixture server (interleaved, so machine load
hits both sides alike), and then every page is reached by its sidebar link inside an open session on each. The
figure per page is the median time from the click on its sidebar link until the page settled with every chart drawn
(the charts and tables a reference load showed): the app is loaded, as when a user moves between pages; target
< 1.5 s. One row gives the slowest page opened by URL in a fresh document (a link or a reload: Streamlit's frontend
and its chart / table chunks are parsed again). The ratio row says what the warehouse's size costs: median over the
pages of (10k page time / fixture page time). A reference row times a bare Streamlit page (bench/portal_floor.py:
one chart, one table, no warehouse) by URL, interleaved with the pages: Streamlit's own floor for a fresh document.

The 10k-run warehouse is built from bench/gen_store.py's synthetic store once and cached under
.edgebench/bench/portal/ (keyed on the generator, the dbt project and the sizes); quick mode: 500 runs.
Skips (one row saying so) where no Chromium is installed: apt-get install -y chromium chromium-driver.
"""
from __future__ import annotations

import hashlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import Row

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO / "tests", REPO / "containers" / "runner" / "src"):
    if str(extra) not in sys.path:
        sys.path.append(str(extra))

CACHE = REPO / ".edgebench" / "bench" / "portal"
FLOOR_APP = Path(__file__).resolve().parent / "portal_floor.py"
TARGET_S = 1.5
ROUNDS, QUICK_ROUNDS = 3, 1
PAGE_NAMES = {"": "Overview", "cni_datapaths": "CNI datapaths", "dds": "DDS pub/sub", "http": "HTTP services",
              "loaded_latency": "Latency under load", "link_conditions": "Link conditions", "tuning": "Tuning efficiency",
              "resources": "Resources", "intercluster": "Inter-cluster tools", "distributions": "Distributions",
              "cni_versions": "CNI versions", "papers": "Papers"}


def _fingerprint(runs: int, samples: int) -> str:
    """What the cached warehouse depends on: the generator, the dbt project (models, macros, seeds), the sizes."""
    h = hashlib.sha256(f"{runs}/{samples}".encode())
    files = [REPO / "bench" / "gen_store.py"] + sorted(
        p for p in (REPO / "analytics").rglob("*")
        if p.is_file() and not {"target", "logs", "dbt_packages"} & set(p.relative_to(REPO / "analytics").parts))
    for p in files:
        h.update(str(p.relative_to(REPO)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def big_warehouse(runs: int, samples: int) -> tuple[Path, str]:
    """The synthetic warehouse of `runs` runs, built once and reused while nothing it depends on changed."""
    from edgebench.results import warehouse
    from gen_store import generate

    path = CACHE / f"warehouse-{runs}-{_fingerprint(runs, samples)}.duckdb"
    if path.is_file():
        return path, "cached"
    CACHE.mkdir(parents=True, exist_ok=True)
    for old in CACHE.glob(f"warehouse-{runs}-*.duckdb"):  # an outdated build of the same size
        old.unlink()
    tmp = Path(tempfile.mkdtemp(prefix="edgebench-bench-portal-"))
    try:
        t0 = time.perf_counter()
        generate(tmp / "raw", runs=runs, samples=samples)
        warehouse.build(warehouse_path=tmp / "warehouse.duckdb", raw_root=str(tmp / "raw"), quiet=True)
        shutil.move(tmp / "warehouse.duckdb", path)
        return path, f"built in {time.perf_counter() - t0:.0f} s"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fixture_warehouse() -> tuple[Path, str]:
    """The test suite's small warehouse (tests/fixture_manifests/), cached like the big one."""
    import fixture_manifests
    from edgebench.results import warehouse

    h = hashlib.sha256()
    for f in sorted((REPO / "tests" / "fixture_manifests").glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    h.update(_fingerprint(0, 0).encode())
    path = CACHE / f"fixtures-{h.hexdigest()[:12]}.duckdb"
    if path.is_file():
        return path, "cached"
    CACHE.mkdir(parents=True, exist_ok=True)
    for old in CACHE.glob("fixtures-*.duckdb"):
        old.unlink()
    tmp = Path(tempfile.mkdtemp(prefix="edgebench-bench-portal-fx-"))
    try:
        root = fixture_manifests.write_tree(tmp / "raw")
        warehouse.build(warehouse_path=tmp / "warehouse.duckdb", raw_root=str(root), quiet=True)
        shutil.move(tmp / "warehouse.duckdb", path)
        return path, "built"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _expect(ref):
    """The reference load's shape: a later load counts only once it shows as many charts and tables."""
    charts, frames, title = ref.charts, ref.dataframes, ref.title
    return lambda s: s["title"] == title and s["charts"] >= charts and s["dataframes"] >= frames


def _problems(r) -> list[str]:
    """What went wrong with one timed load (empty if nothing): it timed out, or its first exception / error box."""
    if r.timed_out:
        return ["timed out"]
    return (r.exceptions + r.errors)[:1]


def _measure(bs, driver, servers: dict, rounds: int, floor_url: str) -> dict:
    """Per page and server: the first load, then `rounds` loads by URL and by sidebar link (interleaved). The floor
    page (bench/portal_floor.py) is opened by URL once beside every portal page's pair of URL loads."""
    res = {p: {name: {"first": None, "url": [], "nav": [], "charts": 0, "problems": []} for name in servers}
           for p in bs.PAGES}
    res["floor"] = {"url": [], "problems": []}
    floor_ref = bs.load(driver, floor_url, "", quiet=1.5)
    floor_ready = _expect(floor_ref)
    if not floor_ref.charts or not floor_ref.dataframes:
        res["floor"]["problems"].append("the floor page showed no chart or table")
    ready = {}
    for name, url in servers.items():  # first load: slow quiet period, it also gives the reference shape
        for p in bs.PAGES:
            r = bs.load(driver, url, p, quiet=1.5)
            cell = res[p][name]
            cell["first"], cell["charts"] = r.seconds, r.charts
            cell["problems"] += [f"first load: {x}" for x in (
                r.exceptions + r.errors + (["did not settle"] if r.timed_out else []))]
            ready[p, name] = _expect(r)
    for _ in range(rounds):
        for p in bs.PAGES:
            for name, url in servers.items():
                r = bs.load(driver, url, p, quiet=0.3, ready=ready[p, name])
                res[p][name]["url"].append(r.seconds)
                res[p][name]["problems"] += _problems(r)
            r = bs.load(driver, floor_url, "", quiet=0.3, ready=floor_ready)
            res["floor"]["url"].append(r.seconds)
            res["floor"]["problems"] += _problems(r)
        for name, url in servers.items():  # in one session: the sidebar, page after page
            bs.load(driver, url, bs.PAGES[-1], quiet=0.3, ready=ready[bs.PAGES[-1], name])
            for p in bs.PAGES:
                r = bs.navigate(driver, p, quiet=0.3, ready=ready[p, name])
                res[p][name]["nav"].append(r.seconds)
    return res


def run(quick: bool) -> list[Row]:
    import browser_support as bs

    runs, samples = (500, 50_000) if quick else (10_000, 1_000_000)
    rounds = QUICK_ROUNDS if quick else ROUNDS
    missing = bs.missing_browser()
    if missing:
        return [Row("portal", "portal pages in headless Chromium", None, "s", f"< {TARGET_S} s per page", None,
                    f"not measured: {missing}")]
    big, big_how = big_warehouse(runs, samples)
    small, small_how = fixture_warehouse()
    label = f"{runs:,}-run"
    log_dir = CACHE / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with bs.portal(big, log=log_dir / "streamlit-big.log") as big_url, \
            bs.portal(small, log=log_dir / "streamlit-fixtures.log") as small_url, \
            bs.portal(small, log=log_dir / "streamlit-floor.log", app=FLOOR_APP) as floor_url, \
            bs.browser() as driver:
        res = _measure(bs, driver, {"big": big_url, "small": small_url}, rounds, floor_url)

    rows, ratios, url_big, url_small = [], [], [], []
    for p in bs.PAGES:
        b, s = res[p]["big"], res[p]["small"]
        nav_b, nav_s = statistics.median(b["nav"]), statistics.median(s["nav"])
        url_b, url_s = statistics.median(b["url"]), statistics.median(s["url"])
        url_big.append(url_b)
        url_small.append(url_s)
        ratios.append(nav_b / nav_s if nav_s else None)
        problems = b["problems"] + s["problems"]
        detail = (f"{label}: {nav_b:.2f} s (first load {b['first']:.2f} s, opened by URL in a fresh document "
                  f"{url_b:.2f} s), {b['charts']} chart(s); fixture warehouse: {nav_s:.2f} s (by URL {url_s:.2f} s)")
        if problems:
            detail += "; PROBLEMS: " + "; ".join(dict.fromkeys(problems))
        rows.append(Row("portal", f"page {PAGE_NAMES.get(p, p)} ({label} warehouse): charts drawn, after the first "
                        "load", nav_b, "s", f"< {TARGET_S} s", nav_b < TARGET_S and not problems, detail,
                        {"page": p, "big": b, "fixtures": s, "warehouse_runs": runs}))
    how = (f"medians of {rounds} round(s) after the first load, the two warehouses interleaved; a page's time runs "
           "from the click on its sidebar link (the app already open, as a user moves between pages) until every "
           "chart is drawn and the page is still")
    slowest = max(range(len(bs.PAGES)), key=lambda i: url_big[i])
    floor = statistics.median(res["floor"]["url"])
    rows.append(Row("portal", f"any page opened by URL / reload ({label} warehouse; a fresh document), slowest page",
                    url_big[slowest], "s", f"< {TARGET_S} s", url_big[slowest] < TARGET_S,
                    f"{PAGE_NAMES[bs.PAGES[slowest]]}; median over pages {statistics.median(url_big):.2f} s vs "
                    f"{statistics.median(url_small):.2f} s on the fixture warehouse and {floor:.2f} s for a bare "
                    "Streamlit page with one chart and one table (next row): a fresh document re-parses "
                    "Streamlit's frontend and its chart / table chunks, the same on both warehouses",
                    {"by_url": dict(zip(bs.PAGES, url_big)), "by_url_fixtures": dict(zip(bs.PAGES, url_small)),
                     "floor_median": floor}))
    rows.append(Row("portal", "reference: a bare Streamlit page (one chart, one table) opened by URL, median",
                    floor, "s", "", None,
                    f"bench/portal_floor.py, no warehouse and no query: Streamlit's own cost of a fresh document on "
                    f"this machine, measured {len(res['floor']['url'])} times interleaved with the portal's pages; "
                    f"slowest portal page by URL / this: {url_big[slowest] / floor:.2f}"
                    + ("; PROBLEMS: " + "; ".join(dict.fromkeys(res["floor"]["problems"]))
                       if res["floor"]["problems"] else ""),
                    {"seconds": res["floor"]["url"]}))
    ok_ratios = [r for r in ratios if r]
    med = statistics.median(ok_ratios) if ok_ratios else None
    rows.append(Row("portal", f"page time, {label} / fixture warehouse (median over {len(bs.PAGES)} pages)", med,
                    "ratio", "<= 1.5", None if med is None else med <= 1.5,
                    f"per page: {', '.join(f'{PAGE_NAMES[p]} {r:.2f}' for p, r in zip(bs.PAGES, ratios) if r)}; "
                    f"{how}; warehouses: {label} {big_how} ({big.stat().st_size / 2 ** 20:.0f} MiB), fixtures "
                    f"{small_how}", {"ratios": dict(zip(bs.PAGES, ratios))}))
    return rows


if __name__ == "__main__":  # python bench/bench_portal.py [--quick]: this part alone
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    print_table(run(quick="--quick" in sys.argv))
