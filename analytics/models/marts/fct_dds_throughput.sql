-- One row per DDS throughput run (ddsperf pub/sub), every status: failed and unsupported runs stay visible with
-- null metrics and their error / reason.
select
    {{ dds_run_mart_columns(['samples_per_s', 'throughput_mbps', 'per_subscriber_mbps', 'lost_samples']) }}
from {{ ref('int_dds__runs') }}
where dds_mode = 'throughput'
