{#- Helpers for the *_overhead_vs_host / cmp_tuning_vs_host marts, which compare each configuration with the
    host-network baseline (cni = 'host') of the same statistics model. -#}

{#- Emits two CTE definitions (no leading `with`): `stats` = every row of relation, `host` = its cni = 'host'
    rows. Usage: with {{ stats_and_host_ctes(ref('int_..._stats')) }} select ... from stats left join host on ... -#}
{% macro stats_and_host_ctes(relation) -%}
stats as (

    select * from {{ relation }}

),

host as (

    select * from stats where cni = 'host'

)
{%- endmacro %}

{#- Emits the join condition `stats.<c> = host.<c> and ...` over columns, one per line; with null_safe=true
    `is not distinct from` instead of `=` (for parameters that may be null on both sides). -#}
{% macro host_match(columns, null_safe=false) -%}
    {%- set op = 'is not distinct from' if null_safe else '=' -%}
    {%- for column in columns -%}
    {{ '\n    and ' if not loop.first }}stats.{{ column }} {{ op }} host.{{ column }}
    {%- endfor -%}
{%- endmacro %}

{#- Emits a boolean: do the two 95% intervals (mean_col +- ci_col) of relations stat and host not overlap?
    Conservative significance; null when either side has no interval (n < 2). -#}
{% macro significance(stat, host, mean_col, ci_col) -%}
    case when {{ stat }}.{{ ci_col }} is null or {{ host }}.{{ ci_col }} is null then null
         else abs({{ stat }}.{{ mean_col }} - {{ host }}.{{ mean_col }}) > {{ stat }}.{{ ci_col }} + {{ host }}.{{ ci_col }} end
{%- endmacro %}
