"""Which runs an inter-cluster cell can carry (pure; catalog/intercluster.yaml). In a cell with a tool the client
runs in cluster 2 and the server in cluster 1; `pod-to-service` dials the service exported from cluster 1,
`pod-to-pod` the server pod's own address (only a layer-3 tool routes pod addresses between clusters)."""

from __future__ import annotations

from edgebench.plan.dimensions import Run


def run_reason(run: Run) -> str | None:
    """Why the run cannot cross the cell's inter-cluster tool, or None (also None for the baseline `none`)."""
    tool = run.cell.intercluster_info
    if tool.is_none:
        return None
    if run.placement != "cross-node":
        return (f"{tool.key} joins two clusters: the client runs in cluster 2 and the server in cluster 1, so a "
                f"{run.placement} run has no inter-cluster path (it belongs to the intercluster=none baseline)")
    if run.protocol not in tool.protocols:
        return f"{tool.key} carries {'/'.join(tool.protocols)} between clusters, not {run.protocol}"
    if tool.layer == 7 and run.path != "pod-to-service":
        return (f"{tool.key} relays exported services (layer 7), it does not route pod addresses between clusters: "
                f"use the pod-to-service path")
    return None
