{{ config(severity='warn') }}
-- The limits cmp_intercluster_vs_none evaluates (vars kpi_vehicle_assist_ms / kpi_remote_maintenance_ms) should be
-- the boundaries the runs themselves carry in params.kpis_ms; rows returned here are runs whose boundary for the
-- same use case differs (the catalog changed): a warning, the vars then need the new value.
select run_id, use_case, kpi_ms
from {{ ref('int_http__kpis') }}
where (use_case like 'vehicle%' and kpi_ms <> {{ var('kpi_vehicle_assist_ms') }})
   or (use_case like 'remote-maintenance%' and kpi_ms <> {{ var('kpi_remote_maintenance_ms') }})
