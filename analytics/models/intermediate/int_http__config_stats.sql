-- HTTP response-time statistics per comparable configuration over status = 'ok' runs (host included): means over
-- runs of each run's p50 / p90 (from its requests), Student-t 95% CIs of both, and the coarsest time resolution of
-- the load generators that timed them (resolution_ms: a difference below it is not measurable).
with runs as (

    -- the run's response-time statistics from its requests (int_http__run_stats), never from a mart
    select runs.*, stats.n_requests, stats.n_errors, stats.response_p50_ms, stats.response_p90_ms
    from {{ ref('int_runs__deduplicated') }} as runs
    inner join {{ ref('int_http__run_stats') }} as stats using (run_id)
    where runs.workload = 'http' and runs.status = 'ok' and runs.is_valid  -- invalid runs stay out of comparisons
      and runs.intercluster = 'none'  -- one cluster: runs across an inter-cluster tool are compared in cmp_intercluster_vs_none
      and coalesce(runs.service_proxy, 'default') = 'default'  -- testbed cells per service proxy are compared in cmp_service_proxies
      and {{ own_cores_only('runs.') }}  -- CPU-limited testbed cells are compared in cmp_dds_vs_host / cmp_iperf3_vs_host
      and stats.response_p90_ms is not null

)

select
    {{ cell_dimension_columns() }},
    service,
    path,
    placement,
    length_bytes,
    count(*)                                 as n_runs,
    count(distinct sweep_id)                 as n_sweeps,
    sum(n_requests)                          as n_requests,
    sum(n_errors)                            as n_errors,
    avg(response_p50_ms)                     as response_p50_ms,
    avg(response_p90_ms)                     as response_p90_ms,
    stddev_samp(response_p50_ms)             as response_p50_stddev_ms,
    {{ t_critical_95('count(*) - 1') }} * stddev_samp(response_p50_ms) / sqrt(count(*))
                                             as response_p50_ci95_ms,
    stddev_samp(response_p90_ms)             as response_p90_stddev_ms,
    {{ t_critical_95('count(*) - 1') }} * stddev_samp(response_p90_ms) / sqrt(count(*))
                                             as response_p90_ci95_ms,
    max(resolution_ms)                       as resolution_ms,
    string_agg(distinct load_client, ', ' order by load_client) as load_clients,
    min(started_at)                          as first_started_at,
    max(started_at)                          as last_started_at
from runs
group by all
