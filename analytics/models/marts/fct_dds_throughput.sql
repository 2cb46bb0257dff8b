-- One row per DDS throughput run (ddsperf pub/sub), every status: failed and unsupported runs stay visible with
-- null metrics and their error / reason.
select
    {{ run_attribute_columns() }},
    protocol,
    path,
    placement,
    length_bytes,
    duration_s,
    repetition,
    {{ dds_parameter_columns() }},
    samples_per_s,
    throughput_mbps,
    per_subscriber_mbps,
    lost_samples,
    cpu_pub_pct,
    rss_pub_mb,
    cpu_sub_pct,
    rss_sub_mb,
    n_samples,
    {{ run_outcome_columns() }}
from {{ ref('int_dds__runs') }}
where dds_mode = 'throughput'
