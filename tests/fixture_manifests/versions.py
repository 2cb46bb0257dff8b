"""CNI versions: a separate raw tree (version_run / write_version_tree) of runs at given versions, and the
regression-card fixture (version_runs) built from them."""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from .common import T0, TCP_LEN, hex_id, key
from .conditions import with_conditions

# ---- CNI versions (a separate raw tree: version_run / write_version_tree) ---------------------------------------
# Runs of one CNI mode at a given version with per-run metric values chosen by the caller, for the regression cards
# (cmp_cni_version_regressions). version_source "requested": a testbed rerun (trigger object, environment
# cni_version_requested, cni_version null, sweep id as `edgebench watch` names it); "installed": a cluster that
# reported the version (environment.cni_version, no trigger); None: a manifest written before versions were recorded
# (no trigger key, no cni_version_requested key). `values` holds the run's metrics by the warehouse's names:
#   iperf3: throughput_mbps, jitter_ms, lost_percent   dds latency: latency_p50_us, latency_p99_us
#   dds throughput: throughput_mbps   http: response_p50_ms, response_p95_ms (the requests are built so that the
#   warehouse's quantile_cont gives exactly these)   resources: cpu_<component>_pct, rss_<component>_mb for
#   component workload / cni / system (resources.json: 4 run samples of exactly that value per component)
VERSION_RES_NAMES = {"workload": "client", "cni": "cni-agent", "system": "system"}


def version_http_requests(p50: float, p95: float) -> list[dict]:
    """40 requests whose linear-interpolation p50 is p50 and p95 is p95 (needs p50 <= p95): sorted, positions
    19.5 and 37.05 of 0..39; values 0-18 below p50, 19-36 = p50, 37-38 = p95, 39 above."""
    times = [round(p50 * 0.8, 6)] * 19 + [p50] * 18 + [p95] * 2 + [round(p95 * 1.3, 6)]
    order = [(i * 17) % 40 for i in range(40)]  # not in sorted order on the wire
    return [{"seq": s + 1, "offset_ms": round(s * 2.0, 3), "response_ms": times[i], "connect_ms": None,
             "write_ms": None, "wait_ms": None, "read_ms": None, "status": 200} for s, i in enumerate(order)]


def version_run(*, cni: str, cni_mode: str, version: str | None, version_source: str | None, workload: str,
                repetition: int, values: dict, protocol: str = "tcp", length: int = TCP_LEN,
                params: dict | None = None, substrate: str = "local", distribution: str = "none",
                datapath: str = "ptp-vxlan", netem: str = "none", tuning: str = "default_settings",
                previous: str | None = None, status: str = "ok", minute: int = 0,
                trigger_cni: str | None = None, sweep: str | None = None) -> tuple[dict, dict[str, bytes]]:
    """(manifest, {file name: bytes} of the raw files beside it) of one versioned run; see the comment above.
    `sweep`: the run's sweep id (default: one sweep per version, named from it)."""
    requested = version_source == "requested"
    both_versions = sweep is not None  # a sweep given: one that runs both versions (a paired rerun)
    if sweep is None and requested:
        sweep = f"local-{trigger_cni or cni}-{version}-{hex_id(f'{trigger_cni or cni}/{version}', 8)}"
    elif sweep is None:
        sweep = f"fixture-{substrate}-{cni}-{version}" if version_source == "installed" else f"fixture-{substrate}-unversioned"
    params = dict(params or {})
    cell_id = "c-" + hex_id(f"{substrate}/{distribution}/{cni}/{cni_mode}/{tuning}/{netem}", 10)
    if both_versions:  # a sweep of both versions has a cell per version, as cni-versions gives
        cell_id = "c-" + hex_id(f"{substrate}/{distribution}/{cni}/{cni_mode}/{tuning}/{netem}/{version}", 10)
    run_id = "r-" + hex_id(
        f"{sweep}/{cell_id}/{workload}/{protocol}/{length}/{sorted(params.items())}/{repetition}", 12)
    started = T0 + timedelta(days=3 if requested else 1, minutes=minute)
    metrics_keys = {"iperf3": ("throughput_mbps", "jitter_ms", "lost_percent"),
                    "dds": ("latency_p50_us", "latency_p99_us", "throughput_mbps"), "http": ()}[workload]
    metrics = {k: float(values[k]) for k in metrics_keys if k in values} if status == "ok" else None
    files: dict[str, bytes] = {}
    if status == "ok" and workload == "http":
        reqs = version_http_requests(values["response_p50_ms"], values["response_p95_ms"])
        files["http-requests.json"] = json.dumps(reqs, indent=1).encode()
        metrics = {"requests": len(reqs), "errors": 0, "client": "fortio", "resolution_ms": 0.001}
    res = [(c, values[f"cpu_{c}_pct"], values[f"rss_{c}_mb"]) for c in VERSION_RES_NAMES
           if f"cpu_{c}_pct" in values] if status == "ok" else []
    if res:
        samples = [{"t_s": 0.0, "phase": "idle", "component": "system", "name": "system", "cpu_pct": 1.0,
                    "rss_mb": 700.0}]
        for t in range(4):
            samples += [{"t_s": 1.0 + t, "phase": "run", "component": c, "name": VERSION_RES_NAMES[c], "cpu_pct": cpu,
                         "rss_mb": rss} for c, cpu, rss in res]
        files["resources.json"] = json.dumps(samples, indent=1).encode()
    environment = {"kernel": "6.1.0-fixture", "machine": "x86_64", "hostname": "fixture",
                   "edgebench_version": "0.0.0-fixture", "tools": {}, "cni_version": None}
    m = {
        "schema_version": 1, "sweep_id": sweep, "cell_id": cell_id, "run_id": run_id,
        "substrate": substrate, "distribution": distribution, "cni": cni, "cni_mode": cni_mode,
        "datapath": datapath, "mtu": 1450, "workload": workload, "protocol": protocol, "path": "pod-to-pod",
        "placement": "cross-node", "length_bytes": length, "duration_s": 10, "repetition": repetition,
        "params": params, "status": status, "error": None if status == "ok" else "iperf3: error - fixture failure",
        "attempt": 1, "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "finished_at": (started + timedelta(seconds=11)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "raw_files": sorted(files), "environment": environment, "metrics": metrics,
    }
    with_conditions(m, netem=netem, tuning=tuning)
    m["raw_files"] = sorted(files)  # with_conditions adds resources.json; keep what is really written
    if version_source is not None:
        m["trigger"] = None
        environment["cni_version_requested"] = None
    if requested:
        m["trigger"] = {"cni": trigger_cni or cni, "new": version, "previous": previous,
                        "source": f"https://charts.example/{trigger_cni or cni}/index.yaml",
                        "at": (started - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")}
        environment["cni_version_requested"] = version
    elif version_source == "installed":
        environment["cni_version"] = version
    return m, files


def substrate_iperf3_runs(sides) -> list:
    """iperf3 runs of a host and one CNI mode per substrate, 3 repetitions each (the emulation marts' input):
    sides = [(substrate, distribution, host Mbit/s, the mode's share of it, (cni, mode, datapath))]; each run's
    value is offset by its repetition so that the runs spread."""
    runs = []
    for substrate, distribution, host, share, (cni, mode, datapath) in sides:
        for c, m, dp, value in (("host", "host", "host", host), (cni, mode, datapath, host * share)):
            for rep in (1, 2, 3):
                runs.append(version_run(cni=c, cni_mode=m, datapath=dp, version=None, version_source=None,
                                        workload="iperf3", repetition=rep, minute=rep, substrate=substrate,
                                        distribution=distribution, values={"throughput_mbps": value + rep}))
    return runs


def substrate_iperf3_warehouse(directory: Path, sides) -> Path:
    """The warehouse built from substrate_iperf3_runs(sides) laid out under directory/raw: its path."""
    from edgebench.results import warehouse

    root = write_version_tree(directory / "raw", substrate_iperf3_runs(sides))
    db = directory / "warehouse.duckdb"
    warehouse.build(warehouse_path=db, raw_root=str(root), quiet=True)
    return db


def write_version_tree(root: Path, runs: list[tuple[dict, dict[str, bytes]]]) -> Path:
    """Lay version_run() results out like the bucket."""
    for m, files in runs:
        d = root / key(m).rsplit("/", 1)[0]
        d.mkdir(parents=True, exist_ok=True)
        (d / "manifest.json").write_text(json.dumps(m, indent=2))
        for name, data in files.items():
            (d / name).write_bytes(data)
    return root


# The regression-card fixture (version_runs): cards of CNI modes measured at two versions on the testbed.
#  - VERSION_NULL_CARDS: "A/A" cards, the two versions drawn from the SAME distribution (the testbed runs the same
#    datapath whatever version triggered the rerun): every better/worse verdict there is a false alarm.
#  - VERSION_SHIFT_CARD: the new version 20% worse on every metric (throughput x 0.8, everything else x 1.2).
#  - VERSION_INSTALLED_CARD: a real cluster (ssh, k3s) reporting installed versions; one configuration with a single
#    run at the new version (n < 2), one measured at the previous version only (not compared).
#  - older versions, unversioned manifests, a failed run and another CNI's run inside a trigger sweep, which must
#    all stay out of the cards.
# Per-run noise: lognormal with the coefficient of variation below (run-to-run spread of the testbed's
# measurements: throughput a few %, tail latency and loss much more), each metric drawn independently.
VERSION_REPS = 5
VERSION_NULL_CARDS = {  # (cni, mode, datapath) -> (older version, previous, new); older = None: only two versions
    ("calico", "vxlan", "ptp-vxlan"): ("v3.29.4", "v3.30.0", "v3.30.2"),
    ("flannel", "vxlan", "bridge-vxlan"): ("v0.9.0", "v0.26.7", "v0.27.0"),   # v0.9.0 > v0.27.0 as text, not as version
    ("kube-router", "bgp", "ptp-routed"): (None, "v2.5.0", "v2.6.1"),
    ("antrea", "geneve", "bridge-geneve"): (None, "2.3.0", "2.4.1"),
    ("kube-ovn", "geneve", "bridge-geneve"): (None, "v1.14.4", "v1.14.10"),     # 10 > 4, not "1" < "4"
    ("weave", "fastdp", "bridge-vxlan"): (None, "v2.8.1", "v2.8.2-rc.1"),     # a pre-release is newer than 2.8.1
}
VERSION_SHIFT_CARD = (("cilium", "vxlan", "ptp-vxlan"), ("1.17.6", "1.18.0"))
VERSION_SHIFT = 0.20
VERSION_INSTALLED_CARD = (("calico", "vxlan", "ptp-vxlan"), ("v3.29.4", "v3.30.0"))
# a paired rerun on a lab: one sweep ran both versions; an earlier sweep of the previous version, on another day, ran
# 30% lower. The card compares the paired sweep's runs only (never pooled with the earlier sweep's)
VERSION_PAIRED_CARD = (("flannel", "vxlan", "bridge-vxlan"), ("v0.28.9", "v0.28.10"))
VERSION_PAIRED_SWEEP = "fixture-ssh-flannel-paired"
# metric -> (mean, coefficient of variation)
VERSION_NOISE = {
    "throughput_mbps/tcp": (7000.0, 0.04), "throughput_mbps/udp": (950.0, 0.015),
    "jitter_ms": (0.02, 0.25), "lost_percent": (0.05, 0.5),
    "latency_p50_us": (60.0, 0.05), "latency_p99_us": (150.0, 0.15), "throughput_mbps/dds": (700.0, 0.04),
    "response_p50_ms": (1.2, 0.06), "response_p95_ms": (1.9, 0.10),
    "cpu_workload_pct": (45.0, 0.08), "rss_workload_mb": (8.0, 0.02),
    "cpu_system_pct": (30.0, 0.10), "rss_system_mb": (850.0, 0.005),
}
RES_METRICS = ("cpu_workload_pct", "rss_workload_mb", "cpu_system_pct", "rss_system_mb")
VERSION_DDS = {"reliability": "reliable", "transport": "unicast", "subscribers": 1, "discovery": "static-peers",
               "security": "none", "rate": "inf", "leftovers_stopped": True}  # a cluster's run after that fix
# (workload, protocol, length, params, metrics): 9 configurations, 52 metrics per card
VERSION_CONFIGS = (
    *[("iperf3", "tcp", n, {}, ("throughput_mbps/tcp", *RES_METRICS)) for n in (131072, 65536, 16384)],
    *[("iperf3", "udp", n, {"bitrate": "1G"}, ("throughput_mbps/udp", "jitter_ms", "lost_percent", *RES_METRICS))
      for n in (1400, 512)],
    *[("dds", "udp", n, {**VERSION_DDS, "mode": "latency"}, ("latency_p50_us", "latency_p99_us", *RES_METRICS))
      for n in (64, 1024)],
    ("dds", "udp", 1024, {**VERSION_DDS, "mode": "throughput"}, ("throughput_mbps/dds", *RES_METRICS)),
    ("http", "tcp", 1000, {"service": "payload-echo", "requests": 40, "connections": 1},
     ("response_p50_ms", "response_p95_ms", *RES_METRICS)),
)
N_VERSION_COMPARISONS_PER_CARD = sum(len(c[-1]) for c in VERSION_CONFIGS)  # 52


def version_values(rng, metrics, shift: float = 0.0) -> dict:
    """One run's metric values: mean x lognormal noise (median-corrected, so the mean is the table's), made worse by
    `shift` (throughput x (1 - shift), every other metric x (1 + shift))."""
    import math
    out = {}
    for name in metrics:
        mean, cv = VERSION_NOISE[name]
        sigma = math.sqrt(math.log(1 + cv * cv))
        v = mean * rng.lognormvariate(-sigma * sigma / 2, sigma)
        v *= (1 - shift) if name.startswith("throughput") else (1 + shift)
        out[name.split("/")[0]] = round(v, 6)
    if "response_p95_ms" in out:
        out["response_p95_ms"] = max(out["response_p95_ms"], out["response_p50_ms"])
    return out


def _version_card_runs(card, versions, *, rng, shift_new=0.0, substrate="local", distribution="none",
                       source="requested", configs=VERSION_CONFIGS, reps=VERSION_REPS, sweep=None) -> list:
    (cni, mode, datapath), out = card, []
    for vi, version in enumerate(versions):
        shift = shift_new if vi == len(versions) - 1 else 0.0
        for rep in range(1, reps + 1):  # interleaved, as a sweep runs them
            for ci, (workload, proto, length, params, metrics) in enumerate(configs):
                values = version_values(rng, metrics, shift)
                out.append(version_run(cni=cni, cni_mode=mode, datapath=datapath, version=version,
                                       version_source=source, workload=workload, protocol=proto, length=length,
                                       params=params, repetition=rep, values=values, substrate=substrate,
                                       distribution=distribution, previous=versions[vi - 1] if vi else None,
                                       minute=600 * vi + 10 * rep + ci, sweep=sweep))
    return out


def version_runs() -> list:
    """Every run of the regression-card fixture (see above), deterministic (fixed seeds)."""
    import random
    runs = []
    for card, (older, previous, new) in VERSION_NULL_CARDS.items():
        rng = random.Random("null/" + "/".join(card))
        runs += _version_card_runs(card, [previous, new], rng=rng)
        if older:  # an older version, far off: never compared while two newer ones exist
            runs += _version_card_runs(card, [older], rng=rng, shift_new=0.7, configs=VERSION_CONFIGS[:2], reps=2)
    card, versions = VERSION_SHIFT_CARD
    runs += _version_card_runs(card, list(versions), rng=random.Random("shift"), shift_new=VERSION_SHIFT)
    card, versions = VERSION_INSTALLED_CARD
    rng = random.Random("installed")
    tcp, udp = VERSION_CONFIGS[0], VERSION_CONFIGS[3]
    runs += _version_card_runs(card, list(versions), rng=rng, substrate="ssh", distribution="k3s", source="installed",
                               configs=[tcp], reps=3)
    runs += _version_card_runs(card, [versions[0]], rng=rng, substrate="ssh", distribution="k3s", source="installed",
                               configs=[udp, VERSION_CONFIGS[5]], reps=2)   # udp: 2 runs at the previous version,
    runs += _version_card_runs(card, [versions[1]], rng=rng, substrate="ssh", distribution="k3s", source="installed",
                               configs=[udp], reps=1)                       # 1 at the new one: n < 2; dds: only old
    card, versions = VERSION_PAIRED_CARD
    rng = random.Random("paired")
    runs += _version_card_runs(card, [versions[0]], rng=rng, substrate="ssh", distribution="kubeadm",
                               source="installed", configs=[tcp], reps=3, shift_new=0.3)
    runs += _version_card_runs(card, list(versions), rng=rng, substrate="ssh", distribution="kubeadm",
                               source="installed", configs=[tcp], reps=3, sweep=VERSION_PAIRED_SWEEP)
    # must stay out: manifests without a version, a failed run, another CNI inside calico's trigger sweep
    (cni, mode, datapath), (_, _, calico_new) = ("calico", "vxlan", "ptp-vxlan"), VERSION_NULL_CARDS[
        ("calico", "vxlan", "ptp-vxlan")]
    for rep in (1, 2):
        runs.append(version_run(cni=cni, cni_mode=mode, datapath=datapath, version=None, version_source=None,
                                workload="iperf3", repetition=rep, values={"throughput_mbps": 100.0}))
    runs.append(version_run(cni=cni, cni_mode=mode, datapath=datapath, version=calico_new, version_source="requested",
                            workload="iperf3", repetition=9, status="failed", values={}))
    runs.append(version_run(cni="flannel", cni_mode="vxlan", datapath="bridge-vxlan", version=calico_new,
                            version_source="requested", trigger_cni="calico", workload="iperf3", repetition=1,
                            values={"throughput_mbps": 100.0}))
    return runs
