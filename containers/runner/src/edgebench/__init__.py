"""edgebench: benchmark Kubernetes networking stacks for edge clusters."""

__version__ = "0.1.0"
