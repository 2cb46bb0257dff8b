"""An analysis, not a benchmark part: what pooling the pair variance over the CNI modes of one workload variant
(a moderated t, Smyth 2004, with a fixed prior weight d0; d0 = 4 is the one rule's own, verdict.POOL_PRIOR_DF) would
decide on a stored sweep, beside each comparison judged alone and fully pooled (docs/verdicts.md). Reads the sweep's manifests from the store of `make minio` ($EDGEBENCH_S3_*).

    bench/pooled_variance.py SWEEP host   every CNI mode against the host (iperf3 throughput, DDS latency p90, HTTP p50)
    bench/pooled_variance.py SWEEP aa     an A/A sweep: each mode at its second label against its first
"""
import collections
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "containers" / "runner" / "src"))
from edgebench.results.records.store import S3Config  # noqa: E402
from edgebench.results.report import verdict as V  # noqa: E402

# workload -> (the summary's metric, higher is better, unit)
METRIC = {"http": ("response_p50_ms", False, "ms"), "dds": ("latency_p90_us", False, "us"),
          "iperf3": ("throughput_mbps", True, "Mbit/s")}
PLANS = (("none", None), ("moderated", 2), ("moderated", 4), ("moderated", 8), ("full", None))


def load(sweep: str) -> dict:
    """variant -> label (cni:mode:requested version) -> repetition -> the summary metric, of the sweep's ok runs."""
    cfg = S3Config.from_env()
    client = cfg.client()
    values: dict = collections.defaultdict(lambda: collections.defaultdict(dict))
    for o in client.list_objects(cfg.bucket, prefix=f"runs/{sweep}/", recursive=True):
        if not o.object_name.endswith("manifest.json"):
            continue
        m = json.loads(client.get_object(cfg.bucket, o.object_name).read())
        metric = METRIC.get(m["workload"])
        if m["status"] != "ok" or not metric or m["metrics"].get(metric[0]) is None:
            continue
        params = "" if m["workload"] == "dds" else json.dumps(m.get("params"), sort_keys=True)
        variant = (m["workload"], m.get("protocol"), m.get("path"), m.get("placement"), m.get("length_bytes"), params)
        label = f"{m['cni']}:{m.get('cni_mode')}:{m.get('requested_version') or ''}"
        values[variant][label][m["repetition"]] = m["metrics"][metric[0]]
    return values


def judge(values: dict, baseline_of, plan: str, d0: int | None) -> tuple[collections.Counter, collections.Counter]:
    """Verdicts of every comparison with its baseline, paired by repetition, with the variance of each comparison
    alone (`none`), shrunk toward the variant's mean with prior weight d0 (`moderated`), or that mean (`full`):
    (verdict counts, (workload, decisive) counts)."""
    verdicts: collections.Counter = collections.Counter()
    families: collections.Counter = collections.Counter()
    for variant, cells in values.items():
        _, higher_is_better, unit = METRIC[variant[0]]
        comps = []
        for label, runs in cells.items():
            base = baseline_of(label, cells)
            if base is None:
                continue
            reps = sorted(set(runs) & set(cells[base]))
            if len(reps) >= 2:
                host_mean = statistics.fmean(cells[base][i] for i in reps)
                comps.append(([runs[i] - cells[base][i] for i in reps], host_mean))
        if not comps:
            continue
        rel_var = [statistics.variance([x / hm for x in d]) for d, hm in comps]
        pooled, pooled_df = statistics.fmean(rel_var), sum(len(d) - 1 for d, _ in comps)
        members = [(len(d), statistics.stdev(d), hm) for d, hm in comps]
        # the rule's own pooling (verdict.pooled_spreads) for `moderated`; `none` and `full` for comparison
        moderated = V.pooled_spreads(members, d0) if plan == "moderated" else None
        for k, ((d, hm), var) in enumerate(zip(comps, rel_var)):
            n, df = len(d), len(d) - 1
            if plan == "none":
                ci = V.t95(df) * math.sqrt(var) * hm / math.sqrt(n)
            elif plan == "full":
                ci = V.t95(pooled_df) * math.sqrt(pooled) * hm / math.sqrt(n)
            else:
                sd, dft = moderated[k]
                ci = V.t95(dft) * sd / math.sqrt(n)
            verdict = V.decide(statistics.fmean(d), ci, n, n, hm, higher_is_better,
                               V.margin_pct(V.family_of_unit(unit)))
            verdicts[verdict] += 1
            families[(variant[0], verdict in V.DECISIVE)] += 1
    return verdicts, families


def host_baseline(label: str, cells: dict) -> str | None:
    return None if label.startswith("host:") else next((c for c in cells if c.startswith("host:")), None)


def aa_baseline(label: str, cells: dict) -> str | None:
    """A/A: a mode at its second label against its first."""
    same = sorted(c for c in cells if c.rsplit(":", 1)[0] == label.rsplit(":", 1)[0])
    return same[0] if len(same) == 2 and label == same[1] else None


if __name__ == "__main__":
    values = load(sys.argv[1])
    baseline = host_baseline if sys.argv[2] == "host" else aa_baseline
    for plan, d0 in PLANS:
        verdicts, fam = judge(values, baseline, plan, d0)
        decisive = sum(v for k, v in verdicts.items() if k in V.DECISIVE)
        per = {w: f"{fam[(w, True)]}/{fam[(w, True)] + fam[(w, False)]}" for w in ("iperf3", "dds", "http")}
        print(f"{plan:9} d0={d0}: decisive {decisive}/{sum(verdicts.values())} {dict(verdicts)} {per}")
