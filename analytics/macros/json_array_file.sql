{#- Reads the per-run JSON array files of source edgebench_raw.<source_table> (read_text: filename, content; one
    file runs/<sweep_id>/<cell_id>/<run_id>/<file_name> per run) and emits a select with one row per array element:
        sweep_id, cell_id, run_id        parsed from the object key
        sample_index (if with_index)     1-based position of the element in its file (integer)
        <element>                        the element as JSON, to be parsed by name
        raw_key                          runs/<sweep_id>/<cell_id>/<run_id>/<file_name>
    A file that is not a JSON array fails the build naming the file. Use it as the body of a CTE. -#}
{% macro json_array_file_elements(source_table, file_name, element, with_index=false) -%}
    {%- set file_pattern = file_name | replace('.', '\\.') -%}
    {%- set key_pattern = 'runs/([^/]+)/([^/]+)/([^/]+)/' ~ file_pattern ~ '$' -%}
    with parsed as (

        select
            filename,
            case
                when json_valid(content) and json_type(content::json) = 'ARRAY' then content::json
                else error('{{ file_name }} is not a JSON array: ' || filename)
            end as doc
        from {{ source('edgebench_raw', source_table) }}
        {{ raw_staging_only_changed() }}

    ),

    unnested as (

        {% if with_index -%}
        -- the two unnests have the same length and are zipped: sample_index is the 1-based position in the file
        {% endif -%}
        select
            filename,
            unnest(json_extract(doc, '$[*]'))                        as {{ element }}
            {%- if with_index %},
            unnest(range(1, json_array_length(doc)::bigint + 1))     as sample_index
            {%- endif %}
        from parsed

    )

    select
        regexp_extract(filename, '{{ key_pattern }}', 1)             as sweep_id,
        regexp_extract(filename, '{{ key_pattern }}', 2)             as cell_id,
        regexp_extract(filename, '{{ key_pattern }}', 3)             as run_id,
        {%- if with_index %}
        sample_index::integer                                        as sample_index,
        {%- endif %}
        {{ element }},
        regexp_extract(filename, '(runs/[^/]+/[^/]+/[^/]+/{{ file_pattern }})$', 1) as raw_key
    from unnested
{%- endmacro %}
