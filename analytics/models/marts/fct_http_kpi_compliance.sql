-- One row per successful HTTP run (status = 'ok') and use case of its params.kpis_ms: the share of its requests
-- beyond the boundary, and whether its p90 is beyond it. An error request (not 2xx) counts as beyond every KPI
-- (it never delivered an answer in time); "beyond" is strictly greater than the boundary.
with runs as (

    select * from {{ ref('int_runs__deduplicated') }}
    where workload = 'http' and status = 'ok'

),

kpis as (

    select * from {{ ref('int_http__kpis') }}

),

requests as (

    select * from {{ ref('int_http__requests') }}

),

per_kpi as (

    select
        kpis.run_id,
        kpis.use_case,
        kpis.kpi_ms,
        count(requests.seq)                                                         as n_requests,
        count(requests.seq) filter (where requests.is_error or requests.response_ms > kpis.kpi_ms)
                                                                                    as n_beyond_kpi
    from kpis
    inner join requests using (run_id)
    group by all

)

select
    runs.run_id,
    runs.sweep_id,
    {{ cell_dimension_columns('runs.') }},
    runs.intercluster,
    runs.intercluster_tool,
    runs.intercluster_mode,
    runs.intercluster_implementation,
    runs.is_emulated,
    runs.intercluster_model,
    runs.service,
    runs.path,
    runs.placement,
    runs.length_bytes,
    runs.repetition,
    runs.is_valid,
    runs.invalid_reason,
    per_kpi.use_case,
    per_kpi.kpi_ms,
    per_kpi.n_requests,
    per_kpi.n_beyond_kpi,
    per_kpi.n_beyond_kpi / per_kpi.n_requests                as share_beyond_kpi,
    stats.response_p90_ms,
    stats.response_p90_ms > per_kpi.kpi_ms                   as is_p90_beyond_kpi
from per_kpi
inner join runs using (run_id)
inner join {{ ref('int_http__run_stats') }} as stats using (run_id)
