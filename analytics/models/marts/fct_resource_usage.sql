{{ config(materialized=raw_staging_materialized(), incremental_strategy='append',
          pre_hook="{{ delete_changed('run_id') }}") }}

-- One row per run x component x name (resources.json of the manifest that won deduplication): mean CPU and RSS
-- in the idle phase before the workload and during the run, the run - idle delta, and the run's attributes.
-- Every status and validity is kept (comparisons filter). A name without idle samples did not run before the
-- workload (tool processes start with it): its idle mean stays null, and the delta counts its idle use as 0.
with samples as (

    select samples.*
    from {{ ref('stg_edgebench__resource_samples') }} as samples
    inner join {{ ref('int_runs__deduplicated') }} as runs
        on  samples.run_id = runs.run_id
        and samples.sweep_id = runs.sweep_id
        and samples.cell_id = runs.cell_id
    where samples.phase in ('idle', 'run')  -- a duet window's machine rows (`window`) are the headroom gate's alone
    {{ only_changed_runs('samples.run_id', keyword='and') }}

),

per_name as (

    select
        run_id,
        component,
        name,
        avg(cpu_pct) filter (where phase = 'idle')    as cpu_idle_pct,
        avg(cpu_pct) filter (where phase = 'run')     as cpu_run_pct,
        avg(rss_mb) filter (where phase = 'idle')     as rss_idle_mb,
        avg(rss_mb) filter (where phase = 'run')      as rss_run_mb,
        count(*) filter (where phase = 'idle')        as n_idle_samples,
        count(*) filter (where phase = 'run')         as n_run_samples
    from samples
    group by all

)

select
    runs.run_id,
    runs.sweep_id,
    runs.cell_id,
    {{ cell_dimension_columns('runs.') }},
    runs.intercluster,
    runs.service_proxy,
    runs.service_proxy_mode,
    coalesce(runs.tuning_mtu, runs.mtu)               as tuning_mtu,
    runs.workload,
    runs.protocol,
    runs.path,
    runs.placement,
    runs.length_bytes,
    runs.repetition,
    per_name.component,
    per_name.name,
    per_name.cpu_idle_pct,
    per_name.cpu_run_pct,
    per_name.cpu_run_pct - coalesce(per_name.cpu_idle_pct, 0)  as cpu_delta_pct,
    per_name.rss_idle_mb,
    per_name.rss_run_mb,
    per_name.rss_run_mb - coalesce(per_name.rss_idle_mb, 0)    as rss_delta_mb,
    per_name.n_idle_samples,
    per_name.n_run_samples,
    runs.throughput_mbps,   -- the run's own throughput (iperf3 / DDS throughput mode), null otherwise
    runs.status,
    runs.error,
    runs.is_valid,
    runs.invalid_reason,
    runs.started_at
from per_name
inner join {{ ref('int_runs__deduplicated') }} as runs using (run_id)
