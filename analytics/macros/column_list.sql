{#- column_list(columns, prefix=''): prefix ~ column for each name in columns, one per line, comma-separated (no
    leading or trailing comma); prefix is a table alias with its dot, e.g. 'runs.'. What cell_dimension_columns
    (cell_dimensions.sql) emits its list with, and what the models that select a list computed from
    cell_dimension_list() (e.g. every dimension but the substrate's) spell it with. Every other select list is
    written out in the model. -#}
{% macro column_list(columns, prefix='') -%}
    {{ prefix }}{{ columns | join(',\n    ' ~ prefix) }}
{%- endmacro %}
