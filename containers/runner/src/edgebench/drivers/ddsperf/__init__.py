"""Cyclone DDS ddsperf (workload "dds"): command.py builds the argv and the Cyclone DDS configuration, run.py
measures through endpoints (the output formats are in its docstring), scan.py reads one process's lines, parser.py
summarizes them into a run's metrics, security.py makes the DDS Security material."""

from edgebench.drivers.ddsperf.command import (INIT_WAIT, MAX_PARTICIPANT_INDEX, UNBATCHED_MAX_MESSAGE_SIZE,
                                              cyclone_config, ping_cmd, pong_cmd, pub_cmd, sub_cmd)
from edgebench.drivers.ddsperf.parser import (BATCHINGS, DISCOVERIES, FORMAT, MODES, RELIABILITIES, SECURITIES,
                                             TRANSPORTS, detect_role, parse, responder_text, summarize)
from edgebench.drivers.ddsperf.run import measure, popen, stop, version
from edgebench.drivers.ddsperf.scan import (LIMITS, METRIC_KEYS, ROLES, SAMPLE_KEYS, DdsperfError, checknum,
                                           parse_samples, parse_stats)
from edgebench.drivers.ddsperf.security import (DOMAIN_ID_MAX, PROTECTION_KINDS, SEED_SETTING, find_security_libs,
                                               governance_xml, make_security_material, permissions_xml,
                                               security_config, security_record, security_support)

__all__ = ["BATCHINGS", "DISCOVERIES", "DOMAIN_ID_MAX", "DdsperfError", "FORMAT", "INIT_WAIT", "LIMITS",
           "MAX_PARTICIPANT_INDEX", "METRIC_KEYS", "MODES", "PROTECTION_KINDS", "RELIABILITIES", "ROLES",
           "SAMPLE_KEYS", "SECURITIES", "SEED_SETTING", "TRANSPORTS", "UNBATCHED_MAX_MESSAGE_SIZE", "checknum",
           "cyclone_config", "detect_role", "find_security_libs", "governance_xml", "make_security_material",
           "measure", "parse", "parse_samples", "parse_stats", "permissions_xml", "ping_cmd", "pong_cmd", "popen",
           "pub_cmd", "responder_text", "security_config", "security_record", "security_support", "stop",
           "sub_cmd", "summarize", "version"]
