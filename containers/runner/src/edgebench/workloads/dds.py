"""DDS pub/sub with Cyclone DDS ddsperf (seeds 000 and 002): latency = ping/pong (RTT/2), throughput = pub/sub;
latency with several subscribers = edgebench-ddsrr's round robin (drivers/ddsrr.py)."""

from __future__ import annotations

from typing import Any

from edgebench.plan.dimensions import Run
from edgebench.plan.workload_plans import DDSPERF_PING_TIMEOUT_MS
from edgebench.drivers import dds_security
from edgebench.drivers import ddsperf as driver
from edgebench.drivers import ddsrr
from edgebench.workloads.base import Measurement, Workload


class Dds(Workload):
    name = "dds"
    tools = ("ddsperf",)
    staging_model = "stg_edgebench__dds_samples"
    mart = "cmp_dds_vs_host"
    page = "dds"
    page_title = "DDS pub/sub"
    page_icon = ":material/podcasts:"

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
        round_robin = p["mode"] == "latency" and p["subscribers"] > 1  # one subscriber answers each ping, in turn
        timeout_ms = p.get("ping_timeout_ms", DDSPERF_PING_TIMEOUT_MS)
        if timeout_ms != DDSPERF_PING_TIMEOUT_MS:
            if round_robin:  # edgebench-ddsrr has -t, but the marts would pool its runs with the 1000 ms ones
                return {}, None, (f"unsupported: a {timeout_ms} ms ping timeout with {p['subscribers']} subscribers: "
                                  "the warehouse does not keep DDS runs apart by ping timeout yet"), params
            return {}, None, (f"unsupported: a {p['ping_timeout_ms']} ms ping timeout: ddsperf waits a fixed "
                              f"{DDSPERF_PING_TIMEOUT_MS} ms for a lost pong before the next ping (Cyclone DDS "
                              "ddsperf.c, maybe_send_new_ping) and has no option to change it"), params
        if p["security"] != "none":
            why = dds_security.security_support()
            if why:
                return {}, None, f"unsupported: DDS Security: {why}", params
        if round_robin:
            params["pinger"] = ddsrr.TOOL
            if p["security"] != "none":
                return {}, None, (f"unsupported: DDS Security with {p['subscribers']} subscribers: {ddsrr.TOOL}, the "
                                  "round-robin pinger, is not given DDS Security material"), params
            raw, metrics, error = ddsrr.measure(
                pub, subs, payload=run.length_bytes, duration=run.duration_s, reliability=p["reliability"],
                transport=p["transport"], discovery=params["discovery"], peers=sorted({e.ip for e in [pub, *subs]}),
                batching=p.get("batching", "on"))
            return raw, metrics, error, params
        raw, metrics, error = driver.measure(
            pub, subs, mode=p["mode"], payload=run.length_bytes, duration=run.duration_s,
            reliability=p["reliability"], transport=p["transport"], discovery=params["discovery"],
            peers=sorted({e.ip for e in [pub, *subs]}), security=p["security"], batching=p.get("batching", "on"))
        return raw, metrics, error, params

    def versions(self) -> dict[str, str]:
        return {"ddsperf": driver.version(), ddsrr.TOOL: ddsrr.version()}

    def headline(self, metrics: dict[str, Any]) -> str:
        if metrics.get("latency_p50_us") is not None:
            return f"latency p50 {metrics['latency_p50_us']:.0f} us, p99 {metrics['latency_p99_us']:.0f} us"
        return f"{metrics.get('throughput_mbps') or 0:.0f} Mbit/s"

    def judged(self, metrics: dict[str, Any]) -> tuple[str, float, bool] | None:
        """Latency mode on the p90 (as cmp_dds_vs_host), throughput mode on Mbit/s."""
        if metrics.get("latency_p90_us") is not None:
            return ("latency", metrics["latency_p90_us"], False)
        value = metrics.get("throughput_mbps")
        return None if value is None else ("throughput", value, True)



WORKLOAD = Dds()
