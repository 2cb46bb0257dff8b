"""HTTP request/response (seed 001): N sequential requests on one kept-alive connection to one of three services
(payload-echo, payload-recv, static-reply), the seed's JMeter plan."""

from __future__ import annotations

import os
from typing import Any, Sequence

from edgebench import sh
from edgebench.drivers import http as driver
from edgebench.plan import workload_plans
from edgebench.plan.dimensions import Run
from edgebench.workloads.base import Measurement, Workload, endpoints

PORT = 8080
INTERLEAVE_ENV = "EDGEBENCH_DUET_INTERLEAVE"  # 0: a duet round measures its HTTP runs one after another


class Http(Workload):
    plan = workload_plans.HTTP
    tools = ("fortio",)
    measures_together = True  # edgebench-httpduet, unless a member cannot (measure_together says why)
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

    def measure_together(self, members: Sequence[tuple[Any, Run]]) -> dict[str, Measurement] | str:
        """A duet round's members (the host and the CNI modes, side by side on the namespace testbed) measured in one
        window by edgebench-httpduet: bursts of requests to each member in turn, so that the machine's drift over
        tens of milliseconds falls on every member alike (drivers/http/run.py measure_together)."""
        if os.environ.get(INTERLEAVE_ENV, "1") == "0":
            return f"{INTERLEAVE_ENV}=0"
        if len(members) < 2:
            return "a single member"
        if sh.which(driver.DUET_CLIENT) is None:
            return f"{driver.DUET_CLIENT} is not built (make tools)"
        first = members[0][1]
        ends = []
        for ctx, run in members:
            if run.cell.intercluster != "none" or not hasattr(ctx.provider, "pin"):
                return "a member is not a single cluster of the namespace testbed"
            if (run.params["service"], run.length_bytes, run.params["requests"]) != \
                    (first.params["service"], first.length_bytes, first.params["requests"]):
                return "the members' runs differ in service, length or requests"
            client, server, target = endpoints(ctx, run, PORT, pin=self.pin_cpus)
            if getattr(client, "container", None) or getattr(client, "cgroups", ()):
                return "a member's client runs in a container or a CPU class's cgroup"
            # the duet client is one process, in no member's socket load balancer cgroup (sock_lb.py): pod-to-pod it
            # skips one connect() hook a run (TCP sends and receives pass none); a service it would reach by DNAT
            if getattr(client, "hooks", None) and run.path == "pod-to-service":
                return "a member's client reaches the service by its socket load balancer, a cgroup the duet client is not in"
            ends.append((run.run_id, client, server, target))
        got = driver.measure_together(ends, PORT, first.params["service"], first.length_bytes,
                                      first.params["requests"])
        return {rid: (*m, None) for rid, m in got.items()}

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
