{{ config(materialized=raw_staging_materialized(), incremental_strategy='append',
          pre_hook="{{ delete_changed('raw_key') }}") }}

-- One row per manifest of a loaded-latency run (workloads/loaded_latency.py): the probe's latency and the
-- background flow, from the manifest's metrics object (null for runs that are not ok). Run attributes come from
-- int_runs__deduplicated, joined on raw_key in the mart.
with source as (

    select filename, content from {{ source('edgebench_raw', 'run_manifests') }} {{ raw_staging_only_changed() }}

),

manifests as (

    select filename, content::json as manifest
    from source
    where json_valid(content) and json_extract_string(content, '$.workload') = 'loaded-latency'

)

select
    manifest->>'run_id'                                              as run_id,
    coalesce(manifest->'params'->>'probe', manifest->'metrics'->>'probe') as probe,
    coalesce(manifest->'params'->>'load', manifest->'metrics'->>'load')   as load,
    manifest->'params'->>'bulk_bitrate'                              as bulk_bitrate,
    try_cast(manifest->'metrics'->>'probe_p50_us' as double)         as probe_p50_us,
    try_cast(manifest->'metrics'->>'probe_p99_us' as double)         as probe_p99_us,
    try_cast(manifest->'metrics'->>'probe_mean_us' as double)        as probe_mean_us,
    try_cast(manifest->'metrics'->>'probe_count' as integer)         as probe_count,
    try_cast(manifest->'metrics'->>'resolution_us' as double)        as resolution_us,
    try_cast(manifest->'metrics'->>'bulk_sent_mbps' as double)       as bulk_sent_mbps,
    try_cast(manifest->'metrics'->>'bulk_retransmits' as integer)    as bulk_retransmits,
    regexp_extract(filename, '(runs/[^/]+/[^/]+/[^/]+/manifest\.json)$', 1) as raw_key
from manifests
