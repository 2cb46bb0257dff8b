"""iperf3 TCP/UDP throughput between two pods (seed 003/004): one client, one server, per path and buffer size."""

from __future__ import annotations

import json
from typing import Any

from edgebench.drivers import iperf3 as driver
from edgebench.drivers.protocol import Record
from edgebench.plan import workload_plans
from edgebench.plan.dimensions import Run
from edgebench.workloads.base import Measurement, Workload, endpoints

PORT = 5201


class Iperf3(Workload):
    plan = workload_plans.IPERF3
    tools = ("iperf3",)
    staging_model = "stg_edgebench__runs"
    mart = "cmp_iperf3_vs_host"
    page = "cni_datapaths"
    page_title = "CNI datapaths"
    page_icon = ":material/speed:"
    formats = (driver.FORMAT,)
    import_labels = ("path", "placement")

    def measure(self, ctx, run: Run) -> Measurement:
        client, server, target = endpoints(ctx, run, PORT)
        return (*driver.measure(client, server, target, PORT, run.protocol, run.length_bytes, run.duration_s,
                                run.params.get("bitrate", "0")), None)

    def versions(self) -> dict[str, str]:
        return {"iperf3": driver.version()}

    def headline(self, metrics: dict[str, Any]) -> str:
        return f"{metrics['throughput_mbps']:.0f} Mbit/s"

    def judged(self, metrics: dict[str, Any]) -> tuple[str, float, bool] | None:
        value = metrics.get("throughput_mbps")
        return None if value is None else ("throughput", value, True)

    def stated(self, text: str, record: Record) -> dict[str, Any]:
        """The protocol from the metrics, the buffer length and duration from the JSON's start.test_start."""
        start = (json.loads(text).get("start") or {}).get("test_start") or {}
        return {"protocol": record["metrics"].get("protocol"),
                "length_bytes": start.get("blksize") if isinstance(start.get("blksize"), int) else None,
                "duration_s": start.get("duration") if isinstance(start.get("duration"), int) else None}


WORKLOAD = Iperf3()
