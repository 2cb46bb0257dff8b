-- Throughput statistics per comparable configuration, over successful iperf3 runs only (host included).
with runs as (

    select * from {{ ref('int_iperf3__comparable_runs') }}

)

select
    -- the CPU class among them: none, or a CPU-limited emulation of edge hardware (compared with the host under the
    -- same class)
    {{ cell_dimension_columns() }},
    protocol,
    path,
    placement,
    length_bytes,
    duration_s,
    iperf3_bitrate,
    count(*)                                 as n_runs,
    count(*) filter (where low_cpu_headroom) as n_low_headroom,
    count(distinct sweep_id)                 as n_sweeps,
    avg(throughput_mbps)                     as throughput_mbps,
    stddev_samp(throughput_mbps)             as throughput_stddev_mbps,
    {{ t_critical_95('count(*) - 1') }} * stddev_samp(throughput_mbps) / sqrt(count(*))
                                             as throughput_ci95_mbps,
    min(started_at)                          as first_started_at,
    max(started_at)                          as last_started_at
from runs
group by all
