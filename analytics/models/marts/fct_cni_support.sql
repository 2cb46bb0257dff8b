-- The functional support matrix (issue 47): per CNI mode and node kind (fct_runs.node_kind: testbed, namespace,
-- vm-x86, vm-arm64, machine, kind), whether the mode works there. Every run of every status counts, valid or not:
-- runs on emulated CPUs are invalid for the comparisons but are exactly what this table shows. support:
--   works        some run is ok (n_ok of n_runs, the sweeps with an ok run);
--   unsupported  no run is ok and the latest run that is not ok was recorded unsupported (reason: its error);
--   fails        no run is ok and the latest run that is not ok failed (reason: its error).
-- Modes never tried on a kind have no row: the read API (marts/support.py) adds them from the catalog.
-- Imported runs (tool outputs made elsewhere) say nothing about a CNI's install: not counted.
with runs as (

    select * from {{ ref('int_runs__deduplicated') }}
    where not is_imported

),

latest_not_ok as (

    select cni, cni_mode, node_kind, status as latest_status, error as latest_error, sweep_id as latest_sweep_id,
           node_names as latest_node_names
    from runs
    where status <> 'ok'
    qualify row_number() over (partition by cni, cni_mode, node_kind
                               order by finished_at desc nulls last, started_at desc nulls last, run_id desc) = 1

),

counted as (

    select
        cni,
        cni_mode,
        node_kind,
        count(*)                                                            as n_runs,
        count(*) filter (where status = 'ok')                               as n_ok,
        count(*) filter (where status = 'failed')                           as n_failed,
        count(*) filter (where status = 'unsupported')                      as n_unsupported,
        string_agg(distinct sweep_id, ', ' order by sweep_id) filter (where status = 'ok') as ok_sweeps,
        string_agg(distinct sweep_id, ', ' order by sweep_id)               as sweeps,
        string_agg(distinct lab, ', ' order by lab)                         as labs,
        string_agg(distinct node_kinds, ' / ' order by node_kinds)          as node_kinds,
        string_agg(distinct node_arches, ' / ' order by node_arches)        as node_arches,
        string_agg(distinct node_kernels, ' / ' order by node_kernels)      as node_kernels,
        bool_or(cpu_emulated)                                               as cpu_emulated,
        max(finished_at)                                                    as last_finished_at
    from runs
    group by cni, cni_mode, node_kind

)

select
    counted.*,
    case when counted.n_ok > 0 then 'works'
         when latest.latest_status = 'unsupported' then 'unsupported'
         else 'fails' end                                                  as support,
    case when counted.n_ok = 0 then latest.latest_error end                as reason,
    case when counted.n_ok = 0 then latest.latest_sweep_id end             as reason_sweep_id,
    case when counted.n_ok = 0 then latest.latest_node_names end           as reason_nodes
from counted
left join latest_not_ok as latest
    on  latest.cni = counted.cni
    and latest.cni_mode = counted.cni_mode
    and latest.node_kind = counted.node_kind
order by counted.cni, counted.cni_mode, counted.node_kind
