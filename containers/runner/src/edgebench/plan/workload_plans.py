"""What each workload contributes to a plan: its name, its position among the run-* phases, its variants, its sweep
parameters, the runs of one variant in one repetition of a cell, and the extra words of a run's progress label.

The workload's declaration is workloads/<name>.py: it holds its plan (one of the instances below, whose `name` is
the workload's name), its drivers and tool formats, the manifest's tool versions, its mart and page;
workloads/__init__.py checks that every plan has a workload module and the reverse. Pure: the spec parser and the
matrix expansion read this without importing anything that measures."""

from __future__ import annotations

from typing import Any

from edgebench.plan import catalog
from edgebench.plan.dimensions import DESCRIBE, Cell, Run
from edgebench.plan.params import Param, bitrate, integer, integers, json_default, paths, sizes, subset


class WorkloadPlan:
    name: str = ""
    order: int = 100  # position among the run-* phases (lower runs first)
    variants: tuple[str, ...] = ()  # `workloads` entries are name or name:variant
    params: tuple[Param, ...] = ()  # its sweep parameters, declared once here

    def expand(self, values: dict[str, Any], cell: Cell, repetition: int, variant: str) -> list[Run]:
        """The runs of one variant in one repetition of a cell; `values` are the parsed sweep parameters."""
        raise NotImplementedError

    def describe(self, run: Run) -> str:
        """Extra words for the run's progress label (after the variant)."""
        return ""


class Iperf3Plan(WorkloadPlan):
    """iperf3 TCP/UDP throughput between two pods (seed 003/004): one client, one server, per path and buffer size."""

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

    def expand(self, values: dict[str, Any], cell: Cell, repetition: int, variant: str) -> list[Run]:
        lengths = values["iperf3-lengths"] if variant == "tcp" else values["iperf3-udp-lengths"]
        params = {"bitrate": values["iperf3-udp-bitrate"]} if variant == "udp" else {}
        return [Run(cell, self.name, variant, path, placement, length, values["duration"], repetition, dict(params))
                for path, placement in values["iperf3-paths"] for length in lengths]


class SockperfPlan(WorkloadPlan):
    """TCP/UDP request/response latency with sockperf ping-pong (seed 003's latency figures): one client, one
    server, one message in flight, per path and message size."""

    name = "sockperf"
    order = 35
    variants = ("tcp", "udp")
    params = (
        Param("sockperf-lengths", lambda n, v: sizes(n, v, 14, 65000), json_default(["64"]),
              "request/response message sizes in bytes (sockperf -m, at least its 14-byte header; seed 003: 64, "
              "512, 1472, 9000, 15000)"),
        Param("sockperf-paths", paths, json_default(["pod-to-pod:cross-node"]),
              "path:placement entries for request/response runs"),
        Param("sockperf-duration", lambda n, v: integer(n, v, 2), "3",
              "seconds per request/response run, at least 2 (sockperf drops a warm-up and the edges of the run "
              "from its statistics)"),
    )

    def expand(self, values: dict[str, Any], cell: Cell, repetition: int, variant: str) -> list[Run]:
        return [Run(cell, self.name, variant, path, placement, length, values["sockperf-duration"], repetition, {})
                for path, placement in values["sockperf-paths"] for length in values["sockperf-lengths"]]


# ddsperf waits a fixed 1 s for the pongs of a ping before it sends the next one (Cyclone DDS ddsperf.c,
# maybe_send_new_ping: DDS_SECS (1)); it has no option to change it
DDSPERF_PING_TIMEOUT_MS = 1000


class DdsPlan(WorkloadPlan):
    """DDS pub/sub with Cyclone DDS ddsperf (seeds 000 and 002): latency = ping/pong (RTT/2), throughput = pub/sub."""

    name = "dds"
    order = 20
    variants = ("latency", "throughput")
    params = (
        Param("dds-payloads", lambda n, v: sizes(n, v, 8, 65000), json_default(["64", "16384"]),
              "DDS sample payload sizes in bytes (seed grid: 64, 256, 1024, 4096, 16384, 63000)"),
        Param("dds-reliability", subset(("reliable", "best-effort")), json_default(["reliable"]),
              "DDS reliability QoS: reliable, best-effort"),
        Param("dds-transports", subset(("unicast", "multicast")), json_default(["unicast"]),
              "DDS data transport: unicast, multicast (where the datapath carries it; else recorded unsupported)"),
        Param("dds-subscribers", lambda n, v: integers(n, v, 1, 16), json_default(["1"]),
              "subscribers per publisher in throughput runs (the papers use 1, 4, 8, 12)"),
        Param("dds-placements", subset(("same-node", "cross-node")), json_default(["cross-node"]),
              "subscribers on the publisher's node (same-node) or on the other node (cross-node)"),
        Param("dds-security", subset(("none", "auth-encrypt")), json_default(["none"]),
              "DDS Security: none, auth-encrypt (where the Cyclone DDS build ships the security plugins)"),
        Param("dds-batching", subset(("on", "off")), json_default(["on"]),
              "Cyclone DDS message packing: on (ddsperf's own write batching: samples packed into RTPS messages of "
              "up to 14720 B), off (one sample, or one fragment, per RTPS message; the seeds' PerfTest ran with "
              "batching disabled)", neutral_at_default=True),
        Param("dds-duration", lambda n, v: integer(n, v, 2), "3",
              "seconds per DDS run, at least 2 (ddsperf prints no statistics for a 1 s run)"),
        Param("dds-ping-timeouts", lambda n, v: integers(n, v, 1, 60000), json_default(["1000"]),
              "latency runs: how long the pinger waits for a lost pong before the next ping, ms (seed 000 Fig. 6: "
              "200 with best-effort). ddsperf's is fixed at 1000; other values run on edgebench-ddsrr, edgebench's "
              "own pinger, and are compared only with runs of the same timeout",
              neutral_at_default=True),
        Param("dds-latency-subscribers", lambda n, v: integers(n, v, 1, 16), json_default(["1"]),
              "latency runs: subscribers per pinger. 1 = ddsperf's ping/pong; more = edgebench-ddsrr, which "
              "delivers each ping to every subscriber and lets one answer, in turn (seed 000's round robin, Eq. 1; "
              "ddsperf's ping is answered by all of them)", neutral_at_default=True),
    )

    def expand(self, values: dict[str, Any], cell: Cell, repetition: int, variant: str) -> list[Run]:
        v = values
        # "batching" is in a run's params only when off: runs with ddsperf's own batching keep the ids (hashes of
        # the params) and manifests they had before the parameter existed
        # the same for a ping timeout other than ddsperf's own 1000 ms (latency runs only)
        return [
            Run(cell, self.name, "udp", "pod-to-pod", placement, payload, v["dds-duration"], repetition,
                {"mode": variant, "reliability": reliability, "transport": transport, "subscribers": subs,
                 "security": security, "rate": "inf", **({"batching": batching} if batching != "on" else {}),
                 **({"ping_timeout_ms": timeout} if timeout != DDSPERF_PING_TIMEOUT_MS else {})})
            for placement in v["dds-placements"] for payload in v["dds-payloads"]
            for reliability in v["dds-reliability"] for transport in v["dds-transports"]
            for security in v["dds-security"] for batching in v["dds-batching"]
            for subs in (v["dds-subscribers"] if variant == "throughput" else v["dds-latency-subscribers"])
            for timeout in (v["dds-ping-timeouts"] if variant == "latency" else [DDSPERF_PING_TIMEOUT_MS])
        ]

    def describe(self, run: Run) -> str:
        p = run.params
        return f" {p['reliability']} {p['transport']}" + (
            f" subs={p['subscribers']}" if p["mode"] == "throughput" or p["subscribers"] > 1 else "") + (
            f" batching={p['batching']}" if "batching" in p else "") + (
            f" ping-timeout={p['ping_timeout_ms']}ms" if "ping_timeout_ms" in p else "")


class HttpPlan(WorkloadPlan):
    """HTTP request/response (seed 001): N sequential requests on one kept-alive connection to one of three
    services (payload-echo, payload-recv, static-reply), the seed's JMeter plan."""

    name = "http"
    order = 30
    variants = ("payload-echo", "payload-recv", "static-reply")
    params = (
        Param("http-payloads", lambda n, v: sizes(n, v, 0, 16 * 1024 * 1024), json_default(["60", "1000000"]),
              "HTTP request payload sizes in bytes (seed grid: 60, 1000, 2000, 10000, 100000, 1000000)"),
        Param("http-requests", lambda n, v: integer(n, v, 1), "1000",
              "sequential requests per HTTP run, on one kept-alive connection (1000: measured on the testbed, a run's "
              "p50 of 40 decided 1 of 6 comparisons with the host, of 1000 3 of 6, at 0.5-2 s more per run; seed "
              "001's JMeter plan sends 40: its presets say so)"),
        Param("http-paths", paths, json_default(["pod-to-pod:cross-node"]), "path:placement entries for HTTP runs"),
    )

    def expand(self, values: dict[str, Any], cell: Cell, repetition: int, variant: str) -> list[Run]:
        svc = catalog.workloads()["http"]["services"][variant]
        params = {"service": variant, "requests": values["http-requests"], "connections": 1,
                  "kpis_ms": {svc["use_case"]: svc["kpi_ms"]}}
        payloads = [0] if variant == "static-reply" else values["http-payloads"]
        return [Run(cell, self.name, "tcp", path, placement, payload, None, repetition, dict(params))
                for path, placement in values["http-paths"] for payload in payloads]


LOADED_LATENCY_PLACEMENT = "cross-node"


class LoadedLatencyPlan(WorkloadPlan):
    """Latency under load: a DDS or HTTP probe, idle and while a bulk iperf3 TCP flow shares its path."""

    name = "loaded-latency"
    order = 40
    variants = ("dds", "http")
    params = (
        Param("loaded-latency-payloads", lambda n, v: sizes(n, v, 8, 1024 * 1024), json_default(["64"]),
              "probe payload sizes in bytes (DDS sample size, or HTTP request body for payload-echo)"),
        Param("loaded-latency-duration", lambda n, v: integer(n, v, 1), "3", "seconds of each DDS probe"),
        Param("loaded-latency-requests", lambda n, v: integer(n, v, 1), "200",
              "sequential HTTP requests of each HTTP probe (one kept-alive connection)"),
        Param("loaded-latency-bulk-bitrate", bitrate, "0",
              "target bitrate of the background TCP flow (iperf3 -b); 0 = as fast as the path goes"),
    )

    def expand(self, values: dict[str, Any], cell: Cell, repetition: int, variant: str) -> list[Run]:
        protocol = "udp" if variant == "dds" else "tcp"
        duration = values["loaded-latency-duration"] if variant == "dds" else None
        return [
            Run(cell, self.name, protocol, "pod-to-pod", LOADED_LATENCY_PLACEMENT, payload, duration, repetition,
                {"probe": variant, "load": load, "bulk_bitrate": values["loaded-latency-bulk-bitrate"],
                 **({"requests": values["loaded-latency-requests"]} if variant == "http" else {})})
            for payload in values["loaded-latency-payloads"] for load in ("idle", "bulk")
        ]

    def describe(self, run: Run) -> str:
        return f" {run.params['load']}"


# every workload's plan, in the order of their run-* phases (and of their parameters in the Argo files)
IPERF3, SOCKPERF, DDS, HTTP, LOADED_LATENCY = Iperf3Plan(), SockperfPlan(), DdsPlan(), HttpPlan(), LoadedLatencyPlan()
PLANS: dict[str, WorkloadPlan] = {p.name: p for p in sorted(
    (IPERF3, SOCKPERF, DDS, HTTP, LOADED_LATENCY), key=lambda p: (p.order, p.name))}
DESCRIBE.update({name: plan.describe for name, plan in PLANS.items()})


def params() -> list[Param]:
    """Every workload's parameters, in registry order."""
    return [p for w in PLANS.values() for p in w.params]
