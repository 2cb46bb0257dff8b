"""The fixture runs' shared ground: the sweep, its start time, the iperf3 lengths, ids hashed from a run's fields, a
seeded random source per run, the manifest of a non-iperf3 run, the bucket key of a manifest."""
from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

SWEEP = "fixture-sweep-1"
T0 = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)
TCP_LEN, UDP_LEN = 131072, 1400


def hex_id(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def seeded_rng(text: str):
    import random
    return random.Random(int(hex_id(text, 12), 16))


def record(*, cni, cni_mode, datapath, mtu, workload, protocol, path, length, duration_s, repetition, params,
           status, error, raw_files, metrics, tools, extra_hash, substrate="local", distribution="none",
           minute=0, netem="none", tuning="default_settings") -> dict:
    cell_id = "c-" + hex_id(f"{substrate}/{distribution}/{cni}/{cni_mode}/{tuning}/{netem}", 10)
    run_id = "r-" + hex_id(f"{SWEEP}/{cell_id}/{workload}/{protocol}/{path}/cross-node/{extra_hash}/{repetition}", 12)
    started = T0 + timedelta(hours=1 if workload == "dds" else 2, minutes=minute)
    return {
        "schema_version": 1, "sweep_id": SWEEP, "cell_id": cell_id, "run_id": run_id,
        "substrate": substrate, "distribution": distribution, "cni": cni, "cni_mode": cni_mode,
        "datapath": datapath, "mtu": mtu, "netem_scenario": netem, "tuning_profile": tuning,
        "workload": workload, "protocol": protocol, "path": path, "placement": "cross-node",
        "length_bytes": length, "duration_s": duration_s, "repetition": repetition, "params": params,
        "status": status, "error": error, "attempt": 1 if status == "ok" else 2,
        "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "finished_at": (started + timedelta(seconds=(duration_s or 2) + 1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "raw_files": raw_files,
        "environment": {"kernel": "6.1.0-fixture", "machine": "x86_64", "hostname": "fixture",
                        "edgebench_version": "0.0.0-fixture", "tools": tools, "cni_version": None},
        "metrics": metrics,
    }


def nearest_rank(values, q):  # what a load generator might report (the warehouse recomputes its own)
    v = sorted(values)
    return v[max(0, min(len(v) - 1, int(-(-q * len(v) // 1)) - 1))]


def key(m: dict) -> str:
    return f"runs/{m['sweep_id']}/{m['cell_id']}/{m['run_id']}/manifest.json"
