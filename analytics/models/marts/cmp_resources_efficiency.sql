-- Seed 004 style CPU efficiency: CPU per unit of delivered rate, for each CNI / mode beside the host-network
-- baseline measured under the same conditions. The unit is 1 Gbit/s for iperf3 (the run's throughput) and
-- 1,000 messages/s for DDS throughput runs (the subscriber's samples/s); other workloads (DDS latency, HTTP) have
-- no rate and are not here. Only status = 'ok' AND is_valid runs with a rate > 0, one cluster (intercluster =
-- 'none'), the default service proxy, own cores - as cmp_resources_vs_host.
-- Per run: a component's CPU (the sum over its names, percent of one CPU) divided by the run's rate, both for the
-- CPU during the run (cpu_per_unit_pct, the seed's figure) and for run - idle (cpu_delta_per_unit_pct, what the
-- traffic added); then the mean over runs with a 95% Student-t half-width. vs_host = cni / host (> 1: the CNI costs
-- more CPU for the same rate); null without a host row or for components the host does not have (cni).
with rated_runs as (

    select
        run_id,
        case
            when workload = 'iperf3' then throughput_mbps / 1000.0
            when workload = 'dds' and dds_mode = 'throughput' then samples_per_s / 1000.0
        end                                 as rate,
        case
            when workload = 'iperf3' then 'Gbit/s'
            when workload = 'dds' then '1000 msg/s'
        end                                 as rate_unit
    from {{ ref('int_runs__deduplicated') }}
    where workload in ('iperf3', 'dds')

),

per_run as (

    select
        usage.run_id,
        {{ cell_dimension_columns('usage.') }},
        usage.workload,
        usage.protocol,
        usage.path,
        usage.placement,
        usage.length_bytes,
        usage.component,
        any_value(rated_runs.rate_unit)     as rate_unit,
        any_value(rated_runs.rate)          as rate,
        sum(usage.cpu_run_pct)              as cpu_run_pct,
        sum(usage.cpu_delta_pct)            as cpu_delta_pct,
        sum(usage.rss_run_mb)               as rss_run_mb
    from {{ ref('fct_resource_usage') }} as usage
    inner join rated_runs using (run_id)
    where usage.status = 'ok' and usage.is_valid
      and rated_runs.rate > 0
      and usage.intercluster = 'none'
      and coalesce(usage.service_proxy, 'default') = 'default'
      and {{ own_cores_only('usage.') }}
    group by all

),

stats as (

    select
        {{ cell_dimension_columns() }},
        workload,
        protocol,
        path,
        placement,
        length_bytes,
        component,
        rate_unit,
        count(*)                            as n_runs,
        avg(rate)                           as rate,
        avg(cpu_run_pct)                    as cpu_run_pct,
        avg(rss_run_mb)                     as rss_run_mb,
        avg(cpu_run_pct / rate)             as cpu_per_unit_pct,
        stddev_samp(cpu_run_pct / rate)     as cpu_per_unit_sd_pct,
        {{ t_critical_95('count(*) - 1') }} * stddev_samp(cpu_run_pct / rate) / sqrt(count(*))
                                            as cpu_per_unit_ci95_pct,
        avg(cpu_delta_pct / rate)           as cpu_delta_per_unit_pct,
        {{ t_critical_95('count(*) - 1') }} * stddev_samp(cpu_delta_pct / rate) / sqrt(count(*))
                                            as cpu_delta_per_unit_ci95_pct
    from per_run
    group by all

),

host as (

    select * from stats where cni = 'host'

)

select
    {{ cell_dimension_columns('stats.') }},
    stats.cni = 'host'                      as is_host_baseline,
    stats.workload,
    stats.protocol,
    stats.path,
    stats.placement,
    stats.length_bytes,
    stats.component,
    stats.rate_unit,
    stats.n_runs,
    stats.rate,
    stats.cpu_run_pct,
    stats.rss_run_mb,
    stats.cpu_per_unit_pct,
    stats.cpu_per_unit_ci95_pct,
    stats.cpu_delta_per_unit_pct,
    stats.cpu_delta_per_unit_ci95_pct,
    host.n_runs                             as host_n_runs,
    host.rate                               as host_rate,
    host.cpu_per_unit_pct                   as host_cpu_per_unit_pct,
    host.cpu_per_unit_sd_pct                as host_cpu_per_unit_sd_pct,
    host.cpu_per_unit_ci95_pct              as host_cpu_per_unit_ci95_pct,
    host.cpu_delta_per_unit_pct             as host_cpu_delta_per_unit_pct,
    case when host.cpu_per_unit_pct > 0 then stats.cpu_per_unit_pct / host.cpu_per_unit_pct end
                                            as cpu_per_unit_vs_host,
    stats.cpu_per_unit_sd_pct,
    -- the one rule (macros/verdict.sql), less CPU per unit = better, the cpu family's margin
    case
        when stats.cni = 'host' then 'baseline'
        when host.cpu_per_unit_pct is not null
            then {{ vs_host_verdict('cpu_per_unit_pct', 'cpu_per_unit_sd_pct', 'false', 'cpu') }}
    end                                     as verdict,
    {{ verdict_margin_pct('cpu') }}::double as verdict_margin_pct,
    case when stats.cni <> 'host' then 'welch' end as verdict_method,
    {{ vs_host_runs_to_decide('verdict', 'cpu_per_unit_pct', 'cpu_per_unit_sd_pct', 'cpu') }}
                                            as runs_to_decide
from stats
left join host
    on  {{ host_match(host_match_dimensions(), null_safe=true) }}
    and {{ host_match(['workload', 'protocol', 'path', 'placement', 'component', 'rate_unit']) }}
    and {{ host_match(['length_bytes'], null_safe=true) }}
