-- HTTP response-time statistics per comparable configuration (requests per run included) over status = 'ok' runs
-- (host included): means over
-- runs of each run's p50 / p90 (from its requests), Student-t 95% CIs of both, and the coarsest time resolution of
-- the load generators that timed them (resolution_ms: a difference below it is not measurable).
with runs as (

    select * from {{ ref('int_http__comparable_runs') }}

)

select
    {{ cell_dimension_columns() }},
    service,
    path,
    placement,
    length_bytes,
    requests_planned,                        -- requests per run: a run of 40 and one of 1000 are not one sample
    count(*)                                 as n_runs,
    count(*) filter (where low_cpu_headroom) as n_low_headroom,
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
