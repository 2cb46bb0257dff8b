-- Each CNI/mode against the host-network baseline measured under identical conditions: same substrate (local
-- results are never compared with cluster results), distribution, netem, tuning, protocol, path, placement and
-- length, and CPU class (none, or a CPU-limited emulation of edge hardware on the testbed).
-- overhead_pct = (host - cni) / host * 100, as Table I of the seed paper: positive = slower than host.
-- Host rows are kept (is_host_baseline, overhead_pct = 0) so one table feeds charts with the baseline bar;
-- filter on is_host_baseline = false for CNI-only aggregates.
{%- set match = ['protocol', 'path', 'placement', 'length_bytes'] %}
{%- set null_safe_match = ['duration_s', 'iperf3_bitrate'] %}
with {{ stats_and_host_ctes(ref('int_iperf3__throughput_stats')) }},

runs as (

    select * from {{ ref('int_iperf3__comparable_runs') }}

),

pairs as (

    {{ round_pairs(match, null_safe_match, {'throughput': '@.throughput_mbps'}) }}

)

select
    {{ cell_dimension_columns('stats.') }},
    stats.protocol,
    stats.path,
    stats.placement,
    stats.length_bytes,
    stats.duration_s,
    stats.iperf3_bitrate,
    stats.cni = 'host'                      as is_host_baseline,
    stats.n_runs,
    stats.throughput_mbps,
    stats.throughput_stddev_mbps,
    stats.throughput_ci95_mbps,
    stats.n_low_headroom,
    host.n_runs                             as host_n_runs,
    host.n_low_headroom                     as host_n_low_headroom,
    host.throughput_mbps                    as host_throughput_mbps,
    host.throughput_stddev_mbps             as host_throughput_stddev_mbps,
    host.throughput_ci95_mbps               as host_throughput_ci95_mbps,
    case
        when host.throughput_mbps > 0
            then (host.throughput_mbps - stats.throughput_mbps) / host.throughput_mbps * 100
    end                                     as overhead_pct,
    -- the verdict (macros/verdict.sql): equivalent / better / worse / inconclusive / 'n < 2'; baseline on host rows,
    -- null without a host baseline; the CI of the difference, its margin and the runs that would decide it
    {{ vs_host_interval('throughput_stddev_mbps', 'throughput') }}
                                            as throughput_diff_ci95_mbps,
    case
        when stats.cni = 'host' then 'baseline'
        when host.throughput_mbps is not null
            then {{ vs_host_verdict('throughput_mbps', 'throughput_stddev_mbps', 'true', 'throughput', 'throughput') }}
    end                                     as verdict,
    {{ verdict_margin_pct('throughput') }}::double as verdict_margin_pct,
    {{ vs_host_method() }}                  as verdict_method,
    pairs.n_pairs,
    pairs.throughput_pair_sd                as throughput_pair_sd_mbps,
    {{ vs_host_runs_to_decide('verdict', 'throughput_mbps', 'throughput_stddev_mbps', 'throughput', 'throughput') }}
                                            as runs_to_decide,
    {{ vs_host_tail(match, null_safe_match=null_safe_match) }}
{{ pairs_join(match, null_safe_match) }}
