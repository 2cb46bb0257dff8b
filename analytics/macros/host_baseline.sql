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
    {{ columns_match('stats', 'host', columns, null_safe) }}
{%- endmacro %}

{#- The same between any two relations: `left.<c> = right.<c> and ...` (indent: what precedes each `and`). -#}
{% macro columns_match(left, right, columns, null_safe=false, indent='\n    ') -%}
    {%- set op = 'is not distinct from' if null_safe else '=' -%}
    {%- for column in columns -%}
    {{ indent ~ 'and ' if not loop.first }}{{ left }}.{{ column }} {{ op }} {{ right }}.{{ column }}
    {%- endfor -%}
{%- endmacro %}

{#- The tail of a *_vs_host mart built with stats_and_host_ctes: the configuration's sweep count and time span, then
    `from stats left join host` on the same cell dimensions except the network's own (host_match_dimensions; null-
    safe, as group by treats nulls), and on the workload parameters: match (with =) and null_safe_match (is not
    distinct from, for parameters that may be null on both sides). Ends the select list (no trailing comma before
    it). -#}
{% macro vs_host_tail(match, null_safe_match=[]) -%}
    stats.n_sweeps,
    stats.first_started_at,
    stats.last_started_at
from stats
left join host
    on  {{ host_baseline_match('stats', 'host', match, null_safe_match) }}
{%- endmacro %}

{#- What makes `right` the host baseline of configuration `left`: the shared cell dimensions (host_match_dimensions,
    null-safe), the workload's match columns (=) and null_safe_match (is not distinct from). The one definition:
    vs_host_tail joins by it, and round_pairs pairs runs and finds each configuration's host row by it. -#}
{% macro host_baseline_match(left, right, match, null_safe_match=[], indent='\n    ') -%}
    {{ columns_match(left, right, host_match_dimensions(), null_safe=true, indent=indent) }}
    {%- if match %}{{ indent }}and {{ columns_match(left, right, match, indent=indent) }}{% endif %}
    {%- if null_safe_match %}{{ indent }}and {{ columns_match(left, right, null_safe_match, null_safe=true,
                                                             indent=indent) }}
    {%- endif %}
{%- endmacro %}

{#- The cell dimensions a configuration shares with its host baseline: all but the network's own (cni, cni_mode,
    datapath). -#}
{% macro host_match_dimensions() -%}
    {{ return(cell_dimension_list() | reject('in', ['cni', 'cni_mode', 'datapath']) | list) }}
{%- endmacro %}
