"""HTTP request/response with fortio (workload "http"): command.py builds the server's and the load generator's
argv, run.py measures through endpoints (the formats and their quirks are in its docstring), parser.py reads
fortio's access log and `hey -o csv` into http-requests.json rows and a run's metrics."""

from edgebench.drivers.http.command import (CLIENT, DUET_BURST, DUET_CLIENT, REQUEST_TIMEOUT_S, SERVICES,
                                           STATIC_REPLY_BYTES, fortio_path,
                                           load_cmd, reply_bytes, request_plan, server_cmd)
from edgebench.drivers.http.parser import (FORMATS, MAX_RESPONSE_MS, PHASE_TOLERANCE_MS, RESOLUTION_MS,
                                          HttpDriverError, dropped_request, parse, parse_fortio_access_log,
                                          parse_hey_csv, percentile, summarize)
from edgebench.drivers.http.run import measure, measure_together, version

__all__ = ["CLIENT", "DUET_BURST", "DUET_CLIENT", "FORMATS", "HttpDriverError", "MAX_RESPONSE_MS",
           "PHASE_TOLERANCE_MS", "REQUEST_TIMEOUT_S", "RESOLUTION_MS", "SERVICES", "STATIC_REPLY_BYTES",
           "dropped_request", "fortio_path", "load_cmd", "measure", "measure_together", "parse",
           "parse_fortio_access_log", "parse_hey_csv", "percentile", "reply_bytes", "request_plan", "server_cmd",
           "summarize", "version"]
