"""Reading iperf3's client `-J` output (pure): `parse_metrics` gives the metrics, `parse` the Record of one output.

What each iperf3 version puts where in its JSON, with the source lines this parser relies on, is in
docs/tool-formats/iperf3.md. In short: the receiver's figures come from `end.sum_received` (TCP, and UDP from 3.11
on); iperf3 <= 3.10 UDP output carries only the sender's byte count and rate (`end.sum`), so for it the receiver's
figures must come from the server's own JSON (`--get-server-output`, server >= 3.11) or the run is refused. Anything
out of range, inconsistent or of the wrong JSON type raises Iperf3Error naming the field; no other exception escapes.
"""
from __future__ import annotations

import math
from typing import Any

from edgebench.drivers.iperf3.reader import (MISSING, Iperf3Error, array, flag, get, load, message, num, obj, show,
                                            type_name)
from edgebench.drivers.protocol import Record, ToolFormat

# --- Sane ranges. A value outside them is not a measurement but a broken or corrupted output: Iperf3Error. -------
MAX_THROUGHPUT_MBPS = 1e7  # 10 Tbit/s: above any NIC or loopback; a bigger rate comes from a bad time or byte count
MAX_JITTER_MS = 10_000.0  # 10 s: RFC 3550 smoothed transit-time variation; beyond this the clocks or data are wrong
MAX_RTT_US = 10_000_000  # 10 s: Linux tcpi_rtt (what iperf3's mean_rtt averages) never gets near this on a live path
MAX_CPU_PCT = 100.0 * 1024  # iperf3 >= 3.16 runs one thread per stream, so CPU% is over all cores: cap 1024 cores
MAX_SECONDS = 7 * 86400.0  # -t is capped at 86400 s (iperf.h MAX_TIME); -n/-k runs have no cap: a week is absurd
MAX_COUNT = 2**53  # bytes, packets, retransmits: iperf3 prints int64 through a double; above 2**53 it is not exact
RATE_REL_TOL = 1e-6  # bits_per_second vs bytes*8/seconds of a sum: iperf3 derives one from the others and cJSON
#                      prints 15-17 significant digits, so an honest output agrees to ~1e-15
LOST_PCT_ABS_TOL = 1e-6  # lost_percent vs 100*lost_packets/packets, in percentage points
RECEIVED_OVER_SENT_MAX = 1.01  # received bytes may exceed sent bytes only by duplicated datagrams or by the sender's
#                                and receiver's --omit windows ending at slightly different moments: 1% at most

def _sum(end: dict, key: str, path: str, udp_receiver: bool = False) -> dict[str, Any]:
    """One end.sum_* object, checked: bytes, seconds and bits_per_second agree; UDP receiver fields in range."""
    where = f"{path}.{key}"
    s = obj(end, key, path)
    nbytes = num(s, "bytes", where, 0, MAX_COUNT, integer=True)
    seconds = num(s, "seconds", where, 0, MAX_SECONDS)
    bps = num(s, "bits_per_second", where, 0, MAX_THROUGHPUT_MBPS * 1e6)
    if nbytes and not seconds:
        raise Iperf3Error(f"{where} has {nbytes} bytes in {seconds} seconds: no rate can be derived")
    expected = nbytes * 8 / seconds if seconds else 0.0
    if not math.isfinite(expected) or abs(bps - expected) > RATE_REL_TOL * max(bps, expected) + 1e-9:
        raise Iperf3Error(f"{where}.bits_per_second = {bps} does not match bytes*8/seconds = {expected} "
                          f"({nbytes} bytes in {seconds} s)")
    out = {"bytes": nbytes, "seconds": seconds, "mbps": bps / 1e6,
           "retransmits": num(s, "retransmits", where, 0, MAX_COUNT, integer=True, required=False),
           "packets": num(s, "packets", where, 0, MAX_COUNT, integer=True, required=udp_receiver)}
    if udp_receiver:
        out["jitter_ms"] = num(s, "jitter_ms", where, 0, MAX_JITTER_MS)
        out["lost_packets"] = num(s, "lost_packets", where, 0, MAX_COUNT, integer=True)
        out["lost_percent"] = num(s, "lost_percent", where, 0, 100)
        if out["lost_packets"] > out["packets"]:
            raise Iperf3Error(f"{where}.lost_packets = {out['lost_packets']} exceeds packets = {out['packets']}")
        if nbytes and not out["packets"]:
            raise Iperf3Error(f"{where} has {nbytes} bytes but packets = 0")
    return out


def _check_lost_percent(recv: dict, sent_packets: int | None, where: str) -> None:
    """iperf3 divides by the sender's packet count when it has one, else by the receiver's (iperf_api.c, UDP sum)."""
    lost, pct = recv["lost_packets"], recv["lost_percent"]
    candidates = [c for c in (sent_packets, recv["packets"]) if c]
    if lost == 0 and pct == 0:
        return
    if not any(abs(pct - 100.0 * lost / c) <= LOST_PCT_ABS_TOL for c in candidates):
        raise Iperf3Error(f"{where}.lost_percent = {pct} does not match lost_packets = {lost} over packets "
                          f"{' or '.join(map(str, candidates)) or '0'}")


def _stream_side(stream: Any, i: int, path: str) -> tuple[dict, bool | None]:
    """(the stream's sender-side or udp object, its `sender` flag: True = this host sent the stream)."""
    where = f"{path}.streams[{i}]"
    if not isinstance(stream, dict):
        raise Iperf3Error(f"{where} must be a JSON object, got {type_name(stream)}")
    side = obj(stream, "sender", where, required=False)
    name = "sender"
    if side is None:
        side, name = obj(stream, "udp", where, required=False), "udp"
    if side is None:
        raise Iperf3Error(f"{where} has neither a sender nor a udp object")
    return side, flag(side, "sender", f"{where}.{name}")


def _mean_rtt(end: dict, path: str, host_sent: bool, bidir: bool) -> float | None:
    """Mean over the streams this host sent of their mean_rtt (µs). iperf3 writes 0 when it has no RTT sample
    (a stream it only received, or no tcp_info), so zeros are 'not measured', not 0 µs."""
    rtts = []
    for i, stream in enumerate(array(end, "streams", path)):
        side, sender = _stream_side(stream, i, path)
        if sender is None and bidir:
            raise Iperf3Error(f"{path}.streams[{i}].sender.sender is missing: cannot tell the stream's direction")
        if (host_sent if sender is None else sender) != host_sent:
            continue
        rtt = num(side, "mean_rtt", f"{path}.streams[{i}]", 0, MAX_RTT_US, integer=True, required=False)
        if rtt:
            rtts.append(rtt)
    return sum(rtts) / len(rtts) if rtts else None


def _cpu(end: dict, key: str) -> float | None:
    cpu = obj(end, "cpu_utilization_percent", "end", required=False)
    return None if cpu is None else num(cpu, key, "end.cpu_utilization_percent", 0, MAX_CPU_PCT, required=False)


def _server_end(doc: dict) -> dict | None:
    """The server's own end section, when the client ran with --get-server-output and the server with JSON."""
    server = obj(doc, "server_output_json", "", required=False)
    if server is None:
        return None
    if get(server, "error", "server_output_json") is not MISSING:
        raise Iperf3Error(f"iperf3 server: {message(server['error'])}")
    return obj(server, "end", "server_output_json")


def _direction(doc: dict, end: dict, protocol: str, suffix: str, client_sent: bool, bidir: bool,
               version: str | None) -> dict[str, Any]:
    """Metrics of one data direction. suffix "" = the direction named sum_sent/sum_received, "_bidir_reverse" = the
    server -> client direction of a --bidir test. client_sent: the client is this direction's sender."""
    received_key = "sum_received" + suffix
    udp = protocol == "udp"
    if udp and get(end, received_key, "end") is MISSING:
        sent, recv = _udp_receiver_pre_3_11(doc, end, suffix, client_sent, version)
        where = f"server_output_json.end.{received_key}"
    else:
        sent = _sum(end, "sum_sent" + suffix, "end")
        recv = _sum(end, received_key, "end", udp_receiver=udp)
        where = f"end.{received_key}"
    if recv["bytes"] == 0:
        raise Iperf3Error(f"{where}.bytes is 0: the receiver counted no data, so there is no throughput to report "
                          "(typical of very short -n/-k runs or of a path that dropped everything)")
    if recv["bytes"] > sent["bytes"] * RECEIVED_OVER_SENT_MAX:
        raise Iperf3Error(f"{where}.bytes = {recv['bytes']} exceeds the sender's {sent['bytes']} bytes by more "
                          f"than {RECEIVED_OVER_SENT_MAX - 1:.0%}")
    out: dict[str, Any] = {"sent_mbps": sent["mbps"], "received_mbps": recv["mbps"], "sent_bytes": sent["bytes"],
                           "received_bytes": recv["bytes"], "retransmits": None,
                           "jitter_ms": None, "lost_packets": None, "packets": None, "lost_percent": None,
                           "mean_rtt_us": None}
    if udp:
        _check_lost_percent(recv, sent["packets"], where)
        out.update(jitter_ms=recv["jitter_ms"], lost_packets=recv["lost_packets"], packets=recv["packets"],
                   lost_percent=recv["lost_percent"])
    else:
        out["retransmits"] = sent["retransmits"]
        if client_sent:
            out["mean_rtt_us"] = _mean_rtt(end, "end", True, bidir)
        else:  # the server sent: only its own JSON has the RTT
            server_end = _server_end(doc)
            if server_end is not None:
                out["mean_rtt_us"] = _mean_rtt(server_end, "server_output_json.end", True, bidir)
    out["throughput_mbps"] = out["received_mbps"]
    return out


def _udp_receiver_pre_3_11(doc: dict, end: dict, suffix: str, client_sent: bool,
                           version: str | None) -> tuple[dict, dict]:
    """UDP output without end.sum_received (iperf3 <= 3.10): end.sum holds the sender's bytes and rate with the
    receiver's jitter/loss, so the receiver's rate is not in it. Use the server's own sum_received instead
    (client -> server direction, server >= 3.11), or refuse."""
    what = f"iperf3 {version}" if version else "this iperf3"
    server_end = _server_end(doc) if client_sent else None
    if server_end is None or get(server_end, "sum_received" + suffix, "server_output_json.end") is MISSING:
        if not client_sent:
            how = "rerun with iperf3 >= 3.11 (the client was the receiver)"
        elif server_end is not None:
            how = ("the server's own JSON (--get-server-output) has no sum_received either (a server < 3.11 writes "
                   "its UDP sum before it knows the byte counts); rerun with iperf3 >= 3.11 on either side")
        else:
            how = "rerun with iperf3 >= 3.11, or with --get-server-output against an iperf3 >= 3.11 server"
        raise Iperf3Error(f"the UDP receiver's rate is not in this output: {what} writes only end.sum for UDP, whose "
                          f"bytes and bits_per_second are the sender's; {how}")
    # end.sum: bytes = sender's total, bits_per_second = bytes*8/sender time, seconds = the receiver's time
    # (iperf_api.c 3.10 lines 3652 and 3714), so only bytes and rate are checked here
    s = obj(end, "sum" + suffix, "end")
    nbytes = num(s, "bytes", "end.sum", 0, MAX_COUNT, integer=True)
    bps = num(s, "bits_per_second", "end.sum", 0, MAX_THROUGHPUT_MBPS * 1e6)
    if (nbytes == 0) != (bps == 0) or (bps and nbytes * 8 / bps > MAX_SECONDS):
        raise Iperf3Error(f"end.sum: {nbytes} bytes at {bps} bit/s is not a sender's total and rate")
    packets = num(s, "packets", "end.sum", 0, MAX_COUNT, integer=True, required=False)
    sent = {"bytes": nbytes, "mbps": bps / 1e6, "packets": packets, "retransmits": None}
    return sent, _sum(server_end, "sum_received" + suffix, "server_output_json.end", udp_receiver=True)


def parse_metrics(text: str) -> dict[str, Any]:
    """Metrics from iperf3 client JSON (3.x): receiver-side throughput, UDP jitter/loss from the receiver, TCP RTT
    from the sender. Raises Iperf3Error for iperf3's own errors and for any output it cannot vouch for."""
    doc = load(text)
    if not isinstance(doc, dict):
        raise Iperf3Error(f"iperf3 output must be a JSON object, got {type_name(doc)}")
    error = get(doc, "error", "")
    if error is not MISSING:
        raise Iperf3Error(f"iperf3: {message(error)}")
    start = obj(doc, "start", "")
    test_start = obj(start, "test_start", "start")
    protocol = get(test_start, "protocol", "start.test_start")
    if not isinstance(protocol, str) or protocol.upper() not in ("TCP", "UDP"):
        raise Iperf3Error(f"start.test_start.protocol must be \"TCP\" or \"UDP\", got {show(protocol)}")
    protocol = protocol.lower()
    version = get(start, "version", "start")
    if version is not MISSING and not (isinstance(version, str) and 0 < len(version) <= 100):
        raise Iperf3Error(f"start.version must be a short string, got {type_name(version)}")
    version = None if version is MISSING else version.removeprefix("iperf ").strip()
    end = obj(doc, "end", "")
    if not end:
        raise Iperf3Error("iperf3 JSON has an empty end section: the test did not finish")

    reverse = bool(flag(test_start, "reverse", "start.test_start"))
    bidir_flag = flag(test_start, "bidir", "start.test_start")  # iperf3 >= 3.13 only
    bidir_sums = any(k.endswith("_bidir_reverse") for k in end)
    bidir = bool(bidir_flag) or bidir_sums
    if bidir and not bidir_sums:
        raise Iperf3Error("start.test_start.bidir is set but end has no *_bidir_reverse sums")
    if bidir and reverse:
        raise Iperf3Error("start.test_start says both reverse and bidir, which iperf3 does not allow")
    if not bidir:  # every stream must run the way test_start.reverse says
        for i, stream in enumerate(array(end, "streams", "end")):
            _, sender = _stream_side(stream, i, "end")
            if sender is not None and sender == reverse:
                raise Iperf3Error(f"end.streams[{i}] was {'sent' if sender else 'received'} by the client, but "
                                  f"start.test_start.reverse = {int(reverse)} (streams in both directions "
                                  "without *_bidir_reverse sums: iperf3 < 3.11 --bidir output is not supported)")

    out: dict[str, Any] = {"protocol": protocol}
    out.update(_direction(doc, end, protocol, "", not reverse, bidir, version))
    out["cpu_host_pct"] = _cpu(end, "host_total")
    out["cpu_remote_pct"] = _cpu(end, "remote_total")
    out["direction"] = "bidir" if bidir else "reverse" if reverse else "forward"
    out["reverse"], out["bidir"] = reverse, bidir
    if version is not None:
        out["iperf3_version"] = version
    if bidir:
        back = _direction(doc, end, protocol, "_bidir_reverse", False, bidir, version)
        out.update({f"reverse_{k}": v for k, v in back.items()})
    return out


def parse(text: str) -> Record:
    """The Record of one iperf3 client JSON output: no per-sample rows."""
    return {"tool": "iperf3", "metrics": parse_metrics(text), "samples": []}


FORMAT = ToolFormat("iperf3", parse, "iperf3-client.json", None, "iperf3 client JSON (-J / --json), TCP or UDP, 3.x")
