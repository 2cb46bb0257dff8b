-- One row per HTTP run, every status. Response-time figures are recomputed from the run's requests
-- (int_http__run_stats: 2xx requests, quantile_cont), not copied from the manifest; reported_* keep the
-- manifest's own values for comparison. share_beyond_kpi: JSON object use case -> share (see
-- fct_http_kpi_compliance for the per-use-case rows).
with runs as (

    select * from {{ ref('int_runs__deduplicated') }}
    where workload = 'http'

),

compliance as (

    select run_id, to_json(map(list(use_case order by use_case), list(share_beyond_kpi order by use_case))) as share_beyond_kpi
    from {{ ref('fct_http_kpi_compliance') }}
    group by run_id

)

select
    runs.run_id,
    runs.sweep_id,
    runs.cell_id,
    {{ cell_dimension_columns('runs.') }},
    runs.mtu,
    runs.netem_mechanism,
    runs.netem_delay_ms,
    runs.netem_jitter_ms,
    runs.netem_loss_pct,
    runs.netem_rate_mbit,
    runs.netem_scope,
    runs.tuning_mtu,
    runs.intercluster,
    runs.intercluster_tool,
    runs.intercluster_mode,
    runs.intercluster_implementation,
    runs.is_emulated,
    runs.intercluster_model,
    runs.protocol,
    runs.service,
    runs.path,
    runs.placement,
    runs.length_bytes,
    runs.repetition,
    runs.requests_planned,
    runs.connections,
    coalesce(stats.n_requests, 0)           as n_requests,
    coalesce(stats.n_errors, 0)             as n_errors,
    stats.response_p50_ms,
    stats.response_p90_ms,
    stats.response_p99_ms,
    stats.response_mean_ms,
    stats.response_max_ms,
    stats.response_min_ms,
    runs.kpis_ms,
    compliance.share_beyond_kpi,
    runs.reported_response_p90_ms,
    runs.reported_errors,
    runs.load_client,
    runs.resolution_ms,
    runs.status,
    runs.error,
    runs.is_valid,
    runs.invalid_reason,
    runs.attempt,
    runs.started_at,
    runs.finished_at,
    runs.raw_key,
    runs.is_imported,
    runs.min_idle_cpu_pct,
    runs.low_cpu_headroom
from runs
left join {{ ref('int_http__run_stats') }} as stats using (run_id)
left join compliance using (run_id)
