{#- The staging models read the raw files one file per row group: every staging row comes from exactly one raw object
    (its raw_key). With the raw cache (EDGEBENCH_RAW_CACHE, what warehouse.build() sets) they are incremental: a build
    starting from the previous warehouse deletes the rows of every object that changed or is gone, and parses only the
    new or changed objects. edgebench_raw_cache.changed lists those objects (filename as in the cache); build()'s
    sync_raw_cache writes it. Without the cache (dbt by hand over the raw root) they are plain tables. -#}

{% macro raw_staging_materialized() -%}
    {{ return('incremental' if env_var('EDGEBENCH_RAW_CACHE', '') else 'table') }}
{%- endmacro %}

{#- pre-hook of an incremental staging model: drop the rows of the changed or deleted objects -#}
{% macro raw_staging_delete_changed() -%}
    {%- if is_incremental() -%}
    delete from {{ this }} where raw_key in (
        select regexp_extract(filename, '(runs/[^/]+/[^/]+/[^/]+/[^/]+)$', 1) from edgebench_raw_cache.changed)
    {%- else -%}
    select 1
    {%- endif -%}
{%- endmacro %}

{#- where-clause on a source's filename: only the changed objects, in an incremental build -#}
{% macro raw_staging_only_changed(filename='filename') -%}
    {%- if is_incremental() -%}
    where {{ filename }} in (select filename from edgebench_raw_cache.changed)
    {%- endif -%}
{%- endmacro %}
