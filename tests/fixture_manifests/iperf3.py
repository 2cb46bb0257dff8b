"""iperf3 runs (docs/results-layout.md): the local and kind series, a superseded duplicate, and the runs under link
conditions and tuning profiles."""
from __future__ import annotations

from datetime import timedelta

from .common import SWEEP, T0, TCP_LEN, UDP_LEN, hex_id
from .conditions import COND_CNIS, INVALID_REASON, NETEM, TUNING, with_conditions

# (substrate, distribution, cni, cni_mode, datapath, protocol, [(status, throughput or error), ...])
SERIES = [
    ("local", "none", "host", "host", "host", "tcp", [("ok", 9000), ("ok", 9100), ("ok", 8900)]),
    ("local", "none", "host", "host", "host", "udp", [("ok", 990), ("ok", 1000), ("ok", 1010)]),
    ("local", "none", "flannel", "vxlan", "bridge-vxlan", "tcp", [("ok", 7000), ("ok", 7200), ("ok", 6800)]),
    ("local", "none", "flannel", "vxlan", "bridge-vxlan", "udp", [("ok", 950), ("ok", 960), ("ok", 970)]),
    ("local", "none", "calico", "vxlan", "ptp-vxlan", "tcp", [("ok", 7500), ("ok", 7400), ("ok", 7600)]),
    ("local", "none", "calico", "vxlan", "ptp-vxlan", "udp",
     [("ok", 940), ("ok", 960), ("failed", "iperf3: error - unable to connect to server: Connection refused")]),
    ("local", "none", "calico", "ipip", "ptp-ipip", "tcp", [("unsupported", "unsupported: kernel has no ipip")]),
    ("kind", "kind", "flannel", "vxlan", "bridge-vxlan", "tcp", [("ok", 5000), ("ok", 5200)]),
]


def manifest(*, substrate, distribution, cni, cni_mode, datapath, protocol, repetition, status, value,
             sweep_id=SWEEP, started_at=None, workload="iperf3", netem="none", tuning="default_settings",
             mtu=None, new_style=False, invalid_reason=None) -> dict:
    cell_id = "c-" + hex_id(f"{substrate}/{distribution}/{cni}/{cni_mode}/{tuning}/{netem}", 10)
    length = TCP_LEN if protocol == "tcp" else UDP_LEN
    run_id = "r-" + hex_id(f"{cell_id}/{workload}/{protocol}/pod-to-pod/cross-node/{length}/{repetition}", 12)
    started = started_at or T0 + timedelta(seconds=15 * repetition + 60 * len(cni))
    if (netem, tuning) != ("none", "default_settings"):  # condition runs: later in the sweep, one cell each
        started += timedelta(hours=3, minutes=5 * sorted(NETEM).index(netem) + 30 * sorted(TUNING).index(tuning))
    ok = status == "ok"
    metrics = None
    if ok and workload == "iperf3":
        metrics = {"throughput_mbps": float(value), "sent_mbps": float(value) * 1.001,
                   "received_mbps": float(value), "cpu_host_pct": 40.0, "cpu_remote_pct": 35.0,
                   "retransmits": 3 if protocol == "tcp" else None,
                   "mean_rtt_us": 120.0 + 2000 * NETEM[netem]["delay_ms"] if protocol == "tcp" else None,
                   "jitter_ms": 0.02 if protocol == "udp" else None,
                   "lost_packets": 5 if protocol == "udp" else None,
                   "packets": 90000 if protocol == "udp" else None,
                   "lost_percent": 0.0055 if protocol == "udp" else None}
    elif ok:  # another workload: a metrics object of a different shape
        metrics = {"latency_p99_us": 850.5, "messages": 10000}
    m = {
        "schema_version": 1, "sweep_id": sweep_id, "cell_id": cell_id, "run_id": run_id,
        "substrate": substrate, "distribution": distribution, "cni": cni, "cni_mode": cni_mode,
        "datapath": datapath, "mtu": mtu or (1450 if "vxlan" in datapath or "geneve" in datapath else 1500),
        "netem_scenario": netem, "tuning_profile": tuning, "workload": workload,
        "protocol": protocol, "path": "pod-to-pod", "placement": "cross-node",
        "length_bytes": length, "duration_s": 10, "repetition": repetition,
        "params": {"bitrate": "1G" if protocol == "udp" else None, "port": 5201, "length": length},
        "status": status, "error": None if ok else value, "attempt": 1 if ok else 2,
        "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "finished_at": (started + timedelta(seconds=11)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "raw_files": ["iperf3-client.json"] if workload == "iperf3" else [],
        "environment": {"kernel": "6.1.0-fixture", "machine": "x86_64", "hostname": "fixture",
                        "edgebench_version": "0.0.0-fixture", "tools": {"iperf3": "3.12"}, "cni_version": None},
        "metrics": metrics,
    }
    if new_style:
        with_conditions(m, netem=netem, tuning=tuning, invalid_reason=invalid_reason)
    return m


def iperf3_manifests() -> list[dict]:
    """The iperf3 runs only (plus the superseded duplicate): a raw tree without any DDS or HTTP file. The local
    host / flannel series carry the new fields and resources.json; calico, kind and the duplicate stay old-style
    (no netem / tuning / is_valid), as do the DDS and the first HTTP runs. The condition runs follow."""
    out = []
    for substrate, dist, cni, mode, datapath, proto, results in SERIES:
        for rep, (status, value) in enumerate(results, start=1):
            out.append(manifest(substrate=substrate, distribution=dist, cni=cni, cni_mode=mode, datapath=datapath,
                                protocol=proto, repetition=rep, status=status, value=value,
                                new_style=substrate == "local" and cni in ("host", "flannel")))
    # the same run_id (host tcp rep 1) under an older sweep, finished earlier: deduplication must drop it
    out.append(manifest(substrate="local", distribution="none", cni="host", cni_mode="host", datapath="host",
                        protocol="tcp", repetition=1, status="ok", value=1, sweep_id="fixture-sweep-0",
                        started_at=T0 - timedelta(days=1)))
    return out + condition_iperf3_manifests()


# iperf3 under link conditions: host and cilium/vxlan (tcp), throughput falls and RTT grows with the delay
NETEM_IPERF3 = {("cilium", "none"): [6500, 6700], ("host", "lcl"): [8000, 8200], ("cilium", "lcl"): [6000, 6200],
                ("host", "edg10"): [95, 97], ("cilium", "edg10"): [90, 92]}
# tuning: host and antrea/geneve under both profiles, tcp and udp; kernel_optimizations raises the link MTU to
# 9000 (antrea's pod MTU 8950). The local host series above is the default_settings host baseline.
TUNING_IPERF3 = {("antrea", "default_settings", "tcp"): [7600, 7800], ("antrea", "default_settings", "udp"): [900, 920],
                 ("host", "kernel_optimizations", "tcp"): [9400, 9600],
                 ("host", "kernel_optimizations", "udp"): [1180, 1220],
                 ("antrea", "kernel_optimizations", "tcp"): [8900, 9100],
                 ("antrea", "kernel_optimizations", "udp"): [1100, 1120]}
INVALID_RUN = ("antrea", "kernel_optimizations", "tcp", 3, 3000)  # cni, profile, protocol, repetition, Mbit/s

EFF_DEFAULT_TCP_ANTREA = 7700 / 9000 * 100        # host default tcp: 9000/9100/8900 (SERIES)
EFF_DEFAULT_UDP_ANTREA = 910 / 1000 * 100
EFF_KOPT_TCP_ANTREA = 9000 / 9500 * 100           # the invalid 3000 Mbit/s run never counts
EFF_KOPT_UDP_ANTREA = 1110 / 1200 * 100


def condition_iperf3_manifests() -> list[dict]:
    out = []
    for (cni, netem), values in NETEM_IPERF3.items():
        for rep, v in enumerate(values, start=1):
            out.append(manifest(substrate="local", distribution="none", cni=cni, cni_mode=COND_CNIS[cni][0],
                                datapath=COND_CNIS[cni][1], protocol="tcp", repetition=rep, status="ok", value=v,
                                netem=netem, new_style=True))
    for (cni, tuning, proto), values in TUNING_IPERF3.items():
        runs = [(rep, v, None) for rep, v in enumerate(values, start=1)]
        if (cni, tuning, proto) == INVALID_RUN[:3]:
            runs.append((INVALID_RUN[3], INVALID_RUN[4], INVALID_REASON))
        for rep, v, invalid in runs:
            mtu = (9000 if cni == "host" else 8950) if tuning == "kernel_optimizations" else None
            out.append(manifest(substrate="local", distribution="none", cni=cni, cni_mode=COND_CNIS[cni][0],
                                datapath=COND_CNIS[cni][1], protocol=proto, repetition=rep, status="ok", value=v,
                                tuning=tuning, mtu=mtu, new_style=True, invalid_reason=invalid))
    return out
