"""TCP/UDP request/response latency with sockperf ping-pong (seed 003's latency figures): one client, one server,
one message in flight; latency = half the round trip, as sockperf and ddsperf report it."""

from __future__ import annotations

from typing import Any

from edgebench.drivers import sockperf as driver
from edgebench.plan import workload_plans
from edgebench.plan.dimensions import Run
from edgebench.workloads.base import Measurement, Workload, endpoints

PORT = 11111  # sockperf's own default port


class Sockperf(Workload):
    plan = workload_plans.SOCKPERF
    tools = ("sockperf",)
    staging_model = "stg_edgebench__runs"
    mart = "cmp_sockperf_vs_host"
    page = "cni_datapaths"
    page_title = "CNI datapaths"
    page_icon = ":material/speed:"

    def measure(self, ctx, run: Run) -> Measurement:
        client, server, target = endpoints(ctx, run, PORT)
        return (*driver.measure(client, server, target, PORT, run.protocol, run.length_bytes, run.duration_s),
                None)

    def versions(self) -> dict[str, str]:
        return {"sockperf": driver.version()}

    def headline(self, metrics: dict[str, Any]) -> str:
        return f"latency p50 {metrics['latency_p50_us']:.1f} us, p99 {metrics['latency_p99_us']:.1f} us"

    def judged(self, metrics: dict[str, Any]) -> tuple[str, float, bool] | None:
        """The p50 (as cmp_sockperf_vs_host): lower is better."""
        value = metrics.get("latency_p50_us")
        return None if value is None else ("latency", value, False)


WORKLOAD = Sockperf()
