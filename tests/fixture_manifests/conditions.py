"""Link conditions, tuning, validity and resources (docs/results-layout.md, last section): the netem scenarios and
tuning profiles as read back, `with_conditions` adding them to a manifest, and resources.json samples."""
from __future__ import annotations

import json

NETEM = {
    "none": {"scenario": "none", "mechanism": "none", "delay_ms": 0.0, "jitter_ms": 0.0, "loss_pct": 0.0,
             "rate_mbit": None, "scope": "all", "readback": "qdisc noqueue 0: dev eth0 root refcnt 2"},
    "lcl": {"scenario": "lcl", "mechanism": "tc-netem", "delay_ms": 1.0, "jitter_ms": 0.2, "loss_pct": 0.0,
            "rate_mbit": None, "scope": "all",
            "readback": "qdisc netem 8001: dev eth0 root refcnt 2 limit 1000 delay 1ms  200us"},
    "edg10": {"scenario": "edg10", "mechanism": "tc-netem", "delay_ms": 10.0, "jitter_ms": 2.0, "loss_pct": 0.1,
              "rate_mbit": 100.0, "scope": "all",
              "readback": "qdisc netem 8002: dev eth0 root refcnt 2 limit 1000 delay 10ms  2ms loss 0.1% rate 100Mbit"},
}
KOPT = {"net.core.rmem_max": 67108864, "net.core.wmem_max": 67108864, "net.ipv4.tcp_rmem": "4096 87380 67108864",
        "mtu": 9000}
TUNING = {
    "default_settings": {"requested": {}, "readback": {}, "unsupported": {}},
    "kernel_optimizations": {"requested": dict(KOPT), "readback": dict(KOPT),
                             "unsupported": {"vm.swappiness": "global sysctl: not per network namespace"}},
}
INVALID_REASON = "tuning readback mismatch: net.core.rmem_max requested 67108864, read back 212992"


def with_conditions(m: dict, *, netem="none", tuning="default_settings", invalid_reason=None) -> dict:
    """Add the contract's netem / tuning / is_valid fields (read back) and resources.json to a manifest."""
    t = json.loads(json.dumps(TUNING[tuning]))
    if invalid_reason:
        t["readback"]["net.core.rmem_max"] = 212992
    m["netem"] = dict(NETEM[netem])
    m["tuning"] = {"profile": tuning, **t, "mtu": m["mtu"]}
    m["is_valid"], m["invalid_reason"] = invalid_reason is None, invalid_reason
    m["raw_files"] = list(m["raw_files"]) + ["resources.json"]
    return m


COND_CNIS = {"host": ("host", "host"), "cilium": ("vxlan", "ptp-vxlan"), "antrea": ("geneve", "bridge-geneve")}


# resources.json: an idle phase (3 samples, before the workload starts) and the run (5 samples)
RES_IDLE_SYSTEM_CPU = [2.0, 3.0, 4.0]                     # mean 3.0
RES_IDLE_SYSTEM_RSS = [800.0, 802.0, 804.0]               # mean 802.0
RES_RUN_SYSTEM_CPU = {"host": 20.0, "flannel": 35.0, "cilium": 30.0, "antrea": 33.0}  # tcp; udp x 1.5
RES_RUN_SYSTEM_RSS = {"host": 820.0, "flannel": 845.0, "cilium": 850.0, "antrea": 848.0}
RES_TOOLS = {"iperf3": ("iperf3-client", "iperf3-server"), "http": ("hey", "fortio-server"),
             "dds": ("ddsperf-ping", "ddsperf-pong")}


def resource_samples(m: dict) -> list[dict]:
    """resources.json of a manifest (deterministic). The server process is up during the idle phase, the client
    only starts with the workload; the local testbed has no cni component."""
    client, server = RES_TOOLS[m["workload"]]
    udp = 1.5 if m["protocol"] == "udp" else 1.0
    out = []
    for t in range(3):
        out.append({"t_s": float(t), "phase": "idle", "component": "system", "name": "system",
                    "cpu_pct": RES_IDLE_SYSTEM_CPU[t], "rss_mb": RES_IDLE_SYSTEM_RSS[t]})
        out.append({"t_s": float(t), "phase": "idle", "component": "workload", "name": server,
                    "cpu_pct": 0.1, "rss_mb": 3.0})
    for k, off in enumerate([-1.0, -0.5, 0.0, 0.5, 1.0]):
        t = float(3 + k)
        out.append({"t_s": t, "phase": "run", "component": "system", "name": "system",
                    "cpu_pct": RES_RUN_SYSTEM_CPU[m["cni"]] * udp + off, "rss_mb": RES_RUN_SYSTEM_RSS[m["cni"]] + off})
        out.append({"t_s": t, "phase": "run", "component": "workload", "name": client,
                    "cpu_pct": 40.0 * udp + off, "rss_mb": 4.5})
        out.append({"t_s": t, "phase": "run", "component": "workload", "name": server,
                    "cpu_pct": 30.0 * udp + off, "rss_mb": None if k == 4 else 3.5})
    return out
