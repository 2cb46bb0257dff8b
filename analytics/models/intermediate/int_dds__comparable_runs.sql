-- The DDS runs the comparisons use (int_dds__config_stats, the round pairs of cmp_dds_vs_host): ok and valid, in
-- one cluster, on the default service proxy; batched and unbatched (dds-batching) runs alike: batching is part of
-- every DDS comparison's grain, so they never pool.
select * from {{ ref('int_dds__runs') }}
where status = 'ok' and is_valid  -- invalid runs (readback mismatch) stay out of comparisons
  and intercluster = 'none'  -- one cluster: runs across an inter-cluster tool are compared in cmp_intercluster_vs_none
  and coalesce(service_proxy, 'default') = 'default'  -- cells per service proxy: the same pod-to-pod datapath again
