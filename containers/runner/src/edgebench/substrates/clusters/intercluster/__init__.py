"""Two real clusters joined by an inter-cluster tool (seed 001): the pure rendering per tool (render.py dispatches
to submariner.py, skupper.py, clusterlink.py over base.py) and MultiCluster, the Provider that runs it
(multicluster.py, state.py)."""
