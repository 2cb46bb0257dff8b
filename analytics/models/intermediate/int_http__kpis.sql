-- One row per HTTP run and use case of its params.kpis_ms (use case -> response-time boundary in ms). The
-- boundaries come from the data (the catalog via the manifest), never from this project.
with runs as (

    select run_id, kpis_ms
    from {{ ref('int_runs__deduplicated') }}
    where workload = 'http' and kpis_ms is not null

),

use_cases as (

    select run_id, kpis_ms, unnest(json_keys(kpis_ms)) as use_case
    from runs

)

select
    run_id,
    use_case,
    try_cast(json_extract_string(kpis_ms, '$."' || use_case || '"') as double) as kpi_ms
from use_cases
