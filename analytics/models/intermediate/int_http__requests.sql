{{ config(materialized=raw_staging_materialized(), incremental_strategy='append',
          pre_hook="{{ delete_changed('run_id') }}") }}

-- HTTP requests joined to their run's attributes (including the inter-cluster tool; 'none' = one cluster). Only the file beside the manifest that won deduplication
-- counts (join on run_id and that manifest's sweep/cell). is_error: not a 2xx response (a transport error has
-- status 0 or null).
select
    requests.run_id,
    requests.sweep_id,
    requests.cell_id,
    {{ cell_dimension_columns('runs.') }},
    runs.intercluster,
    runs.intercluster_tool,
    runs.intercluster_mode,
    runs.intercluster_implementation,
    runs.is_emulated,
    runs.intercluster_model,
    runs.path,
    runs.placement,
    runs.length_bytes,
    runs.repetition,
    runs.service,
    runs.status,
    runs.is_valid,
    runs.invalid_reason,
    requests.seq,
    requests.offset_ms,
    requests.response_ms,
    requests.connect_ms,
    requests.write_ms,
    requests.wait_ms,
    requests.read_ms,
    requests.http_status,
    coalesce(requests.http_status not between 200 and 299, true) as is_error,
    requests.raw_key
from {{ ref('stg_edgebench__http_requests') }} as requests
inner join {{ ref('int_runs__deduplicated') }} as runs
    on  requests.run_id = runs.run_id
    and requests.sweep_id = runs.sweep_id
    and requests.cell_id = runs.cell_id
where runs.workload = 'http'
{{ only_changed_runs('requests.run_id') }}
