-- CNI version regression cards: for every CNI mode measured at two or more versions on a substrate (the card), the
-- newest version against the previous one, on every configuration x metric measured at both
-- (int_cni_versions__run_metrics: ok + valid runs with a version). Per side: n runs, mean, stddev.
--   diff = new - previous (in the metric's unit; positive = higher with the new version), with the 95% interval of
--   the difference, paired by round where the two versions ran interleaved (a paired rerun, `edgebench watch
--   --paired` / `cni-versions`: each new-version run joined with the previous version's run of the same sweep and
--   round, in round-blocked sweeps, int_sweeps__round_blocks; paired when every run of both sides has its pair, 2 or
--   more): t(n - 1) * sd(paired differences) / sqrt(n), the drift between rounds cancels. Where a sweep measured a
--   configuration at both versions, only such sweeps' runs are compared (paired_sweeps), never pooled with runs of
--   other sweeps. Otherwise by Welch:
--   t(0.975, floor(df)) * sqrt(s_new^2/n_new + s_prev^2/n_prev), df by Welch-Satterthwaite (floored: never a
--   narrower interval). verdict_method says which. diff_pct and its interval relative to the previous mean.
--   verdict: the project's one rule (macros/verdict.sql; the margin by the metric's unit, better = in the metric's
--   good direction, is_higher_better): equivalent / better / worse / inconclusive, 'n < 2' when either side has
--   fewer than 2 runs (no interval); runs_to_decide for an inconclusive one.
-- card_* columns count the card's comparisons: each one is wrong at most 5% of the time on identical versions, so
-- a card with k comparisons shows about 0.05 k false better/worse verdicts (card_expected_false_alarms).
{%- set card = ['substrate', 'cni', 'cni_mode'] %}
{%- set config = (cell_dimension_list() | reject('in', card + ['datapath']) | list)
                + ['intercluster', 'workload', 'protocol', 'variant', 'path', 'placement', 'length_bytes'] %}
{%- set version = ['version_major', 'version_minor', 'version_patch', 'version_prerelease'] %}
with metrics as (

    select * from {{ ref('int_cni_versions__run_metrics') }}
    where version_major is not null  -- a version text edgebench cannot order is not compared

),

version_labels as (

    select
        {{ card | join(', ') }},
        {{ version | join(', ') }},
        min(cni_version)                                                  as version_label  -- as spelled (v3.30.2)
    from metrics
    group by all

),

versions as (

    -- the versions of each card, newest first (semantic order; a pre-release below its release)
    select
        *,
        dense_rank() over (
            partition by {{ card | join(', ') }}
            order by version_major desc, version_minor desc, version_patch desc,
                     version_prerelease is null desc, version_prerelease desc
        )                                                                 as version_rank,
        count(*) over (partition by {{ card | join(', ') }})              as n_versions
    from version_labels

),

ranked_all as (

    select metrics.*, versions.version_label, versions.version_rank, versions.n_versions
    from metrics
    inner join versions
        using ({{ (card + ['version_major', 'version_minor', 'version_patch']) | join(', ') }})
    where metrics.version_prerelease is not distinct from versions.version_prerelease
      and versions.version_rank <= 2
      and versions.n_versions >= 2

),

paired_sweeps as (

    -- a sweep that measured a configuration at both versions (a paired rerun, the versions interleaved by round):
    -- where one exists, that configuration compares only such sweeps' runs. Pooling every run of the previous
    -- version would mix in runs of other days and other loads on the machine, which the pairing exists to keep out
    select {{ (card + config) | join(', ') }}, metric, sweep_id
    from ranked_all
    group by all
    having count(distinct version_rank) = 2

),

ranked as (

    select ranked_all.*
    from ranked_all
    left join (select distinct {{ (card + config) | join(', ') }}, metric from paired_sweeps) as has_pair
        on {% for k in card + config + ['metric'] -%}
           {{ '\n        and ' if not loop.first }}has_pair.{{ k }} is not distinct from ranked_all.{{ k }}
           {%- endfor %}
    left join paired_sweeps as in_pair
        on in_pair.sweep_id = ranked_all.sweep_id
        {% for k in card + config + ['metric'] -%}
        and in_pair.{{ k }} is not distinct from ranked_all.{{ k }}
        {% endfor %}
    where has_pair.metric is null or in_pair.sweep_id is not null

),

cards as (

    -- what the card's header says: versions, how they are known, the trigger of the newest one's rerun
    select
        {{ card | join(', ') }},
        any_value(n_versions)                                             as n_versions,
        string_agg(distinct datapath, ', ' order by datapath)             as datapath,
        max(version_label) filter (where version_rank = 1)                as new_version,
        max(version_label) filter (where version_rank = 2)                as previous_version,
        string_agg(distinct version_source, ', ' order by version_source)
            filter (where version_rank = 1)                               as new_version_source,
        string_agg(distinct version_source, ', ' order by version_source)
            filter (where version_rank = 2)                               as previous_version_source,
        string_agg(distinct version_source, ', ' order by version_source) as version_sources,
        max(trigger_source) filter (where version_rank = 1)               as new_trigger_source,
        max(trigger_previous_version) filter (where version_rank = 1)     as new_trigger_previous_version,
        max(triggered_at) filter (where version_rank = 1)                 as new_triggered_at
    from ranked
    group by all

),

sides as (

    select
        {{ (card + config) | join(', ') }},
        metric,
        any_value(unit)                                                   as unit,
        bool_and(is_higher_better)                                        as is_higher_better,
        version_rank,
        count(*)                                                          as n_runs,
        avg(value)                                                        as mean,
        stddev_samp(value)                                                as stddev,
        count(distinct sweep_id)                                          as n_sweeps,
        min(started_at)                                                   as first_started_at,
        max(started_at)                                                   as last_started_at
    from ranked
    group by all

),

paired as (

    select
        cur.* exclude (version_rank, n_runs, mean, stddev, n_sweeps, first_started_at, last_started_at),
        prev.n_runs                                                       as previous_n_runs,
        cur.n_runs                                                        as new_n_runs,
        prev.mean                                                         as previous_mean,
        prev.stddev                                                       as previous_stddev,
        cur.mean                                                          as new_mean,
        cur.stddev                                                        as new_stddev,
        prev.n_sweeps                                                     as previous_n_sweeps,
        cur.n_sweeps                                                      as new_n_sweeps,
        prev.first_started_at                                             as previous_first_started_at,
        prev.last_started_at                                              as previous_last_started_at,
        cur.first_started_at                                              as new_first_started_at,
        cur.last_started_at                                               as new_last_started_at,
        cur.mean - prev.mean                                              as diff,
        -- squared standard errors of the two means
        prev.stddev ^ 2 / prev.n_runs                                     as previous_se2,
        cur.stddev ^ 2 / cur.n_runs                                       as new_se2
    from sides as cur
    inner join sides as prev
        -- null-safe, as group by treats nulls
        on {% for k in card + config + ['metric'] -%}
           {{ '\n        and ' if not loop.first }}cur.{{ k }} is not distinct from prev.{{ k }}
           {%- endfor %}
    where cur.version_rank = 1 and prev.version_rank = 2

),

round_pairs as (

    -- each new-version run with the previous version's run of the same sweep and round (interleaved reruns)
    select
        {% for k in card + config + ['metric'] %}cur.{{ k }}, {% endfor %}
        count(*)                                                          as n_pairs,
        stddev_samp(cur.value - prev.value)                               as pair_sd
    from ranked as cur
    inner join ranked as prev
        on  cur.sweep_id = prev.sweep_id and cur.repetition = prev.repetition
        {% for k in card + config + ['metric'] -%}
        and cur.{{ k }} is not distinct from prev.{{ k }}
        {% endfor -%}
    inner join {{ ref('int_sweeps__round_blocks') }} as blocks
        on blocks.sweep_id = cur.sweep_id and blocks.is_round_blocked
    where cur.version_rank = 1 and prev.version_rank = 2
    group by all

),

welch as (

    select
        paired.*,
        round_pairs.n_pairs,
        round_pairs.pair_sd,
        coalesce(round_pairs.n_pairs, 0) >= 2 and round_pairs.n_pairs = paired.new_n_runs
            and round_pairs.n_pairs = paired.previous_n_runs              as is_paired,
        case when previous_n_runs >= 2 and new_n_runs >= 2 then
            case when previous_se2 + new_se2 > 0
                 then (previous_se2 + new_se2) ^ 2
                      / (previous_se2 ^ 2 / (previous_n_runs - 1) + new_se2 ^ 2 / (new_n_runs - 1))
                 else previous_n_runs + new_n_runs - 2  -- no spread on either side
            end
        end                                                               as welch_df
    from paired
    left join round_pairs
        on {% for k in card + config + ['metric'] -%}
           {{ '\n        and ' if not loop.first }}paired.{{ k }} is not distinct from round_pairs.{{ k }}
           {%- endfor %}

),

intervals as (

    select
        *,
        case when is_paired then {{ paired_ci95('n_pairs', 'pair_sd') }}
             else {{ t_critical_95('floor(welch_df + 1e-9)') }} * sqrt(previous_se2 + new_se2) end as diff_ci95
    from welch

),

verdicts as (

    select
        *,
        {{ verdict('diff', 'diff_ci95', 'new_n_runs', 'previous_n_runs', 'previous_mean', 'is_higher_better',
                   unit_family('unit')) }}                              as verdict,
        {{ verdict_margin_pct(unit_family('unit')) }}::double            as verdict_margin_pct,
        case when is_paired then 'paired' else 'welch' end               as verdict_method
    from intervals

)

select
    verdicts.substrate,
    verdicts.cni,
    verdicts.cni_mode,
    cards.datapath,
    cards.previous_version,
    cards.new_version,
    cards.n_versions,
    case when cards.version_sources in ('installed', 'requested') then cards.version_sources
         else 'mixed' end                                                 as version_source,
    cards.previous_version_source,
    cards.new_version_source,
    cards.new_trigger_source,
    cards.new_trigger_previous_version,
    cards.new_triggered_at,
    {% for k in config %}verdicts.{{ k }},
    {% endfor -%}
    verdicts.metric,
    verdicts.unit,
    verdicts.is_higher_better,
    verdicts.previous_n_runs,
    verdicts.new_n_runs,
    verdicts.previous_mean,
    verdicts.previous_stddev,
    verdicts.new_mean,
    verdicts.new_stddev,
    verdicts.diff,
    verdicts.diff_ci95,
    verdicts.diff - verdicts.diff_ci95                                    as diff_ci_low,
    verdicts.diff + verdicts.diff_ci95                                    as diff_ci_high,
    verdicts.welch_df,
    case when verdicts.previous_mean <> 0
         then verdicts.diff / abs(verdicts.previous_mean) * 100 end       as diff_pct,
    case when verdicts.previous_mean <> 0
         then (verdicts.diff - verdicts.diff_ci95) / abs(verdicts.previous_mean) * 100 end as diff_ci_low_pct,
    case when verdicts.previous_mean <> 0
         then (verdicts.diff + verdicts.diff_ci95) / abs(verdicts.previous_mean) * 100 end as diff_ci_high_pct,
    verdicts.verdict,
    verdicts.verdict_margin_pct,
    verdicts.verdict_method,
    verdicts.n_pairs,
    verdicts.pair_sd,
    {{ runs_to_decide('verdicts.verdict', 'verdicts.diff', 'verdicts.diff_ci95',
                      'least(verdicts.new_n_runs, verdicts.previous_n_runs)', 'verdicts.previous_mean',
                      unit_family('verdicts.unit')) }}                    as runs_to_decide,
    verdicts.verdict = 'worse'                                            as is_regression,
    count(*) filter (where verdicts.verdict <> 'n < 2')
        over (partition by verdicts.substrate, verdicts.cni, verdicts.cni_mode)   as card_n_comparisons,
    count(*) filter (where verdicts.verdict = 'worse')
        over (partition by verdicts.substrate, verdicts.cni, verdicts.cni_mode)   as card_n_worse,
    count(*) filter (where verdicts.verdict = 'better')
        over (partition by verdicts.substrate, verdicts.cni, verdicts.cni_mode)   as card_n_better,
    count(*) filter (where verdicts.verdict = 'equivalent')
        over (partition by verdicts.substrate, verdicts.cni, verdicts.cni_mode)   as card_n_equivalent,
    count(*) filter (where verdicts.verdict = 'inconclusive')
        over (partition by verdicts.substrate, verdicts.cni, verdicts.cni_mode)   as card_n_inconclusive,
    count(*) filter (where verdicts.verdict = 'n < 2')
        over (partition by verdicts.substrate, verdicts.cni, verdicts.cni_mode)   as card_n_too_few_runs,
    0.05::double * count(*) filter (where verdicts.verdict <> 'n < 2')
        over (partition by verdicts.substrate, verdicts.cni, verdicts.cni_mode)   as card_expected_false_alarms,
    verdicts.previous_n_sweeps,
    verdicts.new_n_sweeps,
    verdicts.previous_first_started_at,
    verdicts.previous_last_started_at,
    verdicts.new_first_started_at,
    verdicts.new_last_started_at
from verdicts
inner join cards using (substrate, cni, cni_mode)
