{#- Shared select-list fragments for the per-run models (int_dds__runs and the fct_* run marts), so they carry the
    run attributes under the same names and in the same order. Each macro emits the column references separated
    by ",<newline>    " (no leading or trailing comma); prefix is a table alias with its dot, e.g. 'runs.'. -#}

{#- Emits prefix ~ column for each name in columns, one per line, comma-separated. -#}
{% macro column_list(columns, prefix='') -%}
    {{ prefix }}{{ columns | join(',\n    ' ~ prefix) }}
{%- endmacro %}

{#- The run's identity and environment: ids, substrate/distribution, CNI, MTU, link conditions (netem_*),
    tuning, the inter-cluster tool (intercluster* / is_emulated; 'none' = one cluster) and the CPU class ('none' =
    the machine's own cores), in the order of the per-run marts. -#}
{% macro run_attribute_columns(prefix='') -%}
    {{ column_list([
        'run_id', 'sweep_id', 'cell_id',
        'substrate', 'distribution', 'cni', 'cni_mode', 'datapath', 'mtu',
        'netem_scenario', 'tuning_profile',
        'netem_mechanism', 'netem_delay_ms', 'netem_jitter_ms', 'netem_loss_pct', 'netem_rate_mbit', 'netem_scope',
        'tuning_mtu',
        'intercluster', 'intercluster_tool', 'intercluster_mode', 'intercluster_implementation', 'is_emulated',
        'intercluster_model', 'cpu_class',
    ], prefix) }}
{%- endmacro %}

{#- How the run ended: status, error, validity, attempt, timestamps, and the manifest's object key (raw_key). -#}
{% macro run_outcome_columns(prefix='') -%}
    {{ column_list([
        'status', 'error', 'is_valid', 'invalid_reason', 'attempt', 'started_at', 'finished_at', 'raw_key', 'is_imported',
    ], prefix) }}
{%- endmacro %}

{#- The DDS parameters that follow dds_mode: reliability, transport, subscribers, discovery, security, rate. -#}
{% macro dds_parameter_columns(prefix='') -%}
    {{ column_list(['reliability', 'transport', 'subscribers', 'discovery', 'security', 'rate'], prefix) }}
{%- endmacro %}
