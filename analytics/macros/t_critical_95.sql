{#- Two-sided 95% Student-t critical value t(0.975, df) for a SQL expression df; null when df < 1.
    Exact table up to 30 degrees of freedom, then the value at the lower end of each
    step (conservative: intervals are never too narrow). -#}
{% macro t_critical_95(df) -%}
    {%- set t = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042] -%}
    (case
        when ({{ df }}) < 1 then null
        {%- for v in t %}
        when ({{ df }}) = {{ loop.index }} then {{ v }}
        {%- endfor %}
        when ({{ df }}) <= 40 then 2.042
        when ({{ df }}) <= 60 then 2.021
        when ({{ df }}) <= 120 then 2.000
        else 1.980
    end)
{%- endmacro %}
