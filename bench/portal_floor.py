"""The portal part's reference page: what any Streamlit page costs when opened by URL on this machine.

The same kinds of frontend chunks a portal page loads (a wide layout, a sidebar navigation, a title, one Altair
chart, one dataframe) and nothing of edgebench: no warehouse, no query. bench/bench_portal.py opens it by URL
interleaved with the portal's pages, so the by-URL row can be read against Streamlit's own floor.
(run: streamlit run bench/portal_floor.py)
"""
import altair as alt
import pandas as pd
import streamlit as st

st.set_page_config(page_title="floor", layout="wide")


def floor():
    st.title("Streamlit's floor")
    df = pd.DataFrame({"x": list(range(10)), "y": [v * v for v in range(10)]})
    st.altair_chart(alt.Chart(df).mark_line(point=True).encode(x="x:Q", y="y:Q"), width="stretch")
    st.dataframe(df, hide_index=True)


def other():
    st.title("another page")


st.navigation([st.Page(floor, title="Floor", default=True), st.Page(other, title="Other", url_path="other")]).run()
