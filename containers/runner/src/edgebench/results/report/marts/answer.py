"""The answer's headline marts (results.report.ranking): per headline metric the vs-host mart, its fixed workload
parameters, the columns that make one configuration and the SQL of its figures, and the rows it ranks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from edgebench.results.report.marts import Fetch


@dataclass(frozen=True)
class Headline:
    key: str
    label: str            # "TCP throughput"
    mart: str
    where: str            # the headline's fixed workload parameters
    config: tuple[str, ...]  # the workload columns that make one configuration (besides the cell dimensions)
    value: str            # the CNI's mean
    unit: str
    diff_pct: str         # (CNI - host) / host * 100, SQL
    ci_pct: str           # the half-width of its 95% interval in % of the host, SQL
    verdict: str = "verdict"
    runs_to_decide: str = "runs_to_decide"


HEADLINES = (
    Headline("iperf3", "iperf3 TCP throughput", "cmp_iperf3_vs_host", "protocol = 'tcp'",
             ("path", "placement", "length_bytes", "duration_s", "iperf3_bitrate"), "throughput_mbps", "Mbit/s",
             "-overhead_pct", "throughput_diff_ci95_mbps / host_throughput_mbps * 100"),
    Headline("sockperf", "TCP request/response latency p50", "cmp_sockperf_vs_host", "protocol = 'tcp'",
             ("path", "placement", "length_bytes", "duration_s"), "latency_p50_us", "µs",
             "latency_p50_overhead_pct", "latency_p50_overhead_ci95_pct"),
    Headline("dds-latency", "DDS latency p90", "cmp_dds_vs_host",
             "dds_mode = 'latency' and transport = 'unicast' and security = 'none' and batching = 'on'",
             ("length_bytes", "reliability", "placement", "subscribers", "rate"), "latency_p90_us", "µs",
             "latency_p90_overhead_pct", "latency_p90_overhead_ci95_pct"),
    Headline("dds-throughput", "DDS throughput", "cmp_dds_vs_host",
             "dds_mode = 'throughput' and transport = 'unicast' and security = 'none' and batching = 'on'",
             ("length_bytes", "reliability", "placement", "subscribers", "rate"), "throughput_mbps", "Mbit/s",
             "-throughput_overhead_pct", "throughput_overhead_ci95_pct"),
    Headline("http", "HTTP response time p50", "cmp_http_vs_host", "true",
             ("service", "path", "placement", "length_bytes"), "response_p50_ms", "ms",
             "response_p50_overhead_pct", "response_p50_diff_ci95_ms / host_response_p50_ms * 100",
             verdict="response_p50_verdict", runs_to_decide="response_p50_runs_to_decide"),
)


def headline_rows(fetch: Fetch, h: Headline, dims: Sequence[str]) -> list[dict]:
    """The headline's CNI rows with a verdict (host rows left out): the conditions, the cell dimensions `dims`, its
    configuration columns, value, difference to the host in % with the half-width of its 95% interval, n, verdict."""
    return fetch(f"""
        select substrate, lab, distribution, cni, cni_mode, {", ".join(dims)}, {', '.join(h.config)},
               {h.value} as value, n_runs, host_n_runs, {h.diff_pct} as diff_pct, {h.ci_pct} as ci_pct,
               {h.verdict} as verdict, verdict_margin_pct, {h.runs_to_decide} as runs_to_decide
        from {h.mart}
        where {h.where} and cni <> 'host' and {h.verdict} is not null""", [])
