"""Sweep: the phases of a cell in order (the Argo DAG runs the same ones as steps) and the local runner."""
