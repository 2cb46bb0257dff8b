-- Request/response latency statistics per comparable configuration, over successful sockperf runs only (host
-- included): the mean over runs of each run's p50, p90 and p99 (half round trips, us), the runs' standard deviation
-- of the p50 and its 95% half-width.
with runs as (

    select * from {{ ref('int_sockperf__comparable_runs') }}

)

select
    {{ cell_dimension_columns() }},
    protocol,
    path,
    placement,
    length_bytes,
    duration_s,
    count(*)                                 as n_runs,
    count(distinct sweep_id)                 as n_sweeps,
    avg(latency_p50_us)                      as latency_p50_us,
    stddev_samp(latency_p50_us)              as latency_p50_stddev_us,
    {{ t_critical_95('count(*) - 1') }} * stddev_samp(latency_p50_us) / sqrt(count(*))
                                             as latency_p50_ci95_us,
    avg(latency_p90_us)                      as latency_p90_us,
    avg(latency_p99_us)                      as latency_p99_us,
    avg(latency_mean_us)                     as latency_mean_us,
    min(started_at)                          as first_started_at,
    max(started_at)                          as last_started_at
from runs
group by all
