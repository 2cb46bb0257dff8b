"""The portal's Support page (issue 47) through AppTest, on the fixture of tests/warehouse/test_warehouse_support.py
(namespace nodes, x86 / arm64 VM nodes, the testbed): every catalog CNI mode is a row, the cells say works / fails /
unsupported / never tried as `edgebench report --support` does."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from edgebench.plan import catalog
from edgebench.results.report.marts.support import NEVER
from test_warehouse_support import ARM_FAIL, support_warehouse  # noqa: F401  (the session fixture)

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
PAGE = "app_pages/support.py"


def page(path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    return at


def _frame(at):
    return next(d.value for d in at.dataframe)


def test_support_page_lists_every_catalog_mode(support_warehouse, monkeypatch):  # noqa: F811
    at = page(support_warehouse, monkeypatch)
    df = _frame(at)
    df = df.data if hasattr(df, "data") else df  # a Styler
    n_modes = sum(len(info["modes"]) for info in catalog.cnis().values())
    assert len(df) == n_modes
    assert list(df.columns) == ["CNI mode", "namespace node (shared kernel)", "x86 VM (stock kernel)", "arm64 VM",
                                "real machine lab", "testbed"]
    row = df.set_index("CNI mode").loc["flannel:vxlan"]
    assert row["arm64 VM"] == f"fails: {ARM_FAIL}"
    assert row["namespace node (shared kernel)"].startswith("works (n 3 of 3; sup-ns)")
    assert row["real machine lab"] == NEVER
    assert [m.value for m in at.metric] == ["6", "2", "1", str(n_modes * 5 - 9)]


def test_support_page_can_hide_modes_never_tried(support_warehouse, monkeypatch):  # noqa: F811
    at = page(support_warehouse, monkeypatch)
    at.toggle(key="support_tried_only").set_value(True).run()
    assert not at.exception
    df = _frame(at)
    df = df.data if hasattr(df, "data") else df
    assert sorted(df["CNI mode"]) == ["flannel:vxlan", "flannel:wireguard", "host:host"]
