"""Real clusters: distributions (k3s, k0s, MicroK8s, kubeadm over SSH; kind), CNI installs, workload placement
and ClusterProvider (the Provider protocol for substrates `ssh` and `kind`)."""

from .matrix import compatibility
from .provider import ClusterEndpoint, ClusterProvider, from_cell
from .transport import FakeTransport, SSHTransport, Transport

__all__ = ["compatibility", "ClusterEndpoint", "ClusterProvider", "from_cell", "FakeTransport",
           "SSHTransport", "Transport"]
