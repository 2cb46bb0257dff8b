"""The report marts: emulation against real clusters (cmp_emulation_vs_real, cmp_emulation_overhead), CPU efficiency
(cmp_resources_efficiency), the CNI version regression cards (cmp_cni_version_regressions), each CNI mode's version
history (int_cni_versions__run_metrics, for results.report.changepoints) and latency under load
(cmp_loaded_latency_vs_idle), for `edgebench report` and the portal's pages."""

from __future__ import annotations

from typing import Any

from edgebench.plan.dimensions import warehouse_columns
from edgebench.results.report.marts import Fetch, WarehousePath, empty_frame, frame, has_table, query

EMULATION_SQL = """
select cni, cni_mode, workload, metric, protocol, path, placement, length_bytes, real_lab, real_distributions,
       testbed_n, testbed_mean, real_n, real_mean, ratio, ratio_ci_low, ratio_ci_high, margin, difference_pct, verdict,
       runs_to_decide
from cmp_emulation_vs_real
order by real_lab, workload, metric, protocol, path, placement, length_bytes, cni, cni_mode
"""
EFFICIENCY_SQL = """
select substrate, distribution, cni, cni_mode, netem_scenario, tuning_profile, workload, protocol, path, placement,
       length_bytes, component, rate_unit, n_runs, rate, cpu_run_pct, cpu_per_unit_pct, cpu_per_unit_ci95_pct,
       cpu_delta_per_unit_pct, host_n_runs, host_cpu_per_unit_pct, host_cpu_per_unit_ci95_pct, cpu_per_unit_vs_host,
       verdict, verdict_margin_pct, runs_to_decide
from cmp_resources_efficiency
where (? is null or component = ?)
order by substrate, distribution, netem_scenario, tuning_profile, component, workload, protocol, path, placement,
         length_bytes, is_host_baseline desc, cni, cni_mode
"""
OVERHEAD_SQL = """
select * from cmp_emulation_overhead
order by real_lab, workload, metric, config, cni, cni_mode
"""


# ---- emulation vs real -----------------------------------------------------------------------------------------------
def emulation_vs_real(warehouse_path: WarehousePath = None) -> list[dict]:
    """cmp_emulation_vs_real: testbed / real per CNI mode, metric and configuration (`report --emulation`)."""
    return query(EMULATION_SQL, [], warehouse_path)


def emulation_vs_real_frame(con):
    """Every column of cmp_emulation_vs_real, one row per CNI mode x metric x configuration (the Emulation page)."""
    return frame(con, """
        select * from cmp_emulation_vs_real
        order by real_lab, workload, metric, protocol, path, placement, length_bytes, cni, cni_mode""")


def emulation_overhead(fetch: Fetch) -> list[dict[str, Any]]:
    """cmp_emulation_overhead's rows, each substrate's CNI against its own host (empty when no CNI mode was measured
    on both substrates, or the mart is not built yet)."""
    try:
        return fetch(OVERHEAD_SQL, [])
    except Exception as exc:  # an older warehouse without the mart: nothing checked yet
        if "cmp_emulation_overhead" in str(exc):
            return []
        raise


def emulation_overhead_frame(con):
    """cmp_emulation_overhead as a DataFrame on the portal's connection; empty where the warehouse has no such mart."""
    return frame(con, OVERHEAD_SQL) if has_table(con, "cmp_emulation_overhead") else empty_frame()


# ---- CPU efficiency --------------------------------------------------------------------------------------------------
def resources_efficiency(warehouse_path: WarehousePath = None, component: str | None = None) -> list[dict]:
    """cmp_resources_efficiency, one component or all (`report --efficiency`)."""
    return query(EFFICIENCY_SQL, [component, component], warehouse_path)


# ---- CNI version regressions -----------------------------------------------------------------------------------------
CARD_COLUMNS = ("substrate", "cni", "cni_mode", "datapath", "previous_version", "new_version", "n_versions",
                "version_source", "previous_version_source", "new_version_source", "new_trigger_source",
                "new_trigger_previous_version", "new_triggered_at", "card_n_comparisons", "card_n_worse",
                "card_n_better", "card_n_equivalent", "card_n_inconclusive", "card_n_too_few_runs",
                "card_expected_false_alarms")


def regressions(warehouse_path: WarehousePath = None, cni: str | None = None) -> list[dict]:
    """Every row of cmp_cni_version_regressions, of one CNI ("calico") or mode ("calico:vxlan") if given."""
    where, params = "", []
    if cni:
        name, _, mode = cni.partition(":")
        where = "where cni = ?" + (" and cni_mode = ?" if mode else "")
        params = [name, mode] if mode else [name]
    return query(f"select * from cmp_cni_version_regressions {where}", params, warehouse_path)


def regression_cards_frame(con):
    """One row per card (CARD_COLUMNS), cards with worse rows first."""
    return frame(con, f"""
        select distinct {', '.join(CARD_COLUMNS)} from cmp_cni_version_regressions
        order by card_n_worse desc, substrate, cni, cni_mode""")


def regression_rows_frame(con, substrate: str, cni: str, cni_mode: str):
    """One card's comparisons (one per configuration x metric), unordered."""
    return frame(con, """
        select * exclude (substrate, cni, cni_mode) from cmp_cni_version_regressions
        where substrate = ? and cni = ? and cni_mode = ?""", [substrate, cni, cni_mode])


# ---- version history -------------------------------------------------------------------------------------------------
# the configuration of a version series: every cell dimension (the card is substrate, cni, cni_mode) and the
# workload's own
SERIES_CONFIG = (*warehouse_columns(), "intercluster", "workload", "protocol", "path", "placement", "length_bytes",
                 "variant", "metric")
_VERSION_ORDER = "version_major, version_minor, version_patch, version_prerelease nulls last"


def version_history(fetch: Fetch, cni: str | None = None) -> list[dict]:
    """Per configuration (SERIES_CONFIG) and CNI version, oldest first: unit, direction and the runs' values (`vals`,
    by run id), from int_cni_versions__run_metrics; of one CNI ("calico") or mode ("calico:vxlan") if given."""
    where, params = "", []
    if cni:
        name, _, mode = cni.partition(":")
        where = "and cni = ?" + (" and cni_mode = ?" if mode else "")
        params = [name, mode] if mode else [name]
    cols = ", ".join(SERIES_CONFIG)
    return fetch(f"select {cols}, unit, is_higher_better, cni_version as version, version_major, version_minor, "
                 f"version_patch, version_prerelease, list(value order by run_id) as vals "
                 f"from int_cni_versions__run_metrics where version_major is not null {where} "
                 f"group by all order by {cols}, {_VERSION_ORDER}", params)


# ---- latency under load ----------------------------------------------------------------------------------------------
LOADED_LATENCY = "cmp_loaded_latency_vs_idle"
# the conditions a comparison holds fixed besides substrate, probe and payload, shown as one choice
_CONDITION = "netem_scenario || ' / ' || tuning_profile || ' / ' || distribution"


def loaded_latency_available(con) -> bool:
    """Whether the warehouse has the mart (one built before the workload existed has not)."""
    return has_table(con, LOADED_LATENCY)


def _column(con, sql: str, params: list) -> list:
    return [r[0] for r in con.execute(sql, params).fetchall()]


def loaded_latency_substrates(con) -> list[str]:
    return _column(con, f"select distinct substrate from {LOADED_LATENCY} order by substrate", [])


def loaded_latency_probes(con, substrate: str) -> list[str]:
    return _column(con, f"select distinct probe from {LOADED_LATENCY} where substrate = ? order by probe", [substrate])


def loaded_latency_sizes(con, substrate: str, probe: str) -> list[int]:
    return _column(con, f"select distinct length_bytes from {LOADED_LATENCY} where substrate = ? and probe = ? "
                        "order by 1", [substrate, probe])


def loaded_latency_conditions(con, substrate: str, probe: str, length_bytes: int) -> list[str]:
    """The measured "netem / tuning / distribution" combinations of a substrate, probe and payload."""
    return _column(con, f"select distinct {_CONDITION} from {LOADED_LATENCY} "
                        "where substrate = ? and probe = ? and length_bytes = ? order by 1",
                   [substrate, probe, length_bytes])


def loaded_latency_comparison(con, substrate: str, probe: str, length_bytes: int, condition: str):
    """One row per CNI mode (cni:mode; the host-network baseline first): idle and loaded p50 / p99, their inflation
    with its 95% interval and verdict, the host's p99 inflation, the bulk flow's rate."""
    return frame(con, f"""
        select cni || ':' || cni_mode as cni_mode, is_host_baseline, idle_n_runs, loaded_n_runs,
               idle_p50_us, loaded_p50_us, p50_inflation_us, p50_inflation_ci95_us, p50_verdict,
               idle_p99_us, loaded_p99_us, p99_inflation_us, p99_inflation_ci95_us, p99_verdict,
               host_p99_inflation_us, bulk_sent_mbps, datapath
        from {LOADED_LATENCY}
        where substrate = ? and probe = ? and length_bytes = ? and {_CONDITION} = ?
        order by not is_host_baseline, cni_mode""", [substrate, probe, length_bytes, condition])
