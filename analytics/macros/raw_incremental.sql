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

{#- Models with rows of a run's samples joined to its deduplicated manifest (int_dds__samples, int_http__requests,
    fct_http_requests, fct_resource_usage: per run) are incremental the same way, by run: every row depends only on the raw objects of its own
    run_id (the samples beside a manifest and the run's manifests, whichever sweep/cell directory they are in), so
    the rows of a run with any object added, changed or deleted are deleted and recomputed, and the others kept. -#}
{% macro changed_run_ids() -%}
    select distinct regexp_extract(filename, 'runs/[^/]+/[^/]+/([^/]+)/[^/]+$', 1) from edgebench_raw_cache.changed
{%- endmacro %}

{#- pre-hook of a run-incremental model: drop the rows of the changed runs -#}
{% macro run_incremental_delete_changed() -%}
    {%- if is_incremental() -%}
    delete from {{ this }} where run_id in ({{ changed_run_ids() }})
    {%- else -%}
    select 1
    {%- endif -%}
{%- endmacro %}

{#- condition on a run_id column: only the changed runs, in an incremental build ('and ...' or nothing) -#}
{% macro only_changed_runs(run_id='run_id', keyword='and') -%}
    {%- if is_incremental() -%}
    {{ keyword }} {{ run_id }} in ({{ changed_run_ids() }})
    {%- endif -%}
{%- endmacro %}
