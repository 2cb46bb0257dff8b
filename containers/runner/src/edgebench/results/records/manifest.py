"""The run manifest's shape: every field of runs/<sweep_id>/<cell_id>/<run_id>/manifest.json, in one place.

The manifest is the record of one run and the contract with everything that reads runs: the warehouse's staging
models, the adaptive repetition rule (sweep/adaptive.py judges the stored documents), `edgebench status` and the
reports. It stays a plain dict on purpose: it is written with json.dumps(sort_keys=True) and read with json.loads,
and readers index it (`doc["status"]`, `doc.get("netem")`), so a TypedDict types it without changing one byte of
the JSON or one reader. docs/results-layout.md describes the values at length; this module says which fields exist.

Writers: runstore.manifest (a run measured by edgebench) and importer.build_run (a tool output made elsewhere).
Fields marked Required are in every manifest edgebench writes and has written (schema_version 1); the others are
absent in manifests older than the field (readers take the default docs/results-layout.md gives) or in imported
ones, which carry only the cell fields their labels describe (no intercluster*, service_proxy*, cpu_class*,
requested_version or trigger).

The cell dimensions (plan/dimensions.py DIMENSIONS) add a field each, and a field for what the substrate read back
where the dimension has a `detail`; they are listed here by name, and tests/unit/test_manifest.py fails when a
dimension's field is missing, so a new dimension is declared here too.
"""
# no `from __future__ import annotations`: TypedDict reads Required[...] from evaluated annotations (Python 3.11)

from typing import Any, Required, TypedDict


class ClusterNode(TypedDict, total=False):
    """One node a real cluster's cell used (preflight.nodes_record)."""

    name: str
    arch: str  # amd64, arm64 (the inventory's)
    cpu: str  # native, or emulated (a qemu TCG guest: the local lab's VM nodes)
    kernel: str | None  # `uname -r` on the node
    kind: str  # namespace (shares a kernel with others), vm-x86, vm-arm64 (emulated CPU), machine


class Cluster(TypedDict, total=False):
    """A real cluster's lab (environment.cluster; kind and ssh substrates only)."""

    target: str  # the inventory's target
    nodes: int  # how many nodes
    shared_kernel: bool  # the nodes share one kernel (one boot id): the local lab's namespace nodes, kind
    kernel_boot_id: str  # that boot id
    node_image: str  # kind's node image
    artifact_source: str  # the lab's air-gapped mirror
    cni_version_pinned: str  # the catalog's pin when another version was installed
    node_kind: str  # the cell's kind: vm-arm64 / vm-x86 if such a node is among its nodes, else machine, namespace
    cpu: str  # emulated if any node's CPU is (then the runs stay out of every performance comparison), else native
    node_list: list[ClusterNode]  # each node: name, arch, cpu, kernel, kind


class Environment(TypedDict, total=False):
    """Where and with what the run was made (provenance.environment; the importer fills what the output says)."""

    kernel: str | None  # platform.release(); None for an imported run
    machine: str | None  # platform.machine()
    hostname: str | None
    edgebench_version: str | None
    edgebench_commit: str | None  # git commit, "+dirty" when tracked files differ; EDGEBENCH_COMMIT in images
    tools: dict[str, str]  # {tool: version} of the tools that produced this run, and the link emulator in force
    cni_version: str | None  # what a cluster reports; None on the testbed (no CNI software runs)
    cni_version_requested: str | None  # what a triggered rerun, or a cell of cni-versions, asked for
    cpu_pinning: dict[str, Any] | None  # {client_cpu, server_cpu} where the workload's tools were pinned
    cluster: Cluster  # a real cluster's lab and the cell's nodes (absent on the testbed and in imported runs)


class Trigger(TypedDict, total=False):
    """What triggered the sweep as a rerun on a new CNI version (runstore.with_trigger)."""

    cni: str
    new: str  # the version the rerun measures
    previous: str | None  # the newest version edgebench had before
    source: str  # the release source's URL, or what the CI sent
    at: str | None  # ISO 8601 UTC


class Imported(TypedDict):
    """Where an imported run's numbers came from (`edgebench import`)."""

    tool: str  # the tool format (workloads.TOOLS)
    file: str  # the file as given on the command line
    sha256: str  # of the file's bytes; part of the run id, so importing the same file again overwrites the run
    labels: dict[str, str]  # the --label KEY=VALUE given
    imported_at: str  # ISO 8601 UTC


class RunManifest(TypedDict, total=False):
    """One run's manifest.json (schema_version 1)."""

    # identity: the object keys runs/<sweep_id>/<cell_id>/<run_id>/ (ids are hashes of the parameters)
    schema_version: Required[int]  # 1
    sweep_id: Required[str]
    cell_id: Required[str]
    run_id: Required[str]

    # the cell: the substrate, the CNI and its datapath, then one field per cell dimension (Cell.manifest_fields)
    substrate: Required[str]  # local (the namespace testbed), kind, ssh; imported for `edgebench import`
    distribution: Required[str | None]  # none on the testbed; k3s, kubeadm, ... on clusters; None: not imported
    cni: Required[str]  # host for the host-network baseline
    cni_mode: Required[str]
    datapath: Required[str]  # the catalog's datapath family, e.g. bridge-vxlan
    mtu: int | None  # the pod interface's MTU in force (read back)
    netem_scenario: str  # dimension: the link condition (details in `netem`)
    tuning_profile: str  # dimension: the tuning profile (details in `tuning`)
    intercluster: str  # dimension: the inter-cluster tool entry, none for one cluster
    service_proxy: str  # dimension: the cell's service-proxy entry, default for the substrate's own
    cpu_class: str  # dimension: none (the machine's own cores) or an emulated board
    cpu_class_detail: dict[str, Any] | None  # the CPU class's calibration the substrate read back
    requested_version: str  # dimension: default, or the CNI version the cell asks for (cni-versions)

    # the inter-cluster tool and the service proxy as set up (absent in imported runs)
    intercluster_tool: str
    intercluster_mode: str
    intercluster_implementation: str  # baseline, kernel, emulated or installed
    intercluster_detail: dict[str, Any] | None  # tool, mode, version, implementation, model, gateways, readback
    service_proxy_mode: str | None  # what implemented ClusterIP services (dnat, iptables, nftables, ipvs, none)
    service_proxy_readback: str | None  # the proxy's rules as a node lists them

    # the run: one tool invocation
    workload: Required[str]  # iperf3, dds, http, sockperf, loaded-latency (workloads.REGISTRY)
    protocol: Required[str | None]
    path: Required[str | None]  # pod-to-pod or pod-to-service
    placement: Required[str | None]  # same-node or cross-node
    length_bytes: Required[int | None]
    duration_s: Required[int | None]
    repetition: Required[int]  # 1-based
    params: Required[dict[str, Any]]  # every workload parameter used

    # the outcome
    status: Required[str]  # ok, failed, unsupported
    error: Required[str | None]
    attempt: Required[int]
    started_at: Required[str]  # ISO 8601 UTC
    finished_at: Required[str]
    raw_files: Required[list[str]]  # the raw files stored beside the manifest
    environment: Required[Environment]
    metrics: Required[dict[str, Any] | None]  # the workload parser's metrics; None unless status is ok

    # what was in force, read back (absent in older manifests: valid, no netem, default tuning)
    netem: dict[str, Any] | None
    tuning: dict[str, Any] | None
    is_valid: bool
    invalid_reason: str | None
    trigger: Trigger | None  # None for a plain sweep

    imported: Imported  # imported runs only
