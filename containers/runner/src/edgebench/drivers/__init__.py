"""Workload drivers: build the command, run it through endpoints, parse the output with a pure parser."""
