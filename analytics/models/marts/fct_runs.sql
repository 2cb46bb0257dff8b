-- One row per run of every workload, every status: the run's identity, conditions, outcome and validity. What the
-- portal's overview, link-condition and validity views read (they never read intermediates).
select
    {{ run_attribute_columns() }},
    service_proxy,
    service_proxy_mode,
    lab_shared_kernel,  -- the lab's nodes share one kernel (the local lab): the portal's banner
    workload,
    protocol,
    path,
    placement,
    length_bytes,
    repetition,
    {{ run_outcome_columns() }}
from {{ ref('int_runs__deduplicated') }}
