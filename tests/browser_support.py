"""The portal in a real browser: start `streamlit run` against a warehouse, drive headless Chromium at it.

Shared by tests/host/test_browser.py and bench/bench_portal.py (the bench puts tests/ on sys.path). Not imported by the
portal or the package: nothing here is on their runtime path.

    with portal(warehouse) as url, browser() as driver:
        page = load(driver, url, "cni_datapaths")   # PageLoad: seconds until the charts are drawn, the DOM facts

Chromium and its driver come from Debian (`apt-get install -y chromium chromium-driver`, which `make test`
does); Selenium drives them offline (no driver download: the chromedriver path is given).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from servers import free_port, stop, wait_ready

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "app" / "streamlit_app.py"
INSTALL_HINT = "apt-get install -y chromium chromium-driver (`make test` installs them on Debian/Ubuntu)"

# Every page of app/streamlit_app.py's st.navigation, by url_path ("" = the default page, Overview).
PAGES = ("", "cni_datapaths", "dds", "http", "loaded_latency", "link_conditions", "tuning", "resources",
         "intercluster", "distributions", "cni_versions", "papers")

# Streamlit 1.67's DOM (data-testid attributes of its frontend)
APP_VIEW = '[data-testid="stAppViewContainer"]'
MAIN = '[data-testid="stMain"]'
CHART = '[data-testid="stVegaLiteChart"]'
EXCEPTION = '[data-testid="stException"]'
ALERT = '[data-testid="stAlert"]'                  # st.error / warning / info / success: its kind is in a child
ALERT_ERROR = '[data-testid="stAlertContentError"]'
SKELETON = '[data-testid="stSkeleton"]'
DATAFRAME = '[data-testid="stDataFrame"]'
TABLE = '[data-testid="stTable"]'                 # st.table: static HTML (ui.table draws short frames so)
STATUS = '[data-testid="stStatusWidget"]'         # "Running..." while the script runs


def chromium_binary() -> str | None:
    for name in (os.environ.get("EDGEBENCH_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and (path := shutil.which(name)):
            return path
    return None


def chromedriver_binary() -> str | None:
    for name in (os.environ.get("EDGEBENCH_CHROMEDRIVER"), "chromedriver"):
        if name and (path := shutil.which(name)):
            return path
    for path in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"):
        if os.access(path, os.X_OK):
            return path
    return None


def missing_browser() -> str | None:
    """Why no browser can be driven here (None: it can). Selenium itself is a pinned requirement, not checked here."""
    if not chromium_binary():
        return f"no Chromium installed: {INSTALL_HINT}"
    if not chromedriver_binary():
        return f"no chromedriver installed: {INSTALL_HINT}"
    return None


@contextlib.contextmanager
def portal(warehouse: str | Path, timeout: float = 60, log: Path | None = None, app: Path = APP):
    """`streamlit run app/streamlit_app.py` (or another `app`) on a free port against `warehouse`; yields its base
    URL, stops it after."""
    port = free_port()
    env = {**os.environ, "EDGEBENCH_WAREHOUSE": str(warehouse), "PYTHONUNBUFFERED": "1"}
    for extra in (REPO / "containers" / "runner" / "src",):  # in case the package is not installed in the venv
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra), env.get("PYTHONPATH")]))
    log_file = open(log, "wb") if log else tempfile.TemporaryFile()
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none", "--server.runOnSave", "false"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def output() -> str:
        log_file.seek(0)
        return ":\n" + log_file.read().decode(errors="replace")[-3000:]

    try:
        wait_ready(proc, f"{url}/_stcore/health", "streamlit", timeout=timeout, why=output)
        yield url
    finally:
        stop(proc, grace=10)
        log_file.close()


@contextlib.contextmanager
def browser(width: int = 1400, height: int = 2400):
    """Headless Chromium under Selenium (offline: Debian's chromedriver, no driver manager)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium_binary()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-extensions", "--disable-sync",
                "--no-first-run", "--mute-audio", f"--window-size={width},{height}"):
        opts.add_argument(arg)
    profile = tempfile.mkdtemp(prefix="edgebench-chromium-")
    opts.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=chromedriver_binary()))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


# In the page: is the script done and is everything it drew on screen? (ran by poll_page in the browser)
_STATE_JS = """
const main = document.querySelector(arguments[0].main);
if (!main) return null;
const q = (sel) => Array.from(main.querySelectorAll(sel));
const status = document.querySelector(arguments[0].status);
// charts on screen: one in a tab that is not selected is laid out only once its tab is (never "drawn" before)
const charts = q(arguments[0].chart).filter(c => c.checkVisibility({visibilityProperty: true}));
return {
  running: !!(status && /running/i.test(status.innerText || '')),
  skeletons: q(arguments[0].skeleton).length,
  stale: q('[data-stale="true"]').length,
  charts: charts.length,
  chart_marks: charts.map(c => {  // what each chart drew: a hash of its SVG (or canvas pixels)
    const g = c.querySelector('svg'), k = c.querySelector('canvas');
    const src = g ? g.outerHTML : (k ? k.toDataURL() : '');
    let h = 5381;
    for (let i = 0; i < src.length; i++) h = ((h * 33) ^ src.charCodeAt(i)) >>> 0;
    return src.length + ':' + h.toString(16);
  }),
  charts_drawn: charts.filter(c => c.querySelector('canvas, svg') &&
                                   c.getBoundingClientRect().height > 20).length,
  exceptions: q(arguments[0].exception).map(e => e.innerText.slice(0, 2000)),
  errors: q(arguments[0].alert_error).map(e => e.innerText.slice(0, 2000)),
  alerts: q(arguments[0].alert).length,
  dataframes: q(arguments[0].dataframe).length,
  tables: q(arguments[0].dataframe).map(t => Array.from(t.querySelectorAll('[role="row"]')).map(
            r => Array.from(r.querySelectorAll('[role="columnheader"], [role="gridcell"]')).map(
                c => (c.textContent || '').trim()))).concat(
          q(arguments[0].table).map(t => Array.from(t.querySelectorAll('tr')).map(
            r => Array.from(r.querySelectorAll('th, td')).map(c => (c.textContent || '').trim())))),
  tables_pending: q(arguments[0].dataframe).filter(t => !t.closest('details:not([open])') &&
      t.checkVisibility({visibilityProperty: true}) && !t.querySelector('[role="columnheader"]')).length,
  title: (main.querySelector('h1') || {}).innerText || '',
  text: main.innerText,
};
"""
_SELECTORS = {"main": MAIN, "status": STATUS, "chart": CHART, "skeleton": SKELETON, "exception": EXCEPTION,
              "alert_error": ALERT_ERROR, "alert": ALERT, "dataframe": DATAFRAME, "table": TABLE}


@dataclass
class PageLoad:
    path: str
    seconds: float                 # navigation start until the page settled with every chart drawn
    charts: int = 0                # vega-lite charts on the page
    charts_drawn: int = 0          # of which have their canvas / svg laid out
    chart_marks: list[str] = field(default_factory=list)  # per chart: a hash of what it drew (compare two states)
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dataframes: int = 0
    tables: list[list[list[str]]] = field(default_factory=list)  # per st.dataframe, then st.table: rows, header 1st
    title: str = ""
    text: str = ""                 # the main area's visible text (captions, headers, table headers, alerts)
    timed_out: bool = False


def page_state(driver) -> dict | None:
    return driver.execute_script(_STATE_JS, _SELECTORS)


def wait_settled(driver, t0: float, path: str = "", timeout: float = 60, quiet: float = 1.0,
                 previous: str | None = None, changed_within: float = 5,
                 ready: Callable[[dict], bool] | None = None) -> PageLoad:
    """Poll until the script run is over and the page has been stable for `quiet` seconds with every chart drawn.

    The time reported is when the page first reached that final state (not when the quiet period ended).
    previous: content() of the page before an interaction; the page counts as settled only once it changed, or
    `changed_within` seconds passed without a change (an interaction that changes nothing on screen).
    ready: an extra condition on the page state (e.g. the charts and tables a reference load showed are there),
    so that a short `quiet` cannot mistake a pause between two messages of the script run for its end.
    """
    deadline = t0 + timeout
    last_sig, since, state = None, None, None
    while True:
        now = time.monotonic()
        try:
            state = page_state(driver)
        except Exception:  # noqa: BLE001  (the document is being replaced)
            state = None
        if state is not None:
            sig = content(state)
            done = (not state["running"] and state["skeletons"] == 0 and state["stale"] == 0 and state["title"]
                    and state["tables_pending"] == 0 and state["charts_drawn"] == state["charts"]
                    and (previous is None or sig != previous or now - t0 > changed_within)
                    and (ready is None or ready(state)))
            if not done:
                since = None
            elif since is None or sig != last_sig:
                since = now
            last_sig = sig
            if since is not None and now - since >= quiet:
                return _load(path, since - t0, state)
        if now > deadline:
            return _load(path, now - t0, state or {}, timed_out=True)
        time.sleep(0.05)


def content(state: dict) -> str:
    """What a page shows: its text, its tables' cells and what its charts drew (compare two moments)."""
    return "\n".join((state["text"], str(state["tables"]), str(state["chart_marks"]), str(state["dataframes"]),
                      str(state["alerts"])))


def _load(path: str, seconds: float, state: dict, timed_out: bool = False) -> PageLoad:
    return PageLoad(path=path, seconds=seconds, charts=state.get("charts", 0),
                    charts_drawn=state.get("charts_drawn", 0),
                    chart_marks=state.get("chart_marks", []), exceptions=state.get("exceptions", []),
                    errors=state.get("errors", []), dataframes=state.get("dataframes", 0),
                    tables=state.get("tables", []),
                    title=state.get("title", ""), text=state.get("text", ""), timed_out=timed_out)


def load(driver, base_url: str, path: str, timeout: float = 60, quiet: float = 1.0,
         ready: Callable[[dict], bool] | None = None) -> PageLoad:
    """Open base_url/path in a fresh document (a new session of the app, as a link or a reload does) and wait until
    it settled; seconds count from the navigation."""
    driver.get("about:blank")
    t0 = time.monotonic()
    driver.get(f"{base_url}/{path}")
    return wait_settled(driver, t0, path, timeout=timeout, quiet=quiet, ready=ready)


def navigate(driver, path: str, timeout: float = 60, quiet: float = 1.0,
             ready: Callable[[dict], bool] | None = None) -> PageLoad:
    """Go to another page by its sidebar link (in the same session: the app is already loaded) and wait until it
    settled; seconds count from the click."""
    from selenium.webdriver.common.by import By

    links = driver.find_elements(By.CSS_SELECTOR, '[data-testid="stSidebarNavLink"]')
    link = next(a for a in links if (a.get_attribute("href") or "").rstrip("/").rsplit("/", 1)[-1] == path) \
        if path else links[0]
    before = page_state(driver)
    t0 = time.monotonic()
    link.click()
    return wait_settled(driver, t0, path, timeout=timeout, quiet=quiet, ready=ready,
                        previous=content(before) if before else None)


def select_option(driver, label: str, option: str | None = None, timeout: float = 60, quiet: float = 1.0
                  ) -> tuple[str, PageLoad]:
    """Choose `option` (default: the first one not currently selected) in the selectbox labelled `label`; waits
    until the page re-ran. Returns the option chosen and the settled page."""
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.CSS_SELECTOR,
                              f'[data-testid="stSelectbox"] input[role="combobox"][aria-label="{label}"]')
    current = (box.get_attribute("value") or "").strip()
    box.click()  # Streamlit 1.67: a react-aria ComboBox; its options open in a listbox popover
    options = []
    end = time.monotonic() + 10
    while not options and time.monotonic() < end:
        options = [o for o in driver.find_elements(By.CSS_SELECTOR, '[role="listbox"] [role="option"]')
                   if o.text.strip()]
        time.sleep(0.05)
    names = [o.text.strip() for o in options]
    if option is None:
        option = next(n for n in names if n != current)
    target = options[names.index(option)]
    before = content(page_state(driver))
    t0 = time.monotonic()
    target.click()
    return option, wait_settled(driver, t0, driver.current_url, timeout=timeout, previous=before, quiet=quiet)


def wait_for(driver, predicate: Callable[[dict], bool], timeout: float = 15) -> dict | None:
    """The page state once predicate(state) holds (None if it did not within `timeout`): for what the frontend
    updates after the script run settled, such as a data grid redrawing its cells."""
    end = time.monotonic() + timeout
    while True:
        try:
            state = page_state(driver)
        except Exception:  # noqa: BLE001
            state = None
        if state is not None and predicate(state):
            return state
        if time.monotonic() > end:
            return None
        time.sleep(0.1)
