"""The portal's Distributions page: data/distributions.py directly, and the page through AppTest, on the service
proxy / distribution fixture of test_warehouse_distributions (with clusters, and testbed runs only)."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from data.common import LOCAL_BANNER, connect
from data.distributions import default_proxies, distribution_comparison, proxy_stands_for
from edgebench.results.report.marts.distributions import (DISTRIBUTIONS, distribution_references, proxy_comparison,
                                                          proxy_unsupported)
from conftest import build_distributions_tree
from test_warehouse_distributions import manifests

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
PAGE = "app_pages/distributions.py"


@pytest.fixture(scope="module")
def both(distributions_warehouse):
    return distributions_warehouse


@pytest.fixture(scope="module")
def testbed_only(tmp_path_factory):
    return build_distributions_tree(tmp_path_factory, "dist-local", [m for m in manifests() if m["substrate"] == "local"])


def page(path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    return at


def frame(at, column):
    return next((d.value for d in [*at.dataframe, *at.table] if column in d.value.columns), None)


def test_queries(both):
    con = connect(both)
    try:
        assert DISTRIBUTIONS.substrates(con) == ["ssh"]
        assert distribution_references(con, "ssh", cni="flannel") == ["k0s", "k3s"]
        df = distribution_comparison(con, "ssh", "k3s", cni="flannel", cni_mode="vxlan", protocol="tcp")
        assert df["distribution"].tolist()[0] == "k3s" and df["what"].tolist()[0] == "throughput (Mbit/s)"
        k0s = df[(df["distribution"] == "k0s") & (df["metric"] == "throughput_mbps")].iloc[0]
        assert (k0s["n_runs"], k0s["verdict"]) == (3, "worse")
        proxies = proxy_comparison(con, "local", cni="flannel")
        assert proxies["service_proxy_mode"].tolist() == ["iptables", "dnat", "nftables"]
        # against iptables (2000 +- 10 Mbit/s, margin 100): dnat +50 +- 127 holds 0 and reaches beyond the margin,
        # inconclusive; nftables +100 +- 23 excludes 0 and reaches beyond it, better (test_warehouse_distributions)
        assert proxies["verdict"].tolist() == ["reference", "inconclusive", "better"]
        assert proxy_unsupported(con, "local")["service_proxy_mode"].tolist() == ["ipvs"]
    finally:
        con.close()
    table = default_proxies()
    assert set(table["distribution"]) == {"k3s", "k0s", "microk8s", "kubeadm", "kind"}
    assert proxy_stands_for("iptables").startswith("k3s, k0s")


def test_page_with_clusters_compares_distributions_and_proxies(both, monkeypatch):
    at = page(both, monkeypatch)
    dist = frame(at, "reference_mean")
    assert set(dist["distribution"]) == {"k3s", "k0s"} and {"n_runs", "ci95", "diff_ci95", "verdict"} <= set(dist)
    assert {"reference", "better"} <= set(dist["verdict"])  # k0s is the reference (no kubeadm): k3s faster
    proxies = frame(at, "reference_throughput_mbps")
    assert proxies["service_proxy_mode"].tolist() == ["iptables", "dnat", "nftables"]
    assert {"n_runs", "throughput_ci95_mbps", "diff_ci95_mbps", "verdict"} <= set(proxies)
    assert any(LOCAL_BANNER in w.value for w in at.warning)  # the testbed part says what it measures
    assert any("only part of a distribution the testbed models" in m.value for m in at.markdown)
    assert "kernel has no IPVS" in frame(at, "error")["error"].iloc[0]
    assert len(at.get("vega_lite_chart")) == 2  # two distributions, three proxy modes: charts, not single bars


def test_page_without_clusters_says_so_and_shows_the_testbed_part(testbed_only, monkeypatch):
    at = page(testbed_only, monkeypatch)
    assert any("no real-cluster runs" in i.value for i in at.info)
    assert frame(at, "reference_mean") is None
    assert frame(at, "default proxy") is not None
    assert frame(at, "reference_throughput_mbps")["verdict"].tolist() == ["reference", "inconclusive", "better"]


def test_one_proxy_mode_is_a_table_not_a_chart(testbed_only, monkeypatch):
    at = page(testbed_only, monkeypatch)
    at.selectbox(key="proxy_cni").set_value("flannel").run()
    assert len(at.get("vega_lite_chart")) == 1
    con = connect(testbed_only)
    try:  # a selection holding one mode only
        one = proxy_comparison(con, "local", cni="flannel", protocol="udp")
    finally:
        con.close()
    assert one.empty


@pytest.fixture(scope="module")
def with_lab(tmp_path_factory):
    """The clusters of the fixture plus kubeadm runs shaped like the local lab's real ssh runs (`make lab-local`):
    substrate ssh, distribution kubeadm, the lab's target and shared kernel in the environment, the same CNI mode and
    conditions as the k3s / k0s runs, resources.json with the CNI agent's samples."""
    from test_warehouse_distributions import DIST_RUNS, _m

    ms = [m for m in manifests() if m["substrate"] == "ssh"]
    for k, tput in enumerate([800.0, 810.0, 790.0]):
        ms.append(_m(k, substrate="ssh", distribution="kubeadm", path="pod-to-pod", proxy_mode="iptables", value=tput,
                     rtt=300.0, raw_files=["resources.json"]))
    for m in ms:  # one lab ran all three distributions (two labs are never compared: test_warehouse_distributions)
        m["environment"] = {**(m.get("environment") or {}), "cluster": {
            "target": "lab-local", "shared_kernel": True, "artifact_source": "http://10.77.0.1:8089"}}
    DIST_RUNS.setdefault("kubeadm", {"tput": [800.0, 810.0, 790.0], "rtt": [300.0] * 3, "cni_cpu_run": [2.0] * 3})
    try:
        return build_distributions_tree(tmp_path_factory, "dist-lab", ms)
    finally:
        DIST_RUNS.pop("kubeadm")


def test_the_labs_kubeadm_runs_are_a_distribution_column_and_the_reference(with_lab, monkeypatch):
    con = connect(with_lab)
    try:
        assert distribution_references(con, "ssh", cni="flannel") == ["kubeadm", "k0s", "k3s"]  # kubeadm first
    finally:
        con.close()
    at = page(with_lab, monkeypatch)
    assert at.selectbox(key="dist_lab").value == "lab-local"
    assert any("share one kernel" in w.value for w in at.warning)  # the local lab's banner
    assert at.selectbox(key="dist_reference").value == "kubeadm"
    dist = frame(at, "reference_mean")
    assert set(dist["distribution"]) == {"kubeadm", "k3s", "k0s"}
    tput = dist[dist["what"] == "throughput (Mbit/s)"].set_index("distribution")
    assert tput.loc["kubeadm", "verdict"] == "reference" and tput.loc["kubeadm", "n_runs"] == 3
    assert tput.loc["kubeadm", "mean"] == pytest.approx(800.0)
    assert tput.loc["k3s", "verdict"] == "better" and tput.loc["k0s", "verdict"] == "worse"


def test_kind_beside_the_local_lab_is_one_scope_with_a_substrate_column(tmp_path_factory, monkeypatch):
    from test_warehouse_distributions import BOOT, build_machine_warehouse

    path = build_machine_warehouse(tmp_path_factory)
    scope = f"kind + ssh (one machine, boot {BOOT[:8]})"
    con = connect(path)
    try:
        assert set(DISTRIBUTIONS.substrates(con)) == {scope, "ssh"}
    finally:
        con.close()
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(PAGE).run()
    at.selectbox(key="dist_substrate").set_value(scope).run()
    assert not at.exception
    assert any("one machine in one boot" in c.value for c in at.caption)
    dist = frame(at, "reference_mean")
    tput = dist[dist["what"] == "throughput (Mbit/s)"].set_index("distribution")
    assert tput.loc["kind", "run_substrates"] == "kind" and tput.loc["kubeadm", "run_substrates"] == "ssh"
    assert tput.loc["kubeadm", "verdict"] == "reference" and tput.loc["kind", "verdict"] == "worse"
