{{ config(materialized=raw_staging_materialized(), incremental_strategy='append',
          pre_hook="{{ delete_changed('raw_key') }}") }}

-- One row per resource sample of a run (resources.json beside the manifest: idle phase before the workload
-- starts, then the run). Read as raw text and parsed by name, so missing or null fields become null; run keys
-- come from the object key runs/<sweep_id>/<cell_id>/<run_id>/resources.json.
with elements as (

    -- one row per array element (sample), with sweep_id, cell_id, run_id, sample_index, raw_key
    {{ json_array_file_elements('resource_samples', 'resources.json', 'sample', with_index=true) }}

),

renamed as (

    select
        sweep_id,
        cell_id,
        run_id,
        sample_index,
        try_cast(sample->>'t_s' as double)                     as t_s,
        sample->>'phase'                                       as phase,
        sample->>'component'                                   as component,
        sample->>'name'                                        as name,
        try_cast(sample->>'cpu_pct' as double)                 as cpu_pct,
        try_cast(sample->>'rss_mb' as double)                  as rss_mb,
        try_cast(sample->>'cpus' as integer)                   as cpus,
        raw_key
    from elements

)

select * from renamed
