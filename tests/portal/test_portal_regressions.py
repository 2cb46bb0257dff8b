"""The portal's CNI versions page (regression cards): data/regressions.py directly, and the page through AppTest, on
the version fixture warehouse (fixture_manifests VERSION_*)."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import data.regressions
from data.common import LOCAL_BANNER, connect
from data.regressions import regression_cards, regression_rows, regression_summary, regression_table
import fixture_manifests as fx

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
PAGE = "app_pages/regressions.py"
CILIUM = "cilium:vxlan 1.17.6 -> 1.18.0 (substrate local, versions requested, not installed)"
SSH = "calico:vxlan v3.29.4 -> v3.30.0 (substrate ssh, versions installed)"


@pytest.fixture
def con(versions_warehouse):
    c = connect(versions_warehouse)
    yield c
    c.close()


def open_page(warehouse, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(warehouse))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    return at


@pytest.fixture
def page(versions_warehouse, monkeypatch):
    return open_page(versions_warehouse, monkeypatch)


def frame(at, column):
    return next((d for d in [*at.dataframe, *at.table] if column in d.value.columns), None)


# ---- data/regressions.py --------------------------------------------------------------------------------------

def test_cards_and_rows(con):
    cards = regression_cards(con)
    assert len(cards) == len(fx.VERSION_NULL_CARDS) + 3
    assert cards.iloc[0]["label"] == CILIUM  # most worse rows first
    ssh = cards[cards["substrate"] == "ssh"].iloc[0]
    assert ssh["label"] == SSH and ssh["caveat"] is None and ssh["versions"] == "versions installed"
    assert "No CNI software of either version ran" in cards.iloc[0]["caveat"]
    rows = regression_rows(con, "local", "cilium", "vxlan")
    assert len(rows) == fx.N_VERSION_COMPARISONS_PER_CARD
    verdicts = rows["verdict"].tolist()
    assert verdicts == sorted(verdicts, key=["worse", "better", "inconclusive", "equivalent", "n < 2"].index)
    assert verdicts[0] == "worse" and "inconclusive" in verdicts
    table = regression_table(rows)
    assert list(table.columns) == ["config", "metric_label", "previous_n_runs", "new_n_runs", "previous_mean",
                                   "new_mean", "unit", "diff_pct_ci", "verdict"]
    first = rows.iloc[0]
    assert table.iloc[0]["diff_pct_ci"].startswith(f"{first['diff_pct']:+.1f} % [")
    assert "(lower better)" in table.iloc[0]["metric_label"] or "(higher better)" in table.iloc[0]["metric_label"]
    n_small = regression_table(regression_rows(con, "ssh", "calico", "vxlan"))
    assert n_small[n_small["verdict"] == "n < 2"]["diff_pct_ci"].str.endswith("% (n < 2)").all()
    assert regression_rows(con, "local", "calico", "bgp").empty


def test_summary_text(con):
    card = regression_cards(con).iloc[0]
    text = regression_summary(card)
    assert text.startswith("52 comparisons: 43 worse, 0 better, 0 equivalent, 9 inconclusive.")
    assert "about 2.6 better/worse verdicts by chance" in text


# ---- the page -------------------------------------------------------------------------------------------------

def test_page_is_registered_and_shows_a_card(page):
    at = page
    assert at.title[0].value == "CNI versions"
    overview = frame(at, "card_n_worse").value
    assert overview["label"].tolist()[0] == CILIUM and len(overview) == len(fx.VERSION_NULL_CARDS) + 3
    # many cards: a select box, the card with most worse rows first
    box = at.selectbox(key="reg_card")
    assert box.value == CILIUM and SSH in box.options
    assert [s.value for s in at.subheader] == [CILIUM]
    assert any(LOCAL_BANNER in w.value for w in at.warning)
    assert any("No CNI software of either version ran" in w.value for w in at.warning)
    assert any("52 comparisons: 43 worse" in c.value for c in at.caption)


def test_card_table_has_n_ci_verdict_and_worse_highlighted(page):
    table = frame(page, "diff_pct_ci")
    df = table.value
    assert len(df) == fx.N_VERSION_COMPARISONS_PER_CARD
    assert {"previous_n_runs", "new_n_runs", "previous_mean", "new_mean", "verdict"} <= set(df.columns)
    assert df["verdict"].iloc[0] == "worse" and (df["previous_n_runs"] == fx.VERSION_REPS).all()
    assert df["diff_pct_ci"].str.contains(r"\[").all()
    assert "f8d0d0" in str(table.proto)  # worse rows are highlighted
    assert any("Welch" in c.value for c in page.caption)


def test_select_another_card(page):
    at = page
    at.selectbox(key="reg_card").set_value(SSH).run()
    assert not at.exception
    assert [s.value for s in at.subheader] == [SSH]
    assert not any(LOCAL_BANNER in w.value for w in at.warning)  # a cluster card: no testbed caveat
    df = frame(at, "diff_pct_ci").value
    # the ssh card: 3 runs a side on TCP (within the margin or undecided), 2/1 on UDP (n < 2)
    assert set(df["verdict"]) == {"equivalent", "inconclusive", "n < 2"}
    assert any("7 more with n < 2" in c.value for c in at.caption)


def test_few_cards_are_shown_one_below_the_other(versions_warehouse, monkeypatch):
    monkeypatch.setattr(data.regressions, "CARDS_SHOWN_ALL", 10)
    at = open_page(versions_warehouse, monkeypatch)
    assert not at.selectbox  # no select box
    assert len(at.subheader) == len(fx.VERSION_NULL_CARDS) + 3 and at.subheader[0].value == CILIUM
    assert sum("diff_pct_ci" in d.value.columns for d in [*at.dataframe, *at.table]) == len(fx.VERSION_NULL_CARDS) + 3


def test_empty_state_explains_how_versions_get_measured(fixture_warehouse, monkeypatch):
    at = open_page(fixture_warehouse, monkeypatch)
    (info,) = at.info
    assert "No CNI mode has been measured at two versions" in info.value and "edgebench watch" in info.value


def test_missing_warehouse(tmp_path, monkeypatch):
    at = open_page(tmp_path / "nothing.duckdb", monkeypatch)
    assert any("make sweep" in i.value for i in at.info)
