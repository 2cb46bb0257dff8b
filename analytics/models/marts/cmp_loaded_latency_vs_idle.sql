-- Latency under load: each CNI mode's probe latency (DDS ping/pong or HTTP request/response, µs) with a bulk
-- TCP flow sharing the path, against the same probe idle, over the successful and valid runs of each side.
--   *_inflation_us  = loaded - idle (mean over runs of each run's percentile); positive = slower under load
--   *_inflation_ci95_us: half-width of Welch's 95% interval of that difference
--   *_verdict: the project's one rule (macros/verdict.sql), loaded against idle, lower = better: equivalent /
--   better / worse / inconclusive, 'n < 2' below 2 runs a side; the margin never below the probe's resolution. host_* = the host-network baseline's inflation under the same conditions (is_host_baseline rows).
with runs as (

    select
        {{ cell_dimension_columns('runs.') }}, runs.placement, runs.length_bytes,
        probe.probe, probe.load, probe.probe_p50_us, probe.probe_p99_us, probe.bulk_sent_mbps, probe.resolution_us
    from {{ ref('int_runs__deduplicated') }} as runs
    join {{ ref('stg_edgebench__loaded_latency') }} as probe using (raw_key)
    where runs.status = 'ok' and runs.is_valid
      and runs.intercluster = 'none'  -- one cluster: runs across an inter-cluster tool are compared in cmp_intercluster_vs_none
      and coalesce(runs.service_proxy, 'default') = 'default'  -- testbed cells per service proxy are compared in cmp_service_proxies
      and {{ own_cores_only('runs.') }}  -- CPU-limited testbed cells are compared in cmp_dds_vs_host / cmp_iperf3_vs_host

),

per_load as (

    select
        {{ cell_dimension_columns() }}, placement, length_bytes,
        probe, load,
        count(*)                        as n_runs,
        avg(probe_p50_us)               as p50_us,
        stddev_samp(probe_p50_us)       as p50_sd,
        avg(probe_p99_us)               as p99_us,
        stddev_samp(probe_p99_us)       as p99_sd,
        avg(bulk_sent_mbps)             as bulk_sent_mbps,
        max(resolution_us)              as resolution_us
    from runs
    group by all

),

paired as (

    select
        {{ cell_dimension_columns('idle.') }}, idle.placement, idle.length_bytes, idle.probe,
        idle.cni = 'host'                                   as is_host_baseline,
        idle.n_runs                                         as idle_n_runs,
        loaded.n_runs                                       as loaded_n_runs,
        idle.p50_us                                         as idle_p50_us,
        loaded.p50_us                                       as loaded_p50_us,
        idle.p99_us                                         as idle_p99_us,
        loaded.p99_us                                       as loaded_p99_us,
        loaded.bulk_sent_mbps,
        greatest(idle.resolution_us, loaded.resolution_us)  as resolution_us,
        loaded.p50_us - idle.p50_us                         as p50_inflation_us,
        loaded.p99_us - idle.p99_us                         as p99_inflation_us,
        {{ welch_ci95('loaded.n_runs', 'loaded.p50_sd', 'idle.n_runs', 'idle.p50_sd') }} as p50_inflation_ci95_us,
        {{ welch_ci95('loaded.n_runs', 'loaded.p99_sd', 'idle.n_runs', 'idle.p99_sd') }} as p99_inflation_ci95_us
    from per_load as idle
    join per_load as loaded
        on  loaded.load = 'bulk'
        -- null-safe, as the group by of per_load
        and {{ columns_match('idle', 'loaded', cell_dimension_list() + ['placement', 'length_bytes', 'probe'],
                             null_safe=true, indent='\n        ') }}
    where idle.load = 'idle'

),

judged as (

    select
        *,
        {{ verdict('p50_inflation_us', 'p50_inflation_ci95_us', 'loaded_n_runs', 'idle_n_runs', 'idle_p50_us',
                   'false', 'latency', 'resolution_us') }}  as p50_verdict,
        {{ verdict('p99_inflation_us', 'p99_inflation_ci95_us', 'loaded_n_runs', 'idle_n_runs', 'idle_p99_us',
                   'false', 'latency', 'resolution_us') }}  as p99_verdict,
        {{ verdict_margin_pct('latency') }}::double   as verdict_margin_pct,
        'welch'                                         as verdict_method,
        {{ runs_to_decide(verdict('p99_inflation_us', 'p99_inflation_ci95_us', 'loaded_n_runs', 'idle_n_runs',
                                  'idle_p99_us', 'false', 'latency', 'resolution_us'),
                          'p99_inflation_us', 'p99_inflation_ci95_us', 'least(loaded_n_runs, idle_n_runs)',
                          'idle_p99_us', 'latency', 'resolution_us') }} as p99_runs_to_decide,
        case when idle_p99_us > 0 then p99_inflation_us / idle_p99_us * 100 end as p99_inflation_pct
    from paired

)

select
    judged.*,
    host.p99_inflation_us                               as host_p99_inflation_us,
    host.p99_inflation_ci95_us                          as host_p99_inflation_ci95_us
from judged
left join judged as host
    on  host.is_host_baseline
    and {{ columns_match('judged', 'host', host_match_dimensions(), null_safe=true) }}
    and {{ columns_match('judged', 'host', ['placement', 'length_bytes', 'probe']) }}
