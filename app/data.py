"""Queries and transforms for the portal. Plain Python (no Streamlit): every function takes a DuckDB connection
(opened read-only by connect()) and returns pandas DataFrames or plain values."""
from __future__ import annotations

import os
from pathlib import Path

import altair as alt
import duckdb
import pandas as pd

REPO = Path(__file__).resolve().parents[1]

LOCAL_BANNER = ("substrate = local: network-namespace testbed measuring the kernel datapath each CNI configures, "
                "not the CNI's control plane")
MISSING_WAREHOUSE = "No warehouse yet at `{path}`: no results exist yet. Run `make sweep` to measure and build it."

# Conditions a comparison holds fixed (besides substrate), in display order: column -> label
FILTERS = {
    "protocol": "Protocol",
    "path": "Path",
    "placement": "Placement",
    "length_bytes": "Length (bytes)",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
    "tuning_profile": "Tuning profile",
}


def warehouse_path() -> Path:
    return Path(os.environ.get("EDGEBENCH_WAREHOUSE") or REPO / ".edgebench" / "warehouse.duckdb")


def connect(path: str | Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(path), read_only=True)


def _where(substrate: str, filters: dict) -> tuple[str, list]:
    unknown = set(filters) - set(FILTERS)
    if unknown:
        raise ValueError(f"unknown filter(s): {sorted(unknown)}")
    clauses, params = ["substrate = ?"], [substrate]
    for col, value in filters.items():
        if value is not None:
            clauses.append(f"{col} = ?")
            params.append(value)
    return " and ".join(clauses), params


# ---- overview -------------------------------------------------------------------------------------------------

def run_counts(con) -> pd.DataFrame:
    """Runs per substrate and status (all workloads)."""
    return con.execute("""
        select substrate, workload, status, count(*) as runs
        from int_runs__deduplicated group by all order by substrate, workload, status""").df()


def sweeps(con) -> pd.DataFrame:
    """One row per sweep: substrates, time span, run counts by status."""
    return con.execute("""
        select sweep_id,
               string_agg(distinct substrate, ', ' order by substrate) as substrates,
               string_agg(distinct workload, ', ' order by workload)   as workloads,
               min(started_at) as started_at, max(finished_at) as finished_at,
               count(*) as runs,
               count(*) filter (where status = 'ok')          as ok,
               count(*) filter (where status = 'failed')      as failed,
               count(*) filter (where status = 'unsupported') as unsupported
        from int_runs__deduplicated group by sweep_id order by max(finished_at) desc""").df()


# ---- CNI datapaths --------------------------------------------------------------------------------------------

def substrates(con) -> list[str]:
    """Substrates with iperf3 runs, the one with most runs first (the page's default)."""
    rows = con.execute("""select substrate from fct_iperf3_runs group by substrate
                          order by count(*) desc, substrate""").fetchall()
    return [r[0] for r in rows]


def filter_values(con, substrate: str, column: str, **chosen) -> list:
    """Values of one filter column present on a substrate, given the filters chosen before it (so every
    combination offered exists). All statuses count, so setups that only failed can still be selected."""
    if column not in FILTERS:
        raise ValueError(f"unknown filter: {column}")
    where, params = _where(substrate, chosen)
    rows = con.execute(f"select distinct {column} from fct_iperf3_runs where {where} and {column} is not null "
                       f"order by {column}", params).fetchall()
    return [r[0] for r in rows]


def overhead(con, substrate: str, **filters) -> pd.DataFrame:
    """cni_overhead_vs_host rows for one substrate and fixed conditions, host first, with a `variant` label and
    CI bounds for error bars."""
    where, params = _where(substrate, filters)
    df = con.execute(f"""
        select cni || ' / ' || cni_mode as variant, *
        from cni_overhead_vs_host where {where}
        order by is_host_baseline desc, throughput_mbps desc""", params).df()
    df["ci_low_mbps"] = df["throughput_mbps"] - df["throughput_ci95_mbps"].fillna(0)
    df["ci_high_mbps"] = df["throughput_mbps"] + df["throughput_ci95_mbps"].fillna(0)
    return df


def overhead_table(df: pd.DataFrame) -> pd.DataFrame:
    """The columns shown in the overhead table."""
    cols = ["variant", "datapath", "n_runs", "throughput_mbps", "throughput_ci95_mbps", "host_throughput_mbps",
            "host_n_runs", "overhead_pct", "is_significant"]
    return df[cols].reset_index(drop=True)


def problem_runs(con, substrate: str, **filters) -> pd.DataFrame:
    """Failed and unsupported iperf3 runs with their reasons, same substrate and conditions."""
    where, params = _where(substrate, filters)
    return con.execute(f"""
        select status, cni, cni_mode, datapath, protocol, path, placement, length_bytes, repetition, error,
               attempt, sweep_id, run_id, started_at
        from fct_iperf3_runs where status <> 'ok' and {where}
        order by status, cni, cni_mode, repetition""", params).df()


def throughput_chart(df: pd.DataFrame) -> alt.LayerChart:
    """Mean throughput per CNI/mode with 95% CI error bars; the host baseline bar and a dashed rule mark it."""
    order = df["variant"].tolist()
    base = alt.Chart(df).encode(x=alt.X("variant:N", sort=order, title="CNI / mode",
                                        axis=alt.Axis(labelAngle=-30)))
    bars = base.mark_bar().encode(
        y=alt.Y("throughput_mbps:Q", title="mean throughput (Mbit/s)"),
        color=alt.condition("datum.is_host_baseline", alt.value("#7f7f7f"), alt.value("#1f77b4")),
        tooltip=[alt.Tooltip("variant:N"), alt.Tooltip("datapath:N"), alt.Tooltip("n_runs:Q"),
                 alt.Tooltip("throughput_mbps:Q", format=".1f"), alt.Tooltip("throughput_ci95_mbps:Q", format=".1f"),
                 alt.Tooltip("overhead_pct:Q", format=".1f")],
    )
    errors = base.mark_errorbar(ticks={"size": 24}, thickness=1.5, color="black").encode(
        y=alt.Y("ci_low_mbps:Q", title="mean throughput (Mbit/s)"), y2="ci_high_mbps:Q")
    layers = [bars, errors]
    host = df.loc[df["is_host_baseline"], "throughput_mbps"]
    if not host.empty:
        rule = pd.DataFrame({"host_throughput_mbps": [float(host.iloc[0])], "label": ["host baseline"]})
        layers.append(alt.Chart(rule).mark_rule(strokeDash=[6, 4], color="#d62728")
                      .encode(y="host_throughput_mbps:Q", tooltip=["label:N", "host_throughput_mbps:Q"]))
    return alt.layer(*layers).properties(height=380, title="iperf3 throughput (mean, 95% CI), host baseline dashed")


# ---- DDS ------------------------------------------------------------------------------------------------------

# Conditions the DDS page holds fixed (besides substrate): column -> label
DDS_FILTERS = {
    "placement": "Placement",
    "security": "Security",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
    "tuning_profile": "Tuning profile",
}
_DDS_RUNS = """(select substrate, distribution, netem_scenario, tuning_profile, placement, security, cni, cni_mode,
                       datapath, length_bytes, reliability, transport, subscribers, discovery, repetition, status,
                       error, attempt, sweep_id, run_id, started_at, 'latency' as dds_mode from fct_dds_latency
                union all
                select substrate, distribution, netem_scenario, tuning_profile, placement, security, cni, cni_mode,
                       datapath, length_bytes, reliability, transport, subscribers, discovery, repetition, status,
                       error, attempt, sweep_id, run_id, started_at, 'throughput' from fct_dds_throughput)"""


def _where_in(substrate: str, filters: dict, allowed: dict) -> tuple[str, list]:
    unknown = set(filters) - set(allowed)
    if unknown:
        raise ValueError(f"unknown filter(s): {sorted(unknown)}")
    clauses, params = ["substrate = ?"], [substrate]
    for col, value in filters.items():
        if value is not None:
            clauses.append(f"{col} = ?")
            params.append(value)
    return " and ".join(clauses), params


def dds_substrates(con) -> list[str]:
    """Substrates with DDS runs (any status), most runs first."""
    rows = con.execute(f"select substrate from {_DDS_RUNS} group by substrate "
                       "order by count(*) desc, substrate").fetchall()
    return [r[0] for r in rows]


def dds_filter_values(con, substrate: str, column: str, **chosen) -> list:
    """Values of one DDS filter column on a substrate given the filters chosen before it (all statuses)."""
    if column not in DDS_FILTERS:
        raise ValueError(f"unknown filter: {column}")
    where, params = _where_in(substrate, chosen, DDS_FILTERS)
    # the value with most successful runs first (the default), so the page opens on data, not on a corner case
    rows = con.execute(f"select {column} from {_DDS_RUNS} where {where} and {column} is not null "
                       f"group by {column} order by count(*) filter (where status = 'ok') desc, {column}",
                       params).fetchall()
    return [r[0] for r in rows]


def dds_overhead(con, substrate: str, **filters) -> pd.DataFrame:
    """dds_overhead_vs_host rows for one substrate and fixed conditions, with a `variant` label."""
    where, params = _where_in(substrate, filters, DDS_FILTERS)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, *
        from dds_overhead_vs_host where {where}
        order by dds_mode, is_host_baseline desc, cni, cni_mode, length_bytes, subscribers""", params).df()


def dds_overhead_table(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Table I/II style: one row per CNI / mode (host excluded), one column per payload, overhead in percent.
    metric: latency_p90_overhead_pct or throughput_overhead_pct."""
    cni = df[~df["is_host_baseline"] & df[metric].notna()]
    if cni.empty:
        return pd.DataFrame(columns=["variant"])
    table = cni.pivot_table(index="variant", columns="length_bytes", values=metric, aggfunc="first")
    table.columns = [f"{int(c)} B" for c in table.columns]
    return table.reset_index()


def dds_problem_runs(con, substrate: str, **filters) -> pd.DataFrame:
    """Failed and unsupported DDS runs with their reasons."""
    where, params = _where_in(substrate, filters, DDS_FILTERS)
    return con.execute(f"""
        select status, dds_mode, cni, cni_mode, datapath, length_bytes, reliability, transport, subscribers,
               security, repetition, error, attempt, sweep_id, run_id, started_at
        from {_DDS_RUNS} where status <> 'ok' and {where}
        order by status, cni, cni_mode, dds_mode, length_bytes, repetition""", params).df()


def dds_line_chart(df: pd.DataFrame, x: str, y: str, dash: str, title: str, y_title: str,
                   x_title: str) -> alt.Chart:
    """Mean per configuration: one line per CNI / mode, dashed by `dash` (reliability or transport)."""
    return alt.Chart(df).mark_line(point=True).encode(
        x=alt.X(f"{x}:O", title=x_title),
        y=alt.Y(f"{y}:Q", title=y_title),
        color=alt.Color("variant:N", title="CNI / mode"),
        strokeDash=alt.StrokeDash(f"{dash}:N", title=dash),
        tooltip=["variant:N", f"{dash}:N", f"{x}:O", alt.Tooltip(f"{y}:Q", format=".1f"), "n_runs:Q",
                 "discovery:N"],
    ).properties(height=320, title=title)


# ---- HTTP -----------------------------------------------------------------------------------------------------

HTTP_FILTERS = {
    "service": "Service",
    "path": "Path",
    "placement": "Placement",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
    "tuning_profile": "Tuning profile",
}


def http_substrates(con) -> list[str]:
    rows = con.execute("select substrate from fct_http_runs group by substrate "
                       "order by count(*) desc, substrate").fetchall()
    return [r[0] for r in rows]


def http_filter_values(con, substrate: str, column: str, **chosen) -> list:
    if column not in HTTP_FILTERS:
        raise ValueError(f"unknown filter: {column}")
    where, params = _where_in(substrate, chosen, HTTP_FILTERS)
    # the value with most successful runs first (the default), so the page opens on data, not on a corner case
    rows = con.execute(f"select {column} from fct_http_runs where {where} and {column} is not null "
                       f"group by {column} order by count(*) filter (where status = 'ok') desc, {column}",
                       params).fetchall()
    return [r[0] for r in rows]


def http_requests(con, substrate: str, **filters) -> pd.DataFrame:
    """Successful (2xx) requests of ok runs, for the response-time distribution, with a `variant` label."""
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, length_bytes, response_ms, run_id, seq, repetition
        from fct_http_requests where status = 'ok' and not is_error and {where}
        order by cni = 'host' desc, variant, length_bytes, run_id, seq""", params).df()


def http_kpis(con, substrate: str, **filters) -> pd.DataFrame:
    """The distinct KPI boundaries (from params.kpis_ms) of the selected runs: use_case, kpi_ms."""
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
    return con.execute(f"""
        select use_case, any_value(kpi_ms) as kpi_ms from fct_http_kpi_compliance where {where}
        group by use_case order by kpi_ms, use_case""", params).df()


def http_kpi_shares(con, substrate: str, **filters) -> pd.DataFrame:
    """Per CNI / mode, payload and use case: share of requests beyond the KPI (errors count as beyond) and how
    many runs had their p90 beyond it."""
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, length_bytes, use_case, any_value(kpi_ms) as kpi_ms,
               count(*) as n_runs, sum(n_requests) as n_requests, sum(n_beyond_kpi) as n_beyond_kpi,
               sum(n_beyond_kpi) / sum(n_requests) * 100 as pct_beyond_kpi,
               count(*) filter (where is_p90_beyond_kpi) as n_runs_p90_beyond
        from fct_http_kpi_compliance where {where}
        group by cni, cni_mode, length_bytes, use_case
        order by cni = 'host' desc, variant, length_bytes, kpi_ms, use_case""", params).df()


def http_overhead(con, substrate: str, **filters) -> pd.DataFrame:
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, length_bytes, n_runs, n_requests, n_errors, response_p50_ms,
               response_p90_ms, response_p90_ci95_ms, host_response_p90_ms, response_p90_overhead_pct,
               response_p50_overhead_pct, is_significant
        from http_overhead_vs_host where {where}
        order by length_bytes, is_host_baseline desc, variant""", params).df()


def http_problem_runs(con, substrate: str, **filters) -> pd.DataFrame:
    """Failed runs and ok runs with error requests."""
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
    return con.execute(f"""
        select status, cni, cni_mode, service, length_bytes, repetition, n_requests, n_errors, error, attempt,
               sweep_id, run_id, started_at
        from fct_http_runs where (status <> 'ok' or n_errors > 0) and {where}
        order by status, cni, cni_mode, length_bytes, repetition""", params).df()


def response_chart(requests: pd.DataFrame, kpis: pd.DataFrame) -> alt.LayerChart:
    """Box plot of response times per payload and CNI / mode (log scale), a dashed rule at every KPI boundary."""
    variants = list(dict.fromkeys(requests["variant"]))
    boxes = alt.Chart(requests).mark_boxplot(extent=1.5, size=22).encode(
        x=alt.X("length_bytes:O", title="payload (bytes)"),
        xOffset=alt.XOffset("variant:N", sort=variants),
        y=alt.Y("response_ms:Q", title="response time (ms, log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("variant:N", title="CNI / mode", sort=variants),
    )
    layers = [boxes]
    if not kpis.empty:
        k = kpis.groupby("kpi_ms", as_index=False).agg(use_cases=("use_case", lambda s: ", ".join(s)))
        k["label"] = k.apply(lambda r: f"KPI {r.kpi_ms:g} ms ({r.use_cases})", axis=1)
        rules = alt.Chart(k).mark_rule(strokeDash=[6, 4], color="#d62728").encode(
            y="kpi_ms:Q", tooltip=["label:N"])
        text = alt.Chart(k).mark_text(align="left", dx=4, dy=-6, color="#d62728").encode(
            y="kpi_ms:Q", x=alt.value(0), text="label:N")
        layers += [rules, text]
    return alt.layer(*layers).properties(height=380, title="Response time per request (box plot), KPI boundaries dashed")
