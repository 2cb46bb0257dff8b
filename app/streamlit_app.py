"""edgebench portal: routes to the pages in app_pages/ (run: streamlit run app/streamlit_app.py): the overview, one
page per workload (the registry in edgebench.workloads names it), and the cross-workload pages (link conditions,
tuning, resources, inter-cluster tools, CNI version regression cards, the seed papers reproduced, the functional
support matrix)."""
import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parent))  # pages import data / ui from app/

from edgebench.workloads import REGISTRY  # noqa: E402  (each workload names its page)

import ui  # noqa: E402

st.set_page_config(page_title="edgebench", page_icon=":material/hub:", layout="wide")
ui.freshness()  # the sidebar's data age; a swapped-in warehouse reruns the page
st.navigation([
    st.Page("app_pages/overview.py", title="Overview", icon=":material/dashboard:", default=True),
    # one entry per page, in registry order: workloads may share one (iperf3 and sockperf: CNI datapaths)
    *[st.Page(f"app_pages/{w.page}.py", title=w.page_title, icon=w.page_icon, url_path=w.page)
      for i, w in enumerate(REGISTRY.values()) if w.page not in [v.page for v in list(REGISTRY.values())[:i]]],
    st.Page("app_pages/link_conditions.py", title="Link conditions", icon=":material/network_check:",
            url_path="link_conditions"),
    st.Page("app_pages/tuning.py", title="Tuning efficiency", icon=":material/tune:", url_path="tuning"),
    st.Page("app_pages/resources.py", title="Resources", icon=":material/memory:", url_path="resources"),
    st.Page("app_pages/intercluster.py", title="Inter-cluster tools", icon=":material/hub:",
            url_path="intercluster"),
    st.Page("app_pages/distributions.py", title="Distributions", icon=":material/stacks:", url_path="distributions"),
    st.Page("app_pages/emulation.py", title="Emulation vs real", icon=":material/compare:", url_path="emulation"),
    st.Page("app_pages/regressions.py", title="CNI versions", icon=":material/update:", url_path="cni_versions"),
    st.Page("app_pages/papers.py", title="Papers", icon=":material/menu_book:", url_path="papers"),
    st.Page("app_pages/support.py", title="Support", icon=":material/fact_check:", url_path="support"),
], expanded=True).run()  # every page listed: the sidebar also holds the data age (ui.freshness)
