-- TCP/UDP request/response latency (sockperf ping-pong, one message in flight; latency = half the round trip) of
-- each CNI/mode against the host-network baseline under identical conditions: same substrate, distribution, netem,
-- tuning, CPU class, protocol, path, placement, message size and run length.
--   latency_p50_overhead_pct = (cni - host) / host * 100: positive = slower than the host network.
-- latency_p50_overhead_ci95_pct is the half-width of its 95% interval (paired by round where both sides ran in the
-- same rounds, else Welch's) over the host mean; verdict is the project's one rule (macros/verdict.sql) on the p50,
-- lower = better: equivalent / better / worse / inconclusive / 'n < 2', 'baseline' on host rows, null without one.
{%- set match = ['protocol', 'path', 'placement', 'length_bytes'] %}
{%- set null_safe_match = ['duration_s'] %}
with {{ stats_and_host_ctes(ref('int_sockperf__latency_stats')) }},

runs as (

    select * from {{ ref('int_sockperf__comparable_runs') }}

),

pairs as (

    {{ round_pairs(match, null_safe_match, {'latency_p50': '@.latency_p50_us'}) }}

)

select
    {{ cell_dimension_columns('stats.') }},
    stats.protocol,
    stats.path,
    stats.placement,
    stats.length_bytes,
    stats.duration_s,
    stats.cni = 'host'                      as is_host_baseline,
    stats.n_runs,
    stats.latency_p50_us,
    stats.latency_p50_stddev_us,
    stats.latency_p50_ci95_us,
    stats.latency_p90_us,
    stats.latency_p99_us,
    stats.latency_mean_us,
    host.n_runs                             as host_n_runs,
    host.latency_p50_us                     as host_latency_p50_us,
    host.latency_p50_stddev_us              as host_latency_p50_stddev_us,
    host.latency_p50_ci95_us                as host_latency_p50_ci95_us,
    host.latency_p99_us                     as host_latency_p99_us,
    case
        when host.latency_p50_us > 0
            then (stats.latency_p50_us - host.latency_p50_us) / host.latency_p50_us * 100
    end                                     as latency_p50_overhead_pct,
    {{ overhead_ci95_pct('latency_p50_us', 'latency_p50_stddev_us', 'latency_p50') }}
                                            as latency_p50_overhead_ci95_pct,
    case
        when stats.cni = 'host' then 'baseline'
        when host.latency_p50_us is not null
            then {{ vs_host_verdict('latency_p50_us', 'latency_p50_stddev_us', 'false', 'latency', 'latency_p50') }}
    end                                     as verdict,
    {{ verdict_margin_pct('latency') }}::double as verdict_margin_pct,
    {{ vs_host_method() }}                  as verdict_method,
    pairs.n_pairs,
    pairs.latency_p50_pair_sd               as latency_p50_pair_sd_us,
    {{ vs_host_runs_to_decide('verdict', 'latency_p50_us', 'latency_p50_stddev_us', 'latency', 'latency_p50') }}
                                            as runs_to_decide,
    {{ vs_host_tail(match, null_safe_match=null_safe_match) }}
{{ pairs_join(match, null_safe_match) }}
