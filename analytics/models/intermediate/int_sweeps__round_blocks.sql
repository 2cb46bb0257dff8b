-- Did a sweep run in interleaved rounds? A sweep is round-blocked when its rounds (repetitions) are disjoint blocks
-- of time: every run of round r finished before any run of round r + 1 started (`edgebench sweep --interleave`, the
-- local default). Only then is a configuration's run of round r paired with its baseline's run of the same round
-- (macros/verdict.sql round_pairs): the two ran minutes apart, so the drift between rounds cancels. Cell-by-cell
-- sweeps (and runs without timestamps) are compared by Welch's interval instead.
with per_round as (

    select sweep_id, repetition, min(started_at) as round_start, max(finished_at) as round_end
    from {{ ref('int_runs__deduplicated') }}
    where repetition is not null
    group by all

),

ordered as (

    select *, lead(round_start) over (partition by sweep_id order by repetition) as next_round_start
    from per_round

)

select
    sweep_id,
    count(*)                                                                      as n_rounds,
    count(*) >= 2 and coalesce(bool_and(next_round_start is null
                                        or (round_end is not null and round_end <= next_round_start)), false)
                                                                                  as is_round_blocked
from ordered
group by sweep_id
