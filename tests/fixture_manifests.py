"""FIXTURE DATA, not measurements: a small synthetic set of run manifests following docs/results-layout.md.

`fixture_objects()` returns {bucket key: bytes}; `write_tree(root)` lays them out in a directory exactly like
the bucket (usable as EDGEBENCH_RAW_ROOT). The expected numbers used by the tests are derived below.
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

SWEEP = "fixture-sweep-1"
T0 = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)
TCP_LEN, UDP_LEN = 131072, 1400

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

# Expected values (by construction of SERIES).
N_IPERF3_RUNS = sum(len(s[-1]) for s in SERIES)          # 21
N_MANIFESTS = N_IPERF3_RUNS + 2                           # + one dds manifest + one duplicated run_id
OVERHEAD_LOCAL_TCP_FLANNEL = (9000 - 7000) / 9000 * 100  # 22.22...
OVERHEAD_LOCAL_UDP_FLANNEL = (1000 - 960) / 1000 * 100   # 4.0
N_OVERHEAD_ROWS = 7                                      # 3 local tcp + 3 local udp + 1 kind tcp


def _hex(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def manifest(*, substrate, distribution, cni, cni_mode, datapath, protocol, repetition, status, value,
             sweep_id=SWEEP, started_at=None, workload="iperf3") -> dict:
    cell_id = "c-" + _hex(f"{substrate}/{distribution}/{cni}/{cni_mode}/default_settings/none", 10)
    length = TCP_LEN if protocol == "tcp" else UDP_LEN
    run_id = "r-" + _hex(f"{cell_id}/{workload}/{protocol}/pod-to-pod/cross-node/{length}/{repetition}", 12)
    started = started_at or T0 + timedelta(seconds=15 * repetition + 60 * len(cni))
    ok = status == "ok"
    metrics = None
    if ok and workload == "iperf3":
        metrics = {"throughput_mbps": float(value), "sent_mbps": float(value) * 1.001,
                   "received_mbps": float(value), "cpu_host_pct": 40.0, "cpu_remote_pct": 35.0,
                   "retransmits": 3 if protocol == "tcp" else None,
                   "mean_rtt_us": 120.0 if protocol == "tcp" else None,
                   "jitter_ms": 0.02 if protocol == "udp" else None,
                   "lost_packets": 5 if protocol == "udp" else None,
                   "packets": 90000 if protocol == "udp" else None,
                   "lost_percent": 0.0055 if protocol == "udp" else None}
    elif ok:  # another workload: a metrics object of a different shape
        metrics = {"latency_p99_us": 850.5, "messages": 10000}
    return {
        "schema_version": 1, "sweep_id": sweep_id, "cell_id": cell_id, "run_id": run_id,
        "substrate": substrate, "distribution": distribution, "cni": cni, "cni_mode": cni_mode,
        "datapath": datapath, "mtu": 1450 if "vxlan" in datapath else 1500,
        "netem_scenario": "none", "tuning_profile": "default_settings", "workload": workload,
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


def fixture_manifests() -> list[dict]:
    out = []
    for substrate, dist, cni, mode, datapath, proto, results in SERIES:
        for rep, (status, value) in enumerate(results, start=1):
            out.append(manifest(substrate=substrate, distribution=dist, cni=cni, cni_mode=mode, datapath=datapath,
                                protocol=proto, repetition=rep, status=status, value=value))
    # a manifest of another workload: must not disturb the iperf3 models
    out.append(manifest(substrate="local", distribution="none", cni="flannel", cni_mode="vxlan",
                        datapath="bridge-vxlan", protocol="udp", repetition=1, status="ok", value=None,
                        workload="dds"))
    # the same run_id (host tcp rep 1) under an older sweep, finished earlier: deduplication must drop it
    out.append(manifest(substrate="local", distribution="none", cni="host", cni_mode="host", datapath="host",
                        protocol="tcp", repetition=1, status="ok", value=1, sweep_id="fixture-sweep-0",
                        started_at=T0 - timedelta(days=1)))
    return out


def key(m: dict) -> str:
    return f"runs/{m['sweep_id']}/{m['cell_id']}/{m['run_id']}/manifest.json"


def fixture_objects(manifests: list[dict] | None = None) -> dict[str, bytes]:
    ms = fixture_manifests() if manifests is None else manifests
    objs = {key(m): json.dumps(m, indent=2).encode() for m in ms}
    for m in ms:  # the raw tool output stored beside the manifest (content irrelevant to the warehouse)
        for name in m["raw_files"]:
            objs[key(m).rsplit("/", 1)[0] + "/" + name] = b'{"fixture": true}\n'
    objs[f"sweeps/{SWEEP}/sweep.json"] = json.dumps({"sweep_id": SWEEP, "fixture": True}).encode()
    return objs


def write_tree(root: Path, manifests: list[dict] | None = None) -> Path:
    for k, data in fixture_objects(manifests).items():
        p = root / k
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root
