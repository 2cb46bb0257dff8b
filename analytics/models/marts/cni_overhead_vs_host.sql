-- Each CNI/mode against the host-network baseline measured under identical conditions: same substrate (local
-- results are never compared with cluster results), distribution, netem, tuning, protocol, path, placement and
-- length. overhead_pct = (host - cni) / host * 100, as Table I of the seed paper: positive = slower than host.
-- Host rows are kept (is_host_baseline, overhead_pct = 0) so one table feeds charts with the baseline bar;
-- filter on is_host_baseline = false for CNI-only aggregates.
with stats as (

    select * from {{ ref('int_iperf3__throughput_stats') }}

),

host as (

    select * from stats where cni = 'host'

)

select
    stats.substrate,
    stats.distribution,
    stats.netem_scenario,
    stats.tuning_profile,
    stats.protocol,
    stats.path,
    stats.placement,
    stats.length_bytes,
    stats.duration_s,
    stats.iperf3_bitrate,
    stats.cni,
    stats.cni_mode,
    stats.datapath,
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
        when stats.throughput_ci95_mbps is null or host.throughput_ci95_mbps is null then null
        else abs(host.throughput_mbps - stats.throughput_mbps)
             > stats.throughput_ci95_mbps + host.throughput_ci95_mbps
    end                                     as is_significant,
    stats.n_sweeps,
    stats.first_started_at,
    stats.last_started_at

from stats
left join host
    on  stats.substrate = host.substrate
    and stats.distribution = host.distribution
    and stats.netem_scenario = host.netem_scenario
    and stats.tuning_profile = host.tuning_profile
    and stats.protocol = host.protocol
    and stats.path = host.path
    and stats.placement = host.placement
    and stats.length_bytes = host.length_bytes
    and stats.duration_s is not distinct from host.duration_s          -- identical workload parameters
    and stats.iperf3_bitrate is not distinct from host.iperf3_bitrate
