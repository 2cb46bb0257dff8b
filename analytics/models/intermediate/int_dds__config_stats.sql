-- DDS statistics per comparable configuration over status = 'ok' runs (host included): the environment
-- (substrate, distribution, netem, tuning, cni/mode/datapath) and every DDS parameter except discovery.
-- Discovery is not part of the grain: it follows from the datapath (static peers where there is no multicast),
-- so the host baseline and a CNI legitimately differ in it; it is exposed as the distinct values seen.
with runs as (

    select * from {{ ref('int_dds__comparable_runs') }}

)

select
    -- the CPU class among them: none, or a CPU-limited emulation of edge hardware (compared with the host under the
    -- same class)
    {{ cell_dimension_columns() }},
    dds_mode,
    batching,  -- Cyclone's message packing (on: ddsperf's own; off: one sample per RTPS message)
    length_bytes,
    reliability,
    transport,
    subscribers,
    security,
    rate,
    ping_timeout_ms,  -- latency runs: the pinger's wait for a lost answer (null for throughput runs)
    placement,
    string_agg(distinct discovery, ', ' order by discovery) as discovery,
    count(*)                                 as n_runs,
    count(*) filter (where low_cpu_headroom) as n_low_headroom,
    count(distinct sweep_id)                 as n_sweeps,
    -- latency mode (means over runs of each run's whole-run percentile)
    avg(latency_p50_us)                      as latency_p50_us,
    stddev_samp(latency_p50_us)              as latency_p50_stddev_us,
    {{ t_critical_95('count(latency_p50_us) - 1') }} * stddev_samp(latency_p50_us) / sqrt(count(latency_p50_us))
                                             as latency_p50_ci95_us,
    avg(latency_p90_us)                      as latency_p90_us,
    avg(latency_p99_us)                      as latency_p99_us,
    stddev_samp(latency_p90_us)              as latency_p90_stddev_us,
    {{ t_critical_95('count(latency_p90_us) - 1') }} * stddev_samp(latency_p90_us) / sqrt(count(latency_p90_us))
                                             as latency_p90_ci95_us,
    -- throughput mode
    avg(throughput_mbps)                     as throughput_mbps,
    stddev_samp(throughput_mbps)             as throughput_stddev_mbps,
    {{ t_critical_95('count(throughput_mbps) - 1') }} * stddev_samp(throughput_mbps) / sqrt(count(throughput_mbps))
                                             as throughput_ci95_mbps,
    avg(samples_per_s)                       as samples_per_s,
    avg(per_subscriber_mbps)                 as per_subscriber_mbps,
    avg(lost_samples)                        as lost_samples,
    -- both modes
    avg(cpu_pub_pct)                         as cpu_pub_pct,
    avg(rss_pub_mb)                          as rss_pub_mb,
    avg(cpu_sub_pct)                         as cpu_sub_pct,
    avg(rss_sub_mb)                          as rss_sub_mb,
    min(started_at)                          as first_started_at,
    max(started_at)                          as last_started_at
from runs
group by all
