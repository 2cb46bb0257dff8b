{#- The verdict: the one definition of how a configuration (a) is judged against its baseline (b), the same rule
    as containers/runner/src/edgebench/results/verdict.py (its docstring explains it; tests/test_verdict.py proves
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

{% macro verdict(diff, ci, n_a, n_b, baseline, is_higher_better, family, resolution=none) -%}
    {%- set m = verdict_margin(baseline, family, resolution) -%}
    {%- set eps = '1e-9 * abs(' ~ baseline ~ ')' -%}
    (case
        when ({{ n_a }}) is null or ({{ n_b }}) is null or ({{ n_a }}) < 2 or ({{ n_b }}) < 2 or ({{ ci }}) is null
            then 'n < 2'
        when ({{ diff }}) - ({{ ci }}) >= -{{ m }} - {{ eps }} and ({{ diff }}) + ({{ ci }}) <= {{ m }} + {{ eps }}
            then 'equivalent'
        when abs({{ diff }}) > ({{ ci }}) + {{ eps }}
            then case when (({{ diff }}) > 0) = ({{ is_higher_better }}) then 'better' else 'worse' end
        else 'inconclusive'
    end)
{%- endmacro %}

{% macro runs_to_decide(verdict_sql, diff, ci, n, baseline, family, resolution=none) -%}
    {%- set target = 'greatest(abs(' ~ diff ~ '), ' ~ verdict_margin(baseline, family, resolution) ~ ' - abs(' ~ diff ~ '))' -%}
    {%- set needed = 'ceil((' ~ n ~ ') * (((' ~ ci ~ ') / ' ~ target ~ ') * ((' ~ ci ~ ') / ' ~ target ~ ')))' -%}
    (case
        when ({{ verdict_sql }}) = 'inconclusive' and ({{ n }}) > 0 and {{ target }} > 0 and {{ needed }} <= 1000
            then greatest({{ needed }} - ({{ n }}), 1)::integer
    end)
{%- endmacro %}
