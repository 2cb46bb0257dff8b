{{ config(materialized=raw_staging_materialized(), incremental_strategy='append',
          pre_hook="{{ delete_changed('run_id') }}") }}

-- One row per HTTP request of every HTTP run that stored http-requests.json (a failed run usually did not).
-- is_error: not a 2xx response. KPI boundaries are per run and use case in fct_http_kpi_compliance.
select
    run_id,
    sweep_id,
    cell_id,
    {{ cell_dimension_columns() }},
    intercluster,
    intercluster_tool,
    intercluster_mode,
    intercluster_implementation,
    is_emulated,
    intercluster_model,
    service,
    path,
    placement,
    length_bytes,
    repetition,
    status,
    is_valid,
    invalid_reason,
    seq,
    offset_ms,
    response_ms,
    connect_ms,
    write_ms,
    wait_ms,
    read_ms,
    http_status,
    is_error,
    raw_key
from {{ ref('int_http__requests') }}
{{ only_changed_runs(keyword='where') }}
