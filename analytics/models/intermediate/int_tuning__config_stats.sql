-- Means per configuration for the tuning-efficiency comparison, over status = 'ok' AND is_valid runs only
-- (host included): iperf3 throughput, DDS throughput-mode throughput, and the p50 of DDS latency mode and of sockperf
-- request/response runs. tuning_mtu is the
-- pod MTU in force: tuning.mtu, or the top-level mtu for manifests without a tuning object. DDS parameters are
-- null for iperf3 rows (they are part of the grain for DDS rows).
with runs as (

    select * from {{ ref('int_runs__deduplicated') }}
    where status = 'ok' and is_valid and workload in ('iperf3', 'dds', 'sockperf')
      and coalesce(batching, 'on') = 'on'  -- DDS batching=off runs stay out of comparisons (see int_dds__config_stats)
      and intercluster = 'none'  -- one cluster: runs across an inter-cluster tool are compared in cmp_intercluster_vs_none
      and coalesce(service_proxy, 'default') = 'default'  -- testbed cells per service proxy are compared in cmp_service_proxies
      and {{ own_cores_only() }}  -- CPU-limited testbed cells are compared in cmp_dds_vs_host / cmp_iperf3_vs_host

)

select
    {{ cell_dimension_columns() }},
    coalesce(tuning_mtu, mtu)                as tuning_mtu,
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
    count(*)                                 as n_runs,
    avg(throughput_mbps)                     as throughput_mbps,
    stddev_samp(throughput_mbps)             as throughput_stddev_mbps,
    avg(latency_p50_us)                      as latency_p50_us,
    stddev_samp(latency_p50_us)              as latency_p50_stddev_us,
    min(started_at)                          as first_started_at,
    max(started_at)                          as last_started_at
from runs
group by all
