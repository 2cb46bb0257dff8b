-- Each CNI/mode against the host-network baseline under identical conditions: same substrate (never across
-- substrates), distribution, netem, tuning, and identical DDS parameters (mode, payload, reliability, transport,
-- subscribers, security, rate, placement). Discovery is NOT matched (the host may discover by multicast where a
-- CNI needs static peers); both sides' values are exposed (discovery, host_discovery).
--   latency_p90_overhead_pct = (cni - host) / host * 100  (Table II of seed 000: positive = slower than host)
--   throughput_overhead_pct  = (host - cni) / host * 100  (Table I: positive = less throughput than host)
-- Host rows are kept (is_host_baseline, overheads 0), as in cni_overhead_vs_host.
with stats as (

    select * from {{ ref('int_dds__config_stats') }}

),

host as (

    select * from stats where cni = 'host'

)

select
    stats.substrate,
    stats.distribution,
    stats.netem_scenario,
    stats.tuning_profile,
    stats.dds_mode,
    stats.length_bytes,
    stats.reliability,
    stats.transport,
    stats.subscribers,
    stats.security,
    stats.rate,
    stats.placement,
    stats.cni,
    stats.cni_mode,
    stats.datapath,
    stats.cni = 'host'                      as is_host_baseline,
    stats.discovery,
    host.discovery                          as host_discovery,
    stats.n_runs,
    host.n_runs                             as host_n_runs,

    -- latency mode
    stats.latency_p50_us,
    stats.latency_p90_us,
    stats.latency_p99_us,
    stats.latency_p90_stddev_us,
    stats.latency_p90_ci95_us,
    host.latency_p50_us                     as host_latency_p50_us,
    host.latency_p90_us                     as host_latency_p90_us,
    host.latency_p99_us                     as host_latency_p99_us,
    host.latency_p90_ci95_us                as host_latency_p90_ci95_us,
    case
        when host.latency_p90_us > 0
            then (stats.latency_p90_us - host.latency_p90_us) / host.latency_p90_us * 100
    end                                     as latency_p90_overhead_pct,

    -- throughput mode
    stats.throughput_mbps,
    stats.throughput_stddev_mbps,
    stats.throughput_ci95_mbps,
    stats.samples_per_s,
    stats.per_subscriber_mbps,
    stats.lost_samples,
    host.throughput_mbps                    as host_throughput_mbps,
    host.throughput_ci95_mbps               as host_throughput_ci95_mbps,
    case
        when host.throughput_mbps > 0
            then (host.throughput_mbps - stats.throughput_mbps) / host.throughput_mbps * 100
    end                                     as throughput_overhead_pct,

    -- conservative, on the mode's headline metric (latency p90 / throughput): the two 95% intervals do not
    -- overlap; null without both intervals
    case
        when stats.cni = 'host' then false
        when stats.dds_mode = 'latency' then
            case when stats.latency_p90_ci95_us is null or host.latency_p90_ci95_us is null then null
                 else abs(stats.latency_p90_us - host.latency_p90_us)
                      > stats.latency_p90_ci95_us + host.latency_p90_ci95_us end
        else
            case when stats.throughput_ci95_mbps is null or host.throughput_ci95_mbps is null then null
                 else abs(host.throughput_mbps - stats.throughput_mbps)
                      > stats.throughput_ci95_mbps + host.throughput_ci95_mbps end
    end                                     as is_significant,

    stats.cpu_pub_pct,
    stats.rss_pub_mb,
    stats.cpu_sub_pct,
    stats.rss_sub_mb,
    stats.n_sweeps,
    stats.first_started_at,
    stats.last_started_at

from stats
left join host
    on  stats.substrate = host.substrate
    and stats.distribution = host.distribution
    and stats.netem_scenario = host.netem_scenario
    and stats.tuning_profile = host.tuning_profile
    and stats.dds_mode = host.dds_mode
    and stats.length_bytes = host.length_bytes
    and stats.reliability = host.reliability
    and stats.transport = host.transport
    and stats.subscribers is not distinct from host.subscribers
    and stats.security = host.security
    and stats.rate is not distinct from host.rate
    and stats.placement = host.placement
