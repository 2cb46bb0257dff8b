"""sockperf ping-pong: TCP/UDP request/response latency (workload "sockperf"). command.py builds the argv, run.py
measures through endpoints, parser.py reads the client's summary (docs/tool-formats/sockperf.md)."""

from edgebench.drivers.sockperf.command import MAX_LENGTH, MIN_LENGTH, client_cmd, server_cmd
from edgebench.drivers.sockperf.parser import MAX_LATENCY_US, SockperfError, parse, parse_metrics
from edgebench.drivers.sockperf.run import measure, version

__all__ = ["MAX_LATENCY_US", "MAX_LENGTH", "MIN_LENGTH", "SockperfError", "client_cmd", "measure", "parse",
           "parse_metrics", "server_cmd", "version"]
