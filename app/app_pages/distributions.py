import streamlit as st
from edgebench.results.report.marts.distributions import (DISTRIBUTIONS, PROXIES, distribution_references,
                                                          proxy_comparison, proxy_unsupported)
from edgebench.results.report.verdict import RULE_HELP

from data.distributions import (default_proxies, distribution_chart, distribution_comparison, is_one_machine,
                                proxy_chart, proxy_stands_for)
import ui

st.title("Distributions")
st.caption("Kubernetes distributions (k3s, k0s, MicroK8s, kubeadm, kind) compared for the same CNI mode, as seed 004 "
           "does: throughput, latency, and CPU / RAM of the CNI and the node idle and under load. Every comparison "
           "shows n, the 95% CI and a verdict against the reference (Welch's 95% interval of the difference). "
           + RULE_HELP + " Successful, valid runs only.")

ui.require_warehouse()
VERDICT_HELP = "better / worse: the 95% interval of the difference excludes 0; n < 2: no interval"

# ---- real clusters ----------------------------------------------------------------------------------------------
st.header("Real clusters")
if not ui.substrates(DISTRIBUTIONS):
    st.info("The warehouse holds no real-cluster runs (substrate kind or ssh), so no distributions can be compared. "
            "The local testbed runs no Kubernetes distribution (its runs carry distribution `none`). Run a sweep on "
            "clusters, e.g. `argo submit workflows/presets/seed-004-k3s.yaml` and the other seed-004 presets. Below: "
            "the one part of a distribution the testbed models, its service proxy.", icon=":material/info:")
else:
    substrate, filters = ui.choose("dist", DISTRIBUTIONS, "No real-cluster runs.")
    if is_one_machine(substrate):
        st.caption("kind beside the local kubeadm lab, measured on this one machine in one boot (the same kernel boot "
                   "id): kind's nodes are containers and the lab's nodes network namespaces of that kernel, so a "
                   "difference is the distribution's and its node runtime's, not the hardware's. Column `substrate` "
                   "says where each distribution's runs came from. Labs of separate machines are never in this "
                   "table.")
    refs = ui.query(distribution_references, substrate=substrate, **filters)
    if not refs:
        st.info("No distribution measured under these conditions.")
    else:
        reference = st.selectbox("Reference distribution", refs, key="dist_reference",
                                 help="Each distribution is compared with this one (kubeadm, vanilla Kubernetes, "
                                      "first when present).")
        df = ui.query(distribution_comparison, substrate=substrate, reference=reference, **filters)
        if df["distribution"].nunique() > 1:
            tput = df[df["metric"] == "throughput_mbps"]
            if not tput.empty:
                st.altair_chart(distribution_chart(tput, reference), width="stretch")
        else:
            st.caption(f"Only {reference} was measured under these conditions: no other distribution to compare.")
        ui.table(df[["what", "distribution", "run_substrates", "service_proxy_mode", "n_runs", "mean", "ci95", "reference_n_runs",
                         "reference_mean", "diff", "diff_ci95", "diff_pct", "verdict"]],
                     column_config={
                         "what": "metric", "service_proxy_mode": "service proxy", "run_substrates": "substrate",
                         "mean": st.column_config.NumberColumn("mean", format="%.1f"),
                         "ci95": st.column_config.NumberColumn("± 95% CI", format="%.1f"),
                         "reference_mean": st.column_config.NumberColumn(f"{reference} mean", format="%.1f"),
                         "diff": st.column_config.NumberColumn("difference", format="%.1f"),
                         "diff_ci95": st.column_config.NumberColumn("± 95% CI of difference", format="%.1f"),
                         "diff_pct": st.column_config.NumberColumn("difference %", format="%.1f"),
                         "verdict": st.column_config.TextColumn("verdict", help=VERDICT_HELP)})
        st.caption("CPU and RAM per resource component: cni = the CNI's daemons, system = the whole node (the control "
                   "plane is part of it; it is not sampled as a component of its own). Higher is better for "
                   "throughput only.")

# ---- the testbed: service proxies ---------------------------------------------------------------------------------
st.header("Service proxies (pod-to-service)")
st.markdown("What a distribution changes in the datapath is the **service proxy** that implements ClusterIPs. The "
            "local testbed builds it as real kernel state: kube-proxy's iptables chains, its nftables verdict map, "
            "IPVS virtual services, or none where the CNI replaces kube-proxy. **This is the only part of a "
            "distribution the testbed models**: it runs no control plane, so its runs keep distribution `none`; a "
            "proxy mode stands for the distributions that run it by default (table below).")
ui.table(default_proxies())
substrate, filters = ui.choose("proxy", PROXIES,
                               "The warehouse holds no pod-to-service iperf3 runs yet. Run a sweep with "
                               "`-p service-proxy='[\"iptables\",\"nftables\",\"ipvs\"]'` and a pod-to-service path, "
                               "e.g. `edgebench sweep workflows/presets/seed-004.testbed.yaml --local`.")
df = ui.query(proxy_comparison, substrate=substrate, **filters)
if df.empty:
    st.info("No successful pod-to-service runs for this selection (see the runs not measured below).")
else:
    df["stands for"] = df["service_proxy_mode"].map(proxy_stands_for)
    if len(df) > 1:
        st.altair_chart(proxy_chart(df), width="stretch")
    if not df["is_reference"].any():
        st.caption("No iptables (kube-proxy default) runs under these conditions: no verdicts.")
    ui.table(df[["service_proxy_mode", "stands for", "n_runs", "throughput_mbps", "throughput_ci95_mbps",
                     "reference_n_runs", "reference_throughput_mbps", "diff_mbps", "diff_ci95_mbps", "diff_pct",
                     "verdict"]], column_config={
        "service_proxy_mode": "service proxy",
        "throughput_mbps": st.column_config.NumberColumn("mean Mbit/s", format="%.1f"),
        "throughput_ci95_mbps": st.column_config.NumberColumn("± 95% CI", format="%.1f"),
        "reference_throughput_mbps": st.column_config.NumberColumn("iptables Mbit/s", format="%.1f"),
        "diff_mbps": st.column_config.NumberColumn("difference Mbit/s", format="%.1f"),
        "diff_ci95_mbps": st.column_config.NumberColumn("± 95% CI of difference", format="%.1f"),
        "diff_pct": st.column_config.NumberColumn("difference %", format="%.1f"),
        "verdict": st.column_config.TextColumn("verdict vs iptables", help=VERDICT_HELP)})
    st.caption("dnat is the testbed's default plain DNAT rule (no kube-proxy structure), not a distribution's proxy.")

st.subheader("Proxy modes not measured")
missing = ui.query(proxy_unsupported, substrate=substrate, **filters)
if missing.empty:
    st.success("None for this selection.")
else:
    ui.table(missing)
