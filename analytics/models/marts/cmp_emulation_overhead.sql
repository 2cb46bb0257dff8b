-- The testbed's answer checked against a real lab, each side normalized to its OWN host baseline: for every CNI mode
-- measured on the namespace testbed (substrate = local) and on a real lab (substrate = ssh, or kind as a lab of its own) under the same conditions,
-- the mode's overhead against the host of its own substrate, as the vs-host marts give it (their verdicts, by the
-- project's one rule, paired by round where they are), side by side. The machine's load, which moves both a lab's CNI
-- and its host, cancels; cmp_emulation_vs_real keeps the absolute testbed / real ratio.
--   overhead_pct: positive = worse than the substrate's host (less throughput, more latency), as in the vs-host marts;
--   overhead_ci95_pct: the half-width of its 95% interval (Welch's interval of the difference over the host mean);
--   overhead_gap_pts = testbed - real overhead, in percentage points (how much the testbed under- or overstates);
--   testbed_ / real_host_value: each side's host baseline, and testbed_ / real_diff the mode minus it, in the
--   metric's own unit (Mbps, us, ms): where a lab's load adds time to its host and its modes alike (a latency), the
--   percentages differ by the baselines while the added time can agree; the diffs show which;
--   verdicts_agree: both verdicts decided (equivalent / better / worse) and the same; null when one is not decided;
--   testbed_ / real_low_headroom_runs: of the runs behind the side (the mode's and its host's), those measured
--   while the machine had less idle CPU than the floor in some second (int_runs__cpu_headroom; null = not sampled);
--   kendall_tau: the rank agreement of the CNI modes' overheads (tau-b) between the substrates, per real lab, metric
--   and configuration; n_modes the modes ranked (tau needs 2; 1 = the same order, -1 = reversed). Two modes are
--   ordered on a substrate only where the one rule tells them apart there (rank_pairs): the difference of their
--   overheads, with the interval of the two overheads' intervals, is `better` or `worse` against the family's
--   margin. Otherwise (equivalent, inconclusive, or both equivalent to their host) they are tied on that side, since
--   the order of their point estimates is noise; tau is null when every pair is tied on a side.
-- Metrics: iperf3 throughput, DDS latency p90 (latency mode) or throughput (throughput mode), HTTP response p50.
{%- set dims = cell_dimension_list() | reject('in', ['substrate', 'lab', 'distribution']) | list %}
{#- the two sides meet on the CNI mode, not on the datapath's label: the testbed's is how it models the mode (it
    changes when the model does: Cilium's ptp-* became ebpf-* with the eBPF forwarding), the real one is the CNI's #}
{%- set meet = dims | reject('in', ['datapath']) | list %}
{%- set group = dims | reject('in', ['cni', 'cni_mode', 'datapath']) | list %}
with sides as (

    select substrate, lab, {{ column_list(dims) }}, 'iperf3' as workload, 'throughput_mbps' as metric,
           concat_ws(' ', protocol, path, placement, length_bytes::varchar || ' B',
                     'duration ' || coalesce(duration_s::varchar, '-'), 'bitrate ' || coalesce(iperf3_bitrate::varchar, '-'))
                                                                            as config,
           overhead_pct, throughput_diff_ci95_mbps / nullif(host_throughput_mbps, 0) * 100 as overhead_ci95_pct,
           verdict, n_runs, host_n_runs, n_low_headroom + host_n_low_headroom as n_low_headroom,
           host_throughput_mbps as host_value, throughput_mbps - host_throughput_mbps as diff
    from {{ ref('cmp_iperf3_vs_host') }}
    where not is_host_baseline and overhead_pct is not null
    union all
    select substrate, lab, {{ column_list(dims) }}, 'dds',
           case when dds_mode = 'throughput' then 'throughput_mbps' else 'latency_p90_us' end,
           concat_ws(' ', dds_mode, length_bytes::varchar || ' B', reliability, transport, placement, 'security ' || security::varchar,
                     'subscribers ' || coalesce(subscribers::varchar, '-'), 'rate ' || coalesce(rate::varchar, '-'),
                     'batching ' || coalesce(batching::varchar, '-'),
                     'ping timeout ' || coalesce(ping_timeout_ms::varchar, '-')),
           case when dds_mode = 'throughput' then throughput_overhead_pct else latency_p90_overhead_pct end,
           case when dds_mode = 'throughput' then throughput_overhead_ci95_pct else latency_p90_overhead_ci95_pct end,
           verdict, n_runs, host_n_runs, n_low_headroom + host_n_low_headroom as n_low_headroom,
           case when dds_mode = 'throughput' then host_throughput_mbps else host_latency_p90_us end,
           case when dds_mode = 'throughput' then throughput_mbps - host_throughput_mbps
                else latency_p90_us - host_latency_p90_us end
    from {{ ref('cmp_dds_vs_host') }}
    where not is_host_baseline
      and (case when dds_mode = 'throughput' then throughput_overhead_pct else latency_p90_overhead_pct end) is not null
    union all
    select substrate, lab, {{ column_list(dims) }}, 'http', 'response_p50_ms',
           concat_ws(' ', service, path, placement, length_bytes::varchar || ' B',
                     requests_planned::varchar || ' requests'),
           response_p50_overhead_pct, response_p50_diff_ci95_ms / nullif(host_response_p50_ms, 0) * 100,
           response_p50_verdict, n_runs, host_n_runs, n_low_headroom + host_n_low_headroom as n_low_headroom,
           host_response_p50_ms, response_p50_diff_ms
    from {{ ref('cmp_http_vs_host') }}
    where not is_host_baseline and response_p50_overhead_pct is not null

), paired as (

    select {{ column_list(dims, 't.') }}, r.datapath as real_datapath, t.workload, t.metric, t.config, r.lab as real_lab,
           t.n_runs as testbed_n, t.host_n_runs as testbed_host_n,
           t.overhead_pct as testbed_overhead_pct, t.overhead_ci95_pct as testbed_overhead_ci95_pct,
           t.verdict as testbed_verdict,
           r.n_runs as real_n, r.host_n_runs as real_host_n,
           r.overhead_pct as real_overhead_pct, r.overhead_ci95_pct as real_overhead_ci95_pct,
           r.verdict as real_verdict,
           t.n_low_headroom as testbed_low_headroom_runs, r.n_low_headroom as real_low_headroom_runs,
           t.host_value as testbed_host_value, r.host_value as real_host_value,
           t.diff as testbed_diff, r.diff as real_diff
    from sides t
    join sides r
      on  t.substrate = 'local' and r.substrate in ('ssh', 'kind')
      and {{ columns_match('t', 'r', meet, null_safe=true, indent='\n      ') }}
      and t.workload = r.workload and t.metric = r.metric and t.config = r.config

), rank_pairs as (

    -- every two CNI modes of one real lab, metric and configuration: the same order on both substrates or not
    -- a pair is ordered on a substrate only where the one rule tells the two modes apart there: their overheads'
    -- difference (points of the host, 95% interval from the two overheads' intervals) judged against the family's
    -- margin; `equivalent`, `inconclusive` or `n < 2` is a tie, and so are two modes both equivalent to their host
    select a.real_lab, {{ column_list(group, 'a.') }}, a.workload, a.metric, a.config,
    {% for side, pre in [('t', 'testbed'), ('r', 'real')] %}
           case when a.{{ pre }}_verdict = 'equivalent' and b.{{ pre }}_verdict = 'equivalent' then 0
                when {{ verdict('a.' ~ pre ~ '_overhead_pct - b.' ~ pre ~ '_overhead_pct',
                                'sqrt(a.' ~ pre ~ '_overhead_ci95_pct ^ 2 + b.' ~ pre ~ '_overhead_ci95_pct ^ 2)',
                                'least(a.' ~ pre ~ '_n, a.' ~ pre ~ '_host_n)',
                                'least(b.' ~ pre ~ '_n, b.' ~ pre ~ '_host_n)', '100', 'false',
                                metric_family('a.metric')) }} not in ('better', 'worse') then 0
                else sign(a.{{ pre }}_overhead_pct - b.{{ pre }}_overhead_pct) end as s_{{ side }}
           {{- ',' if side == 't' }}
    {% endfor %}
    from paired a
    join paired b
      on  a.real_lab = b.real_lab and {{ columns_match('a', 'b', group, null_safe=true, indent='\n      ') }}
      and a.workload = b.workload and a.metric = b.metric and a.config = b.config
      and (a.cni, a.cni_mode, a.datapath) < (b.cni, b.cni_mode, b.datapath)

), ranking as (

    select real_lab, {{ column_list(group) }}, workload, metric, config,
           count(*) as n_rank_pairs,
           sum(s_t * s_r) as concordance,
           count(*) filter (where s_t = 0) as ties_t,
           count(*) filter (where s_r = 0) as ties_r
    from rank_pairs
    group by all

)

select
    {{ column_list(dims, 'p.') }}, p.real_datapath, p.workload, p.metric, p.config, p.real_lab,
    p.testbed_n, p.testbed_host_n, p.testbed_overhead_pct, p.testbed_overhead_ci95_pct, p.testbed_verdict,
    p.real_n, p.real_host_n, p.real_overhead_pct, p.real_overhead_ci95_pct, p.real_verdict,
    p.testbed_low_headroom_runs, p.real_low_headroom_runs,
    p.testbed_host_value, p.real_host_value, p.testbed_diff, p.real_diff,
    p.testbed_overhead_pct - p.real_overhead_pct as overhead_gap_pts,
    p.testbed_verdict in ('equivalent', 'better', 'worse') and p.real_verdict in ('equivalent', 'better', 'worse')
                                                                            as decided_both,
    case when p.testbed_verdict in ('equivalent', 'better', 'worse')
              and p.real_verdict in ('equivalent', 'better', 'worse')
         then p.testbed_verdict = p.real_verdict end                       as verdicts_agree,
    count(*) over (partition by p.real_lab, {{ column_list(group, 'p.') }}, p.workload, p.metric, p.config)
                                                                            as n_modes,
    case when (rk.n_rank_pairs - rk.ties_t) > 0 and (rk.n_rank_pairs - rk.ties_r) > 0
         then rk.concordance / sqrt((rk.n_rank_pairs - rk.ties_t) * (rk.n_rank_pairs - rk.ties_r)) end
                                                                            as kendall_tau
from paired p
left join ranking rk
  on  rk.real_lab = p.real_lab and {{ columns_match('rk', 'p', group, null_safe=true, indent='\n  ') }}
  and rk.workload = p.workload and rk.metric = p.metric and rk.config = p.config
