-- One row per DDS latency run (ddsperf ping/pong, RTT/2), every status: failed and unsupported runs stay
-- visible with null metrics and their error / reason.
select
    {{ dds_run_mart_columns(['latency_mean_us', 'latency_min_us', 'latency_p50_us', 'latency_p90_us', 'latency_p99_us',
                             'latency_max_us', 'latency_count']) }}
from {{ ref('int_dds__runs') }}
where dds_mode = 'latency'
