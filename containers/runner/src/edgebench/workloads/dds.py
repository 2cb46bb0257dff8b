"""DDS pub/sub with Cyclone DDS ddsperf (seeds 000 and 002): latency = ping/pong (RTT/2), throughput = pub/sub;
latency with several subscribers = edgebench-ddsrr's round robin (drivers/ddsrr/). RTI Perftest outputs made
elsewhere are imported as its runs too (drivers/perftest/)."""

from __future__ import annotations

from typing import Any

from edgebench.drivers import ddsperf as driver
from edgebench.drivers import ddsrr, perftest
from edgebench.drivers.protocol import Record
from edgebench.plan import workload_plans
from edgebench.plan.dimensions import Run
from edgebench.plan.workload_plans import DDSPERF_PING_TIMEOUT_MS
from edgebench.workloads.base import Measurement, Workload

# the run parameter a cluster's DDS run records once the pods' leftover responders are stopped before it (2026-11-29);
# not a run key: adaptive.NOT_MATCHED and aim.UNPAIRED leave it out of a variant's identity
LEFTOVERS_STOPPED = "leftovers_stopped"


class Dds(Workload):
    plan = workload_plans.DDS
    tools = ("ddsperf",)
    staging_model = "stg_edgebench__dds_samples"
    mart = "cmp_dds_vs_host"
    page = "dds"
    page_title = "DDS pub/sub"
    page_icon = ":material/podcasts:"
    formats = (driver.FORMAT, perftest.FORMAT)
    import_labels = ("placement", "reliability", "transport", "discovery", "length_bytes")
    import_params = ("reliability", "transport", "discovery", "security", "subscribers")

    def measure(self, ctx, run: Run) -> Measurement:
        """Where the datapath carries no multicast, discovery uses static unicast peers and multicast transport
        is recorded as unsupported."""
        p = run.params
        # a cluster's pods keep running what an earlier run started there (killing `kubectl exec` leaves the remote
        # process; a pong or sub lives init wait + duration + 60 s): stop it first, or it answers this run's pings
        # and takes its samples (the testbed kills its process groups; flushing there costs nothing measured)
        ctx.provider.flush_services()
        pub = ctx.provider.client(run.placement)
        pool = ctx.provider.peers(run.placement)
        subs = [pool[i % len(pool)] for i in range(p["subscribers"])]
        no_multicast = ctx.provider.multicast_reason(run.placement)
        params = {**p, "discovery": "multicast" if no_multicast is None else "static-peers"}
        if ctx.provider.name != "local":
            # what tells a cluster's run from one stored before that flush: the warehouse keeps those out
            # (stg_edgebench__runs, var dds_leftovers_reason)
            params[LEFTOVERS_STOPPED] = True
        if p["transport"] == "multicast" and no_multicast:
            return {}, None, f"unsupported: multicast transport: {no_multicast}", params
        timeout_ms = p.get("ping_timeout_ms", DDSPERF_PING_TIMEOUT_MS)
        # edgebench's own pinger where ddsperf's cannot measure what the run asks: several subscribers answering in
        # turn (ddsperf's ping is answered by all), or a ping timeout other than ddsperf's fixed 1000 ms
        own_pinger = p["mode"] == "latency" and (p["subscribers"] > 1 or timeout_ms != DDSPERF_PING_TIMEOUT_MS)
        if p["security"] != "none":
            why = driver.security_support()
            if why:
                return {}, None, f"unsupported: DDS Security: {why}", params
        if own_pinger:
            params["pinger"] = ddsrr.TOOL
            if p["security"] != "none":
                return {}, None, (f"unsupported: DDS Security on {ddsrr.TOOL} (runs with several subscribers or a "
                                  "ping timeout other than ddsperf's 1000 ms): it is not given DDS Security material"
                                  ), params
            raw, metrics, error = ddsrr.measure(
                pub, subs, payload=run.length_bytes, duration=run.duration_s, reliability=p["reliability"],
                transport=p["transport"], discovery=params["discovery"], peers=sorted({e.ip for e in [pub, *subs]}),
                batching=p.get("batching", "on"), timeout_ms=timeout_ms)
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

    def stated(self, text: str, record: Record) -> dict[str, Any]:
        """UDP, pod to pod; the mode from the metrics (latency when they have a p50)."""
        m = record["metrics"]
        return {"protocol": "udp", "path": "pod-to-pod",
                "mode": "latency" if m.get("latency_p50_us") is not None else "throughput"}

    def imported_params(self, params: dict[str, Any], stated: dict[str, Any],
                        metrics: dict[str, Any]) -> dict[str, Any]:
        params = {"mode": stated["mode"], "security": "none", "subscribers": 1, "rate": "unknown", **params}
        params["subscribers"] = int(params["subscribers"])
        return params


WORKLOAD = Dds()
