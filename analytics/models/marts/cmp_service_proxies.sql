-- Pod-to-service iperf3 throughput per service proxy (catalog/service_proxies.yaml) for the same CNI mode and
-- conditions, against kube-proxy's iptables mode (the default of every distribution edgebench installs) measured in
-- the same substrate, distribution, CNI mode, netem, tuning, protocol, placement, length, duration and bitrate.
-- On the local testbed this is the part of a distribution the testbed models (the proxy's kernel state); on clusters
-- the mode is what the distribution and CNI run (one per cell), so a cluster row has a reference only where another
-- cell of the same CNI mode ran iptables. Only status = 'ok' AND is_valid runs in one cluster.
--   diff = mode - iptables (Mbit/s; positive = faster), diff_ci95 = Welch's 95% interval of the difference,
--   verdict: the project's one rule (macros/verdict.sql): equivalent / better / worse / inconclusive, 'n < 2' without
--   an interval,
--   'reference' for the iptables rows themselves, null without an iptables reference.
{%- set keys = cell_dimension_list() + ['protocol', 'placement', 'length_bytes'] %}
with runs as (

    select * from {{ ref('int_runs__deduplicated') }}
    where workload = 'iperf3' and path = 'pod-to-service' and status = 'ok' and is_valid
      and intercluster = 'none'
      and {{ own_cores_only() }}  -- CPU-limited testbed cells are compared in cmp_dds_vs_host / cmp_iperf3_vs_host
      and service_proxy_mode is not null  -- cluster manifests written before the mode was recorded

),

stats as (

    select
        {{ keys | join(',\n        ') }},
        duration_s,
        iperf3_bitrate,
        service_proxy_mode,
        count(*)                                 as n_runs,
        count(distinct sweep_id)                 as n_sweeps,
        avg(throughput_mbps)                     as throughput_mbps,
        stddev_samp(throughput_mbps)             as throughput_stddev_mbps,
        {{ t_critical_95('count(*) - 1') }} * stddev_samp(throughput_mbps) / sqrt(count(*))
                                                 as throughput_ci95_mbps,
        max(started_at)                          as last_started_at
    from runs
    group by all

),

reference as (

    select * from stats where service_proxy_mode = 'iptables'

),

compared as (

    select
        stats.*,
        stats.service_proxy_mode = 'iptables'                       as is_reference,
        reference.n_runs                                            as reference_n_runs,
        reference.throughput_mbps                                   as reference_throughput_mbps,
        reference.throughput_stddev_mbps                            as reference_throughput_stddev_mbps,
        reference.throughput_ci95_mbps                              as reference_throughput_ci95_mbps,
        stats.throughput_mbps - reference.throughput_mbps           as diff_mbps,
        {{ welch_ci95('stats.n_runs', 'stats.throughput_stddev_mbps',
                      'reference.n_runs', 'reference.throughput_stddev_mbps') }} as diff_ci95_mbps
    from stats
    left join reference
        on  {{ columns_match('stats', 'reference', keys + ['duration_s', 'iperf3_bitrate'], null_safe=true,
                             indent='\n        ') }}

)

select
    *,
    case when reference_throughput_mbps > 0 then diff_mbps / reference_throughput_mbps * 100 end as diff_pct,
    case
        when is_reference then 'reference'
        when reference_n_runs is null then null
        else {{ verdict('diff_mbps', 'diff_ci95_mbps', 'n_runs', 'reference_n_runs', 'reference_throughput_mbps',
                        'true', 'throughput') }}
    end                                                              as verdict,
    {{ verdict_margin_pct('throughput') }}::double                  as verdict_margin_pct,
    'welch'                                                          as verdict_method,
    {{ runs_to_decide('verdict', 'diff_mbps', 'diff_ci95_mbps', 'least(n_runs, reference_n_runs)',
                      'reference_throughput_mbps', 'throughput') }}  as runs_to_decide
from compared
