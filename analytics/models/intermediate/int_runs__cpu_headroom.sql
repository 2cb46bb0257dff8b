-- The CPU headroom of every run (Mininet-HiFi's validity gate: an emulation's figure holds only while the machine
-- had CPU to spare): the machine's idle CPU in each second of the run phase, from the system rows of resources.json
-- (idle % = 100 - cpu_pct / cpus; phase `window` for runs measured together in a duet window, whose samples are the
-- machine's over the whole window), the lowest second, and whether any second fell below the floor (var
-- cpu_headroom_floor_pct). A lab whose nodes have kernels of their own reports a system row per node: a second's
-- idle is then its least idle node's. Runs without system rows, or written before `cpus` was recorded, are absent.
with seconds as (

    select
        run_id,
        sweep_id,
        cell_id,
        name,
        floor(t_s)                                   as second,
        avg(100 - cpu_pct / cpus)                    as idle_pct
    from {{ ref('stg_edgebench__resource_samples') }}
    where component = 'system' and phase in ('run', 'window') and cpus > 0 and cpu_pct is not null
    group by all

),

per_second as (

    select run_id, sweep_id, cell_id, second, min(idle_pct) as idle_pct
    from seconds
    group by all

)

select
    run_id,
    sweep_id,
    cell_id,
    greatest(min(idle_pct), 0)                                                     as min_idle_cpu_pct,
    count(*)                                                                       as n_headroom_seconds,
    count(*) filter (where idle_pct < {{ var('cpu_headroom_floor_pct') }})         as n_low_headroom_seconds,
    count(*) filter (where idle_pct < {{ var('cpu_headroom_floor_pct') }}) > 0     as low_cpu_headroom
from per_second
group by all
