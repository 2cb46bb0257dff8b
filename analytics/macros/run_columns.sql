{#- Shared select-list fragments for the per-run models (int_dds__runs and the fct_* run marts), so they carry the
    run attributes under the same names and in the same order. Each macro emits the column references separated
    by ",<newline>    " (no leading or trailing comma); prefix is a table alias with its dot, e.g. 'runs.'. -#}

{#- Emits prefix ~ column for each name in columns, one per line, comma-separated. -#}
{% macro column_list(columns, prefix='') -%}
    {{ prefix }}{{ columns | join(',\n    ' ~ prefix) }}
{%- endmacro %}

{#- The run's identity and environment: ids, the cell dimensions (cell_dimensions.sql), MTU, the link conditions in
    detail (netem_*), the tuned MTU and the inter-cluster tool (intercluster* / is_emulated; 'none' = one cluster),
    in the order of the per-run marts. -#}
{% macro run_attribute_columns(prefix='') -%}
    {{ column_list(
        ['run_id', 'sweep_id', 'cell_id']
        + cell_dimension_list()
        + ['mtu',
           'netem_mechanism', 'netem_delay_ms', 'netem_jitter_ms', 'netem_loss_pct', 'netem_rate_mbit', 'netem_scope',
           'tuning_mtu',
           'intercluster', 'intercluster_tool', 'intercluster_mode', 'intercluster_implementation', 'is_emulated',
           'intercluster_model'],
        prefix) }}
{%- endmacro %}

{#- How the run ended: status, error, validity, attempt, timestamps, the manifest's object key (raw_key), and the
    machine's CPU headroom during the run (int_runs__cpu_headroom). -#}
{% macro run_outcome_columns(prefix='') -%}
    {{ column_list([
        'status', 'error', 'is_valid', 'invalid_reason', 'attempt', 'started_at', 'finished_at', 'raw_key', 'is_imported',
        'min_idle_cpu_pct', 'low_cpu_headroom',
    ], prefix) }}
{%- endmacro %}

{#- The DDS parameters that follow dds_mode: reliability, transport, subscribers, discovery, security, batching,
    rate. -#}
{% macro dds_parameter_columns(prefix='') -%}
    {{ column_list(['reliability', 'transport', 'subscribers', 'discovery', 'security', 'batching', 'rate',
                    'ping_timeout_ms'], prefix) }}
{%- endmacro %}

{#- The workload and its parameters that make a configuration of the tuning-efficiency comparison
    (int_tuning__config_stats, cmp_tuning_vs_host): the DDS parameters are null for iperf3 rows. -#}
{% macro tuning_parameter_list() -%}
    {{ return(['workload', 'protocol', 'path', 'placement', 'length_bytes', 'duration_s', 'dds_mode', 'reliability',
               'transport', 'subscribers', 'security', 'rate', 'ping_timeout_ms']) }}
{%- endmacro %}

{% macro tuning_parameter_columns(prefix='') -%}
    {{ column_list(tuning_parameter_list(), prefix) }}
{%- endmacro %}

{#- The select list of the per-run DDS marts (fct_dds_latency, fct_dds_throughput): the run's attributes, the
    workload parameters, the mode's own metrics (metrics, a list of columns of int_dds__runs), the publisher's and
    subscribers' resources, the number of per-second samples, the outcome. -#}
{% macro dds_run_mart_columns(metrics) -%}
    {{ run_attribute_columns() }},
    {{ column_list(['protocol', 'path', 'placement', 'length_bytes', 'duration_s', 'repetition']) }},
    {{ dds_parameter_columns() }},
    {{ column_list(metrics + ['cpu_pub_pct', 'rss_pub_mb', 'cpu_sub_pct', 'rss_sub_mb', 'n_samples']) }},
    {{ run_outcome_columns() }}
{%- endmacro %}
