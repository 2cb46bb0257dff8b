"""iperf3 TCP/UDP throughput between two pods (seed 003/004): one client, one server, per path and buffer size."""

from __future__ import annotations

from typing import Any

from edgebench.plan.cells import Run
from edgebench.drivers import iperf3 as driver
from edgebench.plan.params import Param, bitrate, json_default, paths, sizes
from edgebench.workloads.base import Measurement, Workload, endpoints

PORT = 5201


class Iperf3(Workload):
    name = "iperf3"
    order = 10
    variants = ("tcp", "udp")
    params = (
        Param("iperf3-lengths", lambda n, v: sizes(n, v, 1, 1024 * 1024), json_default(["128K"]),
              "TCP buffer sizes (-l, the read/write buffer; iperf3's own default is 128K)"),
        Param("iperf3-udp-lengths", lambda n, v: sizes(n, v, 16, 65507),
              json_default(["1300"]),
              "UDP datagram sizes (-l); keep them below the smallest pod MTU to avoid IP fragmentation"),
        Param("iperf3-udp-bitrate", bitrate, "1G",
              "UDP target bitrate (-b), 0 = unlimited"),
        Param("iperf3-paths", paths, json_default(["pod-to-pod:same-node", "pod-to-pod:cross-node",
                                               "pod-to-service:cross-node"]),
              "path:placement entries: pod-to-pod or pod-to-service, same-node or cross-node"),
    )
    tools = ("iperf3",)
    staging_model = "stg_edgebench__runs"
    mart = "cmp_iperf3_vs_host"
    page = "cni_datapaths"
    page_title = "CNI datapaths"
    page_icon = ":material/speed:"

    def expand(self, values: dict[str, Any], cell, repetition: int, variant: str) -> list[Run]:
        lengths = values["iperf3-lengths"] if variant == "tcp" else values["iperf3-udp-lengths"]
        params = {"bitrate": values["iperf3-udp-bitrate"]} if variant == "udp" else {}
        return [Run(cell, self.name, variant, path, placement, length, values["duration"], repetition, dict(params))
                for path, placement in values["iperf3-paths"] for length in lengths]

    def measure(self, ctx, run: Run) -> Measurement:
        client, server, target = endpoints(ctx, run, PORT)
        return (*driver.measure(client, server, target, PORT, run.protocol, run.length_bytes, run.duration_s,
                                run.params.get("bitrate", "0")), None)

    def versions(self) -> dict[str, str]:
        return {"iperf3": driver.version()}

    def headline(self, metrics: dict[str, Any]) -> str:
        return f"{metrics['throughput_mbps']:.0f} Mbit/s"


WORKLOAD = Iperf3()
