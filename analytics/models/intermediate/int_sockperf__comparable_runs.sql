-- The sockperf request/response runs the comparisons use (int_sockperf__latency_stats, the round pairs of
-- cmp_sockperf_vs_host): ok and valid, in one cluster, on the default service proxy.
select * from {{ ref('int_runs__deduplicated') }}
where workload = 'sockperf' and status = 'ok' and is_valid  -- invalid runs (readback mismatch) stay out of comparisons
  and intercluster = 'none'  -- one cluster: runs across an inter-cluster tool are compared in cmp_intercluster_vs_none
  and coalesce(service_proxy, 'default') = 'default'  -- testbed cells per service proxy are compared in cmp_service_proxies
