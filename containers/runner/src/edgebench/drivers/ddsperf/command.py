"""ddsperf's command lines and the Cyclone DDS configuration of its processes (pure functions; see run.py for the
driver that runs them and the output formats)."""

from __future__ import annotations

from typing import Sequence
from xml.sax.saxutils import quoteattr

from edgebench.drivers.ddsperf.parser import BATCHINGS, DISCOVERIES, RELIABILITIES
from edgebench.drivers.ddsperf.security import security_xml

# Participant indices probed by unicast (static-peers) discovery: index i listens on 7400+250*domain+10+2*i.
# 13 ddsperf processes on one host (1 pub + 12 subs) need indices 0..12; leave some headroom.
MAX_PARTICIPANT_INDEX = 19

# seconds ddsperf may wait for all peers to match before giving up (-Qinitwait)
INIT_WAIT = 10.0

# General/MaxMessageSize of batching=off: below the smallest RTPS message, so that no RTPS message holds more than
# one submessage (Cyclone's packer sends what it holds before adding a submessage that would exceed it, and sends a
# submessage larger than it alone). See cyclone_config and docs/workloads.md.
UNBATCHED_MAX_MESSAGE_SIZE = "1B"

def _common(duration: float | None, reliability: str, domain: int, minmatch: int | None,
            init_wait: float | None) -> list[str]:
    if reliability not in RELIABILITIES:
        raise ValueError(f"reliability must be one of {RELIABILITIES}, not {reliability!r}")
    argv = ["ddsperf", "-i", str(int(domain)), "-c"]
    if duration is not None:
        argv += ["-D", _num(duration)]
    if reliability == "best-effort":
        argv.append("-u")
    if minmatch:
        argv.append(f"-Qminmatch:{int(minmatch)}")
        if init_wait:
            argv.append(f"-Qinitwait:{_num(init_wait)}")
    return argv


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{float(x):g}"


def _rate(rate: str | float | int | None) -> list[str]:
    if rate is None or str(rate) == "inf":
        return []
    if float(rate) <= 0:
        raise ValueError(f"rate must be 'inf' or > 0, not {rate!r}")
    return [f"{_num(float(rate))}Hz"]


def ping_cmd(payload: int, duration: float, reliability: str = "reliable", rate: str | float | None = None,
             domain: int = 0, *, minmatch: int = 1, init_wait: float = INIT_WAIT) -> list[str]:
    """Latency initiator: without a rate the next ping goes out as soon as all pongs are in (ping-pong)."""
    return [*_common(duration, reliability, domain, minmatch, init_wait), "ping", *_rate(rate),
            "size", str(int(payload))]


def pong_cmd(duration: float | None, reliability: str = "reliable", domain: int = 0, *, minmatch: int = 1,
             init_wait: float = INIT_WAIT) -> list[str]:
    return [*_common(duration, reliability, domain, minmatch, init_wait), "pong"]


def pub_cmd(payload: int, duration: float, reliability: str = "reliable", rate: str | float | None = "inf",
            domain: int = 0, *, minmatch: int = 1, init_wait: float = INIT_WAIT) -> list[str]:
    """Throughput publisher; `minmatch` = number of subscriber processes it must match before publishing."""
    return [*_common(duration, reliability, domain, minmatch, init_wait), "pub", *_rate(rate),
            "size", str(int(payload))]


def sub_cmd(duration: float | None, reliability: str = "reliable", domain: int = 0) -> list[str]:
    """Throughput subscriber; `-1` prints a stats line every second even when nothing arrived. No minmatch:
    subscribers also see each other, so matching is checked on the publisher (its -Qminmatch)."""
    return [*_common(duration, reliability, domain, None, None), "-1", "sub"]


def cyclone_config(discovery: str, peers: Sequence[str] | None, allow_multicast: bool,
                   security: dict[str, str] | None = None, *, interface: str | None = None,
                   max_participant_index: int = MAX_PARTICIPANT_INDEX, batching: str = "on") -> str:
    """XML for CYCLONEDDS_URI (element names from docs/manual/config/config_file_reference.rst).

    General/AllowMulticast:
      discovery=multicast,    allow_multicast (multicast data)  -> true
      discovery=multicast,    not allow_multicast               -> spdp (multicast only for participant discovery)
      discovery=static-peers, not allow_multicast               -> false (no multicast at all)
      discovery=static-peers, allow_multicast                   -> asm (data may use multicast; note SPDP then
                                                                   also goes to 239.255.0.1 besides the peers)
    Static peers need Discovery/ParticipantIndex=auto (the 0.10 default "none" uses random ports, making unicast
    discovery impossible) and MaxAutoParticipantIndex >= participants per host - 1.
    `security`: optional {"Library...": ...} dict rendered as Domain/Security (see security_config()).

    batching="off" (PerfTest's "batching disabled", seeds 000/002): General/MaxMessageSize =
    UNBATCHED_MAX_MESSAGE_SIZE, so every RTPS message carries one submessage: one DATA, i.e. one sample, per UDP
    datagram up to FragmentSize (1344 B); a larger sample goes one DATA_FRAG of FragmentSize per datagram (Cyclone
    puts MaxMessageSize / FragmentSize fragments, at least 1, in a submessage). Internal/WriteBatch=false, the
    documented switch, does nothing for ddsperf: ddsperf 0.10 calls dds_write_set_batch(true) after creating its
    participant (overriding the setting for the domain; master sets writer_batching on its data writer instead), and
    Cyclone's packer then fills each message up to MaxMessageSize (default 14720 B) until the next flush.
    batching="on": ddsperf as it is (MaxMessageSize left at its default).
    """
    if discovery not in DISCOVERIES:
        raise ValueError(f"discovery must be one of {DISCOVERIES}, not {discovery!r}")
    if batching not in BATCHINGS:
        raise ValueError(f"batching must be one of {BATCHINGS}, not {batching!r}")
    static = discovery == "static-peers"
    if static and not peers:
        raise ValueError("static-peers discovery needs at least one peer address")
    mc = {(False, True): "true", (False, False): "spdp", (True, False): "false", (True, True): "asm"}[
        (static, bool(allow_multicast))]
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<CycloneDDS xmlns="https://cdds.io/config">',
             '  <Domain Id="any">',
             '    <General>']
    if interface:
        lines.append(f"      <Interfaces><NetworkInterface address={quoteattr(interface)}/></Interfaces>")
    lines.append(f"      <AllowMulticast>{mc}</AllowMulticast>")
    if batching == "off":
        lines.append(f"      <MaxMessageSize>{UNBATCHED_MAX_MESSAGE_SIZE}</MaxMessageSize>")
    lines += ["    </General>",
              "    <Discovery>"]
    if static:
        lines += ["      <ParticipantIndex>auto</ParticipantIndex>",
                  f"      <MaxAutoParticipantIndex>{int(max_participant_index)}</MaxAutoParticipantIndex>",
                  "      <Peers>"]
        lines += [f"        <Peer address={quoteattr(p)}/>" for p in peers or ()]
        lines += ["      </Peers>"]
    lines.append("    </Discovery>")
    if security:
        lines.append(security_xml(security))
    lines += ["  </Domain>", "</CycloneDDS>"]
    return "\n".join(lines) + "\n"
