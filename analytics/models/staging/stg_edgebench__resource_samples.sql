-- One row per resource sample of a run (resources.json beside the manifest: idle phase before the workload
-- starts, then the run). Read as raw text and parsed by name, so missing or null fields become null; run keys
-- come from the object key runs/<sweep_id>/<cell_id>/<run_id>/resources.json.
with source as (

    select filename, content from {{ source('edgebench_raw', 'resource_samples') }}

),

parsed as (

    -- a file that is not a JSON array fails the build, naming the file
    select
        filename,
        case
            when json_valid(content) and json_type(content::json) = 'ARRAY' then content::json
            else error('resources.json is not a JSON array: ' || filename)
        end as doc
    from source

),

elements as (

    -- the two unnests have the same length and are zipped: sample_index is the 1-based position in the file
    select
        filename,
        unnest(json_extract(doc, '$[*]'))                      as sample,
        unnest(range(1, json_array_length(doc)::bigint + 1))   as sample_index
    from parsed

),

renamed as (

    select
        regexp_extract(filename, 'runs/([^/]+)/[^/]+/[^/]+/resources\.json$', 1) as sweep_id,
        regexp_extract(filename, 'runs/[^/]+/([^/]+)/[^/]+/resources\.json$', 1) as cell_id,
        regexp_extract(filename, 'runs/[^/]+/[^/]+/([^/]+)/resources\.json$', 1) as run_id,
        sample_index::integer                                  as sample_index,
        try_cast(sample->>'t_s' as double)                     as t_s,
        sample->>'phase'                                       as phase,
        sample->>'component'                                   as component,
        sample->>'name'                                        as name,
        try_cast(sample->>'cpu_pct' as double)                 as cpu_pct,
        try_cast(sample->>'rss_mb' as double)                  as rss_mb,
        regexp_extract(filename, '(runs/[^/]+/[^/]+/[^/]+/resources\.json)$', 1) as raw_key
    from elements

)

select * from renamed
