"""Inter-cluster tools: a separate raw tree (intercluster_objects / write_intercluster_tree) of HTTP runs across two
clusters joined by an inter-cluster tool, against the same runs in one cluster."""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from .common import T0, hex_id, key, nearest_rank, seeded_rng
from .conditions import NETEM, with_conditions
from .http import HTTP_CNIS, HTTP_REQUESTS
from .tree import raw_content

# ---- inter-cluster tools (a separate raw tree: intercluster_objects / write_intercluster_tree) ------------------
# HTTP payload-echo across two clusters joined by an inter-cluster tool, against the same runs in one cluster
# (`none`), flannel/vxlan on the local testbed. Per-request times as fortio records them (http-requests.json:
# response_ms with 3 decimals, phase fields null). The `none` runs under netem none are written old-style (no
# intercluster* keys, no netem / tuning objects: read as none / baseline); the edg10 ones carry every new key.
IC_SERVICE = "payload-echo"
IC_KPIS_MS = {"remote-maintenance-inference": 1000}
IC_LIMITS_MS = {"vehicle assist": 100.0, "remote maintenance": 1000.0}   # the two limits the mart evaluates
IC_NETEM = ("none", "edg10")
IC_PAYLOADS = (1000, 1000000)
IC_REPS = 3
IC_BASE_MS = {1000: 1.2, 10000: 2.0, 1000000: 45.0}        # none, netem none; each netem adds 2 x its one-way delay
IC_SKUPPER_MODEL = ("edgebench-relay skupper: a TLS 1.3 mutual-auth connection between the two gateway relays; each "
                    "application connection is carried as AMQP 1.0 transfer frames. Not skupper-router.")
IC_CLUSTERLINK_MODEL = ("edgebench-relay clusterlink: a new TLS 1.3 mutual-auth connection per application connection, "
                        "HTTP CONNECT then a byte splice. Not ClusterLink's dataplane.")
# entry -> (tool, mode, implementation, version, model, cable driver, response model: t -> t * factor + add_ms)
IC_TOOLS = {
    "none": ("none", "none", "baseline", None, None, None, (1.0, 0.0)),
    "submariner:vxlan": ("submariner", "vxlan", "kernel", "0.18.0", None, "vxlan", (1.02, 0.08)),
    "submariner:wireguard": ("submariner", "wireguard", "kernel", "0.18.0", None, "wireguard", (1.05, 0.1)),
    "skupper:amqp": ("skupper", "amqp", "emulated", "1.7.3", IC_SKUPPER_MODEL, None, (1.6, 0.5)),
    "clusterlink:mtls": ("clusterlink", "mtls", "emulated", "v0.4.0", IC_CLUSTERLINK_MODEL, None, (1.3, 1.5)),
}
IC_UNSUPPORTED = "unsupported: the kernel has no wireguard module (modprobe wireguard failed)"
IC_FAILED = "fortio: dial tcp 10.96.0.20:8080: connect: connection refused"
# (entry, netem, payload) -> [status per repetition]; the full grid of none / submariner:vxlan / skupper:amqp, then
#   clusterlink:mtls: one ok run and one failed run (verdict 'n < 2');
#   submariner:wireguard: unsupported (never in a comparison);
#   submariner:vxlan at 10000 B: two runs without any `none` run (verdict 'no baseline').
IC_SERIES = {
    **{(e, n, p): ["ok"] * IC_REPS for e in ("none", "submariner:vxlan", "skupper:amqp")
       for n in IC_NETEM for p in IC_PAYLOADS},
    ("clusterlink:mtls", "none", 1000): ["ok", "failed"],
    ("submariner:wireguard", "none", 1000): ["unsupported"],
    ("submariner:vxlan", "none", 10000): ["ok", "ok"],
}
# the host-network baseline in one cluster (old-style manifests): cmp_http_vs_host must compare flannel/vxlan's
# one-cluster runs against it, never the inter-cluster ones
IC_HOST_SERIES = {("none", 1000): 3}


def _ic_manifest(entry: str, netem: str, payload: int, rep: int, status: str, *, cni="flannel",
                 minute: int = 0) -> dict:
    tool, mode, impl, version, model, cable, _ = IC_TOOLS[entry]
    cni_mode, datapath, mtu = HTTP_CNIS[cni]
    sweep = "fixture-ic-sweep"
    cell_id = "c-" + hex_id(f"local/none/{cni}/{cni_mode}/default_settings/{netem}/{entry}", 10)
    run_id = "r-" + hex_id(f"{sweep}/{cell_id}/http/{IC_SERVICE}/{payload}/{rep}", 12)
    started = T0 + timedelta(hours=5, minutes=minute)
    old_style = entry == "none" and netem == "none"
    m = {
        "schema_version": 1, "sweep_id": sweep, "cell_id": cell_id, "run_id": run_id,
        "substrate": "local", "distribution": "none", "cni": cni, "cni_mode": cni_mode, "datapath": datapath,
        "mtu": mtu, "netem_scenario": netem, "tuning_profile": "default_settings",
        "workload": "http", "protocol": "tcp", "path": "pod-to-pod", "placement": "cross-node",
        "length_bytes": payload, "duration_s": None, "repetition": rep,
        "params": {"service": IC_SERVICE, "requests": HTTP_REQUESTS, "connections": 1, "kpis_ms": dict(IC_KPIS_MS)},
        "status": status, "error": {"ok": None, "failed": IC_FAILED, "unsupported": IC_UNSUPPORTED}[status],
        "attempt": 1 if status == "ok" else 2,
        "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "finished_at": (started + timedelta(seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "raw_files": ["fortio-access.jsonl", "fortio-load.log", "fortio-server.log", "http-requests.json"]
        if status == "ok" else [],
        "environment": {"kernel": "6.1.0-fixture", "machine": "x86_64", "hostname": "fixture",
                        "edgebench_version": "0.0.0-fixture", "tools": {"fortio": "1.69.0"}, "cni_version": None},
        "metrics": None,
    }
    if not old_style:
        m.update({
            "intercluster": entry, "intercluster_tool": tool, "intercluster_mode": mode,
            "intercluster_implementation": impl,
            "intercluster_detail": None if entry == "none" else {
                "tool": tool, "mode": mode, "version": version, "implementation": impl, "model": model,
                "tool_version": None, "cable_driver": cable, "gateways": ["c1-gw", "c2-gw"],
                "readback": "fixture readback"},
        })
        with_conditions(m, netem=netem)
    reqs = intercluster_requests(m)
    if reqs:
        t = [r["response_ms"] for r in reqs]
        m["metrics"] = {"requests": len(reqs), "errors": 0, "response_mean_ms": sum(t) / len(t),
                        "response_p50_ms": nearest_rank(t, 0.5), "response_p90_ms": nearest_rank(t, 0.9),
                        "response_p99_ms": nearest_rank(t, 0.99), "response_max_ms": max(t),
                        "client": "fortio", "resolution_ms": 0.001}
    return m


def intercluster_requests(m: dict) -> list[dict]:
    """http-requests.json of an inter-cluster fixture run, fortio-style (deterministic; [] unless ok)."""
    if m["status"] != "ok":
        return []
    factor, add = IC_TOOLS[m.get("intercluster", "none")][-1]
    scenario = m.get("netem", {}).get("scenario", m["netem_scenario"])
    base = (IC_BASE_MS[m["length_bytes"]] + 2 * NETEM[scenario]["delay_ms"]) * factor + add
    rng, out, offset = seeded_rng(m["run_id"]), [], 0.0
    for seq in range(1, HTTP_REQUESTS + 1):
        total = round(base * rng.lognormvariate(0, 0.15), 3)
        out.append({"seq": seq, "offset_ms": round(offset, 3), "response_ms": total, "connect_ms": None,
                    "write_ms": None, "wait_ms": None, "read_ms": None, "status": 200})
        offset += total + round(rng.uniform(0.05, 0.2), 3)
    return out


def intercluster_manifests() -> list[dict]:
    out, minute = [], 0
    for (entry, netem, payload), statuses in IC_SERIES.items():
        for rep, status in enumerate(statuses, start=1):
            minute += 1
            out.append(_ic_manifest(entry, netem, payload, rep, status, minute=minute))
    for (netem, payload), reps in IC_HOST_SERIES.items():
        for rep in range(1, reps + 1):
            minute += 1
            out.append(_ic_manifest("none", netem, payload, rep, "ok", cni="host", minute=minute))
    return out


def intercluster_objects() -> dict[str, bytes]:
    objs = {}
    for m in intercluster_manifests():
        objs[key(m)] = json.dumps(m, indent=2).encode()
        for name in m["raw_files"]:
            data = intercluster_requests(m) if name == "http-requests.json" else None
            objs[key(m).rsplit("/", 1)[0] + "/" + name] = (
                json.dumps(data, indent=1).encode() if data is not None else raw_content(m, name))
    return objs


def write_intercluster_tree(root: Path) -> Path:
    for k, data in intercluster_objects().items():
        p = root / k
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root
