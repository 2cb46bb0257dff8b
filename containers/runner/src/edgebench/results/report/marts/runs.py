"""The run marts (fct_runs and the per-workload fct_* marts): labs, invalid runs, run counts and sweeps, and any metric
against the emulated link condition (the Link conditions page)."""

from __future__ import annotations

from edgebench.results.report.marts import LAB_FILTER, Choices, frame, where_in

NETEM_FILTERS = {**LAB_FILTER, "distribution": "Distribution", "tuning_profile": "Tuning profile"}
# the Link conditions page's selection: substrates with runs of any workload, most runs first
NETEM = Choices("fct_runs", NETEM_FILTERS)

# metric -> (label, unit, SQL source producing: variant, cni, netem_scenario, detail, value); one-cluster runs only
# (runs across an inter-cluster tool are compared on their own page)
_NETEM_METRICS = {
    "iperf3_throughput": ("iperf3 throughput", "Mbit/s", """
        select cni, cni_mode, netem_scenario, protocol || ' ' || length_bytes || ' B, ' || path || ', ' || placement
               as detail, throughput_mbps as value, substrate, lab, distribution, tuning_profile
        from fct_iperf3_runs where status = 'ok' and is_valid and intercluster = 'none'"""),
    "iperf3_rtt": ("iperf3 TCP mean RTT", "ms", """
        select cni, cni_mode, netem_scenario, protocol || ' ' || length_bytes || ' B, ' || path || ', ' || placement,
               mean_rtt_us / 1000, substrate, lab, distribution, tuning_profile
        from fct_iperf3_runs where status = 'ok' and is_valid and intercluster = 'none' and mean_rtt_us is not null"""),
    "dds_p50": ("DDS latency p50", "µs", """
        select cni, cni_mode, netem_scenario, length_bytes || ' B, ' || reliability || ', ' || transport || ', '
               || security, latency_p50_us, substrate, lab, distribution, tuning_profile
        from fct_dds_latency where status = 'ok' and is_valid and intercluster = 'none'"""),
    "dds_p90": ("DDS latency p90", "µs", """
        select cni, cni_mode, netem_scenario, length_bytes || ' B, ' || reliability || ', ' || transport || ', '
               || security, latency_p90_us, substrate, lab, distribution, tuning_profile
        from fct_dds_latency where status = 'ok' and is_valid and intercluster = 'none'"""),
    "http_p50": ("HTTP response p50", "ms", """
        select cni, cni_mode, netem_scenario, service || ' ' || length_bytes || ' B, ' || path || ', ' || placement,
               response_p50_ms, substrate, lab, distribution, tuning_profile
        from fct_http_runs where status = 'ok' and is_valid and intercluster = 'none'"""),
    "http_p90": ("HTTP response p90", "ms", """
        select cni, cni_mode, netem_scenario, service || ' ' || length_bytes || ' B, ' || path || ', ' || placement,
               response_p90_ms, substrate, lab, distribution, tuning_profile
        from fct_http_runs where status = 'ok' and is_valid and intercluster = 'none'"""),
}
NETEM_METRICS = {k: f"{label} ({unit})" for k, (label, unit, _) in _NETEM_METRICS.items()}


def shared_kernel_labs(con) -> list[str]:
    """The labs whose nodes share one kernel (environment.cluster.shared_kernel: the local lab)."""
    return [r[0] for r in con.execute("select distinct lab from fct_runs where lab_shared_kernel "
                                      "order by lab").fetchall()]


def invalid_runs(con, substrate: str, **filters):
    """Runs whose readback did not match what was requested (is_valid = false), any workload, with the reason.
    They stay in the fct_* marts but are kept out of every comparison. filters: distribution, netem_scenario,
    tuning_profile, lab (None = any)."""
    where, params = where_in(substrate, filters, {**LAB_FILTER, "distribution": "", "netem_scenario": "",
                                                   "tuning_profile": ""})
    return frame(con, f"""
        select workload, cni, cni_mode, netem_scenario, tuning_profile, protocol, path, placement, length_bytes,
               repetition, status, invalid_reason, sweep_id, run_id, started_at
        from fct_runs where not is_valid and {where}
        order by workload, cni, cni_mode, netem_scenario, tuning_profile, repetition""", params)


def run_counts(con):
    """Runs per substrate and status (all workloads)."""
    return frame(con, """
        select substrate, workload, status, count(*) as runs
        from fct_runs group by all order by substrate, workload, status""")


def sweeps(con):
    """One row per sweep: substrates, time span, run counts by status."""
    return frame(con, """
        select sweep_id,
               string_agg(distinct substrate, ', ' order by substrate) as substrates,
               string_agg(distinct workload, ', ' order by workload)   as workloads,
               min(started_at) as started_at, max(finished_at) as finished_at,
               count(*) as runs,
               count(*) filter (where status = 'ok')          as ok,
               count(*) filter (where status = 'failed')      as failed,
               count(*) filter (where status = 'unsupported') as unsupported
        from fct_runs group by sweep_id order by max(finished_at) desc""")


def netem_scenarios(con, substrate: str, **filters):
    """The scenarios on a substrate with their parameters as read back (distinct combinations; more than one
    row per scenario means its parameters changed between runs) and run counts per workload."""
    where, params = NETEM.where(substrate, filters)
    return frame(con, f"""
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
                 netem_scenario""", params)


def netem_metric(con, substrate: str, metric: str, **filters):
    """One metric per CNI / mode, configuration (detail) and netem scenario: mean over ok + valid runs."""
    if metric not in _NETEM_METRICS:
        raise ValueError(f"unknown metric: {metric}")
    where, params = NETEM.where(substrate, filters)
    return frame(con, f"""
        select cni || ' / ' || cni_mode as variant, netem_scenario, detail, avg(value) as value,
               min(value) as min_value, max(value) as max_value, count(*) as n_runs
        from ({_NETEM_METRICS[metric][2]}) as runs (cni, cni_mode, netem_scenario, detail, value, substrate, lab,
                                                    distribution, tuning_profile)
        where {where} and value is not null
        group by cni, cni_mode, netem_scenario, detail
        order by detail, cni = 'host' desc, variant, netem_scenario""", params)
