"""Warehouse at scale (part "warehouse"): `edgebench warehouse` (warehouse.build()) on a synthetic store of 10,000 runs
and 1,000,000 samples (bench/gen_store.py, the layout the sweep writes to MinIO), against one plain DuckDB query over
the same raw files computing the headline mart cmp_iperf3_vs_host (per CNI throughput vs the host baseline), and a
second build after 10 new runs against the first.

Rows: build seconds (target < 60 s); build / plain query (target <= 3); incremental build / first build (target <=
0.25, "a small fraction"). Quick mode: 500 runs, 50,000 samples.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import T95, Row  # noqa: E402
import gen_store  # noqa: E402

from edgebench.plan.dimensions import DIMENSIONS, warehouse_columns  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# the mart's grain: the cell dimensions (plan/dimensions.py), then the iperf3 conditions and parameters
KEYS = [*warehouse_columns(), "protocol", "path", "placement", "length_bytes", "duration_s", "iperf3_bitrate"]
# the dimensions added after the first sweeps: manifests written before one lack its field (its neutral value)
NEUTRAL = [d for d in DIMENSIONS if d.neutral is not None]


def _t95(df: str) -> str:  # the t_critical_95 macro of analytics/macros/t_critical_95.sql
    whens = " ".join(f"when {df} = {i} then {v}" for i, v in enumerate(T95, start=1))
    return (f"(case when {df} < 1 then null {whens} when {df} <= 40 then 2.042 when {df} <= 60 then 2.021 "
            f"when {df} <= 120 then 2.000 else 1.980 end)")


def plain_query(root: str) -> str:
    """cmp_iperf3_vs_host written by hand: one statement over the raw manifests (read_json), same rules as the dbt
    models (latest finished_at per run_id, ok + valid one-cluster default-proxy iperf3 runs, Student-t 95% CI, host
    matched on the conditions and the workload parameters)."""
    cols = ("{run_id: 'VARCHAR', workload: 'VARCHAR', status: 'VARCHAR', substrate: 'VARCHAR', "
            "distribution: 'VARCHAR', cni: 'VARCHAR', cni_mode: 'VARCHAR', datapath: 'VARCHAR', netem: 'JSON', "
            "netem_scenario: 'VARCHAR', tuning: 'JSON', tuning_profile: 'VARCHAR', is_valid: 'JSON', environment: 'JSON', "
            + "".join(f"{d.manifest_field}: 'VARCHAR', " for d in NEUTRAL)
            + "protocol: 'VARCHAR', path: 'VARCHAR', placement: 'VARCHAR', length_bytes: 'BIGINT', "
            "duration_s: 'BIGINT', params: 'JSON', metrics: 'JSON', started_at: 'VARCHAR', finished_at: 'VARCHAR'}")
    neutral = "".join(f"coalesce({d.manifest_field}, '{d.neutral}') as {d.warehouse_column}, " for d in NEUTRAL)
    k = ", ".join(KEYS)
    # the host row of the same conditions: every key but the CNI mode (null = null for duration_s, iperf3_bitrate)
    same = " and ".join(f"s.{c} {'is not distinct from' if c in ('duration_s', 'iperf3_bitrate') else '='} h.{c}"
                        for c in KEYS if c not in ("cni", "cni_mode", "datapath"))
    return f"""
with m as (
    select run_id, workload, status, substrate,
           case when substrate = 'ssh' then coalesce(nullif(environment->'cluster'->>'target', ''), 'unnamed')
                when substrate = 'local' then 'testbed' else substrate end as lab,
           distribution, cni, cni_mode, datapath,
           coalesce(netem->>'scenario', netem_scenario, 'none') as netem_scenario,
           coalesce(tuning->>'profile', tuning_profile, 'default_settings') as tuning_profile,
           case when is_valid is null or json_type(is_valid) = 'NULL' then true
                when json_type(is_valid) = 'BOOLEAN' then is_valid::varchar = 'true' end as is_valid,
           {neutral}protocol, path, placement, length_bytes::integer as length_bytes,
           duration_s::integer as duration_s, params->>'bitrate' as iperf3_bitrate,
           try_cast(metrics->>'throughput_mbps' as double) as throughput_mbps,
           try_cast(started_at as timestamptz) as started_at, try_cast(finished_at as timestamptz) as finished_at,
           filename
    from read_json('{root.rstrip('/')}/runs/*/*/*/manifest.json', columns = {cols}, filename = true)
),
runs as (
    select * from m
    qualify row_number() over (partition by run_id order by finished_at desc nulls last, started_at desc nulls last,
                                                           filename desc) = 1
),
stats as (
    select {k}, count(*) as n_runs, avg(throughput_mbps) as throughput_mbps,
           stddev_samp(throughput_mbps) as throughput_stddev_mbps,
           {_t95('(count(*) - 1)')} * stddev_samp(throughput_mbps) / sqrt(count(*)) as throughput_ci95_mbps
    from runs
    where workload = 'iperf3' and status = 'ok' and is_valid and intercluster = 'none' and service_proxy = 'default'
    group by all
)
select s.*, s.cni = 'host' as is_host_baseline, h.n_runs as host_n_runs, h.throughput_mbps as host_throughput_mbps,
       case when h.throughput_mbps > 0 then (h.throughput_mbps - s.throughput_mbps) / h.throughput_mbps * 100 end
           as overhead_pct
from stats s left join (select * from stats where cni = 'host') h on {same}
"""


def _time_plain(root: str) -> tuple[float, duckdb.DuckDBPyRelation | list]:
    con = duckdb.connect()
    con.execute("set enable_progress_bar = false")
    t0 = time.perf_counter()
    rows = con.execute(plain_query(root)).fetchall()
    dt = time.perf_counter() - t0
    con.close()
    return dt, rows


def _agrees(rows: list, wh: Path) -> tuple[bool, str]:
    """The plain query's rows equal the mart's (keys, n, mean, overhead to 1e-9 relative)."""
    con = duckdb.connect(str(wh), read_only=True)
    try:
        mart = con.execute(f"select {', '.join(KEYS)}, n_runs, throughput_mbps, overhead_pct "
                           "from cmp_iperf3_vs_host").fetchall()
    finally:
        con.close()
    n = len(KEYS)

    def norm(r):
        return (tuple(r[:n]), r[n], round(r[n + 1], 6) if r[n + 1] is not None else None,
                round(r[n + 2], 6) if r[n + 2] is not None else None)

    plain = sorted((norm(r[:n + 2] + (r[-1],)) for r in rows), key=repr)
    mart = sorted((norm(r) for r in mart), key=repr)
    return plain == mart, f"{len(plain)} rows vs mart {len(mart)}"


def _follow_latency(raw: Path, wh: Path, timeout: float = 300.0) -> tuple[float | None, float | None, str]:
    """`edgebench warehouse --follow` (results/warehouse/follow.py) warm on the store: 10 runs are added, and two times are
    measured from then: until the live file the portal's overview reads lists all 10 (their headline figures, the
    `just_in` feed), and until the warehouse it swaps in holds them (their comparisons, at a page's next rerun)."""
    import json
    import threading

    import duckdb

    from edgebench.results.warehouse import follow

    def count() -> int:
        with duckdb.connect(str(wh), read_only=True) as con:
            return con.execute("select count(*) from stg_edgebench__runs").fetchone()[0]

    def listed() -> int:
        try:
            return len(json.loads(follow.live_path(wh).read_text()).get("just_in") or [])
        except (OSError, ValueError):
            return 0

    lines: list[str] = []
    done = threading.Event()
    thread = threading.Thread(target=follow.follow, kwargs=dict(warehouse_path=wh, raw_root=str(raw), interval=1.0,
                                                                log=lines.append, stop=done.is_set), daemon=True)
    thread.start()
    try:
        end = time.monotonic() + timeout
        while not any("warehouse rebuilt" in line for line in lines) and time.monotonic() < end:
            time.sleep(0.2)  # the follower's first look builds (it cannot know what the warehouse holds)
        time.sleep(1.5)  # and looks once more, so that what is there now is not "just in"
        before = count()
        gen_store.add_runs(raw, 10)
        t0 = time.monotonic()
        feed = warehouse = None
        while time.monotonic() - t0 < timeout and warehouse is None:
            if feed is None and listed() >= 10:
                feed = time.monotonic() - t0
            if count() > before:
                warehouse = time.monotonic() - t0
                feed = feed if feed is not None else warehouse
            time.sleep(0.05)
        detail = (f"interval 1 s; {lines[-1] if lines else ''}; {before:,} runs before" if warehouse is not None
                  else f"the new runs did not arrive within {timeout:.0f} s")
        return feed, warehouse, detail
    finally:
        done.set()
        thread.join(timeout=120)


def run(quick: bool) -> list[Row]:
    from edgebench.results import warehouse

    runs, samples = (500, 50_000) if quick else (10_000, 1_000_000)
    tmp = Path(tempfile.mkdtemp(prefix="edgebench-bench-warehouse-"))
    old_cache = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")  # a new user's first build: the dbt unit tests run too
    try:
        t0 = time.perf_counter()
        info = gen_store.generate(tmp / "raw", runs=runs, samples=samples)
        gen_s = time.perf_counter() - t0
        root = str(tmp / "raw")
        wh = tmp / "wh" / "warehouse.duckdb"
        plain1, rows = _time_plain(root)                       # warm cache for both sides: the generator just wrote
        t0 = time.perf_counter()
        first = warehouse.build(warehouse_path=wh, raw_root=root, quiet=True)
        build_s = time.perf_counter() - t0
        plain2, _ = _time_plain(root)
        plain_s = min(plain1, plain2)
        agrees, agree_detail = _agrees(rows, wh)
        added = gen_store.add_runs(tmp / "raw", 10)
        t0 = time.perf_counter()
        second = warehouse.build(warehouse_path=wh, raw_root=root, quiet=True)
        inc_s = time.perf_counter() - t0
        size_mb = wh.stat().st_size / 2 ** 20
        feed_s, live_s, live_detail = _follow_latency(tmp / "raw", wh)
    finally:
        if old_cache is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = old_cache
        shutil.rmtree(tmp, ignore_errors=True)

    scale = f"{info['runs']:,} runs, {info['samples']:,} samples (+{info['resources']:,} resource samples)"
    extra = {"store": info, "generate_s": round(gen_s, 2), "build_s": round(build_s, 2),
             "plain_query_s": [round(plain1, 3), round(plain2, 3)], "incremental_s": round(inc_s, 2),
             "first": first, "second": second, "added": added, "warehouse_mb": round(size_mb, 1),
             "plain_query_agrees_with_mart": agrees}
    extra["follow_latency_s"] = live_s
    extra["feed_latency_s"] = feed_s
    ratio = build_s / plain_s if plain_s else None
    inc = inc_s / build_s if build_s else None
    return [
        Row("warehouse", "runs stored -> visible in the portal (the overview's just-stored feed, 10 runs)", feed_s, "s",
            "<= 5 s", None if feed_s is None else feed_s <= 5,
            "the follower lists each new run with its headline figure before it rebuilds; " + live_detail),
        Row("warehouse", "runs stored -> in the warehouse the pages read (their comparisons), warm follower", live_s,
            "s", "<= 5 s", None if live_s is None else live_s <= 5, live_detail),
        Row("warehouse", f"edgebench warehouse, full build ({scale})", build_s, "s", "< 60 s", build_s < 60,
            f"dbt build incl. data tests and unit tests ({'run' if first['unit_tests'] else 'skipped'}), raw read into the cache; store generated in {gen_s:.1f} s; "
            f"warehouse {size_mb:.0f} MiB", extra),
        Row("warehouse", "full build / plain DuckDB query of cmp_iperf3_vs_host", ratio, "ratio", "<= 3",
            None if ratio is None else ratio <= 3,
            f"build {build_s:.1f} s vs read_json over the manifests {plain_s:.2f} s (min of {plain1:.2f}, "
            f"{plain2:.2f}); same rows as the mart: {agrees} ({agree_detail})"),
        Row("warehouse", "incremental build after 10 new runs / full build", inc, "ratio", "<= 0.25 (a small fraction)",
            None if inc is None else inc <= 0.25,
            f"{inc_s:.1f} s ({second['mode']}; raw objects read: "
            f"{sum(n for _, n in second['raw'].values())}; unit tests {'run' if second['unit_tests'] else 'skipped: same project'}"
            f") vs {build_s:.1f} s"),
    ]


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(r)
