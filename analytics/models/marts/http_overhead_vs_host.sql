-- HTTP response time of each CNI/mode against the host-network baseline with identical substrate, distribution,
-- netem, tuning, service, path, placement and payload (status = 'ok' runs). Means over runs of each run's p50/p90.
--   response_p90_overhead_pct = (cni - host) / host * 100 (positive = slower than host), same for p50.
-- Host rows kept (is_host_baseline, overheads 0).
with {{ stats_and_host_ctes(ref('int_http__config_stats')) }}

select
    stats.substrate,
    stats.distribution,
    stats.netem_scenario,
    stats.tuning_profile,
    stats.service,
    stats.path,
    stats.placement,
    stats.length_bytes,
    stats.cni,
    stats.cni_mode,
    stats.datapath,
    stats.cni = 'host'                      as is_host_baseline,
    stats.n_runs,
    stats.n_requests,
    stats.n_errors,
    stats.response_p50_ms,
    stats.response_p90_ms,
    stats.response_p90_ci95_ms,
    host.n_runs                             as host_n_runs,
    host.response_p50_ms                    as host_response_p50_ms,
    host.response_p90_ms                    as host_response_p90_ms,
    host.response_p90_ci95_ms               as host_response_p90_ci95_ms,
    case when host.response_p50_ms > 0
         then (stats.response_p50_ms - host.response_p50_ms) / host.response_p50_ms * 100
    end                                     as response_p50_overhead_pct,
    case when host.response_p90_ms > 0
         then (stats.response_p90_ms - host.response_p90_ms) / host.response_p90_ms * 100
    end                                     as response_p90_overhead_pct,
    case
        when stats.cni = 'host' then false
        else {{ significance('stats', 'host', 'response_p90_ms', 'response_p90_ci95_ms') }}
    end                                     as is_significant,
    stats.n_sweeps,
    stats.first_started_at,
    stats.last_started_at
from stats
left join host
    on  {{ host_match(['substrate', 'distribution', 'netem_scenario', 'tuning_profile',
                       'service', 'path', 'placement', 'length_bytes']) }}
