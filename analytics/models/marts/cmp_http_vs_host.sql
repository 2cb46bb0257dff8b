-- HTTP response time of each CNI/mode against the host-network baseline with identical substrate, distribution,
-- netem, tuning, service, path, placement, payload and requests per run (status = 'ok' AND is_valid runs). Per side: n runs, the mean
-- over runs of each run's p50/p90 with its standard deviation and 95% CI (Student t), and the load generator's time
-- resolution.
--   response_pXX_diff_ms = cni - host with response_pXX_diff_ci95_ms (Welch's 95% interval of the difference);
--   response_pXX_overhead_pct = (cni - host) / host * 100 (positive = slower than host).
--   verdict (on the p90) and response_p50_verdict: the project's one rule (macros/verdict.sql, lower = better):
--   equivalent / better / worse / inconclusive / 'n < 2', with the latency margin never below the coarser
--   resolution_ms of the two sides (hey's 0.1 ms steps once made every CNI "+20%" on the local testbed);
--   'baseline' on host rows, null without a host baseline. runs_to_decide: for an inconclusive verdict.
-- Host rows kept (is_host_baseline, overheads 0, verdict 'baseline').
{%- set match = ['service', 'path', 'placement', 'length_bytes'] %}
{%- set null_safe_match = ['requests_planned'] %}  {#- null in manifests older than the parameter #}
{%- set resolution = 'greatest(stats.resolution_ms, host.resolution_ms)' %}
{#- per statistic: its verdict column and its runs_to_decide column (the p90's are the mart's headline ones) #}
{%- set statistics = [('p50', 'response_p50_verdict', 'response_p50_runs_to_decide'),
                      ('p90', 'verdict', 'runs_to_decide')] %}
with {{ stats_and_host_ctes(ref('int_http__config_stats')) }},

runs as (

    select * from {{ ref('int_http__comparable_runs') }}

),

pairs as (

    {{ round_pairs(match, null_safe_match, {'p50': '@.response_p50_ms', 'p90': '@.response_p90_ms'}) }}

)

select
    {{ cell_dimension_columns('stats.') }},
    stats.service,
    stats.path,
    stats.placement,
    stats.length_bytes,
    stats.requests_planned,
    stats.cni = 'host'                      as is_host_baseline,
    stats.n_runs,
    stats.n_requests,
    stats.n_errors,
    stats.response_p50_ms,
    stats.response_p50_stddev_ms,
    stats.response_p50_ci95_ms,
    stats.response_p90_ms,
    stats.response_p90_stddev_ms,
    stats.response_p90_ci95_ms,
    stats.resolution_ms,
    stats.load_clients,
    stats.n_low_headroom,
    host.n_runs                             as host_n_runs,
    host.n_low_headroom                     as host_n_low_headroom,
    host.response_p50_ms                    as host_response_p50_ms,
    host.response_p50_stddev_ms             as host_response_p50_stddev_ms,
    host.response_p50_ci95_ms               as host_response_p50_ci95_ms,
    host.response_p90_ms                    as host_response_p90_ms,
    host.response_p90_stddev_ms             as host_response_p90_stddev_ms,
    host.response_p90_ci95_ms               as host_response_p90_ci95_ms,
    host.resolution_ms                      as host_resolution_ms,
    stats.response_p50_ms - host.response_p50_ms as response_p50_diff_ms,
    stats.response_p90_ms - host.response_p90_ms as response_p90_diff_ms,
    -- the verdict (macros/verdict.sql; lower = better; the margin never below the coarser resolution of the two
    -- sides; paired by round where every run has its pair): 'baseline' on host rows, null without a host baseline
    {%- for stat, verdict_col, _ in statistics %}
    case
        when stats.cni = 'host' then 'baseline'
        when host.response_{{ stat }}_ms is not null
            then {{ vs_host_verdict('response_' ~ stat ~ '_ms', 'response_' ~ stat ~ '_stddev_ms', 'false', 'latency',
                                    stat, resolution) }}
    end                                     as {{ verdict_col }},
    {%- endfor %}
    {%- for stat, _, _ in statistics %}
    {{ vs_host_interval('response_' ~ stat ~ '_stddev_ms', stat) }} as response_{{ stat }}_diff_ci95_ms,
    {%- endfor %}
    {{ verdict_margin_pct('latency') }}::double as verdict_margin_pct,
    {{ vs_host_method() }}                  as verdict_method,
    pairs.n_pairs,
    {%- for stat, _, _ in statistics %}
    pairs.{{ stat }}_pair_sd                       as response_{{ stat }}_pair_sd_ms,
    {%- endfor %}
    {%- for stat, verdict_col, runs_col in statistics %}
    {{ vs_host_runs_to_decide(verdict_col, 'response_' ~ stat ~ '_ms', 'response_' ~ stat ~ '_stddev_ms', 'latency',
                              stat, resolution) }}
                                            as {{ runs_col }},
    {%- endfor %}
    case when host.response_p50_ms > 0
         then (stats.response_p50_ms - host.response_p50_ms) / host.response_p50_ms * 100
    end                                     as response_p50_overhead_pct,
    case when host.response_p90_ms > 0
         then (stats.response_p90_ms - host.response_p90_ms) / host.response_p90_ms * 100
    end                                     as response_p90_overhead_pct,
    {{ vs_host_tail(match, null_safe_match=null_safe_match) }}
{{ pairs_join(match, null_safe_match) }}
