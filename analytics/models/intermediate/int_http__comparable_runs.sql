-- The HTTP runs the comparisons use (int_http__config_stats, the round pairs of cmp_http_vs_host): ok and valid,
-- in one cluster, on the default service proxy, on the machine's own cores, with a p90.
-- the run's response-time statistics from its requests (int_http__run_stats), never from a mart
select runs.*, stats.n_requests, stats.n_errors, stats.response_p50_ms, stats.response_p90_ms
from {{ ref('int_runs__deduplicated') }} as runs
inner join {{ ref('int_http__run_stats') }} as stats using (run_id)
where runs.workload = 'http' and runs.status = 'ok' and runs.is_valid  -- invalid runs stay out of comparisons
  and runs.intercluster = 'none'  -- one cluster: runs across an inter-cluster tool are compared in cmp_intercluster_vs_none
  and coalesce(runs.service_proxy, 'default') = 'default'  -- testbed cells per service proxy are compared in cmp_service_proxies
  and {{ own_cores_only('runs.') }}  -- CPU-limited testbed cells are compared in cmp_dds_vs_host / cmp_iperf3_vs_host
  and stats.response_p90_ms is not null
