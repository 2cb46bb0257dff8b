"""HTTP runs (docs/results-layout.md "HTTP runs"): services and payloads on host and flannel with deliberate
anomalies, their http-requests.json, and payload-echo under link conditions."""
from __future__ import annotations

from .common import nearest_rank, record, seeded_rng
from .conditions import COND_CNIS, NETEM, with_conditions

HTTP_KPIS_MS = {"remote-maintenance-inference": 1000, "remote-maintenance-training": 1000,
                "vehicle-decision-assist": 100}
HTTP_CNIS = {"host": ("host", "host", 1500), "flannel": ("vxlan", "bridge-vxlan", 1450)}
HTTP_REQUESTS = 40
# (service, payload) -> base response ms on host; flannel is slower by HTTP_FLANNEL_FACTOR
HTTP_BASE_MS = {("payload-echo", 1000): 1.1, ("payload-echo", 1000000): 18.0, ("payload-recv", 1000): 0.9,
                ("payload-recv", 1000000): 10.0, ("static-reply", 0): 0.7}
HTTP_FLANNEL_FACTOR = 1.4
HTTP_REPS = 2
# deliberate anomalies
HTTP_FAILED = ("flannel", "static-reply", 0, 2, "hey: Get \"http://10.244.1.9:8080/\": dial tcp 10.244.1.9:8080: "
               "connect: connection refused")
HTTP_NON_200 = ("flannel", "payload-echo", 1000, 1, 17, 503)           # cni, service, payload, rep, seq, status
HTTP_SLOW = {("flannel", "payload-echo", 1000000, 1): {5: 1180.0, 29: 1043.5},  # beyond 1000 (and 100) ms
             # 6 of 40 beyond 100 ms: the run's p90 is beyond the vehicle-decision-assist KPI too
             ("flannel", "static-reply", 0, 1): {3: 121.0, 9: 108.3, 22: 140.5, 27: 133.0, 31: 115.6, 38: 104.2}}


def _hid(m):
    return (m["cni"], m["params"]["service"], m["length_bytes"], m["repetition"])


def http_requests(m: dict) -> list[dict]:
    """http-requests.json of an HTTP manifest (deterministic; [] for a failed run)."""
    if m["status"] != "ok":
        return []
    rng, hid = seeded_rng(m["run_id"]), _hid(m)
    base = {**HTTP_BASE_MS, **HTTP_COND_BASE_MS}[(m["params"]["service"], m["length_bytes"])] * (
        HTTP_FLANNEL_FACTOR if m["cni"] == "flannel" else HTTP_CILIUM_FACTOR if m["cni"] == "cilium" else 1)
    base += 2 * NETEM[m.get("netem", {}).get("scenario", "none")]["delay_ms"]  # request and response delayed
    out, offset = [], 0.0
    for seq in range(1, HTTP_REQUESTS + 1):
        total = HTTP_SLOW.get(hid, {}).get(seq) or round(base * rng.lognormvariate(0, 0.15), 3)
        status = 200
        if hid == HTTP_NON_200[:4] and seq == HTTP_NON_200[4]:
            status, total = HTTP_NON_200[5], round(base * 0.5, 3)
        connect = round(0.35 * (1 + rng.random() * 0.1), 3) if seq == 1 else 0.0
        write = round((total - connect) * 0.2, 3)
        read = round((total - connect) * 0.1, 3)
        wait = round(total - connect - write - read, 3)
        out.append({"seq": seq, "offset_ms": round(offset, 3), "response_ms": total, "connect_ms": connect,
                    "write_ms": write, "wait_ms": wait, "read_ms": read, "status": status})
        offset += total + round(rng.uniform(0.1, 0.4), 3)  # sequential: next request after the response
    return out


def http_manifests() -> list[dict]:
    return _http_manifests() + condition_http_manifests()


def _http_manifests() -> list[dict]:
    out = []
    for i, ((service, n), cni) in enumerate((k, c) for k in HTTP_BASE_MS for c in HTTP_CNIS):
        cni_mode, datapath, mtu = HTTP_CNIS[cni]
        params = {"service": service, "requests": HTTP_REQUESTS, "connections": 1, "kpis_ms": dict(HTTP_KPIS_MS)}
        for rep in range(1, HTTP_REPS + 1):
            failed = (cni, service, n, rep) == HTTP_FAILED[:4]
            m = record(cni=cni, cni_mode=cni_mode, datapath=datapath, mtu=mtu, workload="http", protocol="tcp",
                       path="pod-to-pod", length=n, duration_s=None, repetition=rep, params=params,
                       status="failed" if failed else "ok", error=HTTP_FAILED[4] if failed else None,
                       raw_files=["fortio-server.log"] if failed else
                       ["hey.csv", "fortio-server.log", "http-requests.json"],
                       metrics=None, tools={"hey": "0.1.4", "fortio": "1.69.0"}, minute=2 * i + rep,
                       extra_hash=f"{service}/{n}/{HTTP_REQUESTS}/1")
            reqs = http_requests(m)
            if reqs:
                t = [r["response_ms"] for r in reqs]
                m["metrics"] = {"requests": len(reqs), "errors": sum(r["status"] // 100 != 2 for r in reqs),
                                "response_mean_ms": sum(t) / len(t), "response_p50_ms": nearest_rank(t, 0.5),
                                "response_p90_ms": nearest_rank(t, 0.9), "response_p99_ms": nearest_rank(t, 0.99),
                                "response_max_ms": max(t)}
            out.append(m)
    return out


# HTTP under link conditions: payload-echo with 10 kB, host and cilium, each scenario; + 2 x delay per request
HTTP_COND_BASE_MS = {("payload-echo", 10000): 1.5}
HTTP_CILIUM_FACTOR = 1.3


def condition_http_manifests() -> list[dict]:
    out = []
    for i, (netem, cni) in enumerate((n, c) for n in ("none", "lcl", "edg10") for c in ("host", "cilium")):
        cni_mode, datapath = COND_CNIS[cni]
        params = {"service": "payload-echo", "requests": HTTP_REQUESTS, "connections": 1,
                  "kpis_ms": dict(HTTP_KPIS_MS)}
        for rep in range(1, HTTP_REPS + 1):
            m = record(cni=cni, cni_mode=cni_mode, datapath=datapath, mtu=1450 if cni == "cilium" else 1500,
                       workload="http", protocol="tcp", path="pod-to-pod", length=10000, duration_s=None,
                       repetition=rep, params=params, status="ok", error=None,
                       raw_files=["hey.csv", "fortio-server.log", "http-requests.json"], metrics=None,
                       tools={"hey": "0.1.4", "fortio": "1.69.0"}, minute=40 + 2 * i + rep, netem=netem,
                       extra_hash=f"payload-echo/10000/{HTTP_REQUESTS}/1")
            with_conditions(m, netem=netem)
            reqs = http_requests(m)
            t = [r["response_ms"] for r in reqs]
            m["metrics"] = {"requests": len(reqs), "errors": 0, "response_mean_ms": sum(t) / len(t),
                            "response_p50_ms": nearest_rank(t, 0.5), "response_p90_ms": nearest_rank(t, 0.9),
                            "response_p99_ms": nearest_rank(t, 0.99), "response_max_ms": max(t)}
            out.append(m)
    return out
