"""Reading edgebench-ddsrr's ping output (pure; the format is in run.py's docstring and docs/tool-formats/ddsrr.md)."""
from __future__ import annotations

import re
from typing import Any

from edgebench.drivers.ddsperf.parser import summarize
from edgebench.drivers.ddsperf.scan import SAMPLE_KEYS, DdsperfError, checknum
from edgebench.drivers.ddsrr.command import TOOL
from edgebench.drivers.protocol import Record

_NUM = r"(\S+?)"
_SECOND = re.compile(rf"^ddsrr-ping t {_NUM} subscribers (\d+) size (\d+) cnt (\d+)"
                     rf"(?: mean {_NUM}us min {_NUM}us 50% {_NUM}us 90% {_NUM}us 99% {_NUM}us max {_NUM}us)?"
                     r" timeouts (\d+)$")
_TOTAL = re.compile(r"^ddsrr-ping total sent (\d+) answered (\d+) timeouts (\d+) per-subscriber((?: \d+)+)$")
_FIELDS = (("latency_mean_us", "mean"), ("latency_min_us", "min"), ("latency_p50_us", "p50"),
           ("latency_p90_us", "p90"), ("latency_p99_us", "p99"), ("latency_max_us", "max"))


def parse_ping(text: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(samples, totals) of a ping's output: one dds-samples.json row per second that had answers (SAMPLE_KEYS,
    role "ping") and {sent, answered, timeouts, per_subscriber}. DdsperfError for an error line, a malformed line,
    a missing total, or a total that disagrees with the seconds."""
    samples: list[dict[str, Any]] = []
    totals: dict[str, Any] | None = None
    seconds_cnt = seconds_timeouts = 0
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith("ddsrr-ping") and not line.startswith("error:"):
            continue
        if line.startswith("error:"):
            raise DdsperfError(f"ping: {line.removeprefix('error:').strip()}")
        if m := _SECOND.match(line):
            t, subs, size, cnt, *vals, timeouts = m.groups()
            where = f"line {n}"
            seconds_cnt += int(cnt)
            seconds_timeouts += int(timeouts)
            if int(cnt) == 0:
                continue
            if vals[0] is None:
                raise DdsperfError(f"{where}: {cnt} answers but no latency figures: {line!r}")
            row = dict.fromkeys(SAMPLE_KEYS)
            row.update(role="ping", t_s=checknum("t", t, where), peer=f"round-robin/{int(subs)}",
                       latency_count=int(cnt))
            for (key, limit), v in zip(_FIELDS, vals):
                row[key] = checknum(limit, v, where)
            samples.append(row)
        elif m := _TOTAL.match(line):
            per = [int(x) for x in m.group(4).split()]
            totals = {"sent": int(m.group(1)), "answered": int(m.group(2)), "timeouts": int(m.group(3)),
                      "per_subscriber": per}
        else:
            raise DdsperfError(f"line {n} is no ddsrr-ping line edgebench knows: {line!r}")
    if totals is None:
        raise DdsperfError("ping: no total line (the pinger did not finish)")
    if totals["answered"] != seconds_cnt or totals["timeouts"] != seconds_timeouts or \
            sum(totals["per_subscriber"]) != totals["answered"]:
        raise DdsperfError(f"ping: the total ({totals}) disagrees with the per-second lines ({seconds_cnt} answered, "
                           f"{seconds_timeouts} timeouts)")
    return samples, totals


def parse(text: str) -> Record:
    """The Record of one ping's output: its per-second rows and their latency metrics (summarize, as measure()
    records them). DdsperfError as parse_ping, or when no ping was answered."""
    samples, _ = parse_ping(text)
    return {"tool": TOOL, "metrics": summarize("latency", samples, {}), "samples": samples}
