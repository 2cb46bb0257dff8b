-- Keys are deterministic, so a run_id should appear once. If it appears more often (a rerun that was not
-- skipped, or the same cell and parameters measured again under another sweep_id), keep the manifest that
-- finished last.
-- Each run carries its CPU headroom (int_runs__cpu_headroom; null where no system samples were recorded).
with runs as (

    select
        *,
        count(*) over (partition by run_id) as n_manifests
    from {{ ref('stg_edgebench__runs') }}
    qualify row_number() over (
        partition by run_id
        order by finished_at desc nulls last, started_at desc nulls last, raw_key desc
    ) = 1

)

select
    runs.*,
    headroom.min_idle_cpu_pct,
    headroom.low_cpu_headroom
from runs
left join {{ ref('int_runs__cpu_headroom') }} as headroom
    on  headroom.run_id = runs.run_id
    and headroom.sweep_id = runs.sweep_id
    and headroom.cell_id = runs.cell_id
