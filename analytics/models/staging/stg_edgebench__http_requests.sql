-- One row per HTTP request of an HTTP run (http-requests.json beside the manifest), parsed by name from the raw
-- text (missing/null fields -> null); run keys from the object key runs/<sweep_id>/<cell_id>/<run_id>/....
with source as (

    select filename, content from {{ source('edgebench_raw', 'http_requests') }}

),

parsed as (

    select
        filename,
        case
            when json_valid(content) and json_type(content::json) = 'ARRAY' then content::json
            else error('http-requests.json is not a JSON array: ' || filename)
        end as doc
    from source

),

elements as (

    select
        filename,
        unnest(json_extract(doc, '$[*]')) as request
    from parsed

),

renamed as (

    select
        regexp_extract(filename, 'runs/([^/]+)/[^/]+/[^/]+/http-requests\.json$', 1) as sweep_id,
        regexp_extract(filename, 'runs/[^/]+/([^/]+)/[^/]+/http-requests\.json$', 1) as cell_id,
        regexp_extract(filename, 'runs/[^/]+/[^/]+/([^/]+)/http-requests\.json$', 1) as run_id,
        try_cast(request->>'seq' as integer)                         as seq,
        try_cast(request->>'offset_ms' as double)                    as offset_ms,
        try_cast(request->>'response_ms' as double)                  as response_ms,
        try_cast(request->>'connect_ms' as double)                   as connect_ms,
        try_cast(request->>'write_ms' as double)                     as write_ms,
        try_cast(request->>'wait_ms' as double)                      as wait_ms,
        try_cast(request->>'read_ms' as double)                      as read_ms,
        -- the HTTP status code (0 or null for a transport error); not the run's status
        try_cast(request->>'status' as integer)                      as http_status,
        regexp_extract(filename, '(runs/[^/]+/[^/]+/[^/]+/http-requests\.json)$', 1) as raw_key
    from elements

)

select * from renamed
