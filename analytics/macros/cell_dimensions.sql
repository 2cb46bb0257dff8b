{#- The cell dimensions as warehouse columns: the one place the models name them (besides staging, which parses them
    from the manifest). A new dimension is a new entry here; every per-run mart, every comparison grain and every
    host-baseline join picks it up.
    This file is meant to be generated from the Python table of cell dimensions: keep the names, signatures and the
    column order (the marts' column order follows it).

    cell_dimension_list()               the column names, in order: substrate, distribution, the CNI mode (cni,
                                        cni_mode and the datapath that follows from it), the link conditions
                                        (netem_scenario), the tuning profile, the CPU class. The inter-cluster tool
                                        and the service proxy are cell dimensions too, but comparisons hold them at
                                        their neutral value (or compare them in their own marts) and they carry
                                        columns of their own (intercluster_*, service_proxy_mode): not listed here.
    cell_dimension_columns(prefix='')   the same, comma-separated for a select or group by list (prefix: a table
                                        alias with its dot, e.g. 'r.').
    own_cores_only(prefix='')           a condition: the cell runs on the machine's own cores (CPU class at its
                                        neutral value 'none'); comparisons that do not hold the CPU class in their
                                        grain keep CPU-limited cells out with it. -#}

{% macro cell_dimension_list() -%}
    {{ return(['substrate', 'distribution', 'cni', 'cni_mode', 'datapath', 'netem_scenario', 'tuning_profile',
               'cpu_class']) }}
{%- endmacro %}

{% macro cell_dimension_columns(prefix='') -%}
    {{ column_list(cell_dimension_list(), prefix) }}
{%- endmacro %}

{% macro own_cores_only(prefix='') -%}
    coalesce({{ prefix }}cpu_class, 'none') = 'none'
{%- endmacro %}
