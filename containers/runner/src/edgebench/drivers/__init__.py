"""Tool drivers, one package per tool (iperf3, ddsperf, ddsrr, perftest, http, sockperf), each with the same parts:

  command.py  pure: the tool's argv (and, for ddsperf, its Cyclone DDS configuration)
  run.py      `measure(...)` runs the tool through endpoints -> (raw files, metrics or None, error or None), and
              `version()`
  parser.py   pure: `parse(text, **options) -> protocol.Record` ({"tool", "metrics", "samples"}) plus the tool's
              finer readers; a tool whose outputs `edgebench parse` / `edgebench import` take declares its
              protocol.ToolFormat there (FORMAT, or FORMATS for several)

(perftest is a parser only: edgebench reads its outputs but never runs it.) The package's __init__ names its public
API. common/ holds what several drivers share. Which workload a tool's outputs feed is said by the workload
(workloads/<name>.py `formats`), and workloads.TOOLS is the one registry of tool formats."""
