"""DDS pub/sub with Cyclone DDS ddsperf (seeds 000 and 002): latency = ping/pong (RTT/2), throughput = pub/sub."""

from __future__ import annotations

from typing import Any

from edgebench.plan.cells import Run
from edgebench.drivers import dds_security
from edgebench.drivers import ddsperf as driver
from edgebench.plan.params import Param, integer, integers, json_default, sizes, subset
from edgebench.workloads.base import Measurement, Workload


class Dds(Workload):
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
        Param("dds-duration", lambda n, v: integer(n, v, 2), "3",
              "seconds per DDS run, at least 2 (ddsperf prints no statistics for a 1 s run)"),
    )
    tools = ("ddsperf",)
    staging_model = "stg_edgebench__dds_samples"
    mart = "cmp_dds_vs_host"
    page = "dds"
    page_title = "DDS pub/sub"
    page_icon = ":material/podcasts:"

    def expand(self, values: dict[str, Any], cell, repetition: int, variant: str) -> list[Run]:
        v = values
        return [
            Run(cell, self.name, "udp", "pod-to-pod", placement, payload, v["dds-duration"], repetition,
                {"mode": variant, "reliability": reliability, "transport": transport, "subscribers": subs,
                 "security": security, "rate": "inf"})
            for placement in v["dds-placements"] for payload in v["dds-payloads"]
            for reliability in v["dds-reliability"] for transport in v["dds-transports"]
            for security in v["dds-security"]
            for subs in (v["dds-subscribers"] if variant == "throughput" else [1])
        ]

    def measure(self, ctx, run: Run) -> Measurement:
        """Where the datapath carries no multicast, discovery uses static unicast peers and multicast transport
        is recorded as unsupported."""
        p = run.params
        pub = ctx.provider.client(run.placement)
        pool = ctx.provider.peers(run.placement)
        subs = [pool[i % len(pool)] for i in range(p["subscribers"])]
        no_multicast = ctx.provider.multicast_reason(run.placement)
        params = {**p, "discovery": "multicast" if no_multicast is None else "static-peers"}
        if p["transport"] == "multicast" and no_multicast:
            return {}, None, f"unsupported: multicast transport: {no_multicast}", params
        if p["security"] != "none":
            why = dds_security.security_support()
            if why:
                return {}, None, f"unsupported: DDS Security: {why}", params
        raw, metrics, error = driver.measure(
            pub, subs, mode=p["mode"], payload=run.length_bytes, duration=run.duration_s,
            reliability=p["reliability"], transport=p["transport"], discovery=params["discovery"],
            peers=sorted({e.ip for e in [pub, *subs]}), security=p["security"])
        return raw, metrics, error, params

    def versions(self) -> dict[str, str]:
        return {"ddsperf": driver.version()}

    def headline(self, metrics: dict[str, Any]) -> str:
        if metrics.get("latency_p50_us") is not None:
            return f"latency p50 {metrics['latency_p50_us']:.0f} us, p99 {metrics['latency_p99_us']:.0f} us"
        return f"{metrics.get('throughput_mbps') or 0:.0f} Mbit/s"

    def describe(self, run: Run) -> str:
        p = run.params
        return f" {p['reliability']} {p['transport']}" + (
            f" subs={p['subscribers']}" if p["mode"] == "throughput" else "")


WORKLOAD = Dds()
