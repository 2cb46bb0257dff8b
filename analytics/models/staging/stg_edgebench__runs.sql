{{ config(materialized=raw_staging_materialized(), incremental_strategy='append',
          pre_hook="{{ delete_changed('raw_key') }}") }}

-- One row per manifest.json. Fields are pulled out of the raw JSON text by name, so unknown fields and other
-- workloads' metrics objects never break the parse; missing fields are null.
with source as (

    select filename, content from {{ source('edgebench_raw', 'run_manifests') }} {{ raw_staging_only_changed() }}

),

parsed as (

    -- a manifest that is not valid JSON fails the build, naming the file
    select
        filename,
        case
            when json_valid(content) then content::json
            else error('malformed JSON in manifest ' || filename)
        end as manifest
    from source

),

renamed as (

    select
        manifest->>'run_id'                                        as run_id,
        manifest->>'sweep_id'                                      as sweep_id,
        manifest->>'cell_id'                                       as cell_id,
        try_cast(manifest->>'schema_version' as integer)           as schema_version,
        manifest->>'substrate'                                     as substrate,
        manifest->>'distribution'                                  as distribution,
        manifest->>'cni'                                           as cni,
        manifest->>'cni_mode'                                      as cni_mode,
        manifest->>'datapath'                                      as datapath,
        try_cast(manifest->>'mtu' as integer)                      as mtu,
        -- link conditions and tuning in force (docs/results-layout.md, last section). The `netem` / `tuning`
        -- objects win over the older top-level fields; manifests without either count as an untouched link and
        -- default settings, as the contract says.
        coalesce(manifest->'netem'->>'scenario', manifest->>'netem_scenario', 'none') as netem_scenario,
        coalesce(manifest->'netem'->>'mechanism',
                 case when coalesce(manifest->'netem'->>'scenario', manifest->>'netem_scenario', 'none') = 'none'
                      then 'none' end)                             as netem_mechanism,
        try_cast(manifest->'netem'->>'delay_ms' as double)         as netem_delay_ms,
        try_cast(manifest->'netem'->>'jitter_ms' as double)        as netem_jitter_ms,
        try_cast(manifest->'netem'->>'loss_pct' as double)         as netem_loss_pct,
        try_cast(manifest->'netem'->>'rate_mbit' as double)        as netem_rate_mbit,  -- null = unlimited
        manifest->'netem'->>'scope'                                as netem_scope,
        manifest->'netem'->>'readback'                             as netem_readback,
        coalesce(manifest->'tuning'->>'profile', manifest->>'tuning_profile', 'default_settings') as tuning_profile,
        case when json_type(manifest->'tuning'->'requested') = 'OBJECT'
             then manifest->'tuning'->'requested' end              as tuning_requested,
        case when json_type(manifest->'tuning'->'readback') = 'OBJECT'
             then manifest->'tuning'->'readback' end               as tuning_readback,
        case when json_type(manifest->'tuning'->'unsupported') = 'OBJECT'
             then manifest->'tuning'->'unsupported' end            as tuning_unsupported,
        try_cast(manifest->'tuning'->>'mtu' as integer)            as tuning_mtu,
        -- the cell dimensions with a neutral value (macros/cell_dimensions.sql, generated from plan/dimensions.py):
        -- a manifest written before one existed counts as that value (e.g. intercluster none: one cluster)
        {{ neutral_dimension_columns('manifest') }},
        -- inter-cluster tool (docs/results-layout.md): manifests without the keys are the one-cluster baseline
        -- (implementation baseline). The split tool / mode fall back to the entry itself ("tool:mode") if only it
        -- was written.
        coalesce(manifest->>'intercluster_tool',
                 nullif(split_part(coalesce(manifest->>'intercluster', 'none'), ':', 1), ''))
                                                                   as intercluster_tool,
        coalesce(manifest->>'intercluster_mode',
                 case when coalesce(manifest->>'intercluster', 'none') = 'none' then 'none'
                      else nullif(split_part(manifest->>'intercluster', ':', 2), '') end)
                                                                   as intercluster_mode,
        coalesce(manifest->>'intercluster_implementation',
                 manifest->'intercluster_detail'->>'implementation',
                 case when coalesce(manifest->>'intercluster', 'none') = 'none' then 'baseline' end)
                                                                   as intercluster_implementation,
        -- emulated = a model of the tool's data plane, never the tool itself
        coalesce(coalesce(manifest->>'intercluster_implementation',
                          manifest->'intercluster_detail'->>'implementation') = 'emulated', false)
                                                                   as is_emulated,
        manifest->'intercluster_detail'->>'model'                  as intercluster_model,
        manifest->'intercluster_detail'->>'version'                as intercluster_version,
        manifest->'intercluster_detail'->>'tool_version'           as intercluster_tool_version,
        manifest->'intercluster_detail'->>'cable_driver'           as intercluster_cable_driver,
        case when json_type(manifest->'intercluster_detail') = 'OBJECT'
             then manifest->'intercluster_detail' end              as intercluster_detail,
        -- service proxy (docs/results-layout.md): the mode that implemented ClusterIPs (the cell's entry is
        -- service_proxy, above). Older manifests: the testbed always used its plain nftables DNAT rule ('dnat'); on
        -- clusters the mode was not recorded (null).
        coalesce(manifest->>'service_proxy_mode',
                 case when manifest->>'substrate' = 'local' then 'dnat' end) as service_proxy_mode,
        -- what the substrate read back of a dimension (macros/cell_dimensions.sql, e.g. a CPU class's calibration),
        -- JSON; null where the manifest has none
        {{ dimension_detail_columns('manifest') }},
        -- CNI version (issue 14): what a cluster reported installed (environment.cni_version), else what a triggered
        -- rerun was asked to measure (environment.cni_version_requested, else trigger.new; the local testbed runs no CNI
        -- software, so it never has an installed version). A requested version counts only for the CNI the trigger
        -- named (other modes in a rerun sweep, e.g. the host baseline, were not asked to run it). Manifests written
        -- before versions were recorded have neither: null, no version, never part of a regression card.
        nullif(trim(manifest->'environment'->>'cni_version'), '')  as cni_version_installed,
        case when (manifest->'trigger'->>'cni') is null or (manifest->'trigger'->>'cni') = (manifest->>'cni')
             then nullif(trim(coalesce(manifest->'environment'->>'cni_version_requested',
                                       manifest->'trigger'->>'new')), '')
        end                                                        as cni_version_requested,
        -- (DuckDB lateral column aliases: the two columns just above)
        coalesce(cni_version_installed, cni_version_requested)     as cni_version_effective,
        case when cni_version_installed is not null then 'installed'
             when cni_version_requested is not null then 'requested' end as version_source,
        -- a real cluster's lab (environment.cluster, issue 32): the inventory's target, whether its nodes share one
        -- kernel (the local lab of `make lab-local`: never to be read as a Pi lab), the artifact source, the pin
        nullif(manifest->'environment'->'cluster'->>'target', '')   as lab_target,
        coalesce(try_cast(manifest->'environment'->'cluster'->>'shared_kernel' as boolean), false) as lab_shared_kernel,
        -- the kernel boot id the nodes of a shared-kernel lab share (the local lab, kind: this machine's own; absent
        -- on a lab of separate machines and on runs recorded before it was): two substrates measured on one machine in
        -- one boot (cmp_distributions: kind beside the local kubeadm lab)
        nullif(manifest->'environment'->'cluster'->>'kernel_boot_id', '') as lab_kernel_boot_id,
        -- the lab a run was measured on, part of every comparison's grain (macros/cell_dimensions.sql), so that two
        -- labs' runs are never pooled: the testbed, kind, or a real cluster's inventory target ('unnamed' for runs
        -- recorded before the target was)
        case when manifest->>'substrate' = 'ssh' then coalesce(lab_target, 'unnamed')
             when manifest->>'substrate' = 'local' then 'testbed'
             else manifest->>'substrate' end                       as lab,
        manifest->'environment'->'cluster'->>'artifact_source'      as artifact_source,
        manifest->'environment'->'cluster'->>'cni_version_pinned'   as cni_version_pinned,
        -- the cell's nodes (environment.cluster, issue 47: preflight.nodes_record). cpu_emulated: a node's CPU was
        -- emulated (a qemu TCG guest, the local lab's VM nodes): such a run shows what works, never how fast, and is
        -- made invalid below, which keeps it out of every comparison. node_kind: where the run was made, the support
        -- matrix's column: the testbed; for real clusters namespace (nodes sharing this machine's kernel), vm-x86,
        -- vm-arm64 (a VM node among the cell's nodes), machine (a lab of real machines); runs recorded before the
        -- nodes were fall back on shared_kernel (namespace) or machine; kind and imported runs keep the substrate.
        coalesce(manifest->'environment'->'cluster'->>'cpu' = 'emulated', false) as cpu_emulated,
        -- a cluster's DDS run without params.leftovers_stopped was stored before a DDS run stopped what earlier runs
        -- left in the pods (var dds_leftovers_reason), unless the commit that made it already stopped them (var
        -- dds_leftovers_stopped_commits); the testbed kills its process groups, imported runs are not ours
        coalesce((manifest->>'workload') = 'dds' and (manifest->>'substrate') <> 'local'
                 and json_type(manifest->'imported') is distinct from 'OBJECT'
                 and (manifest->'params'->'leftovers_stopped') is null
                 and coalesce(manifest->'environment'->>'edgebench_commit', '') not in (
                     {%- for c in var('dds_leftovers_stopped_commits') %}'{{ c }}'{{ ', ' if not loop.last }}{% endfor -%}
                 ), false) as dds_leftovers,
        case when manifest->>'substrate' = 'local' then 'testbed'
             when manifest->>'substrate' = 'ssh'
             then coalesce(nullif(manifest->'environment'->'cluster'->>'node_kind', ''),
                           case when lab_shared_kernel then 'namespace' else 'machine' end)
             else manifest->>'substrate' end                       as node_kind,
        -- each node's architecture, kind and kernel release, distinct and sorted, comma-separated (null: not recorded)
        nullif(array_to_string(list_sort(list_distinct(
            json_extract_string(manifest, '$.environment.cluster.node_list[*].arch'))), ','), '') as node_arches,
        nullif(array_to_string(list_sort(list_distinct(
            json_extract_string(manifest, '$.environment.cluster.node_list[*].kind'))), ','), '') as node_kinds,
        nullif(array_to_string(list_sort(list_distinct(
            json_extract_string(manifest, '$.environment.cluster.node_list[*].kernel'))), ','), '') as node_kernels,
        nullif(array_to_string(
            json_extract_string(manifest, '$.environment.cluster.node_list[*].name'), ','), '') as node_names,
        -- the trigger of a rerun sweep ({cni, new, previous, source, at}); all null for a plain sweep
        coalesce(json_type(manifest->'trigger') = 'OBJECT', false) as is_triggered_rerun,
        manifest->'trigger'->>'cni'                                as trigger_cni,
        manifest->'trigger'->>'new'                                as trigger_new_version,
        manifest->'trigger'->>'previous'                           as trigger_previous_version,
        manifest->'trigger'->>'source'                             as trigger_source,
        timezone('UTC', try_cast(manifest->'trigger'->>'at' as timestamptz)) as triggered_at,
        -- absent (older manifests) or JSON null = valid; anything that is not a boolean becomes null and fails
        -- the not_null data test instead of silently counting as valid. A run on an emulated CPU is never valid:
        -- this is the one place that keeps such runs out of every comparison (each reads `is_valid` runs only)
        case when cpu_emulated or dds_leftovers then false
             when (manifest->'is_valid') is null or json_type(manifest->'is_valid') = 'NULL' then true
             when json_type(manifest->'is_valid') = 'BOOLEAN' then (manifest->>'is_valid')::boolean
        end                                                        as is_valid,
        case when cpu_emulated or dds_leftovers
             then concat_ws('; ', nullif(manifest->>'invalid_reason', ''),
                            case when cpu_emulated then '{{ var('emulated_cpu_reason') }}' end,
                            case when dds_leftovers then '{{ var('dds_leftovers_reason') }}' end)
             else manifest->>'invalid_reason' end                  as invalid_reason,
        manifest->>'workload'                                      as workload,
        manifest->>'protocol'                                      as protocol,
        manifest->>'path'                                          as path,
        manifest->>'placement'                                     as placement,
        try_cast(manifest->>'length_bytes' as integer)             as length_bytes,
        try_cast(manifest->>'duration_s' as integer)               as duration_s,
        manifest->'params'->>'bitrate'                             as iperf3_bitrate,  -- iperf3 UDP -b
        try_cast(manifest->>'repetition' as integer)               as repetition,
        manifest->>'status'                                        as status,
        manifest->>'error'                                         as error,
        try_cast(manifest->>'attempt' as integer)                  as attempt,
        timezone('UTC', try_cast(manifest->>'started_at' as timestamptz))  as started_at,
        timezone('UTC', try_cast(manifest->>'finished_at' as timestamptz)) as finished_at,

        -- iperf3 metrics (docs/results-layout.md); null for other workloads and for runs that are not ok.
        -- throughput_mbps is also DDS throughput mode's metric of the same name and unit.
        try_cast(manifest->'metrics'->>'throughput_mbps' as double) as throughput_mbps,
        try_cast(manifest->'metrics'->>'sent_mbps' as double)       as sent_mbps,
        try_cast(manifest->'metrics'->>'received_mbps' as double)   as received_mbps,
        try_cast(manifest->'metrics'->>'retransmits' as bigint)     as retransmits,
        try_cast(manifest->'metrics'->>'jitter_ms' as double)       as jitter_ms,
        try_cast(manifest->'metrics'->>'lost_packets' as bigint)    as lost_packets,
        try_cast(manifest->'metrics'->>'packets' as bigint)         as packets,
        try_cast(manifest->'metrics'->>'lost_percent' as double)    as lost_percent,
        try_cast(manifest->'metrics'->>'cpu_host_pct' as double)    as cpu_host_pct,
        try_cast(manifest->'metrics'->>'cpu_remote_pct' as double)  as cpu_remote_pct,
        try_cast(manifest->'metrics'->>'mean_rtt_us' as double)     as mean_rtt_us,

        -- DDS params (workload = 'dds'); `mode` is called dds_mode to keep it apart from cni_mode
        manifest->'params'->>'mode'                                as dds_mode,
        manifest->'params'->>'reliability'                         as reliability,
        manifest->'params'->>'transport'                           as transport,
        try_cast(manifest->'params'->>'subscribers' as integer)    as subscribers,
        manifest->'params'->>'discovery'                           as discovery,
        manifest->'params'->>'security'                            as security,
        -- Cyclone message packing: 'off' only where the run asked for it (dds-batching), 'on' (ddsperf's own write
        -- batching) for every other DDS run, also those stored before the parameter existed
        case when manifest->>'workload' = 'dds'
             then coalesce(manifest->'params'->>'batching', 'on') end as batching,
        manifest->'params'->>'rate'                                as rate,  -- 'inf' or samples/s, as text
        -- how long a latency run's pinger waits for a lost answer before the next ping, ms: 1000 (ddsperf's fixed
        -- timeout) unless the run asked for another (dds-ping-timeouts, measured by edgebench-ddsrr); null for
        -- throughput runs, which send no pings
        case when (manifest->>'workload') = 'dds' and (manifest->'params'->>'mode') = 'latency'
             then coalesce(try_cast(manifest->'params'->>'ping_timeout_ms' as integer), 1000) end as ping_timeout_ms,
        -- DDS metrics (throughput_mbps above is shared: DDS throughput mode reports it under the same name)
        try_cast(manifest->'metrics'->>'latency_mean_us' as double) as latency_mean_us,
        try_cast(manifest->'metrics'->>'latency_min_us' as double)  as latency_min_us,
        try_cast(manifest->'metrics'->>'latency_p50_us' as double)  as latency_p50_us,
        try_cast(manifest->'metrics'->>'latency_p90_us' as double)  as latency_p90_us,
        try_cast(manifest->'metrics'->>'latency_p99_us' as double)  as latency_p99_us,
        try_cast(manifest->'metrics'->>'latency_max_us' as double)  as latency_max_us,
        try_cast(manifest->'metrics'->>'latency_count' as bigint)   as latency_count,
        try_cast(manifest->'metrics'->>'samples_per_s' as double)   as samples_per_s,
        try_cast(manifest->'metrics'->>'per_subscriber_mbps' as double) as per_subscriber_mbps,
        try_cast(manifest->'metrics'->>'lost_samples' as bigint)    as lost_samples,
        try_cast(manifest->'metrics'->>'cpu_pub_pct' as double)     as cpu_pub_pct,
        try_cast(manifest->'metrics'->>'rss_pub_mb' as double)      as rss_pub_mb,
        try_cast(manifest->'metrics'->>'cpu_sub_pct' as double)     as cpu_sub_pct,
        try_cast(manifest->'metrics'->>'rss_sub_mb' as double)      as rss_sub_mb,

        -- HTTP params (workload = 'http')
        manifest->'params'->>'service'                             as service,
        try_cast(manifest->'params'->>'requests' as integer)       as requests_planned,
        try_cast(manifest->'params'->>'connections' as integer)    as connections,
        case when json_type(manifest->'params'->'kpis_ms') = 'OBJECT'
             then manifest->'params'->'kpis_ms' end                as kpis_ms,  -- use case -> boundary in ms
        -- HTTP metrics as the load generator's parser reported them (the marts recompute them from requests)
        try_cast(manifest->'metrics'->>'requests' as integer)      as reported_requests,
        try_cast(manifest->'metrics'->>'errors' as integer)        as reported_errors,
        try_cast(manifest->'metrics'->>'response_mean_ms' as double) as reported_response_mean_ms,
        try_cast(manifest->'metrics'->>'response_p50_ms' as double)  as reported_response_p50_ms,
        try_cast(manifest->'metrics'->>'response_p90_ms' as double)  as reported_response_p90_ms,
        try_cast(manifest->'metrics'->>'response_p99_ms' as double)  as reported_response_p99_ms,
        try_cast(manifest->'metrics'->>'response_max_ms' as double)  as reported_response_max_ms,
        -- the load generator and the time resolution of its per-request times, ms (fortio's access log: 0.001;
        -- hey's CSV: 0.1; edgebench-httpduet, a duet round's interleaving client: 0.001). HTTP runs whose metrics
        -- predate these fields were all measured with hey.
        case when manifest->>'workload' = 'http' and json_type(manifest->'metrics') = 'OBJECT'
             then coalesce(manifest->'metrics'->>'client', 'hey') end  as load_client,
        case when manifest->>'workload' = 'http' and json_type(manifest->'metrics') = 'OBJECT'
             then coalesce(try_cast(manifest->'metrics'->>'resolution_ms' as double), 0.1) end as resolution_ms,

        -- nested objects kept as JSON for later workloads and for provenance
        manifest->'metrics'                                        as metrics,
        manifest->'params'                                         as params,
        manifest->'environment'                                    as environment,
        manifest->'raw_files'                                      as raw_files,
        -- runs made outside edgebench and brought in with `edgebench import` (the manifest's `imported` object)
        coalesce(json_type(manifest->'imported') = 'OBJECT', false) as is_imported,
        manifest->'imported'->>'tool'                              as imported_tool,

        -- provenance: key inside the bucket / raw root, and the full path that was read
        regexp_extract(filename, '(runs/[^/]+/[^/]+/[^/]+/manifest\.json)$', 1) as raw_key,
        filename                                                   as manifest_path

    from parsed

)

-- dds_leftovers only decides is_valid and invalid_reason above
select * exclude (dds_leftovers) from renamed
