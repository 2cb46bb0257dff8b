"""app/ui.py's table(): short plain frames become static HTML (st.table), the rest stays an interactive grid, and
a static table's cells show their text, not Markdown."""
from __future__ import annotations

import re

import pandas as pd
from streamlit.testing.v1 import AppTest

import ui


def _shown(text: str) -> str:
    """What Markdown shows for an escaped cell (a backslash before punctuation is dropped)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def test_a_cells_text_is_escaped_for_markdown_and_numbers_keep_their_format():
    show = ui._cell_format(None)
    for text in ("1. item", "a*b* _c_ [l](u) `x` 1|2 <b> $5 :smile: ~~s~~ # h", "flannel:vxlan", "host_n_runs"):
        escaped = show(text)
        assert _shown(escaped) == text
        assert not re.search(r"(?<!\\)[*_`\[\]|<>$:~#]", escaped)  # nothing left Markdown would read
    assert show(float("nan")) == "" and show(None) == ""
    assert _shown(show(2.50000)) == "2.5" and _shown(show(3)) == "3"
    assert _shown(ui._cell_format("%.1f")(1.26)) == "1.3"


def _page(body: str) -> AppTest:
    return AppTest.from_string("import pandas as pd\nimport streamlit as st\nimport ui\n" + body).run()


def test_short_plain_frames_are_static_and_the_rest_interactive():
    at = _page("ui.table(pd.DataFrame({'a': [1.0, 2.0]}), column_config={'a': st.column_config.NumberColumn("
               "format='%.1f', help='what a is')})")
    assert not at.exception and len(at.table) == 1 and len(at.dataframe) == 0
    assert at.table[0].value["a"].tolist() == [1.0, 2.0]  # the value keeps the data; only the display is formatted
    assert [c.value for c in at.caption] == ["a: what a is"]
    # a label that is the column's own name relabels nothing: still static
    at = _page("ui.table(pd.DataFrame({'a': [1.0]}), column_config={'a': st.column_config.NumberColumn('a', "
               "format='%.2f')})")
    assert not at.exception and len(at.table) == 1 and len(at.dataframe) == 0
    for body in (f"ui.table(pd.DataFrame({{'a': range({ui.STATIC_ROWS + 1})}}))",            # long
                 "ui.table(pd.DataFrame({'a': [1]}), column_config={'a': 'A label'})",          # relabelled
                 "ui.table(pd.DataFrame({'a': [1]}).style)",                                    # styled
                 "ui.table(pd.DataFrame({'a': [1]}), column_order=['a'])"):                     # grid options
        at = _page(body)
        assert not at.exception and len(at.dataframe) == 1 and len(at.table) == 0, body


def test_a_part_on_demand_is_not_sent_until_asked_for():
    at = _page("if ui.on_demand('Detail', key='d'):\n    ui.table(pd.DataFrame({'a': [1]}))")
    assert not at.exception and len(at.table) == 0 and at.toggle(key="d").value is False
    at.toggle(key="d").set_value(True).run()
    assert not at.exception and len(at.table) == 1

