-- Each CNI/mode against the host-network baseline under identical conditions: same substrate (never across
-- substrates), distribution, netem, tuning, and identical DDS parameters (mode, payload, reliability, transport,
-- subscribers, security, rate, placement) and CPU class (a CPU-limited CNI is compared with the equally limited
-- host). Discovery is NOT matched (the host may discover by multicast where a
-- CNI needs static peers); both sides' values are exposed (discovery, host_discovery).
--   latency_p90_overhead_pct = (cni - host) / host * 100  (Table II of seed 000: positive = slower than host)
--   throughput_overhead_pct  = (host - cni) / host * 100  (Table I: positive = less throughput than host)
-- Each overhead has *_overhead_ci95_pct, the half-width of its 95% interval: Welch's interval of the difference of
-- the two means over runs, divided by the host mean (the host mean's own uncertainty in the denominator is not
-- propagated), null when a side has fewer than 2 runs. verdict compares the mode's headline metric (latency p90 /
-- throughput) with the host by that interval, by the project's one rule (macros/verdict.sql): equivalent / better /
-- worse / inconclusive, 'n < 2', 'baseline' (host rows), null without a host baseline.
-- Host rows are kept (is_host_baseline, overheads 0), as in cmp_iperf3_vs_host.
{%- set match = ['dds_mode', 'length_bytes', 'reliability', 'transport', 'security', 'placement'] %}
{%- set null_safe_match = ['subscribers', 'rate', 'batching', 'ping_timeout_ms'] %}
with {{ stats_and_host_ctes(ref('int_dds__config_stats')) }},

runs as (

    select * from {{ ref('int_dds__comparable_runs') }}

),

pairs as (

    {{ round_pairs(match, null_safe_match, {'latency_p90': '@.latency_p90_us', 'throughput': '@.throughput_mbps'}) }}

)

select
    {{ cell_dimension_columns('stats.') }},
    stats.dds_mode,
    stats.batching,
    stats.length_bytes,
    stats.reliability,
    stats.transport,
    stats.subscribers,
    stats.security,
    stats.rate,
    stats.ping_timeout_ms,
    stats.placement,
    stats.cni = 'host'                      as is_host_baseline,
    stats.discovery,
    host.discovery                          as host_discovery,
    stats.n_runs,
    stats.n_low_headroom,
    host.n_runs                             as host_n_runs,
    host.n_low_headroom                     as host_n_low_headroom,

    -- latency mode
    stats.latency_p50_us,
    stats.latency_p50_ci95_us,
    stats.latency_p90_us,
    stats.latency_p99_us,
    stats.latency_p90_stddev_us,
    stats.latency_p90_ci95_us,
    host.latency_p50_us                     as host_latency_p50_us,
    host.latency_p90_us                     as host_latency_p90_us,
    host.latency_p99_us                     as host_latency_p99_us,
    host.latency_p90_stddev_us              as host_latency_p90_stddev_us,
    host.latency_p90_ci95_us                as host_latency_p90_ci95_us,
    case
        when host.latency_p90_us > 0
            then (stats.latency_p90_us - host.latency_p90_us) / host.latency_p90_us * 100
    end                                     as latency_p90_overhead_pct,
    {{ overhead_ci95_pct('latency_p90_us', 'latency_p90_stddev_us', 'latency_p90') }}
                                            as latency_p90_overhead_ci95_pct,

    -- throughput mode
    stats.throughput_mbps,
    stats.throughput_stddev_mbps,
    stats.throughput_ci95_mbps,
    stats.samples_per_s,
    stats.per_subscriber_mbps,
    stats.lost_samples,
    host.throughput_mbps                    as host_throughput_mbps,
    host.throughput_stddev_mbps             as host_throughput_stddev_mbps,
    host.throughput_ci95_mbps               as host_throughput_ci95_mbps,
    case
        when host.throughput_mbps > 0
            then (host.throughput_mbps - stats.throughput_mbps) / host.throughput_mbps * 100
    end                                     as throughput_overhead_pct,
    {{ overhead_ci95_pct('throughput_mbps', 'throughput_stddev_mbps', 'throughput') }}
                                            as throughput_overhead_ci95_pct,

    -- the verdict (macros/verdict.sql) on the mode's headline metric, latency p90 (lower = better) or throughput:
    -- equivalent / better / worse / inconclusive / 'n < 2'; 'baseline' on host rows, null without a host baseline
    case
        when stats.cni = 'host' then 'baseline'
        when stats.dds_mode = 'latency' and host.latency_p90_us is not null
            then {{ vs_host_verdict('latency_p90_us', 'latency_p90_stddev_us', 'false', 'latency', 'latency_p90') }}
        when stats.dds_mode = 'throughput' and host.throughput_mbps is not null
            then {{ vs_host_verdict('throughput_mbps', 'throughput_stddev_mbps', 'true', 'throughput', 'throughput') }}
    end                                     as verdict,
    case when stats.dds_mode = 'latency' then {{ verdict_margin_pct('latency') }}::double
         else {{ verdict_margin_pct('throughput') }}::double end as verdict_margin_pct,
    {{ vs_host_method() }}                  as verdict_method,
    pairs.n_pairs,
    pairs.latency_p90_pair_sd               as latency_p90_pair_sd_us,
    pairs.throughput_pair_sd                as throughput_pair_sd_mbps,
    case when stats.dds_mode = 'latency'
             then {{ vs_host_runs_to_decide('verdict', 'latency_p90_us', 'latency_p90_stddev_us', 'latency',
                                            'latency_p90') }}
         else {{ vs_host_runs_to_decide('verdict', 'throughput_mbps', 'throughput_stddev_mbps', 'throughput',
                                        'throughput') }}
    end                                     as runs_to_decide,

    stats.cpu_pub_pct,
    stats.rss_pub_mb,
    stats.cpu_sub_pct,
    stats.rss_sub_mb,
    {{ vs_host_tail(match, null_safe_match=null_safe_match) }}
{{ pairs_join(match, null_safe_match) }}
