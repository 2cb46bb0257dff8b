{#- Welch's two-sample interval, for comparing a configuration with its baseline when both sides are means over runs.

    welch_ci95(n_a, sd_a, n_b, sd_b): half-width of the 95% confidence interval of mean_a - mean_b, from each side's
    run count and sample standard deviation (SQL expressions); null when a side has fewer than 2 runs. Welch-
    Satterthwaite degrees of freedom, rounded down (t_critical_95 is conservative above 30); two sides without any
    spread get n_a + n_b - 2 and a zero-width interval.

    The verdict on that interval is macros/verdict.sql's. -#}
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
                       + (({{ sd_b }}) ^ 2 / ({{ n_b }})) ^ 2 / (({{ n_b }}) - 1)) + 1e-9
               else ({{ n_a }}) + ({{ n_b }}) - 2 end)
{%- endmacro %}

{#- The same against the host baseline, in a mart built with stats_and_host_ctes (relations `stats` and `host`, each
    with n_runs): vs_host_ci95(sd_col) = Welch's half-width of stats - host on the column whose standard deviation is
    sd_col; overhead_ci95_pct(mean_col, sd_col) = that half-width over the host mean in percent (0 on host rows, null
    without a host mean); vs_host_verdict(mean_col, sd_col, is_higher_better, family) = the verdict of stats - host;
    vs_host_runs_to_decide(verdict_col, mean_col, sd_col, family) = its runs_to_decide. -#}
{% macro vs_host_ci95(sd_col) -%}
    {{ welch_ci95('stats.n_runs', 'stats.' ~ sd_col, 'host.n_runs', 'host.' ~ sd_col) }}
{%- endmacro %}

{% macro overhead_ci95_pct(mean_col, sd_col, pair_name=none) -%}
    case
        when host.{{ mean_col }} > 0 and stats.cni = 'host' then 0
        when host.{{ mean_col }} > 0
            then {{ vs_host_interval(sd_col, pair_name) if pair_name else vs_host_ci95(sd_col) }} / host.{{ mean_col }} * 100
    end
{%- endmacro %}

{#- With pair_name (a mart with a `pairs` CTE, macros/verdict.sql round_pairs), the interval is paired by round where
    every run has its pair (vs_host_interval), else Welch's. -#}
{% macro vs_host_verdict(mean_col, sd_col, is_higher_better, family, pair_name=none, resolution=none) -%}
    {{ verdict('stats.' ~ mean_col ~ ' - host.' ~ mean_col,
               vs_host_interval(sd_col, pair_name) if pair_name else vs_host_ci95(sd_col),
               'stats.n_runs', 'host.n_runs', 'host.' ~ mean_col, is_higher_better, family, resolution) }}
{%- endmacro %}

{% macro vs_host_runs_to_decide(verdict_col, mean_col, sd_col, family, pair_name=none, resolution=none) -%}
    {{ runs_to_decide(verdict_col, 'stats.' ~ mean_col ~ ' - host.' ~ mean_col,
                      vs_host_interval(sd_col, pair_name) if pair_name else vs_host_ci95(sd_col),
                      'least(stats.n_runs, host.n_runs)', 'host.' ~ mean_col, family, resolution) }}
{%- endmacro %}
