{{ config(materialized=raw_staging_materialized(), incremental_strategy='append',
          pre_hook="{{ delete_changed('raw_key') }}") }}

-- One row per HTTP request of an HTTP run (http-requests.json beside the manifest), parsed by name from the raw
-- text (missing/null fields -> null); run keys from the object key runs/<sweep_id>/<cell_id>/<run_id>/....
with elements as (

    -- one row per array element (request), with sweep_id, cell_id, run_id, raw_key
    {{ json_array_file_elements('http_requests', 'http-requests.json', 'request') }}

),

renamed as (

    select
        sweep_id,
        cell_id,
        run_id,
        try_cast(request->>'seq' as integer)                         as seq,
        try_cast(request->>'offset_ms' as double)                    as offset_ms,
        try_cast(request->>'response_ms' as double)                  as response_ms,
        try_cast(request->>'connect_ms' as double)                   as connect_ms,
        try_cast(request->>'write_ms' as double)                     as write_ms,
        try_cast(request->>'wait_ms' as double)                      as wait_ms,
        try_cast(request->>'read_ms' as double)                      as read_ms,
        -- the HTTP status code (0 or null for a transport error); not the run's status
        try_cast(request->>'status' as integer)                      as http_status,
        raw_key
    from elements

)

select * from renamed
