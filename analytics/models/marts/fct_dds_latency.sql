-- One row per DDS latency run (ddsperf ping/pong, RTT/2), every status: failed and unsupported runs stay
-- visible with null metrics and their error / reason.
select
    {{ run_attribute_columns() }},
    protocol,
    path,
    placement,
    length_bytes,
    duration_s,
    repetition,
    {{ dds_parameter_columns() }},
    latency_mean_us,
    latency_min_us,
    latency_p50_us,
    latency_p90_us,
    latency_p99_us,
    latency_max_us,
    latency_count,
    cpu_pub_pct,
    rss_pub_mb,
    cpu_sub_pct,
    rss_sub_mb,
    n_samples,
    {{ run_outcome_columns() }}
from {{ ref('int_dds__runs') }}
where dds_mode = 'latency'
