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
        from fct_runs group by all order by substrate, workload, status""").df()


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
        from fct_runs group by sweep_id order by max(finished_at) desc""").df()


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
                       f"order by {_baseline_first(column)}{column}", params).fetchall()
    return [r[0] for r in rows]


# the untouched condition first (the page's default), the others in name order
_BASELINE_VALUES = {"netem_scenario": "none", "tuning_profile": "default_settings", "workload": "iperf3"}


def _baseline_first(column: str) -> str:
    value = _BASELINE_VALUES.get(column)
    return f"{column} <> '{value}', " if value else ""


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


def _substrates(con, table: str) -> list[str]:
    """Substrates present in `table` (any status), most runs first."""
    rows = con.execute(f"select substrate from {table} group by substrate "
                       "order by count(*) desc, substrate").fetchall()
    return [r[0] for r in rows]


def _filter_values(con, table: str, allowed, substrate: str, column: str, chosen: dict) -> list:
    """Values of one filter column of `table` on a substrate, given the filters chosen before it (all statuses);
    the value with most successful runs first (the default), so a page opens on data, not on a corner case."""
    if column not in allowed:
        raise ValueError(f"unknown filter: {column}")
    where, params = _where_in(substrate, chosen, allowed)
    rows = con.execute(f"select {column} from {table} where {where} and {column} is not null "
                       f"group by {column} order by count(*) filter (where status = 'ok') desc, {column}",
                       params).fetchall()
    return [r[0] for r in rows]


def dds_substrates(con) -> list[str]:
    """Substrates with DDS runs (any status), most runs first."""
    return _substrates(con, _DDS_RUNS)


def dds_filter_values(con, substrate: str, column: str, **chosen) -> list:
    """Values of one DDS filter column on a substrate given the filters chosen before it (all statuses)."""
    return _filter_values(con, _DDS_RUNS, DDS_FILTERS, substrate, column, chosen)


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
    """Substrates with HTTP runs (any status), most runs first."""
    return _substrates(con, "fct_http_runs")


def http_filter_values(con, substrate: str, column: str, **chosen) -> list:
    """Values of one HTTP filter column on a substrate given the filters chosen before it (all statuses)."""
    return _filter_values(con, "fct_http_runs", HTTP_FILTERS, substrate, column, chosen)


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
    """http_overhead_vs_host rows for one substrate and fixed conditions, host baseline first per payload: n runs,
    means and 95% CIs per side, time resolution, verdicts and overheads (null below resolution)."""
    where, params = _where_in(substrate, filters, HTTP_FILTERS)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, length_bytes, is_host_baseline, n_runs, n_requests, n_errors,
               response_p50_ms, response_p50_ci95_ms, response_p90_ms, response_p90_ci95_ms, host_n_runs,
               host_response_p50_ms, host_response_p50_ci95_ms, host_response_p90_ms, host_response_p90_ci95_ms,
               resolution_ms, host_resolution_ms, load_clients, response_p50_diff_ms, response_p90_diff_ms,
               response_p50_overhead_pct, response_p90_overhead_pct, response_p50_verdict, verdict, is_significant
        from http_overhead_vs_host where {where}
        order by length_bytes, is_host_baseline desc, variant""", params).df()


def _us(ms: float) -> str:
    return f"{ms * 1000:g} µs"


def http_vs_host_text(pct, verdict, resolution_ms, host_resolution_ms) -> str:
    """What the overhead column shows: the percentage, or "below resolution (<x µs)" when the difference is smaller
    than the load generators' time resolution (x = the coarser of the two sides), "0.0 %" for the host baseline,
    "no host baseline" without one."""
    if verdict == "below resolution":
        res = [r for r in (resolution_ms, host_resolution_ms) if r is not None and not pd.isna(r)]
        return f"below resolution (<{_us(max(res))})" if res else "below resolution"
    if verdict == "baseline":
        return "0.0 %"
    if pct is None or pd.isna(pct):
        return "no host baseline"
    return f"{pct:+.1f} %"


def http_overhead_table(df: pd.DataFrame) -> pd.DataFrame:
    """The columns the HTTP page shows: per side n runs, mean p50/p90 with their 95% CI half-widths, the time
    resolution, each statistic's difference to host as text (see http_vs_host_text) and its verdict."""
    out = df[["variant", "length_bytes", "n_runs", "response_p50_ms", "response_p50_ci95_ms", "response_p90_ms",
              "response_p90_ci95_ms", "host_n_runs", "host_response_p50_ms", "host_response_p90_ms"]].copy()
    out["resolution_us"] = df[["resolution_ms", "host_resolution_ms"]].max(axis=1) * 1000
    for stat, verdict in (("p50", "response_p50_verdict"), ("p90", "verdict")):
        out[f"{stat}_vs_host"] = [http_vs_host_text(p, v, r, h) for p, v, r, h in zip(
            df[f"response_{stat}_overhead_pct"], df[verdict], df["resolution_ms"], df["host_resolution_ms"])]
        out[f"{stat}_verdict"] = df[verdict].fillna("no verdict (n < 2 or no host)")
    return out.reset_index(drop=True)


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


# ---- shared by the link-conditions, tuning and resources pages ----------------------------------------------

def invalid_runs(con, substrate: str, **filters) -> pd.DataFrame:
    """Runs whose readback did not match what was requested (is_valid = false), any workload, with the reason.
    They stay in the fct_* marts but are kept out of every comparison. filters: distribution, netem_scenario,
    tuning_profile (None = any)."""
    where, params = _where_in(substrate, filters, {"distribution": "", "netem_scenario": "",
                                                   "tuning_profile": ""})
    return con.execute(f"""
        select workload, cni, cni_mode, netem_scenario, tuning_profile, protocol, path, placement, length_bytes,
               repetition, status, invalid_reason, sweep_id, run_id, started_at
        from fct_runs where not is_valid and {where}
        order by workload, cni, cni_mode, netem_scenario, tuning_profile, repetition""", params).df()


def _values_of(con, table: str, allowed: dict, substrate: str, column: str, **chosen) -> list:
    """Distinct values of a filter column given the filters chosen before it; the untouched condition first."""
    if column not in allowed:
        raise ValueError(f"unknown filter: {column}")
    where, params = _where_in(substrate, chosen, allowed)
    rows = con.execute(f"select distinct {column} from {table} where {where} and {column} is not null "
                       f"order by {_baseline_first(column)}{column}", params).fetchall()
    return [r[0] for r in rows]


# ---- link conditions (netem) ----------------------------------------------------------------------------------

NETEM_FILTERS = {"distribution": "Distribution", "tuning_profile": "Tuning profile"}

# metric -> (label, unit, SQL source producing: variant, cni, netem_scenario, detail, value)
_NETEM_METRICS = {
    "iperf3_throughput": ("iperf3 throughput", "Mbit/s", """
        select cni, cni_mode, netem_scenario, protocol || ' ' || length_bytes || ' B, ' || path || ', ' || placement
               as detail, throughput_mbps as value, substrate, distribution, tuning_profile
        from fct_iperf3_runs where status = 'ok' and is_valid"""),
    "iperf3_rtt": ("iperf3 TCP mean RTT", "ms", """
        select cni, cni_mode, netem_scenario, protocol || ' ' || length_bytes || ' B, ' || path || ', ' || placement,
               mean_rtt_us / 1000, substrate, distribution, tuning_profile
        from fct_iperf3_runs where status = 'ok' and is_valid and mean_rtt_us is not null"""),
    "dds_p50": ("DDS latency p50", "µs", """
        select cni, cni_mode, netem_scenario, length_bytes || ' B, ' || reliability || ', ' || transport || ', '
               || security, latency_p50_us, substrate, distribution, tuning_profile
        from fct_dds_latency where status = 'ok' and is_valid"""),
    "dds_p90": ("DDS latency p90", "µs", """
        select cni, cni_mode, netem_scenario, length_bytes || ' B, ' || reliability || ', ' || transport || ', '
               || security, latency_p90_us, substrate, distribution, tuning_profile
        from fct_dds_latency where status = 'ok' and is_valid"""),
    "http_p50": ("HTTP response p50", "ms", """
        select cni, cni_mode, netem_scenario, service || ' ' || length_bytes || ' B, ' || path || ', ' || placement,
               response_p50_ms, substrate, distribution, tuning_profile
        from fct_http_runs where status = 'ok' and is_valid"""),
    "http_p90": ("HTTP response p90", "ms", """
        select cni, cni_mode, netem_scenario, service || ' ' || length_bytes || ' B, ' || path || ', ' || placement,
               response_p90_ms, substrate, distribution, tuning_profile
        from fct_http_runs where status = 'ok' and is_valid"""),
}
NETEM_METRICS = {k: f"{label} ({unit})" for k, (label, unit, _) in _NETEM_METRICS.items()}


def netem_substrates(con) -> list[str]:
    """Substrates with runs of any workload, most runs first."""
    return _substrates(con, "fct_runs")


def netem_filter_values(con, substrate: str, column: str, **chosen) -> list:
    return _values_of(con, "fct_runs", NETEM_FILTERS, substrate, column, **chosen)


def netem_scenarios(con, substrate: str, **filters) -> pd.DataFrame:
    """The scenarios on a substrate with their parameters as read back (distinct combinations; more than one
    row per scenario means its parameters changed between runs) and run counts per workload."""
    where, params = _where_in(substrate, filters, NETEM_FILTERS)
    return con.execute(f"""
        select netem_scenario, netem_mechanism, netem_delay_ms, netem_jitter_ms, netem_loss_pct, netem_rate_mbit,
               netem_scope,
               case when netem_delay_ms is null then 'not recorded (older runs)' else 'read back' end as parameters,
               count(*) as runs,
               count(*) filter (where workload = 'iperf3') as iperf3_runs,
               count(*) filter (where workload = 'dds')    as dds_runs,
               count(*) filter (where workload = 'http')   as http_runs
        from fct_runs where {where}
        group by 1, 2, 3, 4, 5, 6, 7, 8
        order by netem_scenario <> 'none', coalesce(netem_delay_ms, 0), coalesce(netem_loss_pct, 0),
                 netem_scenario""", params).df()


def netem_metric(con, substrate: str, metric: str, **filters) -> pd.DataFrame:
    """One metric per CNI / mode, configuration (detail) and netem scenario: mean over ok + valid runs."""
    if metric not in _NETEM_METRICS:
        raise ValueError(f"unknown metric: {metric}")
    where, params = _where_in(substrate, filters, NETEM_FILTERS)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, netem_scenario, detail, avg(value) as value,
               min(value) as min_value, max(value) as max_value, count(*) as n_runs
        from ({_NETEM_METRICS[metric][2]}) as runs (cni, cni_mode, netem_scenario, detail, value, substrate,
                                                    distribution, tuning_profile)
        where {where} and value is not null
        group by cni, cni_mode, netem_scenario, detail
        order by detail, cni = 'host' desc, variant, netem_scenario""", params).df()


def netem_chart(df: pd.DataFrame, scenarios: list[str], y_title: str, log: bool = False) -> alt.Chart:
    """One line per CNI / mode across the netem scenarios (in the order given: untouched first, then by delay),
    a point per scenario; log scale optional (rate-limited scenarios are orders of magnitude apart)."""
    variants = list(dict.fromkeys(df["variant"]))
    return alt.Chart(df).mark_line(point=alt.OverlayMarkDef(size=80)).encode(
        x=alt.X("netem_scenario:N", sort=[s for s in scenarios if s in set(df["netem_scenario"])],
                title="netem scenario", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("value:Q", title=y_title + (" (log scale)" if log else ""),
                scale=alt.Scale(type="log") if log else alt.Scale(zero=True)),
        color=alt.Color("variant:N", title="CNI / mode", sort=variants),
        tooltip=["variant:N", "netem_scenario:N", alt.Tooltip("value:Q", format=".2f"),
                 alt.Tooltip("min_value:Q", format=".2f"), alt.Tooltip("max_value:Q", format=".2f"), "n_runs:Q"],
    ).properties(height=360)


# ---- tuning efficiency ------------------------------------------------------------------------------------------

TUNING_FILTERS = {
    "workload": "Workload",
    "protocol": "Protocol",
    "length_bytes": "Packet size (bytes)",
    "path": "Path",
    "placement": "Placement",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
}
TUNING_METRICS = {"throughput_efficiency_pct": "Throughput efficiency (CNI / host x 100)",
                  "latency_efficiency_pct": "Latency efficiency, DDS p50 (host / CNI x 100)"}


def tuning_substrates(con) -> list[str]:
    return _substrates(con, "tuning_efficiency")


def tuning_filter_values(con, substrate: str, column: str, **chosen) -> list:
    return _values_of(con, "tuning_efficiency", {**TUNING_FILTERS, "tuning_mtu": ""}, substrate, column, **chosen)


def tuning_efficiency(con, substrate: str, **filters) -> pd.DataFrame:
    """tuning_efficiency rows for one substrate and the chosen conditions (tuning_mtu may be given too)."""
    where, params = _where_in(substrate, filters, {**TUNING_FILTERS, "tuning_mtu": ""})
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, *
        from tuning_efficiency where {where}
        order by is_host_baseline desc, variant, tuning_profile <> 'default_settings', tuning_profile,
                 tuning_mtu""", params).df()


def tuning_heatmap_frame(df: pd.DataFrame, metric: str, by_mtu: bool) -> pd.DataFrame:
    """One cell per CNI / mode x profile (x profile + MTU when by_mtu): the efficiency; where several
    configurations fall into a cell (e.g. DDS reliability / transport), their mean and how many."""
    cni = df[~df["is_host_baseline"] & df[metric].notna()].copy()
    if cni.empty:
        return pd.DataFrame(columns=["variant", "column", "value", "n_configs", "n_runs", "mtus"])
    cni["column"] = cni["tuning_profile"]
    if by_mtu:
        cni["column"] = cni["tuning_profile"] + " · MTU " + cni["tuning_mtu"].astype("Int64").astype(str)
    out = cni.groupby(["variant", "column"], as_index=False).agg(
        value=(metric, "mean"), n_configs=(metric, "size"), n_runs=("n_runs", "sum"),
        mtus=("tuning_mtu", lambda s: ", ".join(str(int(v)) for v in sorted(s.dropna().unique()))))
    return out


def tuning_heatmap(cells: pd.DataFrame, title: str) -> alt.LayerChart:
    """Heatmap CNI / mode x tuning profile, efficiency in %, value written in each cell."""
    columns = sorted(cells["column"].unique(), key=lambda c: (not c.startswith("default_settings"), c))
    base = alt.Chart(cells).encode(
        x=alt.X("column:N", sort=columns, title="tuning profile", axis=alt.Axis(labelAngle=0, labelLimit=400)),
        y=alt.Y("variant:N", title="CNI / mode", axis=alt.Axis(labelLimit=300)))
    rect = base.mark_rect().encode(
        color=alt.Color("value:Q", title="% of host", scale=alt.Scale(scheme="redyellowgreen", domain=[50, 100],
                                                                      clamp=True)),
        tooltip=["variant:N", "column:N", alt.Tooltip("value:Q", format=".1f", title="% of host"),
                 "mtus:N", "n_configs:Q", "n_runs:Q"])
    text = base.mark_text(fontSize=13).encode(text=alt.Text("value:Q", format=".1f"))
    return alt.layer(rect, text).properties(height=alt.Step(44), title=title)


# ---- resources --------------------------------------------------------------------------------------------------

RESOURCE_FILTERS = {
    "workload": "Workload",
    "protocol": "Protocol",
    "path": "Path",
    "placement": "Placement",
    "length_bytes": "Length (bytes)",
    "distribution": "Distribution",
    "netem_scenario": "Netem scenario",
    "tuning_profile": "Tuning profile",
}


def resource_substrates(con) -> list[str]:
    return _substrates(con, "resource_usage_by_cni")


def resource_filter_values(con, substrate: str, column: str, **chosen) -> list:
    return _values_of(con, "resource_usage_by_cni", RESOURCE_FILTERS, substrate, column, **chosen)


def resource_usage(con, substrate: str, **filters) -> pd.DataFrame:
    """resource_usage_by_cni rows (every component) for one substrate and the chosen conditions."""
    where, params = _where_in(substrate, filters, RESOURCE_FILTERS)
    return con.execute(f"""
        select cni || ' / ' || cni_mode as variant, *
        from resource_usage_by_cni where {where}
        order by component, is_host_baseline desc, variant""", params).df()


def resource_long(df: pd.DataFrame) -> pd.DataFrame:
    """Idle vs run as rows (phase), for grouped bars: variant, component, phase, cpu_pct, rss_mb."""
    rows = []
    for phase in ("idle", "run"):
        part = df[["variant", "component", "names", "n_runs", f"cpu_{phase}_pct", f"rss_{phase}_mb"]].rename(
            columns={f"cpu_{phase}_pct": "cpu_pct", f"rss_{phase}_mb": "rss_mb"})
        rows.append(part.assign(phase=phase))
    return pd.concat(rows, ignore_index=True)


def resource_chart(long: pd.DataFrame, value: str, title: str, y_title: str, variants: list[str]) -> alt.Chart:
    """Grouped horizontal bars per CNI / mode: idle (light) above run (dark)."""
    return alt.Chart(long).mark_bar().encode(
        y=alt.Y("variant:N", sort=variants, title=None, axis=alt.Axis(labelLimit=200)),
        yOffset=alt.YOffset("phase:N", sort=["idle", "run"]),
        x=alt.X(f"{value}:Q", title=y_title),
        color=alt.Color("phase:N", sort=["idle", "run"], scale=alt.Scale(range=["#aec7e8", "#1f77b4"])),
        tooltip=["variant:N", "phase:N", alt.Tooltip(f"{value}:Q", format=".1f"), "names:N", "n_runs:Q"],
    ).properties(height=alt.Step(16), title=title)


def resource_throughput_chart(df: pd.DataFrame, variants: list[str]) -> alt.Chart:
    one = df.drop_duplicates("variant")
    return alt.Chart(one).mark_bar().encode(
        y=alt.Y("variant:N", sort=variants, title=None, axis=alt.Axis(labelLimit=200)),
        x=alt.X("throughput_mbps:Q", title="mean throughput (Mbit/s)"),
        color=alt.condition("datum.is_host_baseline", alt.value("#7f7f7f"), alt.value("#2ca02c")),
        tooltip=["variant:N", alt.Tooltip("throughput_mbps:Q", format=".1f"), "n_runs:Q"],
    ).properties(height=alt.Step(32), title="Throughput of the same runs")
