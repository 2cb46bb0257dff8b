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

{#- The same against the host baseline, in a mart built with stats_and_host_ctes (relations `stats` and `host`, each
    with n_runs): vs_host_ci95(sd_col) = Welch's half-width of stats - host on the column whose standard deviation is
    sd_col; overhead_ci95_pct(mean_col, sd_col) = that half-width over the host mean in percent (0 on host rows, null
    without a host mean); vs_host_verdict(mean_col, sd_col, is_higher_better) = welch_verdict of stats - host. -#}
{% macro vs_host_ci95(sd_col) -%}
    {{ welch_ci95('stats.n_runs', 'stats.' ~ sd_col, 'host.n_runs', 'host.' ~ sd_col) }}
{%- endmacro %}

{% macro overhead_ci95_pct(mean_col, sd_col) -%}
    case
        when host.{{ mean_col }} > 0 and stats.cni = 'host' then 0
        when host.{{ mean_col }} > 0 then {{ vs_host_ci95(sd_col) }} / host.{{ mean_col }} * 100
    end
{%- endmacro %}

{% macro vs_host_verdict(mean_col, sd_col, is_higher_better) -%}
    {{ welch_verdict('stats.' ~ mean_col ~ ' - host.' ~ mean_col, vs_host_ci95(sd_col), 'stats.n_runs', 'host.n_runs',
                     'host.' ~ mean_col, is_higher_better) }}
{%- endmacro %}
