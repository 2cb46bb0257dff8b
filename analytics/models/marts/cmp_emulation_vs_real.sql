-- How far the testbed's emulation is from the real CNIs: for every CNI mode measured both on the local
-- namespace testbed (substrate = local) and on a real cluster (substrate = ssh) under the same conditions
-- (workload, metric, protocol, path, placement, size and every cell dimension), the ratio
-- testbed / real of the mean with its 95% interval (Welch on the log of the means: the delta method).
-- Verdict, with a +-10 % band around 1: "model holds" when the whole interval lies inside the band; "model
-- differs" when the interval lies outside the band or excludes 1 and reaches beyond it (the size is the ratio);
-- "inconclusive" otherwise. Host-network rows compare the testbed's host baseline with the cluster's.
-- The configuration is every cell dimension (macros/cell_dimensions.sql) but the substrate and the distribution
-- (the testbed runs no distribution: the real side's is kept in real_distributions).
{%- set dims = cell_dimension_list() | reject('in', ['substrate', 'distribution']) | list %}
with metrics as (

    select {{ cell_dimension_columns() }},
           'iperf3' as workload, 'throughput_mbps' as metric, protocol, path, placement, length_bytes,
           throughput_mbps as value, sweep_id
    from {{ ref('fct_iperf3_runs') }}
    where status = 'ok' and is_valid and intercluster = 'none'
    union all
    select {{ cell_dimension_columns() }},
           'dds', 'latency_p50_us', protocol, path, placement, length_bytes, latency_p50_us, sweep_id
    from {{ ref('fct_dds_latency') }}
    where status = 'ok' and is_valid and intercluster = 'none'
    union all
    select {{ cell_dimension_columns() }},
           'dds', 'throughput_mbps', protocol, path, placement, length_bytes, throughput_mbps, sweep_id
    from {{ ref('fct_dds_throughput') }}
    where status = 'ok' and is_valid and intercluster = 'none'
    union all
    select {{ cell_dimension_columns() }},
           'http', 'response_p50_ms', 'http', path, placement, length_bytes, response_p50_ms, sweep_id
    from {{ ref('fct_http_runs') }}
    where status = 'ok' and is_valid and intercluster = 'none'

), stats as (

    select substrate, {{ column_list(dims) }}, workload, metric, protocol, path, placement, length_bytes,
           string_agg(distinct distribution, ',' order by distribution) as distributions,
           count(*) as n, avg(value) as mean, stddev_samp(value) as sd
    from metrics
    where value is not null and substrate in ('local', 'ssh')
    group by all

), paired as (

    select {{ column_list(dims, 't.') }}, t.workload, t.metric, t.protocol,
           t.path, t.placement, t.length_bytes, r.distributions as real_distributions,
           t.n as testbed_n, t.mean as testbed_mean, t.sd as testbed_sd,
           r.n as real_n, r.mean as real_mean, r.sd as real_sd,
           -- variance of the log of each mean (delta method), and Welch's degrees of freedom on them
           power(t.sd / t.mean, 2) / t.n as vt,
           power(r.sd / r.mean, 2) / r.n as vr
    from stats t
    join stats r
      on  t.substrate = 'local' and r.substrate = 'ssh'
      and {{ columns_match('t', 'r', dims, null_safe=true, indent='\n      ') }}
      and t.workload = r.workload and t.metric = r.metric
      and t.protocol = r.protocol and t.path = r.path and t.placement = r.placement
      and t.length_bytes is not distinct from r.length_bytes
    where t.mean > 0 and r.mean > 0 and t.n >= 2 and r.n >= 2

), intervals as (

    select *,
           testbed_mean / real_mean as ratio,
           case when vt + vr > 0
                then power(vt + vr, 2) / (power(vt, 2) / (testbed_n - 1) + power(vr, 2) / (real_n - 1)) end as df
    from paired

), bounded as (

    select *,
           ratio * exp(-{{ t_critical_95('floor(df)') }} * sqrt(vt + vr)) as ratio_ci_low,
           ratio * exp({{ t_critical_95('floor(df)') }} * sqrt(vt + vr)) as ratio_ci_high
    from intervals

)

select
    {{ column_list(dims) }}, cni = 'host' as is_host_baseline, workload, metric, protocol, path, placement,
    length_bytes, real_distributions,
    testbed_n, testbed_mean, testbed_sd, real_n, real_mean, real_sd,
    ratio, ratio_ci_low, ratio_ci_high,
    0.10 as margin,
    (ratio - 1) * 100 as difference_pct,
    case
        when ratio_ci_low is null then 'inconclusive'
        when ratio_ci_low >= 0.90 and ratio_ci_high <= 1.10 then 'model holds'
        when ratio_ci_high < 0.90 or ratio_ci_low > 1.10 then 'model differs'
        when (ratio_ci_low > 1 or ratio_ci_high < 1) and (ratio_ci_low < 0.90 or ratio_ci_high > 1.10)
            then 'model differs'
        else 'inconclusive'
    end as verdict
from bounded
