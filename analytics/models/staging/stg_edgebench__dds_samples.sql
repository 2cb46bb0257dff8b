{{ config(materialized=raw_staging_materialized(), incremental_strategy='append',
          pre_hook="{{ delete_changed('raw_key') }}") }}

-- One row per ddsperf per-second line of a DDS run (dds-samples.json beside the manifest). The file is read as
-- raw text and each array element parsed by name, so missing or null fields become null instead of breaking a
-- type inference; the run keys come from the object key runs/<sweep_id>/<cell_id>/<run_id>/dds-samples.json.
with elements as (

    -- one row per array element (sample), with sweep_id, cell_id, run_id, sample_index, raw_key
    {{ json_array_file_elements('dds_samples', 'dds-samples.json', 'sample', with_index=true) }}

),

renamed as (

    select
        sweep_id,
        cell_id,
        run_id,
        sample_index,
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
        raw_key
    from elements

)

select * from renamed
