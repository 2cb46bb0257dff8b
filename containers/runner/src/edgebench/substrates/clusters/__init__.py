"""Real clusters: distributions (k3s, k0s, MicroK8s, kubeadm over SSH; kind), CNI installs, workload placement
and ClusterProvider (the Provider protocol for substrates `ssh` and `kind`)."""

from edgebench.plan.matrix import compatibility
from edgebench.substrates.clusters.factory import from_cell
from edgebench.substrates.clusters.provider import ClusterEndpoint, ClusterProvider
from edgebench.substrates.clusters.transport import FakeTransport, SSHTransport, Transport

__all__ = ["compatibility", "ClusterEndpoint", "ClusterProvider", "from_cell", "FakeTransport",
           "SSHTransport", "Transport"]
