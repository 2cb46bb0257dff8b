-- HTTP response-time statistics per comparable configuration over status = 'ok' runs (host included): means over
-- runs of each run's p50 / p90 (from its requests), Student-t CI of the p90.
with runs as (

    select * from {{ ref('fct_http_runs') }}
    where status = 'ok' and is_valid and response_p90_ms is not null  -- invalid runs stay out of comparisons

)

select
    substrate,
    distribution,
    netem_scenario,
    tuning_profile,
    service,
    path,
    placement,
    length_bytes,
    cni,
    cni_mode,
    datapath,
    count(*)                                 as n_runs,
    count(distinct sweep_id)                 as n_sweeps,
    sum(n_requests)                          as n_requests,
    sum(n_errors)                            as n_errors,
    avg(response_p50_ms)                     as response_p50_ms,
    avg(response_p90_ms)                     as response_p90_ms,
    stddev_samp(response_p90_ms)             as response_p90_stddev_ms,
    {{ t_critical_95('count(*) - 1') }} * stddev_samp(response_p90_ms) / sqrt(count(*))
                                             as response_p90_ci95_ms,
    min(started_at)                          as first_started_at,
    max(started_at)                          as last_started_at
from runs
group by all
