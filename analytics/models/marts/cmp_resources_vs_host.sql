-- Seed 004 Figures 1-2: mean CPU and RAM per CNI / mode and distribution, per workload, protocol, path and
-- placement, for each component (system / workload / cni): idle (before the workload) vs during the run,
-- next to the mean throughput of the same runs. Only status = 'ok' AND is_valid runs.
-- A component's figure per run is the sum over its names (e.g. iperf3-client + iperf3-server), then averaged
-- over runs. Host rows are included (cni = 'host', is_host_baseline) as the reference. *_ci95_*: half-width of the
-- 95% interval of the run-phase mean (Student t over the runs), null with fewer than 2 runs.
with per_run as (

    select
        run_id,
        {{ cell_dimension_columns() }},
        workload,
        protocol,
        path,
        placement,
        length_bytes,
        component,
        sum(cpu_idle_pct)               as cpu_idle_pct,
        sum(cpu_run_pct)                as cpu_run_pct,
        sum(cpu_delta_pct)              as cpu_delta_pct,
        sum(rss_idle_mb)                as rss_idle_mb,
        sum(rss_run_mb)                 as rss_run_mb,
        sum(rss_delta_mb)               as rss_delta_mb,
        any_value(throughput_mbps)      as throughput_mbps,
        string_agg(distinct name, ', ' order by name) as names
    from {{ ref('fct_resource_usage') }}
    where status = 'ok' and is_valid
      and intercluster = 'none'  -- one cluster: runs across an inter-cluster tool are compared in cmp_intercluster_vs_none
      and coalesce(service_proxy, 'default') = 'default'  -- testbed cells per service proxy are compared in cmp_service_proxies
      and {{ own_cores_only() }}  -- CPU-limited testbed cells are compared in cmp_dds_vs_host / cmp_iperf3_vs_host
    group by all

)

select
    {{ cell_dimension_columns() }},
    cni = 'host'                        as is_host_baseline,
    workload,
    protocol,
    path,
    placement,
    length_bytes,
    component,
    string_agg(distinct names, '; ')    as names,
    count(*)                            as n_runs,
    avg(cpu_idle_pct)                   as cpu_idle_pct,
    avg(cpu_run_pct)                    as cpu_run_pct,
    {{ t_critical_95('count(cpu_run_pct) - 1') }} * stddev_samp(cpu_run_pct) / sqrt(count(cpu_run_pct))
                                        as cpu_run_ci95_pct,
    avg(cpu_delta_pct)                  as cpu_delta_pct,
    avg(rss_idle_mb)                    as rss_idle_mb,
    avg(rss_run_mb)                     as rss_run_mb,
    {{ t_critical_95('count(rss_run_mb) - 1') }} * stddev_samp(rss_run_mb) / sqrt(count(rss_run_mb))
                                        as rss_run_ci95_mb,
    avg(rss_delta_mb)                   as rss_delta_mb,
    avg(throughput_mbps)                as throughput_mbps
from per_run
group by all
