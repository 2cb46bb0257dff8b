{#- Emits the text verdict of a latency-like statistic (lower = better) of relation `stat` against its host-network
    baseline row `host` (same columns; see stats_and_host_ctes):
      'baseline'           the host row itself (cni = 'host'; or the condition is_baseline, a SQL boolean over
                           `stat`, for marts whose baseline is not the host network, e.g. intercluster = 'none')
      'below resolution'   |stat - host| < the larger resolution_col of the two sides: the load generator cannot
                           measure a difference that small (rounded to 1e-9 first, so one whole step is not)
      'better' / 'worse'   the two 95% intervals (mean_col +- ci_col) do not overlap; lower = better
      'indistinguishable'  they overlap
      null                 no host row, or a side without an interval (fewer than 2 runs) and a difference that is
                           not below resolution -#}
{% macro latency_verdict(stat, host, mean_col, ci_col, resolution_col='resolution_ms', is_baseline=none) -%}
    case
        when {{ is_baseline if is_baseline else stat ~ ".cni = 'host'" }} then 'baseline'
        when {{ stat }}.{{ mean_col }} is null or {{ host }}.{{ mean_col }} is null then null
        when round(abs({{ stat }}.{{ mean_col }} - {{ host }}.{{ mean_col }}), 9)
             < greatest({{ stat }}.{{ resolution_col }}, {{ host }}.{{ resolution_col }}) then 'below resolution'
        when {{ stat }}.{{ ci_col }} is null or {{ host }}.{{ ci_col }} is null then null
        when {{ significance(stat, host, mean_col, ci_col) }}
            then case when {{ stat }}.{{ mean_col }} < {{ host }}.{{ mean_col }} then 'better' else 'worse' end
        else 'indistinguishable'
    end
{%- endmacro %}
