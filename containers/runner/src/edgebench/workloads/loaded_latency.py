"""Latency under load: DDS latency or HTTP response time measured while a bulk iperf3 TCP flow shares the same
path, next to the same measurement idle, per CNI mode.

What a robot's control loop on a busy edge link feels: the probe (ddsperf ping/pong, or sequential HTTP requests
on one kept-alive connection) runs twice per repetition, `idle` and under `bulk` load. The bulk flow goes from the
probe's client pod to its server pod (the probe's request direction) over the same path, starts before the probe
(1 s ramp-up) and is stopped (SIGINT) when the probe ends; its sender rate over that time is recorded
(`bulk_sent_mbps`, what iperf3 reports for an interrupted client; TCP, so about what was delivered). Both variants
report latency in µs under the same names (probe_p50_us, probe_p99_us, probe_mean_us) so the mart compares them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from typing import Any

from edgebench import sh
from edgebench.drivers import ddsperf, http, iperf3
from edgebench.plan import workload_plans
from edgebench.plan.dimensions import Run
from edgebench.workloads.base import Measurement, Workload

BULK_PORT = 5202
HTTP_PORT = 8080
RAMP_UP_S = 1.0
BULK_MAX_S = 3600  # the bulk client's -t; it is always stopped when the probe ends
PLACEMENT = "cross-node"


class LoadedLatency(Workload):
    plan = workload_plans.LOADED_LATENCY
    tools = ("iperf3", "ddsperf", "fortio")
    staging_model = "stg_edgebench__loaded_latency"
    mart = "cmp_loaded_latency_vs_idle"
    page = "loaded_latency"
    page_title = "Latency under load"
    page_icon = ":material/timer:"

    def measure(self, ctx, run: Run) -> Measurement:
        client, server = ctx.provider.client(run.placement), ctx.provider.server(run.placement)
        ctx.provider.flush_services()
        bulk = _Bulk(client, server, run.params["bulk_bitrate"]) if run.params["load"] == "bulk" else None
        raw: dict[str, bytes] = {}
        try:
            if bulk:
                bulk.start()
            probe_raw, metrics, error = self._probe(ctx, run, client, server)
            raw.update({f"probe-{name}": data for name, data in probe_raw.items()})  # apart from dds/http runs
        finally:
            if bulk:
                raw.update(bulk.stop())
        if error is None and bulk:
            load, problem = bulk.result()
            if problem:
                error = f"background flow: {problem}"
            metrics = {**(metrics or {}), **load}
        if error is not None:
            return raw, None, error, None
        return raw, metrics, None, None

    def _probe(self, ctx, run: Run, client, server) -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
        """The probe alone: (raw files, latency metrics in µs, error)."""
        if run.params["probe"] == "dds":
            no_multicast = ctx.provider.multicast_reason(run.placement)
            raw, m, error = ddsperf.measure(
                client, [server], mode="latency", payload=run.length_bytes, duration=run.duration_s,
                reliability="reliable", transport="unicast",
                discovery="multicast" if no_multicast is None else "static-peers",
                peers=sorted({client.ip, server.ip}), security="none")
            if error or not m:
                return raw, None, error or "ddsperf gave no latency"
            out = {"probe_p50_us": m["latency_p50_us"], "probe_p99_us": m["latency_p99_us"],
                   "probe_mean_us": m["latency_mean_us"], "probe_count": m.get("latency_count")}
        else:
            service = "payload-echo"
            raw, m, error = http.measure(client, server, server.ip, HTTP_PORT, service, run.length_bytes,
                                         run.params["requests"])
            if error or not m:
                return raw, None, error or "the HTTP probe gave no response times"
            out = {"probe_p50_us": m["response_p50_ms"] * 1000, "probe_p99_us": m["response_p99_ms"] * 1000,
                   "probe_mean_us": m["response_mean_ms"] * 1000, "probe_count": m["requests"],
                   "resolution_us": (m["resolution_ms"] * 1000) if m.get("resolution_ms") is not None else None}
        return raw, {"probe": run.params["probe"], "load": run.params["load"], **out}, None

    def versions(self) -> dict[str, str]:
        return {"iperf3": iperf3.version(), "ddsperf": ddsperf.version(), **http.version()}

    def headline(self, metrics: dict[str, Any]) -> str:
        text = f"{metrics['load']}: p50 {metrics['probe_p50_us']:.0f} us, p99 {metrics['probe_p99_us']:.0f} us"
        if metrics.get("bulk_sent_mbps") is not None:
            text += f" (bulk {metrics['bulk_sent_mbps']:.0f} Mbit/s)"
        return text



class _Bulk:
    """A background iperf3 TCP flow client -> server, stopped with SIGINT when the probe ends."""

    def __init__(self, client, server, rate: str):
        self.client, self.server, self.rate = client, server, rate
        self.srv: subprocess.Popen | None = None
        self.cli: subprocess.Popen | None = None
        self.raw: dict[str, bytes] = {}

    def start(self) -> None:
        self.srv = sh.popen(self.server.cmd(iperf3.server_cmd(BULK_PORT)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not sh.call(self.server.cmd(["ss", "-Hltn", f"sport = :{BULK_PORT}"]), capture_output=True,
                                 text=True).stdout.strip():
            if self.srv.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the background iperf3 server did not start")
            time.sleep(0.05)
        argv = iperf3.client_cmd(self.server.ip, BULK_PORT, "tcp", 128 * 1024, BULK_MAX_S)
        if self.rate != "0":
            argv += ["--bitrate", self.rate]
        self.cli = sh.popen(self.client.cmd(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(RAMP_UP_S)
        if self.cli.poll() is not None:
            raise RuntimeError(f"the background iperf3 flow ended at once: {self.cli.stdout.read()[:300]!r}")

    def stop(self) -> dict[str, bytes]:
        for proc, name in ((self.cli, "bulk-iperf3-client.json"), (self.srv, "bulk-iperf3-server.json")):
            if proc is None:
                continue
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            try:
                out, _ = proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            self.raw[name] = out or b""
        return dict(self.raw)

    def result(self) -> tuple[dict[str, Any], str | None]:
        """({bulk_sent_mbps, bulk_retransmits, bulk_seconds}, problem or None) from the interrupted client."""
        try:
            doc = json.loads(self.raw.get("bulk-iperf3-client.json") or b"")
            sent = doc["end"]["sum_sent"]
            mbps, seconds = float(sent["bits_per_second"]) / 1e6, float(sent["seconds"])
        except (ValueError, KeyError, TypeError):
            return {}, "no iperf3 JSON with end.sum_sent from the background client"
        if not mbps > 0 or not seconds > RAMP_UP_S:
            return {}, f"the background flow carried {mbps:.3f} Mbit/s over {seconds:.2f} s: no load"
        retransmits = sent.get("retransmits")
        return {"bulk_sent_mbps": mbps, "bulk_seconds": seconds,
                "bulk_retransmits": retransmits if isinstance(retransmits, int) else None}, None


WORKLOAD = LoadedLatency()
