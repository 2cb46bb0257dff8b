-- One row per ddsperf per-second line of a DDS run (dds-samples.json beside the manifest). The file is read as
-- raw text and each array element parsed by name, so missing or null fields become null instead of breaking a
-- type inference; the run keys come from the object key runs/<sweep_id>/<cell_id>/<run_id>/dds-samples.json.
with source as (

    select filename, content from {{ source('edgebench_raw', 'dds_samples') }}

),

parsed as (

    -- a file that is not a JSON array fails the build, naming the file
    select
        filename,
        case
            when json_valid(content) and json_type(content::json) = 'ARRAY' then content::json
            else error('dds-samples.json is not a JSON array: ' || filename)
        end as doc
    from source

),

elements as (

    -- the two unnests have the same length and are zipped: sample_index is the 1-based position in the file
    select
        filename,
        unnest(json_extract(doc, '$[*]'))          as sample,
        unnest(range(1, json_array_length(doc)::bigint + 1)) as sample_index
    from parsed

),

renamed as (

    select
        regexp_extract(filename, 'runs/([^/]+)/[^/]+/[^/]+/dds-samples\.json$', 1) as sweep_id,
        regexp_extract(filename, 'runs/[^/]+/([^/]+)/[^/]+/dds-samples\.json$', 1) as cell_id,
        regexp_extract(filename, 'runs/[^/]+/[^/]+/([^/]+)/dds-samples\.json$', 1) as run_id,
        sample_index::integer                                        as sample_index,
        try_cast(sample->>'t_s' as double)                           as t_s,
        sample->>'role'                                              as role,
        try_cast(sample->>'subscriber' as integer)                   as subscriber,
        sample->>'peer'                                              as peer,
        try_cast(sample->>'latency_mean_us' as double)               as latency_mean_us,
        try_cast(sample->>'latency_min_us' as double)                as latency_min_us,
        try_cast(sample->>'latency_p50_us' as double)                as latency_p50_us,
        try_cast(sample->>'latency_p90_us' as double)                as latency_p90_us,
        try_cast(sample->>'latency_p99_us' as double)                as latency_p99_us,
        try_cast(sample->>'latency_max_us' as double)                as latency_max_us,
        try_cast(sample->>'latency_count' as bigint)                 as latency_count,
        try_cast(sample->>'samples_per_s' as double)                 as samples_per_s,
        try_cast(sample->>'throughput_mbps' as double)               as throughput_mbps,
        try_cast(sample->>'lost_samples' as bigint)                  as lost_samples,
        regexp_extract(filename, '(runs/[^/]+/[^/]+/[^/]+/dds-samples\.json)$', 1) as raw_key
    from elements

)

select * from renamed
