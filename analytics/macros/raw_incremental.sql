{#- The staging models read the raw files one file per row group: every staging row comes from exactly one raw object
    (its raw_key). With the raw cache (EDGEBENCH_RAW_CACHE, what warehouse.build() sets) they are incremental: a build
    starting from the previous warehouse deletes the rows of every object that changed or is gone, and parses only the
    new or changed objects. edgebench_raw_cache.changed lists those objects (filename as in the cache); build()'s
    sync_raw_cache writes it. Without the cache (dbt by hand over the raw root) they are plain tables. -#}

{% macro raw_staging_materialized() -%}
    {{ return('incremental' if env_var('EDGEBENCH_RAW_CACHE', '') else 'table') }}
{%- endmacro %}

{#- The key (raw_key: the object; run_id: its run) of every object that changed or is gone -#}
{% macro changed_keys(key='raw_key') -%}
    {%- set pattern = {'raw_key': '(runs/[^/]+/[^/]+/[^/]+/[^/]+)$', 'run_id': 'runs/[^/]+/[^/]+/([^/]+)/[^/]+$'}[key] -%}
    select distinct regexp_extract(filename, '{{ pattern }}', 1) from edgebench_raw_cache.changed
{%- endmacro %}

{#- pre-hook of an incremental model: drop its rows of the changed or deleted objects (key raw_key) or of their runs
    (key run_id) -#}
{% macro delete_changed(key='raw_key') -%}
    {%- if is_incremental() -%}
    delete from {{ this }} where {{ key }} in ({{ changed_keys(key) }})
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

{#- Models with rows of a run's samples joined to its deduplicated manifest (int_dds__samples, int_http__requests,
    fct_http_requests, fct_resource_usage) are incremental the same way, by run (pre-hook delete_changed('run_id')):
    every row depends only on the raw objects of its own run_id (the samples beside a manifest and the run's
    manifests, whichever sweep/cell directory they are in), so the rows of a run with any object added, changed or
    deleted are deleted and recomputed, and the others kept. -#}

{#- condition on a run_id column: only the changed runs, in an incremental build ('and ...' or nothing) -#}
{% macro only_changed_runs(run_id='run_id', keyword='and') -%}
    {%- if is_incremental() -%}
    {{ keyword }} {{ run_id }} in ({{ changed_keys('run_id') }})
    {%- endif -%}
{%- endmacro %}
