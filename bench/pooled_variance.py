"""An analysis, not a benchmark part: one stored sweep's comparisons judged from its own runs, each alone (paired by
round) and with pooled spreads (the one rule, verdict.pooled) at the rule's d0 or another, per metric family
(iperf3, DDS latency, DDS throughput, HTTP p50: each workload's judged metric, as the runner judges it), with the
median pair SD and d0 estimated from the data (limma's moment estimate: the spread of log variances within each
variant's group beyond what n - 1 degrees of freedom give by chance; inf = the modes spread alike). The figures of
docs/verdicts.md, "Pooled spreads". Reads the sweep's manifests from the store of `make minio` ($EDGEBENCH_S3_*).

    bench/pooled_variance.py SWEEP host [D0]   every CNI mode against the sweep's host
    bench/pooled_variance.py SWEEP aa [D0]     an A/A sweep: each mode at its label against its '-aa' label
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
from edgebench.sweep import adaptive  # noqa: E402


def load(sweep: str) -> list[dict]:
    cfg = S3Config.from_env()
    client = cfg.client()
    return [json.loads(client.get_object(cfg.bucket, o.object_name).read())
            for o in client.list_objects(cfg.bucket, prefix=f"runs/{sweep}/", recursive=True)
            if o.object_name.endswith("manifest.json")]


def family(variant: tuple) -> str:
    return variant[0] if variant[0] != "dds" else f"dds:{json.loads(variant[5]).get('mode', '')}"


def comparisons(docs: list[dict], aa: bool) -> dict[tuple, dict[tuple, V.Comparison]]:
    """variant -> label (cni, mode, version) -> the comparison with its baseline, judged alone (adaptive.judge)."""
    by_label: dict[tuple, list[dict]] = collections.defaultdict(list)
    for d in docs:
        by_label[(d["cni"], d.get("cni_mode"), d.get("requested_version") or "")].append(d)
    host = next((ds for k, ds in by_label.items() if k[0] == "host"), [])
    out: dict[tuple, dict[tuple, V.Comparison]] = collections.defaultdict(dict)
    for label, ds in by_label.items():
        if label[0] == "host" or (aa and label[2].endswith("-aa")):
            continue
        base = by_label.get((label[0], label[1], label[2] + "-aa"), []) if aa else host
        for v, c in adaptive.judge(ds, base).items():
            out[v][label] = c
    return out


def _trigamma(x: float) -> float:
    r = 0.0
    while x < 6:
        r, x = r + 1 / (x * x), x + 1
    return r + 1 / x + 1 / (2 * x * x) + 1 / (6 * x ** 3) - 1 / (30 * x ** 5) + 1 / (42 * x ** 7)


def d0_estimate(groups: list[list[tuple[int, float]]]) -> float | None:
    """Prior degrees of freedom from groups of (df, relative variance) with equal df within a group: the excess
    variance of the centred log variances over trigamma(df / 2) = trigamma(d0 / 2); inf without excess."""
    devs, dfs = [], []
    for g in groups:
        g = [(d, v) for d, v in g if v > 0]
        if len(g) < 2:
            continue
        logs = [math.log(v) for _, v in g]
        mu = statistics.fmean(logs)
        devs += [(x - mu) * math.sqrt(len(g) / (len(g) - 1)) for x in logs]
        dfs += [d for d, _ in g]
    if not devs:
        return None
    excess = statistics.fmean(x * x for x in devs) - statistics.fmean(_trigamma(d / 2) for d in dfs)
    if excess <= 0:
        return math.inf
    lo, hi = 1e-3, 1e4
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if _trigamma(mid / 2) > excess else (lo, mid)
    return mid


def report(sweep: str, aa: bool, d0: float) -> None:
    comps = comparisons(load(sweep), aa)
    count: collections.Counter = collections.Counter()
    sds: dict[str, list[float]] = collections.defaultdict(list)
    groups: dict[str, list[list[tuple[int, float]]]] = collections.defaultdict(list)
    for v, by_label in comps.items():
        w, alone = family(v), list(by_label.values())
        for a, p in zip(alone, V.pooled(alone, d0)):
            count[(w, "alone")] += a.verdict in V.DECISIVE
            count[(w, "pooled")] += p.verdict in V.DECISIVE
            count[(w, "false alone")] += a.verdict in ("better", "worse")
            count[(w, "false pooled")] += p.verdict in ("better", "worse")
            count[(w, "n")] += 1
        spread = [(min(c.n_a, c.n_b) - 1, (c.sd_diff / c.mean_b) ** 2) for c in alone if c.sd_diff is not None
                  and c.mean_b]
        sds[w] += [math.sqrt(s) * 100 for _, s in spread]
        groups[w].append(spread)
    print(f"{sweep} ({'A/A' if aa else 'against the host'}, d0 = {d0:g})")
    for w in sorted(sds):
        n = count[(w, "n")]
        false = f", false better/worse alone {count[(w, 'false alone')]}, pooled {count[(w, 'false pooled')]}" \
            if aa else ""
        print(f"  {w}: decisive alone {count[(w, 'alone')]}/{n}, pooled {count[(w, 'pooled')]}/{n}{false}; pair SD "
              f"median {statistics.median(sds[w]):.1f} %; d0 estimate {d0_estimate(groups[w])}")
    total = sum(count[(w, 'n')] for w in sds)
    print(f"  all: decisive alone {sum(count[(w, 'alone')] for w in sds)}/{total}, pooled "
          f"{sum(count[(w, 'pooled')] for w in sds)}/{total}; d0 estimate "
          f"{d0_estimate([g for gs in groups.values() for g in gs])}")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[2] not in ("host", "aa"):
        sys.exit(__doc__)
    report(sys.argv[1], sys.argv[2] == "aa", float(sys.argv[3]) if len(sys.argv) > 3 else V.POOL_PRIOR_DF)
