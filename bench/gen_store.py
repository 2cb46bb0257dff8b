"""A synthetic but realistic raw store for the warehouse benchmark (SYNTHETIC DATA, not measurements).

Writes a directory laid out exactly like the bucket (docs/results-layout.md), usable as EDGEBENCH_RAW_ROOT /
warehouse.build(raw_root=...):

    sweeps/<sweep_id>/sweep.json
    runs/<sweep_id>/<cell_id>/<run_id>/manifest.json       one per run (schema_version 1, every field the contract has)
    runs/.../iperf3-client.json                              iperf3's --json output with its per-interval records
    runs/.../dds-samples.json, ddsperf-*.log                 DDS: one element per ddsperf per-second line
    runs/.../http-requests.json, fortio-*.log                HTTP: one element per request
    runs/.../resources.json                                  CPU / RSS samples (idle phase, then the run)

Mix: half iperf3 (tcp/udp, pod-to-pod/-service, same/cross-node), a quarter each DDS and HTTP; 8 CNI modes with
the host baseline on the testbed and on kind, 3 link conditions, 2 tuning profiles, 5 repetitions; about 2% failed,
1% unsupported, 1% invalid, 0.5% superseded runs, and two CNI versions per CNI on kind (for the regression cards).

`samples` is the number of per-sample records across iperf3 intervals, DDS per-second lines and HTTP requests,
spread evenly over the runs (resources.json samples come on top: 14 per run). Everything is deterministic in
(runs, samples, seed); `add_runs(root, n)` adds n further runs (a new sweep) for the incremental-build step.

    python bench/gen_store.py DIR [--runs 10000] [--samples 1000000] [--seed 0]
    python bench/gen_store.py DIR --add 10
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fixture_manifests import NETEM  # noqa: E402  the link conditions as the testbed records them (tests' fixtures)

from edgebench.plan.dimensions import DIMENSIONS  # noqa: E402

T0 = datetime(2026, 9, 1, 8, 0, 0, tzinfo=timezone.utc)
STATE = ".gen_store.json"  # beside runs/: how the store was generated (add_runs continues from it)

# cni -> (cni_mode, datapath, pod MTU on a 1500 link, multicast-capable, relative throughput, relative latency)
CNIS = [
    ("host", "host", "host", 1500, True, 1.00, 1.00),
    ("flannel", "vxlan", "bridge-vxlan", 1450, False, 0.78, 1.12),
    ("flannel", "host-gw", "bridge-routed", 1500, True, 0.95, 1.03),
    ("calico", "vxlan", "ptp-vxlan", 1450, False, 0.80, 1.10),
    ("calico", "bgp", "ptp-routed", 1500, False, 0.96, 1.04),
    ("cilium", "vxlan", "ptp-vxlan", 1450, False, 0.74, 1.15),
    ("antrea", "geneve", "bridge-geneve", 1450, True, 0.76, 1.13),
    ("kube-router", "bgp", "ptp-routed", 1500, False, 0.94, 1.05),
]
CNI_VERSIONS = {"flannel": ("v0.26.7", "v0.27.0"), "calico": ("v3.29.3", "v3.30.2"), "cilium": ("v1.16.9", "v1.17.4"),
                "antrea": ("v2.2.1", "v2.3.0"), "kube-router": ("v2.4.1", "v2.5.0")}
SUBSTRATES = [("local", "none"), ("kind", "kind")]
KOPT = {"net.core.rmem_max": 67108864, "net.core.wmem_max": 67108864, "net.ipv4.tcp_rmem": "4096 87380 67108864"}
TUNING = ["default_settings", "kernel_optimizations"]
HTTP_KPIS_MS = {"payload-echo": {"remote-maintenance-inference": 1000},
                "payload-recv": {"remote-maintenance-training": 1000},
                "static-reply": {"vehicle-decision-assist": 100}}
HTTP_BASE_MS = {("payload-echo", 1000): 1.1, ("payload-echo", 100000): 4.0, ("payload-recv", 1000): 0.9,
                ("payload-recv", 100000): 2.5, ("static-reply", 0): 0.7}
REPS = 5
HOST_TCP_MBPS, HOST_UDP_MBPS = 9000.0, 1000.0


def _hex(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _workload_configs() -> list[tuple]:
    """(workload, protocol, path, placement, length_bytes, params) in the proportions of a real sweep: 8 iperf3,
    4 DDS and 4 HTTP configurations per cell."""
    out = []
    for proto, length, bitrate in (("tcp", 131072, None), ("udp", 1400, "1G")):
        for path in ("pod-to-pod", "pod-to-service"):
            for placement in ("same-node", "cross-node"):
                out.append(("iperf3", proto, path, placement, length, {"bitrate": bitrate, "port": 5201}))
    for mode, length, transport, subs in (("latency", 64, "unicast", 1), ("latency", 1024, "unicast", 1),
                                          ("throughput", 1024, "unicast", 2), ("throughput", 1024, "multicast", 4)):
        out.append(("dds", "udp", "pod-to-pod", "cross-node", length,
                    {"mode": mode, "reliability": "reliable", "transport": transport, "subscribers": subs,
                     "security": "none", "rate": "inf"}))
    for service, length, path in (("payload-echo", 1000, "pod-to-pod"), ("payload-echo", 100000, "pod-to-service"),
                                  ("payload-recv", 100000, "pod-to-pod"), ("static-reply", 0, "pod-to-service")):
        out.append(("http", "tcp", path, "cross-node", length,
                    {"service": service, "connections": 1, "kpis_ms": HTTP_KPIS_MS[service]}))
    return out


WORKLOADS = _workload_configs()
CELLS = [(s, d, c, n, t) for s, d in SUBSTRATES for c in CNIS for n in NETEM for t in TUNING]
N_CONFIGS = len(CELLS) * len(WORKLOADS)  # 96 cells x 16 = 1536 configurations


class _Store:
    def __init__(self, root: Path, per_run: int, seed: int):
        self.root, self.per_run, self.seed = root, per_run, seed
        self.n_samples = {"iperf3_intervals": 0, "dds_samples": 0, "http_requests": 0, "resources": 0}
        self.n_runs = 0
        self.sweeps: set[str] = set()

    def write(self, rel: str, text: str) -> None:
        p = self.root / rel
        try:
            p.write_text(text)
        except FileNotFoundError:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)

    # ---- one run ----------------------------------------------------------------------------------------------
    def run(self, i: int, n_samples: int, sweep: str | None = None, copy_sweep: str | None = None) -> int:
        """Run number i (deterministic): its configuration, sweep, repetition, outcome and raw files. copy_sweep:
        write it as a superseded copy (same run_id, finished a month earlier) under that sweep's keys instead."""
        cfg_i = i % N_CONFIGS
        rep = (i // N_CONFIGS) % REPS + 1
        wave = i // (N_CONFIGS * REPS)  # one sweep = every configuration x REPS repetitions
        (substrate, dist, cni, netem, tuning), wl = CELLS[cfg_i // len(WORKLOADS)], WORKLOADS[cfg_i % len(WORKLOADS)]
        workload, proto, path, placement, length, params = wl
        name, mode, datapath, mtu, multicast, f_tput, f_lat = cni
        sweep = sweep or f"bench-{wave:03d}"
        rng = random.Random(int(_hex(f"{self.seed}/{sweep}/{i}", 12), 16))
        kopt = tuning == "kernel_optimizations"
        mtu = (mtu + 7500) if kopt else mtu  # kernel_optimizations raises the link MTU to 9000
        cell_id = "c-" + _hex(f"{substrate}/{dist}/{name}/{mode}/{tuning}/{netem}", 10)
        params = dict(params)
        if workload == "dds":
            params["discovery"] = "multicast" if multicast else "static-peers"
        if workload == "http":
            params["requests"] = n_samples
        run_id = "r-" + _hex(f"{sweep}/{cell_id}/{workload}/{proto}/{path}/{placement}/"
                             f"{json.dumps(params, sort_keys=True)}/{length}/{rep}", 12)
        started = T0 + timedelta(days=7 * wave, seconds=37 * (i % (N_CONFIGS * REPS)))
        if copy_sweep:
            sweep, started = copy_sweep, started - timedelta(days=30)
        roll = rng.random()
        status, error, invalid = "ok", None, None
        if workload == "dds" and params["transport"] == "multicast" and not multicast:
            status, error = "unsupported", f"unsupported: {datapath} carries no multicast"
        elif roll < 0.02:
            status = "failed"
            error = {"iperf3": "iperf3: error - unable to connect to server: Connection refused",
                     "dds": "ddsperf: no matching participant discovered within 10 s",
                     "http": 'fortio: Get "http://10.244.1.9:8080/": dial tcp 10.244.1.9:8080: connect: '
                             'connection refused'}[workload]
        elif kopt and roll < 0.05:
            invalid = "tuning readback mismatch: net.core.rmem_max requested 67108864, read back 212992"
        delay = NETEM[netem]["delay_ms"]
        noise = rng.gauss(1.0, 0.03)
        duration = None
        raw_files: list[str] = []
        metrics = None
        run_dir = f"runs/{sweep}/{cell_id}/{run_id}"
        ok = status == "ok"
        if workload == "iperf3":
            duration = 10
            host = HOST_TCP_MBPS if proto == "tcp" else HOST_UDP_MBPS
            if NETEM[netem]["rate_mbit"]:
                host = min(host, NETEM[netem]["rate_mbit"] * 0.96)
            elif proto == "tcp" and delay:
                host *= 0.9 / (1 + delay / 5)
            mbps = host * (f_tput if proto == "tcp" else min(1.0, f_tput + 0.15)) * noise * (1.04 if kopt else 1)
            raw_files = ["iperf3-client.json"]
            if ok:
                metrics = self.iperf3(run_dir, rng, proto, mbps, delay, n_samples, duration)
        elif workload == "dds":
            duration = max(1, n_samples if params["mode"] == "latency" else -(-n_samples // params["subscribers"]))
            if ok:
                raw_files, metrics = self.dds(run_dir, rng, params, length, f_lat, f_tput, delay, noise, n_samples)
        else:
            if ok:
                base = HTTP_BASE_MS[(params["service"], length)] * f_lat * noise + 2 * delay
                raw_files, metrics = self.http(run_dir, rng, base, n_samples)
            else:
                raw_files = ["fortio-load.log", "fortio-server.log"]
        raw_files.append("resources.json")
        self.resources(run_dir, rng, workload, f_tput, proto)
        produced = n_samples if ok else 0
        finished = started + timedelta(seconds=(duration or 2) + 1 + rng.randrange(3))
        versions = CNI_VERSIONS.get(name)
        m = {
            "schema_version": 1, "sweep_id": sweep, "cell_id": cell_id, "run_id": run_id,
            "substrate": substrate, "distribution": dist, "cni": name, "cni_mode": mode, "datapath": datapath,
            "mtu": mtu, "netem_scenario": netem, "tuning_profile": tuning,
            "netem": NETEM[netem],
            "tuning": {"profile": tuning, "requested": KOPT if kopt else {},
                       "readback": ({**KOPT, "net.core.rmem_max": 212992} if invalid else KOPT) if kopt else {},
                       "unsupported": {"vm.swappiness": "global sysctl: not per network namespace"} if kopt else {},
                       "mtu": mtu},
            "is_valid": invalid is None, "invalid_reason": invalid,
            # the dimensions added after the first sweeps at their neutral values (plan/dimensions.py), nothing
            # read back of them
            **{d.manifest_field: d.neutral for d in DIMENSIONS if d.neutral is not None},
            **{d.detail: None for d in DIMENSIONS if d.detail},
            "intercluster_tool": "none", "intercluster_mode": "none",
            "intercluster_implementation": "baseline", "intercluster_detail": None,
            "service_proxy_mode": "dnat" if substrate == "local" else "iptables",
            "workload": workload, "protocol": proto, "path": path, "placement": placement,
            "length_bytes": length, "duration_s": duration, "repetition": rep, "params": params,
            "status": status, "error": error, "attempt": 1 if ok else 2,
            "started_at": _ts(started), "finished_at": _ts(finished), "raw_files": raw_files,
            "environment": {"kernel": "6.8.0-bench", "machine": "x86_64" if substrate == "local" else "aarch64",
                            "hostname": f"bench-{substrate}", "edgebench_version": "0.0.0-bench",
                            "edgebench_commit": "0000000", "tools": {"iperf3": "3.16", "ddsperf": "0.11.0",
                                                                     "fortio": "1.69.0"},
                            "cni_version": (versions[min(wave, 1)] if substrate == "kind" and versions else None)},
            "trigger": None,
            "metrics": metrics,
        }
        self.write(f"{run_dir}/manifest.json", json.dumps(m, separators=(",", ":")))
        self.n_runs += 1
        if sweep not in self.sweeps:
            self.sweeps.add(sweep)
            self.write(f"sweeps/{sweep}/sweep.json", json.dumps({"sweep_id": sweep, "synthetic": True}))
        return produced

    # ---- raw files --------------------------------------------------------------------------------------------
    def iperf3(self, run_dir, rng, proto, mbps, delay, n, duration) -> dict:
        step = duration / n
        ivals, total_bytes = [], 0
        for k in range(n):
            bps = mbps * 1e6 * rng.gauss(1.0, 0.02)
            b = int(bps * step / 8)
            total_bytes += b
            extra = f',"retransmits":{rng.randrange(3)}' if proto == "tcp" else \
                f',"jitter_ms":{rng.uniform(0.005, 0.05):.4f},"lost_packets":0,"packets":{b // 1400}'
            ivals.append(f'{{"streams":[],"sum":{{"start":{k * step:.4f},"end":{(k + 1) * step:.4f},'
                         f'"seconds":{step:.4f},"bytes":{b},"bits_per_second":{bps:.1f}{extra},"omitted":false,'
                         f'"sender":true}}}}')
        recv = total_bytes * 8 / duration / 1e6
        self.write(f"{run_dir}/iperf3-client.json",
                   f'{{"start":{{"version":"iperf 3.16","test_start":{{"protocol":"{proto.upper()}",'
                   f'"num_streams":1,"duration":{duration}}}}},"intervals":[{",".join(ivals)}],'
                   f'"end":{{"sum_sent":{{"bytes":{total_bytes},"bits_per_second":{recv * 1.001e6:.1f}}},'
                   f'"sum_received":{{"bytes":{total_bytes},"bits_per_second":{recv * 1e6:.1f}}}}}}}')
        self.n_samples["iperf3_intervals"] += n
        tcp = proto == "tcp"
        return {"throughput_mbps": round(recv, 3), "sent_mbps": round(recv * 1.001, 3), "received_mbps": round(recv, 3),
                "retransmits": rng.randrange(20) if tcp else None, "jitter_ms": None if tcp else 0.02,
                "lost_packets": None if tcp else rng.randrange(10), "packets": None if tcp else total_bytes // 1400,
                "lost_percent": None if tcp else 0.005, "cpu_host_pct": round(rng.uniform(30, 60), 1),
                "cpu_remote_pct": round(rng.uniform(25, 50), 1),
                "mean_rtt_us": round(120 + 2000 * delay, 1) if tcp else None, "sent_bytes": total_bytes,
                "received_bytes": total_bytes, "direction": "forward", "reverse": False, "bidir": False,
                "iperf3_version": "3.16"}

    def dds(self, run_dir, rng, p, length, f_lat, f_tput, delay, noise, n):
        lines = []
        res = {"cpu_pub_pct": round(rng.uniform(40, 70), 1), "rss_pub_mb": 14.2,
               "cpu_sub_pct": round(rng.uniform(30, 50), 1), "rss_sub_mb": 12.9}
        if p["mode"] == "latency":
            base = (50.0 if length == 64 else 70.0) * f_lat * noise + 1000 * delay
            cnt = wsum = p50 = p90 = p99 = 0.0
            mn, mx = float("inf"), 0.0
            for t in range(1, n + 1):
                j = 1 + rng.uniform(-0.03, 0.03)
                c = 9000 + rng.randrange(600)
                v = [round(base * f * j, 2) for f in (1.05, 0.8, 1.0, 1.2, 1.6, 3.1)]
                lines.append(f'{{"t_s":{t}.0,"role":"ping","subscriber":null,"peer":"10.244.1.7",'
                             f'"latency_mean_us":{v[0]},"latency_min_us":{v[1]},"latency_p50_us":{v[2]},'
                             f'"latency_p90_us":{v[3]},"latency_p99_us":{v[4]},"latency_max_us":{v[5]},'
                             f'"latency_count":{c},"samples_per_s":null,"throughput_mbps":null,"lost_samples":null}}')
                cnt += c
                wsum, p50, p90, p99 = wsum + v[0] * c, p50 + v[2] * c, p90 + v[3] * c, p99 + v[4] * c
                mn, mx = min(mn, v[1]), max(mx, v[5])
            res.update(latency_mean_us=wsum / cnt, latency_min_us=mn, latency_p50_us=p50 / cnt,
                       latency_p90_us=p90 / cnt, latency_p99_us=p99 / cnt, latency_max_us=mx, latency_count=int(cnt))
            files = ["ddsperf-ping.log", "ddsperf-pong.log"]
        else:
            k = p["subscribers"]
            per_sub = 900.0 * f_tput * noise * (0.87 if p["transport"] == "multicast" else 1 / k)
            tot = lost = 0.0
            secs = set()
            for e in range(n):
                t, sub = e // k + 1, e % k + 1
                mbps = round(per_sub * (1 + rng.uniform(-0.02, 0.02)), 3)
                ls = rng.randrange(3)
                lines.append(f'{{"t_s":{t}.0,"role":"sub","subscriber":{sub},"peer":"10.244.0.5",'
                             f'"latency_mean_us":null,"latency_min_us":null,"latency_p50_us":null,'
                             f'"latency_p90_us":null,"latency_p99_us":null,"latency_max_us":null,"latency_count":null,'
                             f'"samples_per_s":{round(mbps * 1e6 / 8 / length, 1)},"throughput_mbps":{mbps},'
                             f'"lost_samples":{ls}}}')
                tot, lost = tot + mbps, lost + ls
                secs.add(t)
            res.update(samples_per_s=tot * 1e6 / 8 / length / len(secs), throughput_mbps=tot / len(secs),
                       per_subscriber_mbps=tot / n, lost_samples=int(lost))
            files = ["ddsperf-pub.log"] + [f"ddsperf-sub-{j}.log" for j in range(1, k + 1)]
        self.write(f"{run_dir}/dds-samples.json", "[" + ",".join(lines) + "]")
        for f in files:
            self.write(f"{run_dir}/{f}", "[  1] participant bench: synthetic ddsperf log\n")
        self.n_samples["dds_samples"] += n
        return files + ["dds-samples.json"], res

    def http(self, run_dir, rng, base, n):
        lines, times, offset, errors = [], [], 0.0, 0
        for seq in range(1, n + 1):
            total = round(base * rng.lognormvariate(0, 0.15), 3)
            status = 503 if rng.random() < 0.002 else 200
            errors += status != 200
            lines.append(f'{{"seq":{seq},"offset_ms":{offset:.3f},"response_ms":{total},"connect_ms":null,'
                         f'"write_ms":null,"wait_ms":null,"read_ms":null,"status":{status}}}')
            times.append(total)
            offset += total + rng.uniform(0.05, 0.2)
        self.write(f"{run_dir}/http-requests.json", "[" + ",".join(lines) + "]")
        self.write(f"{run_dir}/fortio-access.jsonl", "")
        self.write(f"{run_dir}/fortio-load.log", "Sockets used: 1 (for perfect keepalive, would be 1)\n")
        self.write(f"{run_dir}/fortio-server.log", "")
        self.n_samples["http_requests"] += n
        s = sorted(times)
        q = lambda f: s[min(n - 1, int(f * n))]  # noqa: E731
        return (["fortio-access.jsonl", "fortio-load.log", "fortio-server.log", "http-requests.json"],
                {"requests": n, "errors": errors, "response_mean_ms": sum(s) / n, "response_p50_ms": q(0.5),
                 "response_p90_ms": q(0.9), "response_p99_ms": q(0.99), "response_max_ms": s[-1],
                 "client": "fortio", "resolution_ms": 0.001})

    def resources(self, run_dir, rng, workload, f_tput, proto) -> None:
        client, server = {"iperf3": ("iperf3-client", "iperf3-server"), "dds": ("ddsperf-pub", "ddsperf-sub"),
                          "http": ("fortio-load", "fortio-server")}[workload]
        load = (1.5 if proto == "udp" else 1.0) * (2 - f_tput)
        rows = []
        for t in range(2):
            rows.append(("idle", "system", "system", t, rng.uniform(2, 4), 800 + rng.uniform(0, 4)))
            rows.append(("idle", "workload", server, t, 0.1, 3.0))
        for t in range(2, 6):
            rows.append(("run", "system", "system", t, 20 * load + rng.uniform(-1, 1), 820 + rng.uniform(0, 30)))
            rows.append(("run", "workload", client, t, 40 * load + rng.uniform(-1, 1), 4.5))
            rows.append(("run", "workload", server, t, 30 * load + rng.uniform(-1, 1), 3.5))
        self.write(f"{run_dir}/resources.json", "[" + ",".join(
            f'{{"t_s":{t}.0,"phase":"{ph}","component":"{c}","name":"{nm}","cpu_pct":{cpu:.2f},"rss_mb":{rss:.1f}}}'
            for ph, c, nm, t, cpu, rss in rows) + "]")
        self.n_samples["resources"] += len(rows)


def generate(root: Path, runs: int = 10_000, samples: int = 1_000_000, seed: int = 0) -> dict:
    """Write `runs` run manifests (0.5% superseded copies) and `samples` records into root; counts and timing."""
    t0 = time.perf_counter()
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    n_dup = runs // 200
    base = runs - n_dup
    per_run = max(1, samples // max(base, 1))
    st = _Store(root, per_run, seed)
    produced = 0
    for i in range(base):  # a failed / unsupported run has no samples: its budget goes to the next run
        want = samples * (i + 1) // base - produced
        produced += st.run(i, max(1, want))
    # superseded copies: a manifest of the same run_id under another sweep's keys, finished a month earlier (what a
    # copied or re-imported run leaves); int_runs__deduplicated keeps the later one. Their samples count on top.
    for d in range(n_dup):
        i = (d * 197) % max(base, 1)
        st.run(i, per_run, copy_sweep="bench-old")
    state = {"runs": runs, "samples": samples, "seed": seed, "next_index": base, "per_run": max(1, per_run),
             "n_added": 0}
    (root / STATE).write_text(json.dumps(state))
    return {"root": str(root), "runs": st.n_runs, **st.n_samples,
            "samples": sum(v for k, v in st.n_samples.items() if k != "resources"),
            "seconds": round(time.perf_counter() - t0, 2)}


def add_runs(root: Path, n: int = 10) -> dict:
    """Add n new runs (a new sweep, as the next `make sweep` would) to a store written by generate()."""
    t0 = time.perf_counter()
    root = Path(root)
    state = json.loads((root / STATE).read_text())
    st = _Store(root, state["per_run"], state["seed"])
    sweep = f"bench-add-{state['n_added']:03d}"
    for i in range(state["next_index"], state["next_index"] + n):
        st.run(i, state["per_run"], sweep=sweep)
    state["next_index"] += n
    state["n_added"] += 1
    (root / STATE).write_text(json.dumps(state))
    return {"root": str(root), "runs": st.n_runs, "sweep_id": sweep, **st.n_samples,
            "seconds": round(time.perf_counter() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path, help="directory to write (laid out like the bucket)")
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--add", type=int, metavar="N", help="add N runs to an existing generated store instead")
    a = ap.parse_args(argv)
    if a.add:
        print(json.dumps(add_runs(a.root, a.add)))
        return 0
    if (a.root / "runs").exists():
        print(f"gen_store: {a.root}/runs exists; use an empty directory (or --add N)", file=sys.stderr)
        return 2
    print(json.dumps(generate(a.root, a.runs, a.samples, a.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
