"""RTI Perftest (Connext DDS), a parser only: edgebench reads its outputs (`edgebench parse` / `import`) but never
runs it. parser.py gives ddsperf's sample and metric shapes (its docstring has the formats), readers.py reads the
three output formats into rows.py's checked rows."""

from edgebench.drivers.perftest.parser import FORMAT, parse, parse_samples, summarize
from edgebench.drivers.perftest.rows import LIMITS, PerftestParseError
from edgebench.drivers.ddsperf.scan import METRIC_KEYS

__all__ = ["FORMAT", "LIMITS", "METRIC_KEYS", "PerftestParseError", "parse", "parse_samples", "summarize"]
