-- HTTP response time of each CNI/mode against the host-network baseline with identical substrate, distribution,
-- netem, tuning, service, path, placement and payload (status = 'ok' AND is_valid runs). Per side: n runs, the mean
-- over runs of each run's p50/p90 and its 95% CI (Student t), and the load generator's time resolution.
--   response_pXX_diff_ms = cni - host; response_pXX_overhead_pct = (cni - host) / host * 100 (positive = slower
--   than host), null when the verdict is 'below resolution' (a difference the load generator cannot measure:
--   hey's 0.1 ms steps made every CNI "+20%" on the local testbed).
--   verdict (on the p90, as is_significant) and response_p50_verdict: 'baseline' (host row), 'below resolution'
--   (|cni - host| < the larger resolution_ms of the two sides), 'better' / 'worse' (95% intervals do not overlap;
--   lower latency = better), 'indistinguishable' (they overlap); null without a host baseline, or when a side has
--   fewer than 2 runs (no interval) and the difference is not below resolution.
-- Host rows kept (is_host_baseline, overheads 0, verdict 'baseline').
with {{ stats_and_host_ctes(ref('int_http__config_stats')) }}

select
    {{ cell_dimension_columns('stats.') }},
    stats.service,
    stats.path,
    stats.placement,
    stats.length_bytes,
    stats.cni = 'host'                      as is_host_baseline,
    stats.n_runs,
    stats.n_requests,
    stats.n_errors,
    stats.response_p50_ms,
    stats.response_p50_ci95_ms,
    stats.response_p90_ms,
    stats.response_p90_ci95_ms,
    stats.resolution_ms,
    stats.load_clients,
    host.n_runs                             as host_n_runs,
    host.response_p50_ms                    as host_response_p50_ms,
    host.response_p50_ci95_ms               as host_response_p50_ci95_ms,
    host.response_p90_ms                    as host_response_p90_ms,
    host.response_p90_ci95_ms               as host_response_p90_ci95_ms,
    host.resolution_ms                      as host_resolution_ms,
    stats.response_p50_ms - host.response_p50_ms as response_p50_diff_ms,
    stats.response_p90_ms - host.response_p90_ms as response_p90_diff_ms,
    {{ latency_verdict('stats', 'host', 'response_p50_ms', 'response_p50_ci95_ms') }}
                                            as response_p50_verdict,
    {{ latency_verdict('stats', 'host', 'response_p90_ms', 'response_p90_ci95_ms') }}
                                            as verdict,
    case when host.response_p50_ms > 0
              and response_p50_verdict is distinct from 'below resolution'
         then (stats.response_p50_ms - host.response_p50_ms) / host.response_p50_ms * 100
    end                                     as response_p50_overhead_pct,
    case when host.response_p90_ms > 0
              and verdict is distinct from 'below resolution'
         then (stats.response_p90_ms - host.response_p90_ms) / host.response_p90_ms * 100
    end                                     as response_p90_overhead_pct,
    case
        when stats.cni = 'host' then false
        else {{ significance('stats', 'host', 'response_p90_ms', 'response_p90_ci95_ms') }}
    end                                     as is_significant,
    {{ vs_host_tail(['service', 'path', 'placement', 'length_bytes']) }}
