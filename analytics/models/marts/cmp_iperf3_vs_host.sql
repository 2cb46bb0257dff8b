-- Each CNI/mode against the host-network baseline measured under identical conditions: same substrate (local
-- results are never compared with cluster results), distribution, netem, tuning, protocol, path, placement and
-- length, and CPU class (none, or a CPU-limited emulation of edge hardware on the testbed).
-- overhead_pct = (host - cni) / host * 100, as Table I of the seed paper: positive = slower than host.
-- Host rows are kept (is_host_baseline, overhead_pct = 0) so one table feeds charts with the baseline bar;
-- filter on is_host_baseline = false for CNI-only aggregates.
with {{ stats_and_host_ctes(ref('int_iperf3__throughput_stats')) }}

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
    host.n_runs                             as host_n_runs,
    host.throughput_mbps                    as host_throughput_mbps,
    host.throughput_ci95_mbps               as host_throughput_ci95_mbps,
    case
        when host.throughput_mbps > 0
            then (host.throughput_mbps - stats.throughput_mbps) / host.throughput_mbps * 100
    end                                     as overhead_pct,
    -- conservative: significant only when the two 95% intervals do not overlap; null without both intervals
    case
        when stats.cni = 'host' then false
        else {{ significance('stats', 'host', 'throughput_mbps', 'throughput_ci95_mbps') }}
    end                                     as is_significant,
    {{ vs_host_tail(['protocol', 'path', 'placement', 'length_bytes'],
                    null_safe_match=['duration_s', 'iperf3_bitrate']) }}
