-- Seed 004 on real clusters: Kubernetes distributions against each other for the same CNI mode and conditions.
-- Long format, one row per (configuration, metric, distribution, reference distribution): every distribution is
-- compared with every other one measured with the same substrate, CNI mode, netem, tuning, workload, protocol, path,
-- placement and length (the portal picks the reference). Metrics (status = 'ok' AND is_valid runs, one cluster):
--   throughput_mbps and latency_us (iperf3 TCP mean RTT) from the iperf3 runs; cpu_pct / rss_mb of each resource
--   component (cni, system, workload) idle (before the workload) and during the run (sum over the component's
--   processes per run, fct_resource_usage).
--   diff = distribution - reference, diff_ci95 = Welch's 95% interval of the difference, verdict by the project's
--   one rule (macros/verdict.sql): equivalent / better / worse / inconclusive (higher is better for throughput
--   only), 'n < 2' without an interval, 'reference' on the
--   reference's own row. Local (testbed) runs carry distribution 'none' and are left out: the testbed models no
--   distribution (its part of one, the service proxy, is compared in cmp_service_proxies).
-- One machine, two substrates: runs of shared-kernel labs that recorded the same kernel boot id (kind's clusters and
-- the local kubeadm lab on one machine in one boot) are compared in one table: their substrate reads
-- 'kind + ssh (one machine, boot 1a2b3c4d)' and their lab 'kind + lab-local'; `run_substrates` says which substrate
-- each distribution's runs came from. Labs of separate machines (a Pi lab) stay on their own.
{%- set keys = (cell_dimension_list() | reject('in', ['distribution', 'datapath']) | list)
              + ['workload', 'protocol', 'path', 'placement', 'length_bytes', 'metric', 'component', 'phase'] %}
with real_runs as (

    select * from {{ ref('int_runs__deduplicated') }}
    where status = 'ok' and is_valid and intercluster = 'none' and substrate <> 'local'

),

-- machines (kernel boot ids) with runs on more than one substrate: one comparison scope each
machines as (

    select lab_kernel_boot_id,
           string_agg(distinct substrate, ' + ' order by substrate) || ' (one machine, boot '
               || left(lab_kernel_boot_id, 8) || ')'                     as scope_substrate,
           string_agg(distinct lab, ' + ' order by lab)                  as scope_lab
    from real_runs
    where lab_kernel_boot_id is not null
    group by lab_kernel_boot_id
    having count(distinct substrate) > 1

),

scoped as (

    select real_runs.* replace (coalesce(machines.scope_substrate, real_runs.substrate) as substrate,
                                coalesce(machines.scope_lab, real_runs.lab) as lab),
           real_runs.substrate                                           as run_substrate
    from real_runs
    left join machines using (lab_kernel_boot_id)

),

iperf3 as (

    select * from scoped where workload = 'iperf3'

),

samples as (

    select distribution, {{ keys[:-3] | join(', ') }}, datapath, service_proxy_mode, run_substrate, run_id,
           'throughput_mbps' as metric, 'iperf3' as component, 'run' as phase, throughput_mbps as value
    from iperf3
    union all
    select distribution, {{ keys[:-3] | join(', ') }}, datapath, service_proxy_mode, run_substrate, run_id,
           'latency_us', 'iperf3', 'run', mean_rtt_us
    from iperf3 where mean_rtt_us is not null
    union all
    select distribution, {{ keys[:-3] | join(', ') }}, any_value(datapath), any_value(service_proxy_mode),
           any_value(run_substrate), run_id, metric, component, phase, sum(value)
    from (
        select usage.* replace (scoped.substrate as substrate, scoped.lab as lab), scoped.run_substrate,
                  unnest(['cpu_pct', 'cpu_pct', 'rss_mb', 'rss_mb'])     as metric,
                  unnest(['idle', 'run', 'idle', 'run'])                 as phase,
                  unnest([usage.cpu_idle_pct, usage.cpu_run_pct, usage.rss_idle_mb, usage.rss_run_mb]) as value
        from {{ ref('fct_resource_usage') }} as usage
        inner join scoped using (run_id)
    )
    where value is not null
    group by all

),

stats as (

    select
        {{ keys | join(', ') }},
        distribution,
        string_agg(distinct datapath, ', ')                  as datapath,
        string_agg(distinct service_proxy_mode, ', ')        as service_proxy_mode,
        string_agg(distinct run_substrate, ', ')             as run_substrates,
        count(*)                                             as n_runs,
        avg(value)                                           as mean,
        stddev_samp(value)                                   as stddev,
        {{ t_critical_95('count(*) - 1') }} * stddev_samp(value) / sqrt(count(*)) as ci95
    from samples
    group by all

)

select
    stats.*,
    stats.metric = 'throughput_mbps'                         as is_higher_better,
    reference.distribution                                   as reference_distribution,
    reference.n_runs                                         as reference_n_runs,
    reference.mean                                           as reference_mean,
    reference.ci95                                           as reference_ci95,
    stats.mean - reference.mean                              as diff,
    {{ welch_ci95('stats.n_runs', 'stats.stddev', 'reference.n_runs', 'reference.stddev') }} as diff_ci95,
    case when reference.mean <> 0 then (stats.mean - reference.mean) / abs(reference.mean) * 100 end as diff_pct,
    case
        when stats.distribution = reference.distribution then 'reference'
        else {{ verdict('stats.mean - reference.mean',
                        welch_ci95('stats.n_runs', 'stats.stddev', 'reference.n_runs', 'reference.stddev'),
                        'stats.n_runs', 'reference.n_runs', 'reference.mean', "stats.metric = 'throughput_mbps'",
                        metric_family('stats.metric')) }}
    end                                                      as verdict,
    {{ verdict_margin_pct(metric_family('stats.metric')) }}::double as verdict_margin_pct,
    'welch'                                                  as verdict_method,
    {{ runs_to_decide('verdict', 'stats.mean - reference.mean',
                      welch_ci95('stats.n_runs', 'stats.stddev', 'reference.n_runs', 'reference.stddev'),
                      'least(stats.n_runs, reference.n_runs)', 'reference.mean', metric_family('stats.metric')) }}
                                                             as runs_to_decide
from stats
inner join stats as reference
    on  {{ columns_match('stats', 'reference', keys, null_safe=true) }}
