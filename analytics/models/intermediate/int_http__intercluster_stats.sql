-- HTTP response times per configuration including the inter-cluster tool (the `none` one-cluster baseline too), over
-- status = 'ok' AND is_valid runs of a pod-network CNI (inter-cluster cells never use the host network):
--   request_median_ms / request_p95_ms   over every 2xx request of the configuration's runs, pooled (quantile_cont)
--   response_p50_ms (+ stddev, ci95)     mean over runs of each run's median, Student-t 95% CI (null for n < 2)
--   n_*_over_* / n_runs_median_over_*   requests beyond each limit (an error request counts as beyond: it never
--                                        answered in time; "beyond" is strictly greater), runs whose median is
-- The two limits are the vars kpi_vehicle_assist_ms / kpi_remote_maintenance_ms (dbt_project.yml).
{%- set keys = cell_dimension_list()
              + ['intercluster', 'intercluster_tool', 'intercluster_mode', 'intercluster_implementation',
                 'is_emulated', 'intercluster_model', 'service', 'length_bytes', 'path', 'placement'] %}
{%- set vehicle = var('kpi_vehicle_assist_ms') %}
{%- set remote = var('kpi_remote_maintenance_ms') %}
with runs as (

    -- the run's median from its requests (int_http__run_stats), never from a mart
    select runs.*, stats.n_requests, stats.n_errors, stats.response_p50_ms
    from {{ ref('int_runs__deduplicated') }} as runs
    inner join {{ ref('int_http__run_stats') }} as stats using (run_id)
    where runs.workload = 'http' and runs.status = 'ok' and runs.is_valid  -- invalid runs stay out of comparisons
      and runs.cni <> 'host'
      and {{ own_cores_only('runs.') }}  -- CPU-limited testbed cells are compared in cmp_dds_vs_host / cmp_iperf3_vs_host
      and stats.response_p50_ms is not null

),

requests as (

    select requests.*
    from {{ ref('int_http__requests') }} as requests
    inner join runs using (run_id)

),

per_run_limits as (

    select
        run_id,
        count(*) filter (where is_error or response_ms > {{ vehicle }})  as n_over_vehicle_assist,
        count(*) filter (where is_error or response_ms > {{ remote }})   as n_over_remote_maintenance
    from requests
    group by run_id

),

per_config_runs as (

    select
        {{ keys | join(',\n        ') }},
        count(*)                                 as n_runs,
        count(distinct sweep_id)                 as n_sweeps,
        sum(n_requests)                          as n_requests,
        sum(n_errors)                            as n_errors,
        avg(response_p50_ms)                     as response_p50_ms,
        stddev_samp(response_p50_ms)             as response_p50_stddev_ms,
        {{ t_critical_95('count(*) - 1') }} * stddev_samp(response_p50_ms) / sqrt(count(*))
                                                 as response_p50_ci95_ms,
        sum(n_over_vehicle_assist)               as n_requests_over_vehicle_assist,
        sum(n_over_remote_maintenance)           as n_requests_over_remote_maintenance,
        count(*) filter (where response_p50_ms > {{ vehicle }}) as n_runs_median_over_vehicle_assist,
        count(*) filter (where response_p50_ms > {{ remote }})  as n_runs_median_over_remote_maintenance,
        max(resolution_ms)                       as resolution_ms,
        string_agg(distinct load_client, ', ' order by load_client) as load_clients,
        string_agg(distinct intercluster_version, ', ' order by intercluster_version) as intercluster_versions,
        min(started_at)                          as first_started_at,
        max(started_at)                          as last_started_at
    from runs
    inner join per_run_limits using (run_id)
    group by all

),

per_config_requests as (

    select
        {{ keys | join(',\n        ') }},
        quantile_cont(response_ms, 0.50) filter (where not is_error) as request_median_ms,
        quantile_cont(response_ms, 0.95) filter (where not is_error) as request_p95_ms
    from requests
    group by all

)

select
    r.{{ keys | join(',\n    r.') }},
    r.n_runs,
    r.n_sweeps,
    r.n_requests,
    r.n_errors,
    q.request_median_ms,
    q.request_p95_ms,
    r.response_p50_ms,
    r.response_p50_stddev_ms,
    r.response_p50_ci95_ms,
    {{ vehicle }}::double                        as vehicle_assist_limit_ms,
    r.n_requests_over_vehicle_assist,
    r.n_runs_median_over_vehicle_assist,
    {{ remote }}::double                         as remote_maintenance_limit_ms,
    r.n_requests_over_remote_maintenance,
    r.n_runs_median_over_remote_maintenance,
    r.resolution_ms,
    r.load_clients,
    r.intercluster_versions,
    r.first_started_at,
    r.last_started_at
from per_config_runs as r
inner join per_config_requests as q
    on {% for k in keys %}{{ '\n    and ' if not loop.first }}r.{{ k }} is not distinct from q.{{ k }}{% endfor %}
