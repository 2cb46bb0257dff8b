"""Service proxies (the `service-proxy` parameter, catalog/service_proxies.yaml, substrates/local/service_proxy.py):
parameter validation, ids kept at the default, the catalog's distribution defaults, the rule shapes, and real
pod-to-service cells per proxy mode on the network-namespace testbed (iperf3 for 1 s through kube-proxy's iptables
and nftables kernel state; IPVS built where the kernel has ip_vs, recorded unsupported with the kernel's reason where
it has not)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.sweep import sampling
from edgebench.errors import SpecError
from edgebench.plan import catalog, cells, spec
from edgebench.plan.catalog import resolve_cni
from edgebench.substrates.base import Unsupported
from edgebench.substrates.local import service_proxy
from edgebench.substrates.local.provider import LocalProvider
from edgebench.substrates.local.testbed import Testbed
from edgebench.sweep import phases

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "ebs"
BASE = {"cnis": '["flannel:vxlan"]', "workloads": '["iperf3:tcp"]', "repetitions": "1", "duration": "1"}


def sweep(**params):
    return spec.from_parameters({**BASE, **{k.replace("_", "-"): v for k, v in params.items()}}, source="test")


# ---- parameter -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, message", [
    ('["iptables","userspace"]', "parameter 'service-proxy': unknown value 'userspace'; choices: default, iptables, "
                                 "nftables, ipvs, none"),
    ('["nftables","nftables"]', "parameter 'service-proxy' lists nftables more than once"),
    ('iptables', "parameter 'service-proxy' must be a JSON list of strings"),
    ('[]', "parameter 'service-proxy' must not be empty"),
])
def test_bad_values_are_one_clear_error(value, message):
    with pytest.raises(SpecError) as exc:
        sweep(service_proxy=value)
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)


def test_cluster_substrates_and_intercluster_cells_reject_proxy_modes():
    with pytest.raises(SpecError, match="service-proxy chooses a kube-proxy mode on the local testbed only"):
        sweep(substrate="ssh", service_proxy='["iptables"]')
    with pytest.raises(SpecError, match="one-cluster cells only"):
        sweep(service_proxy='["nftables"]', intercluster='["submariner:vxlan"]')
    assert sweep(substrate="ssh", service_proxy='["default"]').values["service-proxy"] == ["default"]


def test_bad_value_on_the_command_line_exits_2_and_runs_nothing(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "edgebench.cli", "sweep", str(ROOT / "workflows" / "sweep.yaml"),
                           "--local", "-p", 'service-proxy=["ipvs","kube-router"]'], capture_output=True, text=True,
                          env={**os.environ, "EDGEBENCH_TESTBED_PREFIX": PREFIX, "EDGEBENCH_RUN_DIR": str(tmp_path)},
                          timeout=120)
    assert proc.returncode == 2
    assert "unknown value 'kube-router'" in proc.stderr + proc.stdout
    assert not [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if n.startswith(PREFIX + "-")]


def test_default_keeps_sweep_and_cell_ids():
    plain, explicit = sweep(), sweep(service_proxy='["default"]')
    assert plain.sweep_id == explicit.sweep_id
    assert [c.cell_id for c in cells.expand(plain)] == [c.cell_id for c in cells.expand(explicit)]
    (cell,) = cells.expand(plain)
    assert "service_proxy" not in cell.env and "service_proxy" not in cell.to_json()
    three = sweep(service_proxy='["default","iptables","nftables"]')
    ids = [c.cell_id for c in cells.expand(three)]
    assert ids[0] == cell.cell_id and len(set(ids)) == 3
    assert [c.label for c in cells.expand(three)][1:] == ["flannel:vxlan proxy=iptables", "flannel:vxlan proxy=nftables"]
    # a cell's JSON (what the Argo DAG passes) round-trips with its proxy
    s, back = cells.from_json(json.dumps(cells.cell_json(three, cells.expand(three)[2])))
    assert back.service_proxy == "nftables" and back.cell_id == ids[2]


# ---- catalog -------------------------------------------------------------------------------------------------------

def test_catalog_gives_every_distribution_a_default_mode_with_sources():
    table = catalog.service_proxies()
    assert set(table["distributions"]) == set(spec.DISTRIBUTIONS)
    for dist, entry in table["distributions"].items():
        assert entry["default"] in table["modes"] and entry["sources"], dist
        assert all(tag in catalog.sources() for tag in entry["sources"]), dist
    for mode, entry in table["modes"].items():
        assert all(tag in catalog.sources() for tag in entry["sources"]), mode
    assert set(table["modes"]) - {"dnat"} == set(catalog.SERVICE_PROXY_ENTRIES) - {"default"}


def test_mode_of_a_cell():
    mode = catalog.service_proxy_mode
    assert mode("local", "none", "flannel", "vxlan") == "dnat"
    assert mode("local", "none", "flannel", "vxlan", "nftables") == "nftables"
    assert mode("ssh", "k3s", "flannel", "vxlan") == "iptables"
    assert mode("ssh", "k3s", "cilium", "vxlan") == "none"  # edgebench's Cilium modes replace kube-proxy
    assert mode("ssh", "k0s", "calico", "ebpf") == "none"
    assert mode("ssh", "microk8s", "cilium", "vxlan") == "iptables"  # MicroK8s keeps kube-proxy
    assert mode("kind", "kind", "host", "host") == "iptables"


# ---- rule shapes (recorded commands, no kernel) --------------------------------------------------------------------

class _Recorder(Testbed):
    def __init__(self):
        super().__init__("ebrec", runner=self._record)
        self.calls = []

    def _record(self, argv, check=True, input=None):
        self.calls.append((list(argv), input))
        return ""


def test_iptables_shape_has_one_statistic_rule_per_endpoint_but_the_last():
    tb = _Recorder()
    eps = [type("E", (), {"ip": ip})() for ip in ("10.244.2.11", "10.244.2.12", "10.244.2.13")]
    service_proxy.add_service(tb, "iptables", "10.96.0.10", 5201, eps, cluster=None)
    restores = [inp for argv, inp in tb.calls if "iptables-restore" in argv]
    assert len(restores) == tb.nodes * 1
    text = restores[0]
    tcp = [line for line in text.splitlines() if line.startswith("-A KUBE-SVC-") and "-p tcp" not in line
           and "tcp" in line.split("--comment")[1][:30]]
    probs = [line.split("--probability ")[1].split()[0] for line in tcp if "statistic" in line]
    assert probs == ["0.3333333333", "0.5000000000"] and sum("-j KUBE-SEP-" in line for line in tcp) == 3
    assert "-A KUBE-SERVICES -d 10.96.0.10/32 -p udp" in text
    assert text.rstrip().splitlines()[-2].endswith("-j KUBE-NODEPORTS")  # kept last, as kube-proxy does
    assert "DNAT --to-destination 10.244.2.13:5201" in text


def test_nftables_shape_is_a_verdict_map_lookup():
    tb = _Recorder()
    eps = [type("E", (), {"ip": ip})() for ip in ("10.244.2.11", "10.244.2.12")]
    service_proxy.add_service(tb, "nftables", "10.96.0.10", 5201, eps)
    text = next(inp for argv, inp in tb.calls if argv[-3:] == ["nft", "-f", "-"])
    assert "numgen random mod 2 vmap { 0 : goto endpoint-" in text
    assert "add element ip kube-proxy service-ips { 10.96.0.10 . tcp . 5201 : goto service-" in text
    assert "ip daddr . meta l4proto . th dport vmap @service-ips" in "\n".join(service_proxy._NFT_BASE)


def test_none_is_only_a_cell_for_modes_that_replace_kube_proxy():
    tb = _Recorder()
    with pytest.raises(Unsupported, match="flannel:vxlan does not replace kube-proxy"):
        service_proxy.check(tb, "none", resolve_cni("flannel:vxlan"))
    service_proxy.check(tb, "none", resolve_cni("cilium:vxlan"))
    with pytest.raises(Unsupported, match="eBPF service load balancer"):
        service_proxy.add_service(tb, "none", "10.96.0.10", 5201, [], "cilium:vxlan")


# ---- the real testbed ----------------------------------------------------------------------------------------------

def _has_ipvs() -> bool:
    if shutil.which("modprobe"):  # a fresh machine may have no kmod: the module is then loaded or not
        subprocess.run(["modprobe", "ip_vs"], capture_output=True)
    return Path("/proc/net/ip_vs").exists()


def test_ipvs_probe_without_modprobe_says_so(monkeypatch):
    real_which = service_proxy.sh.which
    monkeypatch.setattr(service_proxy.sh, "which", lambda tool: None if tool == "modprobe" else real_which(tool))
    reason = service_proxy._ipvs_reason(PREFIX)
    if Path("/proc/net/ip_vs").exists():  # IPVS loaded already: modprobe was not needed
        assert reason is None or "kernel has no IPVS" not in reason
    else:
        assert reason == ("kernel has no IPVS (ip_vs module: `modprobe ip_vs`: modprobe is not installed; "
                          "/proc/net/ip_vs is absent)")
    assert f"{PREFIX}-probe" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def _run_cells(tmp_path, s):
    out = {}
    for cell in cells.expand(s):
        tb = Testbed(PREFIX)
        ctx = phases.CellContext(s, cell, tmp_path / "work" / cell.cell_id, tmp_path / "out",
                                 LocalProvider(tb, cell), log=lambda _: None)
        try:
            phases.run_cell(ctx)
        finally:
            tb.down()
        run_dir = tmp_path / "out" / "runs" / cell.sweep_id / cell.cell_id
        out[cell.service_proxy] = ([json.loads((d / "manifest.json").read_text()) for d in sorted(run_dir.iterdir())],
                                   ctx.state)
    return out


def test_pod_to_service_per_proxy_mode_on_the_testbed(tmp_path, monkeypatch):
    monkeypatch.setattr(sampling, "IDLE_S", 0.1)
    s = sweep(iperf3_paths='["pod-to-service:cross-node"]', service_proxy='["default","iptables","nftables","ipvs"]')
    res = _run_cells(tmp_path, s)
    for mode in ("default", "iptables", "nftables"):
        (doc,), state = res[mode]
        assert doc["status"] == "ok", doc["error"]
        assert doc["metrics"]["throughput_mbps"] > 0
        assert doc["service_proxy"] == mode and doc["service_proxy_mode"] == ("dnat" if mode == "default" else mode)
    assert "KUBE-SVC-" not in (res["default"][0][0]["service_proxy_readback"] or "")
    assert "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES" in \
        res["iptables"][0][0]["service_proxy_readback"]
    assert "vmap @service-ips" in res["nftables"][0][0]["service_proxy_readback"]
    (ipvs,), state = res["ipvs"]
    if _has_ipvs() and service_proxy.sh.which("ipvsadm"):
        assert ipvs["status"] == "ok", ipvs["error"]
    else:  # this kernel: the probe's reason, never another mode in its place
        assert ipvs["status"] == "unsupported" and ipvs["metrics"] is None
        assert ipvs["error"].startswith("unsupported: service proxy ipvs: ")
        assert ("kernel has no IPVS" in ipvs["error"]) != _has_ipvs()
        assert ipvs["service_proxy_mode"] == "ipvs"
    assert not [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if n.startswith(PREFIX + "-")]


def test_no_proxy_cell_runs_pod_to_service_only_where_the_cni_balances_it(tmp_path, monkeypatch):
    monkeypatch.setattr(sampling, "IDLE_S", 0.1)
    s = sweep(cnis='["flannel:vxlan","cilium:vxlan"]', service_proxy='["none"]',
              iperf3_paths='["pod-to-pod:cross-node","pod-to-service:cross-node"]')
    flannel, cilium = [_run_cells(tmp_path / c, sweep(**{"cnis": f'["{c}"]', "service_proxy": '["none"]',
                                                         "iperf3_paths": s.raw["iperf3-paths"]}))["none"][0]
                       for c in ("flannel:vxlan", "cilium:vxlan")]
    assert [d["status"] for d in flannel] == ["unsupported", "unsupported"]
    assert "flannel:vxlan does not replace kube-proxy" in flannel[0]["error"]
    by_path = {d["path"]: d for d in cilium}
    assert by_path["pod-to-pod"]["status"] == "ok"
    assert by_path["pod-to-service"]["status"] == "ok"  # by the testbed's socket load balancer (sock_lb.py)
