"""cmp_service_proxies and cmp_distributions on a small synthetic raw tree (FIXTURE DATA, not measurements):
testbed pod-to-service cells per service proxy, and k3s / k0s clusters with the same CNI mode and resource samples.
Expected values are computed here from the fixture, independently of the models."""
from __future__ import annotations

import statistics as st

import duckdb
import pytest

import fixture_manifests as fx
from edgebench.results.report import verdict as V

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776}

# testbed: flannel:vxlan pod-to-service per proxy mode (service-proxy entry, in-force mode, throughputs)
PROXY_RUNS = {
    ("default", "dnat"): [2050.0, 2100.0, 2000.0],
    ("iptables", "iptables"): [2000.0, 2010.0, 1990.0],
    ("nftables", "nftables"): [2100.0, 2110.0, 2090.0],
}
IPVS_REASON = ("unsupported: service proxy ipvs: kernel has no IPVS (ip_vs module: `modprobe ip_vs`: modprobe: FATAL: "
               "Module ip_vs not found; /proc/net/ip_vs is absent)")
# clusters: k3s and k0s with flannel:vxlan, pod-to-pod iperf3 TCP; (throughput, rtt) per run, cni component CPU
DIST_RUNS = {
    "k3s": {"tput": [900.0, 910.0, 890.0], "rtt": [300.0, 310.0, 290.0], "cni_cpu_run": [5.0, 6.0, 7.0]},
    "k0s": {"tput": [700.0, 720.0, 680.0], "rtt": [305.0, 295.0, 315.0], "cni_cpu_run": [9.0, 10.0, 11.0]},
}


def _m(i, *, substrate, distribution, cni="flannel", mode="vxlan", path, proxy="default", proxy_mode, status="ok",
       value=None, error=None, rtt=None, raw_files=()):
    m = fx.manifest(substrate=substrate, distribution=distribution, cni=cni, cni_mode=mode, datapath="bridge-vxlan",
                    protocol="tcp", repetition=i % 10 + 1, status=status, value=value if status == "ok" else error,
                    sweep_id="fixture-proxies")
    m.update(cell_id=f"c-{substrate}{distribution}{proxy}"[:12], run_id=f"r-{substrate}-{distribution}-{proxy}-{i}",
             path=path, service_proxy=proxy, service_proxy_mode=proxy_mode, raw_files=list(raw_files))
    if m["metrics"]:
        m["metrics"]["mean_rtt_us"] = rtt
    return m


def manifests():
    out, i = [], 0
    for (proxy, mode), values in PROXY_RUNS.items():
        for v in values:
            i += 1
            out.append(_m(i, substrate="local", distribution="none", path="pod-to-service", proxy=proxy,
                          proxy_mode=mode, value=v))
    out.append(_m(99, substrate="local", distribution="none", path="pod-to-service", proxy="ipvs", proxy_mode="ipvs",
                  status="unsupported", error=IPVS_REASON))
    for dist, d in DIST_RUNS.items():
        for k, (tput, rtt) in enumerate(zip(d["tput"], d["rtt"])):
            out.append(_m(k, substrate="ssh", distribution=dist, path="pod-to-pod", proxy_mode="iptables", value=tput,
                          rtt=rtt, raw_files=["resources.json"]))
    return out


def resources(m):
    d = DIST_RUNS[m["distribution"]]
    k = int(m["run_id"].rsplit("-", 1)[1])
    return [{"t_s": 0.0, "phase": "idle", "component": "cni", "name": "kube-flannel", "cpu_pct": 1.0, "rss_mb": 40.0},
            {"t_s": 1.0, "phase": "run", "component": "cni", "name": "kube-flannel", "cpu_pct": d["cni_cpu_run"][k],
             "rss_mb": 41.0}]


@pytest.fixture(scope="module")
def wh(distributions_warehouse):
    return distributions_warehouse  # manifests() with their resources.json (conftest, shared with the portal tests)


def q(path, sql, *params):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def _welch(a, b):
    va, vb = st.variance(a) / len(a), st.variance(b) / len(b)
    df = int((va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)))
    return T95[df] * (va + vb) ** 0.5


def test_staging_carries_the_proxy_and_old_manifests_default(wh, fixture_warehouse):
    rows = q(wh, "select service_proxy, service_proxy_mode, count(*) from stg_edgebench__runs where substrate = "
                 "'local' group by all order by 1")
    assert rows == [("default", "dnat", 3), ("iptables", "iptables", 3), ("ipvs", "ipvs", 1), ("nftables", "nftables", 3)]
    # manifests written before the field: the testbed used its plain DNAT rule; clusters did not record a mode
    assert q(fixture_warehouse, "select distinct substrate, service_proxy, service_proxy_mode from stg_edgebench__runs "
                                "order by 1") == [("kind", "default", None), ("local", "default", "dnat")]


def test_cmp_service_proxies(wh):
    rows = {r[0]: r[1:] for r in q(wh, """
        select service_proxy_mode, n_runs, throughput_mbps, throughput_ci95_mbps, diff_mbps, diff_ci95_mbps, verdict
        from cmp_service_proxies where substrate = 'local'""")}
    assert set(rows) == {"dnat", "iptables", "nftables"}  # ipvs: unsupported here, no runs to compare
    ref = PROXY_RUNS[("iptables", "iptables")]
    for (entry, mode), values in PROXY_RUNS.items():
        n, mean, ci, diff, diff_ci, verdict = rows[mode]
        assert n == 3 and mean == pytest.approx(st.mean(values))
        assert ci == pytest.approx(T95[2] * st.stdev(values) / 3 ** 0.5)
        if mode == "iptables":
            assert verdict == "reference"
            continue
        assert diff == pytest.approx(st.mean(values) - st.mean(ref))
        assert diff_ci == pytest.approx(_welch(values, ref), rel=1e-6)
        # the one rule (edgebench.results.report.verdict) on the per-run values, throughput margin 5 % of the reference
        assert verdict == V.decide(st.mean(values) - st.mean(ref), _welch(values, ref), 3, 3, st.mean(ref), True,
                                   V.margin_pct("throughput")), mode
    # the margin is 100 Mbit/s (5 % of 2000). nftables: +100 +- 22.7 (df 4: 2.776 x sqrt(2 x 10^2 / 3)), the
    # interval [77, 123] excludes 0 and reaches beyond the margin: better; dnat: +50 +- 126.7 (df 2: 4.303 x
    # sqrt(50^2 / 3 + 10^2 / 3)), [-77, 177] holds 0 and reaches beyond it: inconclusive
    assert rows["nftables"][-1] == "better" and rows["dnat"][-1] == "inconclusive"
    # the default-proxy comparison marts keep their meaning: only the default cells' runs
    assert q(wh, "select service_proxy_mode, count(*) from fct_iperf3_runs where substrate = 'local' "
                 "and status = 'unsupported' group by all") == [("ipvs", 1)]
    assert q(wh, "select n_runs from cmp_iperf3_vs_host where substrate = 'local'") == [(3,)]


def test_cmp_distributions(wh):
    assert q(wh, "select count(*) from cmp_distributions where substrate = 'local'") == [(0,)]
    rows = {(r[0], r[1], r[2]): r[3:] for r in q(wh, """
        select metric, component || '/' || phase, distribution, n_runs, mean, diff, diff_ci95, verdict
        from cmp_distributions where reference_distribution = 'k3s'""")}
    k3s, k0s = DIST_RUNS["k3s"], DIST_RUNS["k0s"]
    n, mean, diff, diff_ci, verdict = rows[("throughput_mbps", "iperf3/run", "k0s")]
    assert (n, verdict) == (3, "worse") and mean == pytest.approx(700.0)
    assert diff == pytest.approx(-200.0) and diff_ci == pytest.approx(_welch(k0s["tput"], k3s["tput"]), rel=1e-6)
    assert verdict == V.decide(-200.0, _welch(k0s["tput"], k3s["tput"]), 3, 3, 900.0, True, V.margin_pct("throughput"))
    # rtt 305 vs 300 us: +5 +- 22.7 (df 4: 2.776 x sqrt(2 x 10^2 / 3)) holds 0 and reaches beyond the latency
    # margin (15 = 5 % of 300): inconclusive
    n, mean, diff, diff_ci, verdict = rows[("latency_us", "iperf3/run", "k0s")]
    assert diff_ci == pytest.approx(_welch(k0s["rtt"], k3s["rtt"]), rel=1e-6)
    assert verdict == V.decide(5.0, _welch(k0s["rtt"], k3s["rtt"]), 3, 3, 300.0, False,
                               V.margin_pct("latency")) == "inconclusive"
    # CPU 10 vs 6 %: +4 +- 2.27 (df 4) beyond the margin (0.3 = 5 % of 6): more CPU, worse
    n, mean, diff, diff_ci, verdict = rows[("cpu_pct", "cni/run", "k0s")]
    assert mean == pytest.approx(10.0) and diff == pytest.approx(4.0) and verdict == "worse"
    assert verdict == V.decide(4.0, _welch(k0s["cni_cpu_run"], k3s["cni_cpu_run"]), 3, 3, 6.0, False,
                               V.margin_pct("cpu"))
    # idle CPU 1.0 on every run of both: diff 0 +- 0 within the margin (0.05): equivalent
    n, mean, diff, diff_ci, verdict = rows[("cpu_pct", "cni/idle", "k0s")]
    assert (diff, diff_ci, verdict) == (0.0, 0.0, "equivalent")
    assert rows[("throughput_mbps", "iperf3/run", "k3s")][-1] == "reference"


# ---- two labs of one substrate are never pooled ------------------------------------------------------------------
LAB_RUNS = {("pi-lab", False): {"host": [940.0, 945.0, 935.0], "flannel": [600.0, 610.0, 590.0]},
            ("lab-local", True): {"host": [9000.0, 9100.0, 8900.0], "flannel": [5000.0, 5100.0, 4900.0]}}


def _lab_manifests():
    out = []
    for (target, shared), by_cni in LAB_RUNS.items():
        for cni, values in by_cni.items():
            for k, v in enumerate(values):
                m = fx.manifest(substrate="ssh", distribution="kubeadm", cni=cni, cni_mode="vxlan" if cni != "host"
                                else "host", datapath="bridge-vxlan" if cni != "host" else "host", protocol="tcp",
                                repetition=k + 1, status="ok", value=v, sweep_id=f"fixture-{target}")
                m["run_id"] += target[:3]
                m["environment"]["cluster"] = {"target": target, "nodes": 3, "shared_kernel": shared}
                out.append(m)
    return out


def _manifests_warehouse(tmp_path_factory, name: str, manifests: list[dict]):
    """A warehouse built through warehouse.build() from manifests alone (no raw tool output)."""
    import json

    from edgebench.results import warehouse

    root = tmp_path_factory.mktemp(f"raw-{name}")
    for m in manifests:
        d = root / fx.key(m).rsplit("/", 1)[0]
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps(m))
    path = tmp_path_factory.mktemp(f"wh-{name}") / "warehouse.duckdb"
    warehouse.build(warehouse_path=path, raw_root=str(root), quiet=True)
    return path


@pytest.fixture(scope="module")
def labs_wh(tmp_path_factory):
    return _manifests_warehouse(tmp_path_factory, "labs", _lab_manifests())


def test_two_labs_of_one_substrate_are_compared_apart(labs_wh):
    assert q(labs_wh, "select lab, lab_shared_kernel, count(*) from stg_edgebench__runs group by all order by 1") == [
        ("lab-local", True, 6), ("pi-lab", False, 6)]
    rows = q(labs_wh, "select lab, n_runs, host_n_runs, throughput_mbps, host_throughput_mbps from cmp_iperf3_vs_host "
                      "where cni = 'flannel' order by lab")
    assert [(r[0], r[1], r[2]) for r in rows] == [("lab-local", 3, 3), ("pi-lab", 3, 3)]
    for lab, *_, mean, host_mean in rows:
        shared = lab == "lab-local"
        assert mean == pytest.approx(st.mean(LAB_RUNS[(lab, shared)]["flannel"]))
        assert host_mean == pytest.approx(st.mean(LAB_RUNS[(lab, shared)]["host"]))  # its own lab's host, not pooled


def test_the_answer_ranks_each_lab_on_its_own(labs_wh):
    from edgebench.results.report import ranking

    def fetch(sql, params):
        with duckdb.connect(str(labs_wh), read_only=True) as con:
            cur = con.execute(sql, params)
            names = [c[0] for c in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

    entries = [e for e in ranking.answer(fetch) if e["headline"].startswith("iperf3")]
    assert sorted(e["lab"] for e in entries) == ["lab-local", "pi-lab"]
    assert all(f"lab {e['lab']}" in e["sentence"] for e in entries)


# ---- kind beside the local kubeadm lab: one machine, one boot, one table -----------------------------------------
BOOT = "1a2b3c4d-0000-4000-8000-000000000001"
MACHINE_RUNS = {  # (substrate, distribution, target, boot id): flannel vxlan throughputs
    ("kind", "kind", None, BOOT): [800.0, 810.0, 790.0],
    ("ssh", "kubeadm", "lab-local", BOOT): [1000.0, 1010.0, 990.0],
    ("ssh", "kubeadm", "pi-lab", None): [600.0, 605.0, 595.0],  # separate machines: no shared boot id
}


def _machine_manifests():
    out = []
    for (substrate, dist, target, boot), values in MACHINE_RUNS.items():
        for k, v in enumerate(values):
            m = fx.manifest(substrate=substrate, distribution=dist, cni="flannel", cni_mode="vxlan",
                            datapath="bridge-vxlan", protocol="tcp", repetition=k + 1, status="ok", value=v,
                            sweep_id=f"fixture-{substrate}-{target}")
            m["run_id"] += f"{substrate}{target}"
            m["environment"]["cluster"] = {"nodes": 3, "shared_kernel": boot is not None,
                                           **({"target": target} if target else {}),
                                           **({"kernel_boot_id": boot} if boot else {})}
            out.append(m)
    return out


@pytest.fixture(scope="module")
def machine_wh(tmp_path_factory):
    return build_machine_warehouse(tmp_path_factory)


def build_machine_warehouse(tmp_path_factory):
    """The one-machine fixture's warehouse (also the portal's test of the Distributions page)."""
    return _manifests_warehouse(tmp_path_factory, "machine", _machine_manifests())


def test_kind_and_the_local_kubeadm_lab_of_one_boot_are_one_table(machine_wh):
    scope = f"kind + ssh (one machine, boot {BOOT[:8]})"
    rows = q(machine_wh, """
        select substrate, lab, distribution, run_substrates, n_runs, mean, diff, diff_ci95, verdict
        from cmp_distributions where metric = 'throughput_mbps' and reference_distribution = 'kubeadm'
        order by substrate, distribution""")
    by = {(r[0], r[2]): r for r in rows}
    assert set(by) == {(scope, "kind"), (scope, "kubeadm"), ("ssh", "kubeadm")}
    kind = by[(scope, "kind")]
    assert kind[1] == "kind + lab-local" and kind[3] == "kind" and by[(scope, "kubeadm")][3] == "ssh"
    a, b = MACHINE_RUNS[("kind", "kind", None, BOOT)], MACHINE_RUNS[("ssh", "kubeadm", "lab-local", BOOT)]
    assert kind[4] == 3 and kind[5] == pytest.approx(800.0) and kind[6] == pytest.approx(-200.0)
    assert kind[7] == pytest.approx(_welch(a, b), rel=1e-6)
    assert kind[8] == V.decide(-200.0, _welch(a, b), 3, 3, 1000.0, True, V.margin_pct("throughput")) == "worse"
    # the Pi lab (separate machines) is never pooled into the one-machine scope, and has nothing to compare with
    assert by[("ssh", "kubeadm")][1] == "pi-lab" and by[("ssh", "kubeadm")][4] == 3
    assert by[("ssh", "kubeadm")][8] == "reference"
