-- Every DDS run (one row per run_id, every status) with its parameters and manifest metrics, plus how many
-- per-second lines its dds-samples.json held. Feeds fct_dds_latency / fct_dds_throughput and the statistics.
with runs as (

    select * from {{ ref('int_runs__deduplicated') }}
    where workload = 'dds'

),

samples as (

    select run_id, count(*) as n_samples
    from {{ ref('int_dds__samples') }}
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
    runs.service_proxy,
    runs.protocol,
    runs.path,
    runs.placement,
    runs.length_bytes,
    runs.duration_s,
    runs.repetition,
    runs.dds_mode,
    runs.reliability,
    runs.transport,
    runs.subscribers,
    runs.discovery,
    runs.security,
    runs.batching,
    runs.rate,
    runs.ping_timeout_ms,
    runs.latency_mean_us,
    runs.latency_min_us,
    runs.latency_p50_us,
    runs.latency_p90_us,
    runs.latency_p99_us,
    runs.latency_max_us,
    runs.latency_count,
    runs.samples_per_s,
    runs.throughput_mbps,
    runs.per_subscriber_mbps,
    runs.lost_samples,
    runs.cpu_pub_pct,
    runs.rss_pub_mb,
    runs.cpu_sub_pct,
    runs.rss_sub_mb,
    coalesce(samples.n_samples, 0) as n_samples,
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
left join samples using (run_id)
