{#- The verdict: the one definition of how a configuration (a) is judged against its baseline (b), the same rule
    as containers/runner/src/edgebench/results/report/verdict.py (its docstring explains it; tests/warehouse/test_verdict.py proves
    that the two agree on every comparison row of the fixture warehouse).

    verdict_margin_pct(family)   the family's practical margin in % of the baseline (var verdict_margins_pct); a
                                 family 'sql:<expression>' is a per-row margin, e.g. unit_family(unit_col)
    verdict_margin(baseline, family, resolution)
                                 the margin in the metric's unit: margin_pct of |baseline|, never below the
                                 measurement's resolution (a SQL expression, or none)
    verdict(diff, ci, n_a, n_b, baseline, is_higher_better, family, resolution)
        diff = mean_a - mean_b, ci = the half-width of its 95% interval (welch_ci95), n_* = runs per side:
        'n < 2'        a side has fewer than 2 runs (no interval)
        'equivalent'   the whole interval lies within +-margin (two one-sided tests), even when it excludes 0
        'better' / 'worse'   the interval excludes 0 and reaches beyond the margin (is_higher_better: direction)
        'inconclusive' otherwise
    runs_to_decide(verdict, diff, ci, n, baseline, family, resolution)
        about how many more runs per side would decide an inconclusive comparison (the interval narrows as
        1/sqrt(n); it decides below max(|diff|, margin - |diff|)); null otherwise or beyond 1000. -#}
{% macro verdict_margin_pct(family) -%}
    {%- set margins = var('verdict_margins_pct') -%}
    {%- if family is string and family.startswith('sql:') -%}
        ({{ family[4:] }})
    {%- elif family not in margins -%}
        {{ exceptions.raise_compiler_error("verdict: no margin for metric family '" ~ family ~ "' in var verdict_margins_pct") }}
    {%- else -%}
        {{ margins[family] }}
    {%- endif -%}
{%- endmacro %}

{#- The margin of a metric by its name (cmp_distributions: throughput_mbps, latency_us, cpu_pct, rss_mb), as a family
    argument: *_mbps -> throughput, *_us / *_ms -> latency, cpu* -> cpu, rss* / *_mb -> memory
    (results.report.papers.metric_family). -#}
{% macro metric_family(metric_col) -%}
    {%- set m = var('verdict_margins_pct') -%}
    sql:case when {{ metric_col }} like 'cpu%' then {{ m['cpu'] }}
        when {{ metric_col }} like 'rss%' or {{ metric_col }} like '%_mb' then {{ m['memory'] }}
        when {{ metric_col }} like '%_us' or {{ metric_col }} like '%_ms' then {{ m['latency'] }}
        else {{ m['throughput'] }} end
{%- endmacro %}

{#- The margin of a metric by its unit column (for long tables of several metrics), as a family argument of the
    macros above: Mbit/s -> throughput, us / ms -> latency, % -> cpu, MB -> memory (verdict.family_of_unit). -#}
{% macro unit_family(unit_col) -%}
    {%- set m = var('verdict_margins_pct') -%}
    sql:case {{ unit_col }} when 'Mbit/s' then {{ m['throughput'] }} when 'us' then {{ m['latency'] }}
        when 'ms' then {{ m['latency'] }} when '%' then {{ m['cpu'] }} when 'MB' then {{ m['memory'] }}
        else {{ m['throughput'] }} end
{%- endmacro %}

{% macro verdict_margin(baseline, family, resolution=none) -%}
    greatest(({{ verdict_margin_pct(family) }})::double / 100 * abs({{ baseline }}), coalesce({{ resolution or 'null' }}, 0))
{%- endmacro %}

{#- verdict() and runs_to_decide() bind each argument once (a one-element list_transform over a struct), so the
    nested interval expressions are written once in the compiled SQL, not in every branch. -#}
{% macro verdict(diff, ci, n_a, n_b, baseline, is_higher_better, family, resolution=none) -%}
    list_transform([{'d': ({{ diff }})::double, 'ci': ({{ ci }})::double, 'na': ({{ n_a }})::double,
                     'nb': ({{ n_b }})::double, 'm': ({{ verdict_margin(baseline, family, resolution) }})::double,
                     'e': (1e-9 * abs({{ baseline }}))::double, 'up': ({{ is_higher_better }})::boolean}],
        lambda v: case
            when v.na is null or v.nb is null or v.na < 2 or v.nb < 2 or v.ci is null then 'n < 2'
            when v.d - v.ci >= -v.m - v.e and v.d + v.ci <= v.m + v.e then 'equivalent'
            when abs(v.d) > v.ci + v.e then case when (v.d > 0) = v.up then 'better' else 'worse' end
            else 'inconclusive'
        end)[1]
{%- endmacro %}

{% macro runs_to_decide(verdict_sql, diff, ci, n, baseline, family, resolution=none) -%}
    {%- set target = 'greatest(abs(v.d), v.m - abs(v.d))' -%}
    {%- set needed = 'ceil(v.n * ((v.ci / ' ~ target ~ ') * (v.ci / ' ~ target ~ ')))' -%}
    list_transform([{'verdict': ({{ verdict_sql }})::varchar, 'd': ({{ diff }})::double, 'ci': ({{ ci }})::double,
                     'n': ({{ n }})::double, 'm': ({{ verdict_margin(baseline, family, resolution) }})::double}],
        lambda v: case
            when v.verdict = 'inconclusive' and v.n > 0 and {{ target }} > 0 and {{ needed }} <= 1000
                then greatest({{ needed }} - v.n, 1)::integer
        end)[1]
{%- endmacro %}

{#- Pairing by round (docs/verdicts.md). round_pairs(match, null_safe_match, values): the body of a CTE `pairs` over a
    CTE `runs` (per-run rows, host included) and the CTEs `stats` and `host` (stats_and_host_ctes): each
    configuration's run of round r joined with the host's run of the same sweep and round under the same conditions
    (host_match_dimensions, null-safe; the workload's match columns with =, null_safe_match with is not distinct
    from), in round-blocked sweeps only (int_sweeps__round_blocks); per configuration: n_pairs, is_full (every run
    of both sides has its pair, 2 or more: is_paired()), pool_n and, per values entry name -> expression over '@'
    (the run):
      <name>_pair_sd      the standard deviation of the paired differences;
      <name>_pooled_sd / <name>_pooled_df
                          that spread pooled with the other configurations paired with the same host runs (the same
                          conditions and workload variant): Smyth's moderated t with prior weight var
                          verdict_pool_prior_df, on the spreads relative to the host's mean (results/report/verdict.py
                          pooled_spreads, the same definition; a configuration alone, or the only one with a spread
                          and a non-zero host mean, keeps its own sd and n - 1).
    Join it with pairs_join(). -#}
{% macro round_pairs(match, null_safe_match=[], values={}) -%}
    {%- set d0 = var('verdict_pool_prior_df') -%}
    {%- set pool_key = host_match_dimensions() + match + null_safe_match -%}
    select
        pooled.*,
        {%- for name in values %}
        {%- set pools = 'pooled.' ~ name ~ '_pool_k >= 2 and pooled.' ~ name ~ '_usable' %}
        case when {{ pools }} then
            sqrt(({{ d0 }} * pooled.{{ name }}_pool_var * pooled.{{ name }}_host_mean ^ 2
                  + (pooled.n_pairs - 1) * pooled.{{ name }}_pair_sd ^ 2) / ({{ d0 }} + pooled.n_pairs - 1))
            else pooled.{{ name }}_pair_sd end as {{ name }}_pooled_sd,
        case when {{ pools }} then least({{ d0 }} + pooled.n_pairs - 1, pooled.{{ name }}_pool_df)
            else pooled.n_pairs - 1 end as {{ name }}_pooled_df
        {{- ',' if not loop.last }}
        {%- endfor %}
    from (
        select
            full_pairs.*,
            count(case when full_pairs.is_full then 1 end) over pool as pool_n,
            {%- for name in values %}
            {%- set usable = 'full_pairs.is_full and full_pairs.' ~ name ~ '_host_mean <> 0 and full_pairs.'
                             ~ name ~ '_pair_sd is not null' %}
            sum(case when {{ usable }} then (full_pairs.n_pairs - 1)
                     * (full_pairs.{{ name }}_pair_sd / full_pairs.{{ name }}_host_mean) ^ 2 end) over pool
                / sum(case when {{ usable }} then full_pairs.n_pairs - 1 end) over pool as {{ name }}_pool_var,
            sum(case when {{ usable }} then full_pairs.n_pairs - 1 end) over pool as {{ name }}_pool_df,
            count(case when {{ usable }} then 1 end) over pool as {{ name }}_pool_k,
            coalesce({{ usable }}, false) as {{ name }}_usable
            {{- ',' if not loop.last }}
            {%- endfor %}
        from (
            select
                per_config.*,
                coalesce(per_config.n_pairs >= 2 and per_config.n_pairs = cfg.n_runs
                         and per_config.n_pairs = base.n_runs, false) as is_full
            from (
                select
                    {{ cell_dimension_columns('c.') }},
                    {%- for k in match + null_safe_match %}
                    c.{{ k }},
                    {%- endfor %}
                    count(*) as n_pairs,
                    {%- for name, expr in values.items() %}
                    stddev_samp(({{ expr | replace('@', 'c') }}) - ({{ expr | replace('@', 'h') }})) as {{ name }}_pair_sd,
                    avg({{ expr | replace('@', 'h') }}) as {{ name }}_host_mean
                    {{- ',' if not loop.last }}
                    {%- endfor %}
                from runs as c
                inner join runs as h
                    on  h.cni = 'host' and c.cni <> 'host'
                    and c.sweep_id = h.sweep_id and c.repetition = h.repetition
                    and {{ host_baseline_match('c', 'h', match, null_safe_match, indent='\n                    ') }}
                inner join {{ ref('int_sweeps__round_blocks') }} as blocks
                    on blocks.sweep_id = c.sweep_id and blocks.is_round_blocked
                group by all
            ) as per_config
            left join stats as cfg
                on {{ columns_match('per_config', 'cfg', cell_dimension_list() + match + null_safe_match, null_safe=true,
                                    indent='\n                ') }}
            left join host as base
                on {{ host_baseline_match('cfg', 'base', match, null_safe_match, indent='\n                ') }}
        ) as full_pairs
        window pool as (partition by {{ column_list(pool_key, 'full_pairs.') }})
    ) as pooled
{%- endmacro %}

{#- `left join pairs on` the configuration's columns (null-safe), after vs_host_tail. -#}
{% macro pairs_join(match, null_safe_match=[]) -%}
left join pairs
    on {{ columns_match('stats', 'pairs', cell_dimension_list() + match + null_safe_match, null_safe=true,
                        indent='\n    ') }}
{%- endmacro %}

{#- Is a vs-host comparison paired? Every run of both sides has its pair (2 or more): round_pairs' is_full. -#}
{% macro is_paired() -%}
    coalesce(pairs.is_full, false)
{%- endmacro %}

{% macro paired_ci95(n_pairs, sd) -%}
    ({{ t_critical_95(n_pairs ~ ' - 1') }} * ({{ sd }}) / sqrt({{ n_pairs }}))
{%- endmacro %}

{#- The 95% half-width of stats - host: paired by round when is_paired(), its spread pooled with the other
    configurations paired with the same host runs (round_pairs), else Welch's; verdict_method says which. -#}
{% macro vs_host_interval(sd_col, pair_name) -%}
    (case when {{ is_paired() }}
          then ({{ t_critical_95('pairs.' ~ pair_name ~ '_pooled_df') }} * pairs.{{ pair_name }}_pooled_sd
                / sqrt(pairs.n_pairs))
          else {{ vs_host_ci95(sd_col) }} end)
{%- endmacro %}

{#- 'pooled' (paired, in a pool of 2 or more configurations), 'paired' (alone with its host), 'welch'. -#}
{% macro vs_host_method() -%}
    (case when stats.cni = 'host' then null when {{ is_paired() }} and pairs.pool_n >= 2 then 'pooled'
          when {{ is_paired() }} then 'paired' else 'welch' end)
{%- endmacro %}
