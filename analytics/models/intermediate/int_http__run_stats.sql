-- Response-time statistics per HTTP run, computed from its requests (not copied from the manifest).
-- Percentiles: quantile_cont (linear interpolation between closest ranks, numpy's default) over the successful
-- (2xx) requests only; errors are counted in n_errors instead of lending their (often short) time.
select
    run_id,
    count(*)                                                            as n_requests,
    count(*) filter (where is_error)                                    as n_errors,
    avg(response_ms) filter (where not is_error)                        as response_mean_ms,
    quantile_cont(response_ms, 0.50) filter (where not is_error)        as response_p50_ms,
    quantile_cont(response_ms, 0.90) filter (where not is_error)        as response_p90_ms,
    quantile_cont(response_ms, 0.95) filter (where not is_error)        as response_p95_ms,
    quantile_cont(response_ms, 0.99) filter (where not is_error)        as response_p99_ms,
    max(response_ms) filter (where not is_error)                        as response_max_ms,
    min(response_ms) filter (where not is_error)                        as response_min_ms
from {{ ref('int_http__requests') }}
group by run_id
