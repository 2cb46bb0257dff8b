-- One row per iperf3 run, every status: failed and unsupported runs stay visible (metrics null, reason in error).
select
    {{ run_attribute_columns() }},
    service_proxy,
    service_proxy_mode,
    protocol,
    path,
    placement,
    length_bytes,
    duration_s,
    iperf3_bitrate,
    repetition,
    throughput_mbps,
    sent_mbps,
    received_mbps,
    retransmits,
    jitter_ms,
    lost_packets,
    lost_percent,
    cpu_host_pct,
    cpu_remote_pct,
    mean_rtt_us,
    {{ run_outcome_columns() }}
from {{ ref('int_runs__deduplicated') }}
where workload = 'iperf3'
