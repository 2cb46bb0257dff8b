"""edgebench-ddsrr, edgebench's own round-robin DDS pinger (workload "dds", latency with several subscribers or a
ping timeout other than ddsperf's): command.py builds the argv, run.py measures through endpoints (the output
format is in its docstring), parser.py reads the ping's output into ddsperf's sample and metric shapes."""

from edgebench.drivers.ddsrr.command import MAX_SUBSCRIBERS, MIN_SIZE, TOOL, ping_cmd, pong_cmd
from edgebench.drivers.ddsrr.parser import parse, parse_ping
from edgebench.drivers.ddsrr.run import measure, version

__all__ = ["MAX_SUBSCRIBERS", "MIN_SIZE", "TOOL", "measure", "parse", "parse_ping", "ping_cmd", "pong_cmd", "version"]
