"""Installing a real cluster: the distributions' steps and how they run on the nodes, the CNI's install, the
air-gapped artifact source, kind's pieces and the checks before anything is installed."""
