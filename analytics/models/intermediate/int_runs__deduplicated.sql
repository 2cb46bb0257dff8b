-- Keys are deterministic, so a run_id should appear once. If it appears more often (a rerun that was not
-- skipped, or the same cell and parameters measured again under another sweep_id), keep the manifest that
-- finished last.
select
    *,
    count(*) over (partition by run_id) as n_manifests
from {{ ref('stg_edgebench__runs') }}
qualify row_number() over (
    partition by run_id
    order by finished_at desc nulls last, started_at desc nulls last, raw_key desc
) = 1
