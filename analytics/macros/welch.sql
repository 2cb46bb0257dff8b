{#- Welch's two-sample interval, for comparing a configuration with its baseline when both sides are means over runs.

    welch_ci95(n_a, sd_a, n_b, sd_b): half-width of the 95% confidence interval of mean_a - mean_b, from each side's
    run count and sample standard deviation (SQL expressions); null when a side has fewer than 2 runs. Welch-
    Satterthwaite degrees of freedom, rounded down (t_critical_95 is conservative above 30); two sides without any
    spread get n_a + n_b - 2 and a zero-width interval.

    welch_verdict(diff, ci, n_a, n_b, scale, is_higher_better): 'better' / 'worse' when that interval excludes 0 (a
    two-sided Welch test at alpha = 0.05; a difference within 1e-9 x scale, e.g. the larger mean, is rounding noise), else
    'indistinguishable'; 'n < 2' when a side has fewer than 2 runs. diff = mean_a - mean_b, a = the configuration. -#}
{% macro welch_ci95(n_a, sd_a, n_b, sd_b) -%}
    (case when ({{ n_a }}) >= 2 and ({{ n_b }}) >= 2 then
        {{ t_critical_95(welch_df(n_a, sd_a, n_b, sd_b)) }}
        * sqrt(({{ sd_a }}) ^ 2 / ({{ n_a }}) + ({{ sd_b }}) ^ 2 / ({{ n_b }}))
    end)
{%- endmacro %}

{% macro welch_df(n_a, sd_a, n_b, sd_b) -%}
    floor(case when ({{ sd_a }}) ^ 2 / ({{ n_a }}) + ({{ sd_b }}) ^ 2 / ({{ n_b }}) > 0
               then (({{ sd_a }}) ^ 2 / ({{ n_a }}) + ({{ sd_b }}) ^ 2 / ({{ n_b }})) ^ 2
                    / ((({{ sd_a }}) ^ 2 / ({{ n_a }})) ^ 2 / (({{ n_a }}) - 1)
                       + (({{ sd_b }}) ^ 2 / ({{ n_b }})) ^ 2 / (({{ n_b }}) - 1))
               else ({{ n_a }}) + ({{ n_b }}) - 2 end)
{%- endmacro %}

{% macro welch_verdict(diff, ci, n_a, n_b, scale, is_higher_better) -%}
    (case
        when ({{ n_a }}) < 2 or ({{ n_b }}) < 2 then 'n < 2'
        when abs({{ diff }}) > ({{ ci }}) + 1e-9 * ({{ scale }})
            then case when ({{ diff }} > 0) = ({{ is_higher_better }}) then 'better' else 'worse' end
        else 'indistinguishable'
    end)
{%- endmacro %}
