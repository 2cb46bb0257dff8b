{#- The column rules of one model, checked in one pass over it: one dbt node per model instead of one per column and
    rule (dbt's fixed cost per node, about 0.04 s, dominated the build when every rule was its own test).
      not_null:        columns that hold no null; the name neutral_dimensions stands for the cell dimensions with a
                       neutral value (staging coalesces them to it: macros/cell_dimensions.sql);
      accepted_values: column -> the values it may hold (nulls pass, as in dbt's accepted_values; strings are quoted,
                       numbers and booleans are not);
      unique:          a column (unique among its non-null values, as dbt's unique) or a list of columns (unique as a
                       combination; nulls compare equal), in which the name cell_dimensions stands for the cell
                       dimension columns (macros/cell_dimensions.sql) and {cell_dimensions_except: [a, b]} for those
                       but a and b (a comparison across substrates, say, has no substrate column).
    Returns one row per broken rule: rule ('<column>: <rule>') and problem (how many rows, with up to five of the
    offending values). warehouse.build() prints these rows when the test fails. -#}
{% test column_contract(model, not_null=[], accepted_values={}, unique=[]) %}
{%- set checks = [] -%}
{%- set not_null_columns = [] -%}
{%- for col in not_null -%}
    {%- do not_null_columns.extend(neutral_dimension_list() if col == 'neutral_dimensions' else [col]) -%}
{%- endfor -%}
{%- for col in not_null_columns -%}
    {%- set bad = 'count(*) filter (where ' ~ col ~ ' is null)' -%}
    {%- do checks.append((col ~ ': not_null', 'case when ' ~ bad ~ " > 0 then " ~ bad ~ " || ' null rows' end")) -%}
{%- endfor -%}
{%- for col, values in accepted_values.items() -%}
    {%- set literals = [] -%}
    {%- for v in values -%}
        {%- do literals.append("'" ~ (v | replace("'", "''")) ~ "'" if v is string else ((v | string | lower) if v is boolean else v | string)) -%}
    {%- endfor -%}
    {%- set where = col ~ ' not in (' ~ literals | join(', ') ~ ')' -%}
    {%- set bad = 'count(*) filter (where ' ~ where ~ ')' -%}
    {%- do checks.append((col ~ ': accepted_values', 'case when ' ~ bad ~ ' > 0 then ' ~ bad ~ " || ' rows outside ["
        ~ (values | join(', ') | replace("'", "''")) ~ "], e.g. ' || array_to_string(list_slice(list(distinct " ~ col
        ~ '::varchar) filter (where ' ~ where ~ "), 1, 5), ', ') end")) -%}
{%- endfor -%}
{%- for key in unique -%}
    {%- if key is string -%}
        {%- set name, total, distinct = key, 'count(' ~ key ~ ')', 'count(distinct ' ~ key ~ ')' -%}
    {%- else -%}
        {%- set fields, names = [], [] -%}
        {%- for name in key -%}
            {%- if name is mapping -%}
                {%- set columns = cell_dimension_list() | reject('in', name['cell_dimensions_except']) | list -%}
                {%- do names.append('cell_dimensions except ' ~ name['cell_dimensions_except'] | join('/')) -%}
            {%- else -%}
                {%- set columns = cell_dimension_list() if name == 'cell_dimensions' else [name] -%}
                {%- do names.append(name) -%}
            {%- endif -%}
            {%- for c in columns -%}
                {%- do fields.append("'" ~ c ~ "': " ~ c) -%}
            {%- endfor -%}
        {%- endfor -%}
        {%- set name, total, distinct = names | join(', '), 'count(*)', 'count(distinct {' ~ fields | join(', ') ~ '})' -%}
    {%- endif -%}
    {%- do checks.append((name ~ ': unique', 'case when ' ~ total ~ ' > ' ~ distinct ~ ' then ' ~ total ~ ' - '
        ~ distinct ~ " || ' duplicate rows' end")) -%}
{%- endfor %}
with verdicts as (
    select
    {%- for name, expr in checks %}
        {{ expr }} as "{{ name }}"{{ "," if not loop.last }}
    {%- endfor %}
    from {{ model }}
)
unpivot verdicts on columns(*) into name rule value problem
{% endtest %}
