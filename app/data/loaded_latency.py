"""The latency-under-load page's queries (mart cmp_loaded_latency_vs_idle only): the probe's latency with a bulk TCP
flow sharing the path, against the same probe idle."""
from __future__ import annotations

import pandas as pd

from edgebench.results.report.marts import has_table

MART = "cmp_loaded_latency_vs_idle"

PROBE_LABELS = {"dds": "DDS latency", "http": "HTTP response time"}

# the conditions a comparison holds fixed besides substrate, probe and payload, shown as one choice
_CONDITION = "netem_scenario || ' / ' || tuning_profile || ' / ' || distribution"


def loaded_latency_available(con) -> bool:
    """Whether the warehouse has the mart (one built before the workload existed has not)."""
    return has_table(con, MART)


def loaded_latency_substrates(con) -> list[str]:
    return [r[0] for r in con.execute(f"select distinct substrate from {MART} order by substrate").fetchall()]


def loaded_latency_probes(con, substrate: str) -> list[str]:
    return [r[0] for r in con.execute(f"select distinct probe from {MART} where substrate = ? order by probe",
                                      [substrate]).fetchall()]


def loaded_latency_sizes(con, substrate: str, probe: str) -> list[int]:
    return [r[0] for r in con.execute(f"select distinct length_bytes from {MART} where substrate = ? and probe = ? "
                                      "order by 1", [substrate, probe]).fetchall()]


def loaded_latency_conditions(con, substrate: str, probe: str, length_bytes: int) -> list[str]:
    """The measured "netem / tuning / distribution" combinations of a substrate, probe and payload."""
    return [r[0] for r in con.execute(f"select distinct {_CONDITION} from {MART} "
                                      "where substrate = ? and probe = ? and length_bytes = ? order by 1",
                                      [substrate, probe, length_bytes]).fetchall()]


def loaded_latency_comparison(con, substrate: str, probe: str, length_bytes: int, condition: str) -> pd.DataFrame:
    """One row per CNI mode (cni:mode; the host-network baseline first): idle and loaded p50 / p99, their inflation
    with its 95% interval and verdict, the host's p99 inflation, the bulk flow's rate."""
    return con.execute(f"""
        select cni || ':' || cni_mode as cni_mode, is_host_baseline, idle_n_runs, loaded_n_runs,
               idle_p50_us, loaded_p50_us, p50_inflation_us, p50_inflation_ci95_us, p50_verdict,
               idle_p99_us, loaded_p99_us, p99_inflation_us, p99_inflation_ci95_us, p99_verdict,
               host_p99_inflation_us, bulk_sent_mbps, datapath
        from {MART}
        where substrate = ? and probe = ? and length_bytes = ? and {_CONDITION} = ?
        order by not is_host_baseline, cni_mode""", [substrate, probe, length_bytes, condition]).df()
