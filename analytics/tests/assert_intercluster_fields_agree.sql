-- The inter-cluster fields of a run describe one thing: none <-> tool none <-> implementation baseline, and a tool
-- entry is tool:mode. An emulated run names what was modelled (it is labelled as a model, never as the tool).
-- Anything returned here is a manifest bug.
select run_id, raw_key, intercluster, intercluster_tool, intercluster_mode, intercluster_implementation,
       intercluster_model
from {{ ref('stg_edgebench__runs') }}
where (intercluster = 'none') <> (intercluster_tool = 'none')
   or (intercluster = 'none') <> (intercluster_implementation = 'baseline')
   or (intercluster <> 'none' and intercluster <> intercluster_tool || ':' || intercluster_mode)
   or (intercluster = 'none' and intercluster_mode <> 'none')
   or (is_emulated and coalesce(trim(intercluster_model), '') = '')
