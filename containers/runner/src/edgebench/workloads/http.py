"""HTTP request/response (seed 001): N sequential requests on one kept-alive connection to one of three services
(payload-echo, payload-recv, static-reply), the seed's JMeter plan."""

from __future__ import annotations

from typing import Any

from edgebench.plan import catalog
from edgebench.plan.cells import Run
from edgebench.drivers import http as driver
from edgebench.plan.params import Param, integer, json_default, paths, sizes
from edgebench.workloads.base import Measurement, Workload, endpoints

PORT = 8080


class Http(Workload):
    name = "http"
    order = 30
    variants = ("payload-echo", "payload-recv", "static-reply")
    params = (
        Param("http-payloads", lambda n, v: sizes(n, v, 0, 16 * 1024 * 1024), json_default(["60", "1000000"]),
              "HTTP request payload sizes in bytes (seed grid: 60, 1000, 2000, 10000, 100000, 1000000)"),
        Param("http-requests", lambda n, v: integer(n, v, 1), "40",
              "sequential requests per HTTP run, on one kept-alive connection (the seed's JMeter plan)"),
        Param("http-paths", paths, json_default(["pod-to-pod:cross-node"]), "path:placement entries for HTTP runs"),
    )
    tools = ("fortio",)
    staging_model = "stg_edgebench__http_requests"
    mart = "cmp_http_vs_host"
    page = "http"
    page_title = "HTTP services"
    page_icon = ":material/http:"

    def expand(self, values: dict[str, Any], cell, repetition: int, variant: str) -> list[Run]:
        svc = catalog.workloads()["http"]["services"][variant]
        params = {"service": variant, "requests": values["http-requests"], "connections": 1,
                  "kpis_ms": {svc["use_case"]: svc["kpi_ms"]}}
        payloads = [0] if variant == "static-reply" else values["http-payloads"]
        return [Run(cell, self.name, "tcp", path, placement, payload, None, repetition, dict(params))
                for path, placement in values["http-paths"] for payload in payloads]

    def measure(self, ctx, run: Run) -> Measurement:
        client, server, target = endpoints(ctx, run, PORT)
        return (*driver.measure(client, server, target, PORT, run.params["service"], run.length_bytes,
                                run.params["requests"]), None)

    def versions(self) -> dict[str, str]:
        return dict(driver.version())

    def headline(self, metrics: dict[str, Any]) -> str:
        return f"response p50 {metrics['response_p50_ms']:.3f} ms, p99 {metrics['response_p99_ms']:.3f} ms"


WORKLOAD = Http()
