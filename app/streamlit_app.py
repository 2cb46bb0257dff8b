"""edgebench portal: routes to the pages in app_pages/ (run: streamlit run app/streamlit_app.py)."""
import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parent))  # pages import data / ui from app/

st.set_page_config(page_title="edgebench", page_icon=":material/hub:", layout="wide")
st.navigation([
    st.Page("app_pages/overview.py", title="Overview", icon=":material/dashboard:", default=True),
    st.Page("app_pages/cni_datapaths.py", title="CNI datapaths", icon=":material/speed:"),
    st.Page("app_pages/dds.py", title="DDS pub/sub", icon=":material/podcasts:", url_path="dds"),
    st.Page("app_pages/http.py", title="HTTP services", icon=":material/http:", url_path="http"),
    st.Page("app_pages/link_conditions.py", title="Link conditions", icon=":material/network_check:",
            url_path="link_conditions"),
    st.Page("app_pages/tuning.py", title="Tuning efficiency", icon=":material/tune:", url_path="tuning"),
    st.Page("app_pages/resources.py", title="Resources", icon=":material/memory:", url_path="resources"),
]).run()
