"""HTTP request/response (seed 001): N sequential requests on one kept-alive connection to one of three services
(payload-echo, payload-recv, static-reply), the seed's JMeter plan."""

from __future__ import annotations

from typing import Any

from edgebench.drivers import http as driver
from edgebench.plan import workload_plans
from edgebench.plan.dimensions import Run
from edgebench.workloads.base import Measurement, Workload, endpoints

PORT = 8080


class Http(Workload):
    plan = workload_plans.HTTP
    tools = ("fortio",)
    pin_cpus = True  # p50 spread 15-21 % between runs unpinned, 7.5-9 % pinned (substrates/local/endpoints.py)
    staging_model = "stg_edgebench__http_requests"
    mart = "cmp_http_vs_host"
    page = "http"
    page_title = "HTTP services"
    page_icon = ":material/http:"
    formats = driver.FORMATS
    import_labels = ("path", "placement", "service", "length_bytes")
    import_params = ("service",)

    def measure(self, ctx, run: Run) -> Measurement:
        client, server, target = endpoints(ctx, run, PORT, pin=self.pin_cpus)
        return (*driver.measure(client, server, target, PORT, run.params["service"], run.length_bytes,
                                run.params["requests"]), None)

    def versions(self) -> dict[str, str]:
        return dict(driver.version())

    def headline(self, metrics: dict[str, Any]) -> str:
        return f"response p50 {metrics['response_p50_ms']:.3f} ms, p99 {metrics['response_p99_ms']:.3f} ms"

    def judged(self, metrics: dict[str, Any]) -> tuple[str, float, bool] | None:
        value = metrics.get("response_p50_ms")
        return None if value is None else ("latency", value, False)

    def imported_params(self, params: dict[str, Any], stated: dict[str, Any],
                        metrics: dict[str, Any]) -> dict[str, Any]:
        return {**params, "requests": metrics.get("requests"), "connections": 1}


WORKLOAD = Http()
