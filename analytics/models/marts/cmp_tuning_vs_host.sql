-- Tuning efficiency (seed 003): each CNI/mode as a percentage of the physical/host baseline measured under the
-- same tuning profile, MTU and packet size, and otherwise identical conditions (substrate, distribution, netem,
-- workload, protocol, path, placement, length, DDS parameters). Only status = 'ok' AND is_valid runs.
--   throughput_efficiency_pct = cni / host * 100   (iperf3; DDS throughput mode)
--   latency_efficiency_pct    = host / cni * 100   (DDS latency mode and sockperf request/response, on the p50)
-- 100 = as good as the host, lower = worse. *_efficiency_ci95_pct: half-width of the 95% interval in percentage
-- points, Welch's interval of cni - host over the denominator's mean (its own uncertainty not propagated), null when
-- a side has fewer than 2 runs; *_ci95_* of the means: Student t over the runs. MTU: a CNI's pod MTU is the link MTU minus its encapsulation, so the
-- host baseline is the host configuration with the smallest MTU >= the CNI's (1450 -> 1500, 8950 -> 9000, a
-- routed 1500 -> 1500); host_tuning_mtu shows which. Host rows are kept (is_host_baseline, 100 %).
with {{ stats_and_host_ctes(ref('int_tuning__config_stats')) }},

matched as (

    select
        stats.*,
        host.tuning_mtu                     as host_tuning_mtu,
        host.n_runs                         as host_n_runs,
        host.throughput_mbps                as host_throughput_mbps,
        host.throughput_stddev_mbps         as host_throughput_stddev_mbps,
        host.latency_p50_us                 as host_latency_p50_us,
        host.latency_p50_stddev_us          as host_latency_p50_stddev_us
    from stats
    left join host
        on  {{ host_match(host_match_dimensions(), null_safe=true) }}
        and {{ host_match(['workload']) }}
        -- workload parameters, null where they do not apply (e.g. the DDS parameters of iperf3 rows)
        and {{ host_match(['protocol', 'path', 'placement', 'length_bytes', 'duration_s', 'dds_mode', 'reliability',
                           'transport', 'subscribers', 'security', 'rate', 'ping_timeout_ms'], null_safe=true) }}
        and (host.tuning_mtu >= stats.tuning_mtu or (host.tuning_mtu is null and stats.tuning_mtu is null))
    -- the nearest host MTU at or above the CNI's
    qualify row_number() over (
        partition by {{ cell_dimension_columns('stats.') }}, stats.tuning_mtu, stats.workload, stats.protocol,
                     stats.path, stats.placement, stats.length_bytes, stats.duration_s, stats.dds_mode,
                     stats.reliability, stats.transport, stats.subscribers, stats.security, stats.rate,
                     stats.ping_timeout_ms
        order by host.tuning_mtu asc nulls last
    ) = 1

)

select
    {{ cell_dimension_columns() }},
    tuning_mtu,
    workload,
    protocol,
    path,
    placement,
    length_bytes,
    duration_s,
    dds_mode,
    reliability,
    transport,
    subscribers,
    security,
    rate,
    ping_timeout_ms,
    cni = 'host'                            as is_host_baseline,
    n_runs,
    throughput_mbps,
    {{ t_critical_95('n_runs - 1') }} * throughput_stddev_mbps / sqrt(n_runs) as throughput_ci95_mbps,
    latency_p50_us,
    {{ t_critical_95('n_runs - 1') }} * latency_p50_stddev_us / sqrt(n_runs) as latency_p50_ci95_us,
    host_tuning_mtu,
    host_n_runs,
    host_throughput_mbps,
    host_latency_p50_us,
    case when host_throughput_mbps > 0
         then throughput_mbps / host_throughput_mbps * 100 end  as throughput_efficiency_pct,
    case when latency_p50_us > 0
         then host_latency_p50_us / latency_p50_us * 100 end    as latency_efficiency_pct,
    case when host_throughput_mbps > 0
         then {{ welch_ci95('n_runs', 'throughput_stddev_mbps', 'host_n_runs', 'host_throughput_stddev_mbps') }}
              / host_throughput_mbps * 100 end                   as throughput_efficiency_ci95_pct,
    case when latency_p50_us > 0
         then {{ welch_ci95('n_runs', 'latency_p50_stddev_us', 'host_n_runs', 'host_latency_p50_stddev_us') }}
              / latency_p50_us * 100 end                         as latency_efficiency_ci95_pct,
    first_started_at,
    last_started_at
from matched
