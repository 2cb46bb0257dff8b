"""The main fixture warehouse: every iperf3, DDS and HTTP run, the raw files beside them, the bucket layout
(`fixture_objects`, `write_tree`), and the expected values the tests check (by construction of the series)."""
from __future__ import annotations

import json
from pathlib import Path

from .common import SWEEP, key
from .conditions import resource_samples
from .dds import dds_manifests, dds_samples
from .http import http_manifests, http_requests
from .iperf3 import SERIES, iperf3_manifests

# Expected values (by construction of SERIES).
N_IPERF3_RUNS = sum(len(s[-1]) for s in SERIES) + 23     # 21 + 10 netem + 13 tuning (one of them invalid)
N_DDS_RUNS = 29                                          # see DDS_SERIES: 16 latency ok + 1 unsupported + 12 tput
N_HTTP_RUNS = 20 + 12                                    # 5 (service, payload) x 2 CNIs x 2 repetitions
                                                         # + 3 netem scenarios x 2 CNIs x 2 repetitions
N_MANIFESTS = N_IPERF3_RUNS + 1 + N_DDS_RUNS + N_HTTP_RUNS  # + one duplicated run_id
OVERHEAD_LOCAL_TCP_FLANNEL = (9000 - 7000) / 9000 * 100  # 22.22...
OVERHEAD_LOCAL_UDP_FLANNEL = (1000 - 960) / 1000 * 100   # 4.0
N_OVERHEAD_ROWS = 7 + 5 + 6                              # 3 local tcp + 3 local udp + 1 kind tcp
                                                         # + netem (cilium none, host/cilium lcl, edg10)
                                                         # + tuning (antrea default tcp/udp, host/antrea kopt tcp/udp)


def fixture_manifests() -> list[dict]:
    return iperf3_manifests() + dds_manifests() + http_manifests()


def raw_content(m: dict, name: str) -> bytes:
    """Bytes of a raw file beside the manifest: the per-sample JSON files follow the contract, the rest is filler."""
    if name == "resources.json":
        return json.dumps(resource_samples(m), indent=1).encode()
    if name == "dds-samples.json":
        return json.dumps(dds_samples(m), indent=1).encode()
    if name == "http-requests.json":
        return json.dumps(http_requests(m), indent=1).encode()
    return b'{"fixture": true}\n'


def fixture_objects(manifests: list[dict] | None = None) -> dict[str, bytes]:
    ms = fixture_manifests() if manifests is None else manifests
    objs = {key(m): json.dumps(m, indent=2).encode() for m in ms}
    for m in ms:  # the raw files stored beside the manifest
        for name in m["raw_files"]:
            objs[key(m).rsplit("/", 1)[0] + "/" + name] = raw_content(m, name)
    objs[f"sweeps/{SWEEP}/sweep.json"] = json.dumps({"sweep_id": SWEEP, "fixture": True}).encode()
    return objs


def write_tree(root: Path, manifests: list[dict] | None = None) -> Path:
    for k, data in fixture_objects(manifests).items():
        p = root / k
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root
