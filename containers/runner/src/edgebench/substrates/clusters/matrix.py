"""Which distribution x CNI mode cells can exist: moved to plan/matrix.py (the plan checks it before anything is
installed); the cluster substrate's modules import it from here."""

from edgebench.plan.matrix import cni_installs, compatibility, distributions, matrix, support

__all__ = ["cni_installs", "compatibility", "distributions", "matrix", "support"]
