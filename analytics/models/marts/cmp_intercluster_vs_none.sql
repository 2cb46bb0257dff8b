-- HTTP response time across two clusters joined by an inter-cluster tool against the same runs in one cluster
-- (intercluster = 'none') with identical substrate, distribution, CNI / mode, tuning, netem scenario, service,
-- payload, path and placement (status = 'ok' AND is_valid runs; int_http__intercluster_stats). Per side: n runs and
-- requests, the pooled request median and p95, and the mean over runs of each run's median with its 95% CI.
--   response_p50_diff_ms = tool - none (positive = slower across the tool), with Welch's 95% CI of the difference;
--   *_pct = the same relative to the none mean.
--   verdict: the project's one rule (macros/verdict.sql, as cmp_http_vs_host; lower = better, the latency margin
--   never below the coarser resolution): 'baseline' (the none row), equivalent / better / worse / inconclusive,
--   'no baseline' (no none runs under these conditions) or 'n < 2' (a side without an interval).
-- KPI limits (vars kpi_vehicle_assist_ms / kpi_remote_maintenance_ms): the share of requests beyond each (errors
-- count as beyond) and the share of runs whose median is beyond it. Baseline rows kept (is_baseline, diff 0).
{%- set match = cell_dimension_list() + ['service', 'length_bytes', 'path', 'placement'] %}
with stats as (

    select * from {{ ref('int_http__intercluster_stats') }}

),

baseline as (

    select * from stats where intercluster = 'none'

),

paired as (

    select
        stats.*,
        stats.intercluster = 'none'                             as is_baseline,
        -- tools measured under the same conditions (a baseline row without any is a plain one-cluster run)
        count(distinct stats.intercluster) filter (where stats.intercluster <> 'none')
            over (partition by {% for k in match %}stats.{{ k }}{{ ', ' if not loop.last }}{% endfor %})
                                                                as n_tools,
        baseline.n_runs                                         as none_n_runs,
        baseline.n_requests                                     as none_n_requests,
        baseline.request_median_ms                              as none_request_median_ms,
        baseline.request_p95_ms                                 as none_request_p95_ms,
        baseline.response_p50_ms                                as none_response_p50_ms,
        baseline.response_p50_ci95_ms                           as none_response_p50_ci95_ms,
        baseline.resolution_ms                                  as none_resolution_ms,
        baseline.response_p50_stddev_ms                         as none_response_p50_stddev_ms,
        case
            when stats.intercluster = 'none' then 'baseline'
            when baseline.response_p50_ms is not null
                then {{ verdict('stats.response_p50_ms - baseline.response_p50_ms',
                                welch_ci95('stats.n_runs', 'stats.response_p50_stddev_ms',
                                           'baseline.n_runs', 'baseline.response_p50_stddev_ms'),
                                'stats.n_runs', 'baseline.n_runs', 'baseline.response_p50_ms', 'false', 'latency',
                                'greatest(stats.resolution_ms, baseline.resolution_ms)') }}
        end                                                     as latency_verdict
    from stats
    left join baseline
        -- null-safe, as the group by of int_http__intercluster_stats
        on {{ columns_match('stats', 'baseline', match, null_safe=true, indent='\n        ') }}

),

compared as (

    select
        *,
        case when is_baseline then 0.0
             else response_p50_ms - none_response_p50_ms end    as response_p50_diff_ms,
        case when not is_baseline
             then {{ welch_ci95('n_runs', 'response_p50_stddev_ms', 'none_n_runs', 'none_response_p50_stddev_ms') }}
        end                                                     as response_p50_diff_ci95_ms,
        coalesce(latency_verdict,
                 case when none_response_p50_ms is null then 'no baseline' else 'n < 2' end)
                                                                as verdict,
        greatest(resolution_ms, none_resolution_ms)             as verdict_resolution_ms
    from paired

)

select
    {{ cell_dimension_columns() }},
    intercluster,
    intercluster_tool,
    intercluster_mode,
    intercluster_implementation,
    is_emulated,
    intercluster_model,
    intercluster_versions,
    service,
    length_bytes,
    path,
    placement,
    is_baseline,
    n_tools,
    n_runs,
    n_requests,
    n_errors,
    request_median_ms,
    request_p95_ms,
    response_p50_ms,
    response_p50_ci95_ms,
    resolution_ms,
    load_clients,
    none_n_runs,
    none_n_requests,
    none_request_median_ms,
    none_request_p95_ms,
    none_response_p50_ms,
    none_response_p50_ci95_ms,
    none_resolution_ms,
    none_response_p50_stddev_ms,
    response_p50_stddev_ms,
    response_p50_diff_ms,
    response_p50_diff_ci95_ms,
    case when is_baseline then 0.0
         when none_response_p50_ms > 0
         then response_p50_diff_ms / none_response_p50_ms * 100 end        as response_p50_diff_pct,
    case when not is_baseline and none_response_p50_ms > 0
         then response_p50_diff_ci95_ms / none_response_p50_ms * 100 end   as response_p50_diff_ci95_pct,
    verdict,
    {{ verdict_margin_pct('latency') }}::double                           as verdict_margin_pct,
    'welch'                                                                as verdict_method,
    {{ runs_to_decide('verdict', 'response_p50_diff_ms', 'response_p50_diff_ci95_ms', 'least(n_runs, none_n_runs)',
                      'none_response_p50_ms', 'latency', 'verdict_resolution_ms') }}  as runs_to_decide,
    vehicle_assist_limit_ms,
    n_requests_over_vehicle_assist / n_requests                            as share_requests_over_vehicle_assist,
    n_runs_median_over_vehicle_assist / n_runs                             as share_runs_median_over_vehicle_assist,
    remote_maintenance_limit_ms,
    n_requests_over_remote_maintenance / n_requests                        as share_requests_over_remote_maintenance,
    n_runs_median_over_remote_maintenance / n_runs                         as share_runs_median_over_remote_maintenance,
    n_sweeps,
    first_started_at,
    last_started_at
from compared
