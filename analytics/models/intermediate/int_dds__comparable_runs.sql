-- The DDS runs the comparisons use (int_dds__config_stats, the round pairs of cmp_dds_vs_host): ok and valid, in
-- one cluster, on the default service proxy.
select * from {{ ref('int_dds__runs') }}
where status = 'ok' and is_valid  -- invalid runs (readback mismatch) stay out of comparisons
  and intercluster = 'none'  -- one cluster: runs across an inter-cluster tool are compared in cmp_intercluster_vs_none
  and coalesce(service_proxy, 'default') = 'default'  -- cells per service proxy: the same pod-to-pod datapath again
  and batching = 'on'  -- batching=off runs (dds-batching) are per-run rows in the fct marts only, until the
                       -- comparisons carry batching in their grain: here they would pool with batched runs
