{{ config(materialized=raw_staging_materialized(), incremental_strategy='append',
          pre_hook="{{ delete_changed('run_id') }}") }}

-- ddsperf per-second lines joined to their run's attributes. Only the files beside the manifest that won
-- deduplication count (join on run_id and the sweep/cell of that manifest), so a run rerun under another sweep
-- directory never doubles its samples.
select
    samples.run_id,
    samples.sweep_id,
    samples.cell_id,
    samples.sample_index,
    {{ cell_dimension_columns('runs.') }},
    runs.placement,
    runs.length_bytes,
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
    runs.status,
    samples.t_s,
    samples.role,
    samples.subscriber,
    samples.peer,
    samples.latency_mean_us,
    samples.latency_min_us,
    samples.latency_p50_us,
    samples.latency_p90_us,
    samples.latency_p99_us,
    samples.latency_max_us,
    samples.latency_count,
    samples.samples_per_s,
    samples.throughput_mbps,
    samples.lost_samples,
    samples.raw_key
from {{ ref('stg_edgebench__dds_samples') }} as samples
inner join {{ ref('int_runs__deduplicated') }} as runs
    on  samples.run_id = runs.run_id
    and samples.sweep_id = runs.sweep_id
    and samples.cell_id = runs.cell_id
where runs.workload = 'dds'
{{ only_changed_runs('samples.run_id') }}
