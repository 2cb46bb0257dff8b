-- Long format for the CNI version regression cards: one row per run x metric, for status = 'ok' AND is_valid runs of
-- a CNI mode (not the host network) that carry a version (stg: cni_version_effective = installed, else requested).
-- Each row holds the comparison configuration (everything but the version), the version, how it is known
-- (version_source), the trigger of the rerun, the metric's name (unit in it), its direction and the run's value.
-- Metrics: iperf3 throughput_mbps (TCP and UDP), jitter_ms and lost_percent (UDP); DDS latency_p50_us /
-- latency_p99_us (latency mode) and throughput_mbps (throughput mode), from the manifest; HTTP response_p50_ms /
-- response_p95_ms from the run's 2xx requests (int_http__run_stats); CPU and RSS during the run per resources.json
-- component (workload, cni, system: the mean over the run's samples, summed over the component's processes).
-- Versions are ordered as semantic versions (version_major/minor/patch, a pre-release below its release); a version
-- text that is not MAJOR.MINOR[.PATCH][-PRE] has null parts and stays out of the cards.
{%- set version_re = "'^[vV]?([0-9]+)[.]([0-9]+)(?:[.]([0-9]+))?(?:-([0-9A-Za-z.-]+))?(?:[+][0-9A-Za-z.-]+)?$'" %}
with runs as (

    select
        *,
        regexp_extract(cni_version_effective, {{ version_re }},
                       ['major', 'minor', 'patch', 'pre'])                  as version_parts,
        -- the workload's parameters that define what was measured (besides protocol, path, placement, length):
        -- a run of another variant is another configuration
        case workload
            when 'iperf3' then concat_ws(' ', 'duration_s=' || duration_s, 'bitrate=' || iperf3_bitrate)
            when 'dds' then concat_ws(' ', 'mode=' || dds_mode, 'reliability=' || reliability,
                                      'transport=' || transport, 'subscribers=' || subscribers,
                                      'security=' || security, 'rate=' || rate, 'duration_s=' || duration_s,
                                      case when batching = 'off' then 'batching=off' end,
                                      case when ping_timeout_ms <> 1000 then 'ping_timeout_ms=' || ping_timeout_ms end)
            when 'http' then concat_ws(' ', 'service=' || service, 'requests=' || requests_planned,
                                       'connections=' || connections)
            else ''
        end                                                                 as variant
    from {{ ref('int_runs__deduplicated') }}
    where status = 'ok' and is_valid          -- invalid runs stay out of every comparison
      and cni <> 'host'                       -- the host network has no CNI version
      and coalesce(service_proxy, 'default') = 'default'           -- testbed cells per service proxy are compared in cmp_service_proxies
      and {{ own_cores_only() }}  -- CPU-limited testbed cells are compared in cmp_dds_vs_host / cmp_iperf3_vs_host
      and cni_version_effective is not null   -- manifests without a version are not part of a card

),

versioned as (

    select
        *,
        try_cast(nullif(version_parts.major, '') as integer)               as version_major,
        try_cast(nullif(version_parts.minor, '') as integer)               as version_minor,
        coalesce(try_cast(nullif(version_parts.patch, '') as integer),
                 case when version_parts.major <> '' then 0 end)           as version_patch,
        nullif(version_parts.pre, '')                                       as version_prerelease
    from runs

),

-- one (metric, value) per run: values are unpivoted from the per-workload columns
iperf3 as (

    select run_id, metric, value
    from (select run_id, protocol, throughput_mbps, jitter_ms, lost_percent from versioned where workload = 'iperf3')
    unpivot (value for metric in (throughput_mbps, jitter_ms, lost_percent))
    where metric = 'throughput_mbps' or protocol = 'udp'

),

dds as (

    select run_id, metric, value
    from (select run_id, dds_mode, latency_p50_us, latency_p99_us, throughput_mbps from versioned
          where workload = 'dds')
    unpivot (value for metric in (latency_p50_us, latency_p99_us, throughput_mbps))
    where (dds_mode = 'latency' and metric like 'latency_%') or (dds_mode = 'throughput' and metric = 'throughput_mbps')

),

http as (

    select run_id, metric, value
    from (select stats.run_id, stats.response_p50_ms, stats.response_p95_ms
          from {{ ref('int_http__run_stats') }} as stats
          inner join versioned using (run_id)
          where versioned.workload = 'http')
    unpivot (value for metric in (response_p50_ms, response_p95_ms))

),

resource_components as (

    -- the run's samples (only the file beside the manifest that won deduplication), mean per process during the
    -- run, summed over the component's processes
    select run_id, component, sum(cpu_run_pct) as cpu_pct, sum(rss_run_mb) as rss_mb
    from (
        select samples.run_id, samples.component, samples.name,
               avg(samples.cpu_pct) as cpu_run_pct, avg(samples.rss_mb) as rss_run_mb
        from {{ ref('stg_edgebench__resource_samples') }} as samples
        inner join versioned
            on  samples.run_id = versioned.run_id
            and samples.sweep_id = versioned.sweep_id
            and samples.cell_id = versioned.cell_id
        where samples.phase = 'run' and samples.component in ('workload', 'cni', 'system')
        group by all
    )
    group by all

),

resources as (

    select run_id, 'cpu_' || component || '_pct' as metric, cpu_pct as value from resource_components
    union all
    select run_id, 'rss_' || component || '_mb' as metric, rss_mb as value from resource_components

),

metrics as (

    select * from iperf3
    union all select * from dds
    union all select * from http
    union all select * from resources

)

select
    versioned.run_id,
    versioned.sweep_id,
    versioned.cell_id,
    -- the card (one CNI mode on one substrate: substrate, cni, cni_mode, datapath) and, with the other cell
    -- dimensions and what follows, the comparison configuration within the card (all but the version)
    {{ cell_dimension_columns('versioned.') }},
    versioned.intercluster,
    versioned.workload,
    coalesce(versioned.protocol, '')                                       as protocol,
    versioned.variant,
    coalesce(versioned.path, '')                                           as path,
    coalesce(versioned.placement, '')                                      as placement,
    coalesce(versioned.length_bytes, -1)                                   as length_bytes,  -- -1: not given
    -- the version
    versioned.cni_version_effective                                        as cni_version,
    versioned.version_source,
    versioned.cni_version_installed,
    versioned.cni_version_requested,
    versioned.version_major,
    versioned.version_minor,
    versioned.version_patch,
    versioned.version_prerelease,
    versioned.is_triggered_rerun,
    versioned.trigger_new_version,
    versioned.trigger_previous_version,
    versioned.trigger_source,
    versioned.triggered_at,
    -- the metric
    metrics.metric,
    case when metrics.metric like '%_mbps' then 'Mbit/s'
         when metrics.metric like '%_us' then 'us'
         when metrics.metric like '%_ms' then 'ms'
         when metrics.metric like '%_pct' or metrics.metric = 'lost_percent' then '%'
         when metrics.metric like '%_mb' then 'MB'
    end                                                                    as unit,
    metrics.metric = 'throughput_mbps'                                     as is_higher_better,
    metrics.value,
    versioned.repetition,
    versioned.started_at
from metrics
inner join versioned using (run_id)
where metrics.value is not null and isfinite(metrics.value)
