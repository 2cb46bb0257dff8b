-- One row per run of every workload, every status: the run's identity, conditions, outcome and validity. What the
-- portal's overview, link-condition and validity views read (they never read intermediates).
select
    {{ run_attribute_columns() }},
    service_proxy,
    service_proxy_mode,
    lab_shared_kernel,  -- the lab's nodes share one kernel (the local lab): the portal's banner
    cpu_emulated,  -- a node's CPU was emulated (a VM node under qemu TCG): never in a comparison (is_valid false)
    node_kind,  -- testbed, namespace, vm-x86, vm-arm64, machine (or kind, imported): the support matrix's column
    node_kinds,
    node_arches,
    node_kernels,
    node_names,
    workload,
    protocol,
    path,
    placement,
    length_bytes,
    repetition,
    {{ run_outcome_columns() }}
from {{ ref('int_runs__deduplicated') }}
