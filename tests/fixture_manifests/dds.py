"""DDS runs (docs/results-layout.md "DDS runs"): ddsperf latency and throughput series, their dds-samples.json and
the metrics derived from it."""
from __future__ import annotations

from .common import record, seeded_rng

DDS_DURATION_S = 5
# cni -> (cni_mode, datapath, mtu, discovery): bridge-vxlan / ptp-routed carry no multicast -> static peers
DDS_CNIS = {
    "host": ("host", "host", 1500, "multicast"),
    "flannel": ("vxlan", "bridge-vxlan", 1450, "static-peers"),
    "calico": ("bgp", "ptp-routed", 1500, "static-peers"),
}
DDS_LAT_BASE_US = {64: 50.0, 1024: 70.0}                       # host, reliable
DDS_LAT_FACTOR = {"host": 1.0, "flannel": 1.12, "calico": 1.04}
# (cni, mode, payload, reliability, transport, subscribers, security, repetitions, status/error)
DDS_SERIES = (
    [(c, "latency", n, "reliable", "unicast", 1, "none", 2, None) for c in ("host", "flannel", "calico")
     for n in (64, 1024)]
    + [(c, "latency", 64, "best-effort", "unicast", 1, "none", 2, None) for c in ("host", "flannel")]
    + [("calico", "latency", 64, "reliable", "unicast", 1, "auth-encrypt", 1,
        "unsupported: ddsperf was built without DDS Security (no auth-encrypt plugins)")]
    + [(c, "throughput", 1024, "reliable", t, k, "none", 2, None)
       for c, t in (("host", "unicast"), ("host", "multicast"), ("flannel", "unicast")) for k in (1, 4)]
)
# per-subscriber Mbit/s of a throughput run: unicast splits the publisher's output, multicast does not
DDS_TPUT_PUB_MBPS = {"host": 900.0, "flannel": 760.0}


def dds_samples(m: dict) -> list[dict]:
    """dds-samples.json of a DDS manifest (deterministic from the manifest; [] unless status is ok)."""
    if m["status"] != "ok":
        return []
    p, rng, n = m["params"], seeded_rng(m["run_id"]), m["length_bytes"]
    out = []
    for t in range(1, DDS_DURATION_S + 1):
        if p["mode"] == "latency":
            base = DDS_LAT_BASE_US[n] * DDS_LAT_FACTOR[m["cni"]] * (0.92 if p["reliability"] == "best-effort" else 1)
            j = 1 + rng.uniform(-0.03, 0.03)
            out.append({"t_s": float(t), "role": "ping", "subscriber": None, "peer": "10.244.1.7",
                        "latency_mean_us": round(base * 1.05 * j, 2), "latency_min_us": round(base * 0.8 * j, 2),
                        "latency_p50_us": round(base * j, 2), "latency_p90_us": round(base * 1.2 * j, 2),
                        "latency_p99_us": round(base * 1.6 * j, 2), "latency_max_us": round(base * 3.1 * j, 2),
                        "latency_count": 9000 + rng.randrange(0, 600),
                        "samples_per_s": None, "throughput_mbps": None, "lost_samples": None})
        else:
            k = p["subscribers"]
            per_sub = DDS_TPUT_PUB_MBPS[m["cni"]] * (0.87 if p["transport"] == "multicast" else 1)
            if p["transport"] == "unicast":
                per_sub /= k
            for sub in range(1, k + 1):
                mbps = round(per_sub * (1 + rng.uniform(-0.02, 0.02)), 3)
                out.append({"t_s": float(t), "role": "sub", "subscriber": sub, "peer": "10.244.0.5",
                            "latency_mean_us": None, "latency_min_us": None, "latency_p50_us": None,
                            "latency_p90_us": None, "latency_p99_us": None, "latency_max_us": None,
                            "latency_count": None, "samples_per_s": round(mbps * 1e6 / 8 / n, 1),
                            "throughput_mbps": mbps, "lost_samples": rng.randrange(0, 3)})
    return out


def dds_metrics(m: dict) -> dict:
    """The run's metrics from its samples, by the contract's rules."""
    s = dds_samples(m)
    res = {"cpu_pub_pct": 55.0, "rss_pub_mb": 14.2, "cpu_sub_pct": 38.0, "rss_sub_mb": 12.9}
    if m["params"]["mode"] == "latency":
        c = sum(x["latency_count"] for x in s)
        w = lambda f: sum(x[f] * x["latency_count"] for x in s) / c  # noqa: E731
        res.update(latency_mean_us=w("latency_mean_us"), latency_min_us=min(x["latency_min_us"] for x in s),
                   latency_p50_us=w("latency_p50_us"), latency_p90_us=w("latency_p90_us"),
                   latency_p99_us=w("latency_p99_us"), latency_max_us=max(x["latency_max_us"] for x in s),
                   latency_count=c)
    else:
        secs = sorted({x["t_s"] for x in s})
        res.update(
            samples_per_s=sum(x["samples_per_s"] for x in s) / len(secs),
            throughput_mbps=sum(x["throughput_mbps"] for x in s) / len(secs),
            per_subscriber_mbps=sum(x["throughput_mbps"] for x in s) / len(s),
            lost_samples=sum(x["lost_samples"] for x in s))
    return res


def dds_manifests() -> list[dict]:
    out = []
    for i, (cni, mode, n, rel, transport, k, sec, reps, unsupported) in enumerate(DDS_SERIES):
        cni_mode, datapath, mtu, discovery = DDS_CNIS[cni]
        params = {"mode": mode, "reliability": rel, "transport": transport, "subscribers": k,
                  "discovery": discovery, "security": sec, "rate": "inf"}
        for rep in range(1, reps + 1):
            status = "unsupported" if unsupported else "ok"
            roles = ["ddsperf-ping.log", "ddsperf-pong.log"] if mode == "latency" else \
                ["ddsperf-pub.log"] + [f"ddsperf-sub-{j}.log" for j in range(1, k + 1)]
            m = record(cni=cni, cni_mode=cni_mode, datapath=datapath, mtu=mtu, workload="dds", protocol="udp",
                       path="pod-to-pod", length=n, duration_s=DDS_DURATION_S, repetition=rep, params=params,
                       status=status, error=unsupported, raw_files=[], metrics=None,
                       tools={"ddsperf": "0.11.0"}, minute=2 * i + rep,
                       extra_hash=f"{mode}/{n}/{rel}/{transport}/{k}/{discovery}/{sec}/inf")
            if status == "ok":
                m["raw_files"] = roles + ["dds-samples.json"]
                m["metrics"] = dds_metrics(m)
            out.append(m)
    return out
