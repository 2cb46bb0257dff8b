{#- Two-sided 95% Student-t critical value t(0.975, df) for a SQL expression df; null when df < 1.
    Exact table up to 30 degrees of freedom, then the value at the lower end of each
    step (conservative: intervals are never too narrow).
    df is bound once (a one-element list_transform): the macros nest (verdict -> interval -> Welch df), and an
    argument repeated in every branch made a compiled mart hundreds of kilobytes of SQL. -#}
{% macro t_critical_95(df) -%}
    {%- set t = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042] -%}
    list_transform([({{ df }})::double], lambda d: case
        when d < 1 then null
        when d <= 30 and d = floor(d) then [{{ t | join(', ') }}][d::integer]
        when d <= 40 then 2.042
        when d <= 60 then 2.021
        when d <= 120 then 2.000
        else 1.980
    end)[1]
{%- endmacro %}
