"""iperf3: TCP/UDP throughput. command.py builds the argv, run.py measures through endpoints, parser.py reads the
client's JSON (reader.py: that JSON, checked field by field; docs/tool-formats/iperf3.md)."""

from edgebench.drivers.iperf3.command import client_cmd, server_cmd
from edgebench.drivers.iperf3.parser import (FORMAT, MAX_CPU_PCT, MAX_JITTER_MS, MAX_RTT_US, MAX_THROUGHPUT_MBPS,
                                             RECEIVED_OVER_SENT_MAX, parse, parse_metrics)
from edgebench.drivers.iperf3.reader import Iperf3Error
from edgebench.drivers.iperf3.run import measure, version

__all__ = ["FORMAT", "Iperf3Error", "MAX_CPU_PCT", "MAX_JITTER_MS", "MAX_RTT_US", "MAX_THROUGHPUT_MBPS",
           "RECEIVED_OVER_SENT_MAX", "client_cmd", "measure", "parse", "parse_metrics", "server_cmd", "version"]
