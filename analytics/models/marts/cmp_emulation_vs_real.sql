-- How far the testbed's emulation is from the real CNIs: for every CNI mode measured both on the local
-- namespace testbed (substrate = local) and on a real cluster (substrate = ssh, or kind: containers on one kernel, its own real_lab) under the same conditions
-- (workload, metric, protocol, path, placement, size and every cell dimension), the ratio
-- testbed / real of the mean with its 95% interval (Welch's interval of testbed - real, over the real mean).
-- Verdict: the project's one rule (macros/verdict.sql, rule_verdict) with the emulation family's margin (+-10 % of
-- the real mean): "model holds" = equivalent (the whole interval lies within +-10 %); "model differs" = better /
-- worse (the interval excludes 0 and reaches beyond the margin; the size is difference_pct); "inconclusive"
-- otherwise or with fewer than 2 runs a side (runs_to_decide: about how many more runs per side would decide). Host-network rows compare the testbed's host baseline with the cluster's.
-- The configuration is every cell dimension (macros/cell_dimensions.sql) but the substrate, the lab and the
-- distribution (the testbed runs no distribution: the real side's is kept in real_distributions). Each real lab is
-- compared on its own (real_lab): a Pi lab and the local lab are never pooled.
{%- set dims = cell_dimension_list() | reject('in', ['substrate', 'lab', 'distribution']) | list %}
{#- the two sides meet on the CNI mode, not on the datapath's label: the testbed's is how it models the mode (it
    changes when the model does: Cilium's ptp-* became ebpf-* with the eBPF forwarding), the real one is the CNI's #}
{%- set meet = dims | reject('in', ['datapath']) | list %}
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

    select substrate, lab, {{ column_list(dims) }}, workload, metric, protocol, path, placement, length_bytes,
           string_agg(distinct distribution, ',' order by distribution) as distributions,
           count(*) as n, avg(value) as mean, stddev_samp(value) as sd
    from metrics
    where value is not null and substrate in ('local', 'ssh', 'kind')
    group by all

), paired as (

    select {{ column_list(dims, 't.') }}, r.datapath as real_datapath, t.workload, t.metric, t.protocol,
           t.path, t.placement, t.length_bytes, r.lab as real_lab, r.distributions as real_distributions,
           t.n as testbed_n, t.mean as testbed_mean, t.sd as testbed_sd,
           r.n as real_n, r.mean as real_mean, r.sd as real_sd,
           t.mean - r.mean as diff,
           {{ welch_ci95('t.n', 't.sd', 'r.n', 'r.sd') }} as diff_ci95
    from stats t
    join stats r
      on  t.substrate = 'local' and r.substrate in ('ssh', 'kind')
      and {{ columns_match('t', 'r', meet, null_safe=true, indent='\n      ') }}
      and t.workload = r.workload and t.metric = r.metric
      and t.protocol = r.protocol and t.path = r.path and t.placement = r.placement
      and t.length_bytes is not distinct from r.length_bytes
    where t.mean > 0 and r.mean > 0 and t.n >= 2 and r.n >= 2

), judged as (

    -- the project's one rule (macros/verdict.sql), testbed against real with the emulation family's margin
    select *,
           {{ verdict('diff', 'diff_ci95', 'testbed_n', 'real_n', 'real_mean', 'true', 'emulation') }} as rule_verdict
    from paired

)

select
    {{ column_list(dims) }}, real_datapath, cni = 'host' as is_host_baseline, workload, metric, protocol, path,
    placement, length_bytes, real_lab, real_distributions,
    testbed_n, testbed_mean, testbed_sd, real_n, real_mean, real_sd,
    testbed_mean / real_mean as ratio,
    (testbed_mean - real_mean - diff_ci95) / real_mean + 1 as ratio_ci_low,
    (testbed_mean - real_mean + diff_ci95) / real_mean + 1 as ratio_ci_high,
    {{ verdict_margin_pct('emulation') }}::double / 100 as margin,
    (testbed_mean / real_mean - 1) * 100 as difference_pct,
    diff_ci95 / real_mean * 100 as difference_ci95_pct,
    rule_verdict,
    case rule_verdict when 'equivalent' then 'model holds' when 'better' then 'model differs'
                      when 'worse' then 'model differs' else 'inconclusive' end as verdict,
    {{ runs_to_decide('rule_verdict', 'diff', 'diff_ci95', 'least(testbed_n, real_n)', 'real_mean',
                      'emulation') }} as runs_to_decide
from judged
