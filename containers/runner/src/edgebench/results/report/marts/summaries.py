"""The summaries printed after a sweep (`edgebench summary`: one table per vs-host mart, and the ranked answer), the
CNI version regression cards (`edgebench report`) and the versions the warehouse measured (`edgebench versions`,
`watch`). Every reader opens the DuckDB file read-only (marts.query)."""

from __future__ import annotations

import os
from pathlib import Path

from edgebench.plan import versions
from edgebench.plan.dimensions import warehouse_columns
from edgebench.plan.netem import display_order
from edgebench.results.report import ranking
from edgebench.results.report.marts import path_fetcher, query
from edgebench.results.report.marts.reports import CARD_COLUMNS, regressions
from edgebench.results.warehouse import WarehouseError, default_warehouse_path

try:  # optional: the runner image carries no analytics extra (measured_versions then says None)
    import duckdb
except ImportError:  # pragma: no cover - exercised in the runner image
    duckdb = None


# the grain of cmp_iperf3_vs_host: every cell dimension, then the variant (duration and bitrate included: runs of
# another length are another configuration, never one row)
SUMMARY_KEYS = (*warehouse_columns(), "protocol", "path", "placement", "length_bytes", "duration_s", "iperf3_bitrate")

# Run counts by status from fct_iperf3_runs, figures and the verdict from the cmp_iperf3_vs_host mart (no second
# computation: the verdict is the warehouse's, by the one rule of macros/verdict.sql)
def _verdict(verdict: str, is_host: str, host_value: str) -> str:
    """SQL for a summary row's verdict from the mart's: 'baseline' on host rows, 'no baseline' without a host run
    under the same conditions, else the mart's verdict (equivalent / better / worse / inconclusive / 'n < 2')."""
    return (f"case when {is_host} then 'baseline' when {host_value} is null then 'no baseline' "
            f"else {verdict} end as verdict")


_SUMMARY_SQL = f"""
with status as (
    select {', '.join(SUMMARY_KEYS)},
           count(*) filter (where status = 'ok' and is_valid)     as n_ok,   -- the runs behind the figures
           count(*) filter (where status = 'ok' and not is_valid) as n_invalid,  -- kept out of every comparison
           count(*) filter (where status = 'ok' and is_valid and low_cpu_headroom) as n_low_headroom,
           count(*) filter (where status = 'failed')      as n_failed,
           count(*) filter (where status = 'unsupported') as n_unsupported,
           any_value(error) filter (where status <> 'ok') as error
    from fct_iperf3_runs
    group by all
)
select status.*, o.throughput_mbps, o.throughput_ci95_mbps, o.host_throughput_mbps, o.overhead_pct,
       o.host_n_runs, o.throughput_diff_ci95_mbps / o.host_throughput_mbps * 100 as overhead_ci95_pct,
       o.verdict_margin_pct, o.verdict_method, o.runs_to_decide,
       {_verdict("o.verdict", "status.cni = 'host'", "o.host_throughput_mbps")}
from status left join cmp_iperf3_vs_host as o
    on {' and '.join(f"status.{k} is not distinct from o.{k}" for k in SUMMARY_KEYS)}
order by status.substrate, status.lab, status.distribution, status.netem_scenario, status.tuning_profile,
         status.cpu_class, status.protocol, status.path, status.placement, status.length_bytes, status.duration_s,
         status.iperf3_bitrate, status.cni = 'host' desc, status.cni, status.cni_mode
"""


def iperf3_summary(warehouse_path: str | os.PathLike | None = None) -> list[dict]:
    """One row per configuration and CNI mode: run counts by status (with an error text when some failed or are
    unsupported) and, from the cmp_iperf3_vs_host mart, mean throughput, its 95% CI, the host baseline and
    overhead_pct. For the table printed after a sweep."""
    return _query(_SUMMARY_SQL, warehouse_path)


def answer(warehouse_path: str | os.PathLike | None = None) -> list[dict]:
    """The ranked answer per substrate and headline metric (results.report.ranking), for `edgebench summary answer`."""
    return ranking.answer(path_fetcher(warehouse_path))


def _query(sql: str, warehouse_path: str | os.PathLike | None) -> list[dict]:
    return query(sql, [], warehouse_path)


def dds_summary(warehouse_path: str | os.PathLike | None = None) -> list[dict]:
    """DDS latency per configuration and CNI mode from cmp_dds_vs_host (p50/p90/p99 and the p90 overhead vs
    host, Table II of seed 000), for the table printed after a sweep."""
    return _query(f"""
        select substrate, lab, distribution, netem_scenario, tuning_profile, cpu_class, reliability, transport,
               placement, security, batching, rate, length_bytes, cni, cni_mode, n_runs, latency_p50_us, latency_p90_us, latency_p90_ci95_us,
               latency_p99_us, latency_p90_overhead_pct, latency_p90_overhead_ci95_pct, host_n_runs, n_low_headroom,
               verdict_margin_pct, verdict_method, runs_to_decide,
               {_verdict("verdict", "cni = 'host'", "host_latency_p90_us")}
        from cmp_dds_vs_host where dds_mode = 'latency'
        order by all""", warehouse_path)


def http_summary(warehouse_path: str | os.PathLike | None = None) -> list[dict]:
    """HTTP response times per configuration and CNI mode from cmp_http_vs_host."""
    return _query("""
        select substrate, lab, distribution, netem_scenario, tuning_profile, cpu_class, service, path, placement,
               length_bytes, cni, cni_mode, n_runs, n_requests, n_errors, response_p50_ms, response_p50_ci95_ms, response_p90_ms,
               response_p50_overhead_pct, response_p50_diff_ci95_ms / host_response_p50_ms * 100
               as response_p50_overhead_ci95_pct, host_n_runs, n_low_headroom, verdict_margin_pct, verdict_method,
               response_p50_runs_to_decide as runs_to_decide,
               coalesce(response_p50_verdict, 'no baseline') as verdict
        from cmp_http_vs_host
        order by all""", warehouse_path)


def intercluster_summary(warehouse_path: str | os.PathLike | None = None) -> list[dict]:
    """HTTP response time across each inter-cluster tool against the one-cluster `none` runs from
    cmp_intercluster_vs_none, only for conditions under which some tool was measured: n runs / requests, the mean
    of per-run medians with its 95% CI, the difference to none with its 95% CI, the verdict (baseline / better /
    equivalent / better / worse / inconclusive / no baseline / n < 2, the one rule) and the share of requests beyond the two
    limits. Rows in display order: conditions, netem scenario (catalog order), the none baseline first."""
    rows = _query("""
        select substrate, distribution, cni, cni_mode, tuning_profile, service, path, placement, length_bytes,
               netem_scenario, intercluster, intercluster_implementation, is_emulated, intercluster_model, is_baseline,
               n_runs, n_requests, n_errors, request_median_ms, request_p95_ms, response_p50_ms,
               response_p50_ci95_ms, none_n_runs, response_p50_diff_ms, response_p50_diff_ci95_ms,
               response_p50_diff_pct, response_p50_diff_ci95_pct, verdict, verdict_margin_pct, verdict_method,
               runs_to_decide, vehicle_assist_limit_ms,
               share_requests_over_vehicle_assist, share_runs_median_over_vehicle_assist,
               remote_maintenance_limit_ms, share_requests_over_remote_maintenance,
               share_runs_median_over_remote_maintenance
        from cmp_intercluster_vs_none
        where n_tools > 0 or not is_baseline""", warehouse_path)
    order = {n: i for i, n in enumerate(display_order(r["netem_scenario"] for r in rows))}
    return sorted(rows, key=lambda r: (r["substrate"], r["distribution"], r["cni"], r["cni_mode"],
                                       r["tuning_profile"], r["service"], r["path"], r["placement"],
                                       r["length_bytes"], order[r["netem_scenario"]], not r["is_baseline"],
                                       r["intercluster"], r["intercluster_implementation"]))


VERDICT_ORDER = {"worse": 0, "better": 1, "inconclusive": 2, "equivalent": 3, "n < 2": 4}


def version_regressions(warehouse_path: str | os.PathLike | None = None, cni: str | None = None) -> list[dict]:
    """The CNI version regression cards from cmp_cni_version_regressions: one dict per card (substrate, cni, cni_mode,
    previous_version, new_version, n_versions, version_source, ..., card_n_* counts) with its comparisons under
    "rows" (one per configuration x metric: n, means, diff with its 95% interval, diff_pct, verdict), worse rows
    first. Cards with worse rows come first. `cni` keeps the cards of one CNI ("calico") or mode ("calico:vxlan").
    Raises WarehouseError when there is no warehouse or it predates the mart."""
    rows = regressions(warehouse_path, cni)
    card_keys = CARD_COLUMNS
    cards: dict[tuple, dict] = {}
    for r in rows:
        card = cards.setdefault((r["substrate"], r["cni"], r["cni_mode"]),
                                {**{k: r[k] for k in card_keys}, "rows": []})
        card["rows"].append({"config": config_label(r), **{k: v for k, v in r.items() if k not in card_keys}})
    for card in cards.values():
        card["rows"].sort(key=lambda r: (VERDICT_ORDER.get(r["verdict"], 9), r["config"], r["metric"]))
    return sorted(cards.values(), key=lambda c: (-c["card_n_worse"], c["substrate"], c["cni"], c["cni_mode"]))


# variant parameters a card's configuration line names only when they differ from these (duration and request
# counts never: they are part of the configuration key, not of what a reader compares)
_VARIANT_DEFAULTS = {"reliability": "reliable", "transport": "unicast", "subscribers": "1", "security": "none",
                     "rate": "inf", "connections": "1"}
_VARIANT_HIDDEN = ("mode", "service", "duration_s", "requests")


def config_label(r: dict) -> str:
    """A comparison configuration as one line: workload, its mode / service / protocol, path, placement, length, the
    parameters that are not the defaults, and the conditions that are not (distribution, netem, tuning, tool)."""
    variant = dict(kv.split("=", 1) for kv in (r.get("variant") or "").split() if "=" in kv)
    workload = r.get("workload") or "?"
    kind = {"dds": variant.get("mode"), "http": variant.get("service")}.get(workload, r.get("protocol"))
    parts = [workload, kind, r.get("path"), r.get("placement")]
    if (r.get("length_bytes") if r.get("length_bytes") is not None else -1) >= 0:
        parts.append(f"{r['length_bytes']} B")
    parts += [f"{k} {v}" for k, v in variant.items()
              if k not in _VARIANT_HIDDEN and _VARIANT_DEFAULTS.get(k) != v]
    for col, default in (("distribution", "none"), ("netem_scenario", "none"), ("tuning_profile", "default_settings"),
                         ("intercluster", "none")):
        if r.get(col) not in (None, default):
            parts.append(f"{col.split('_')[0]}={r[col]}")
    return " ".join(str(p) for p in parts if p)


def measured_versions(warehouse_path: str | os.PathLike | None = None) -> dict[str, dict[str, list[str]]] | None:
    """CNI -> {"installed": [...], "requested": [...]} over the warehouse's ok runs: `installed` is the CNI version
    a cluster reported (manifest environment.cni_version), `requested` the version a triggered rerun was asked to
    measure where no CNI software runs (environment.cni_version_requested, the local testbed). None when there is
    no warehouse yet, or no DuckDB to read one with (the runner image carries no analytics extra). Read-only."""
    if duckdb is None:  # found by make e2e-argo: the version probe's pod crashed here
        return None
    try:
        path = Path(warehouse_path) if warehouse_path else default_warehouse_path()
    except WarehouseError:  # no analytics/ project here (e.g. the runner image on a cluster)
        return None
    if not path.exists():
        return None
    rows = _query("""
        select cni,
               environment->>'cni_version'           as installed,
               environment->>'cni_version_requested' as requested
        from stg_edgebench__runs
        where status = 'ok'
        group by all
    """, path)
    out: dict[str, dict[str, set]] = {}
    for r in rows:
        slot = out.setdefault(r["cni"], {"installed": set(), "requested": set()})
        for kind in ("installed", "requested"):
            if versions.is_version(r[kind]):
                slot[kind].add(r[kind])
    return {cni: {k: sorted(v, key=versions.parse_version) for k, v in d.items()} for cni, d in out.items()}
