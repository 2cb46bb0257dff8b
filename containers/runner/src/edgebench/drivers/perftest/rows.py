"""The checked rows the three RTI Perftest output readers (readers.py) give: fields, their limits, the consistency
Perftest's own arithmetic guarantees. PerftestParseError for anything Perftest cannot have printed."""

from __future__ import annotations

import json
from typing import Any, Iterable

from edgebench.drivers.common.numbers import checked_number
from edgebench.errors import EdgebenchError


class PerftestParseError(EdgebenchError, ValueError):
    """The text is not a Perftest output this parser can read without guessing."""


# field -> (lowest, highest, what it is); values outside are rejected as absurd
LIMITS: dict[str, tuple[float, float, str]] = {
    "length": (1, 2 ** 31, "sample size (bytes)"),
    "latency": (0, 1e9, "one-way latency (us)"),
    "ave": (0, 1e9, "mean latency (us)"),
    "std": (0, 1e9, "latency standard deviation (us)"),
    "min": (0, 1e9, "minimum latency (us)"),
    "max": (0, 1e9, "maximum latency (us)"),
    "p50": (0, 1e9, "50th percentile latency (us)"),
    "p90": (0, 1e9, "90th percentile latency (us)"),
    "p99": (0, 1e9, "99th percentile latency (us)"),
    "p9999": (0, 1e9, "99.99th percentile latency (us)"),
    "p999999": (0, 1e9, "99.9999th percentile latency (us)"),
    "total": (0, 1e15, "total samples"),
    "sps": (0, 1e9, "samples/s"),
    "sps_ave": (0, 1e9, "average samples/s"),
    "mbps": (0, 1e7, "Mbps"),
    "mbps_ave": (0, 1e7, "average Mbps"),
    "lost": (0, 1e15, "lost samples"),
    "lost_pct": (0, 100, "lost samples (%)"),
    "cpu": (0, 110, "CPU (%)"),
    "ser": (0, 1e9, "serialization time (us)"),
    "deser": (0, 1e9, "deserialization time (us)"),
    "ser_total": (0, 1e9, "serialization + deserialization time (us)"),
}
_TIME_FIELDS = {"latency", "ave", "std", "min", "max", "p50", "p90", "p99", "p9999", "p999999", "ser", "deser",
                "ser_total"}
# time columns a "(ns)" header converts to microseconds (serialization times are not: Perftest measures them in
# microseconds whatever the clock, see the "Serialization/Deserialization: %0.3f us" line of the legacy format)
_SCALED_FIELDS = _TIME_FIELDS - {"ser", "deser", "ser_total"}
_INT_FIELDS = {"length", "total", "lost"}
LATENCY_KINDS = ("latency_interval", "latency_summary")
THROUGHPUT_KINDS = ("throughput_interval", "throughput_summary")


class Row:
    __slots__ = ("kind", "v", "where")

    def __init__(self, kind: str, v: dict[str, float | None], where: str):
        self.kind, self.v, self.where = kind, v, where


def snippet(text: str) -> str:
    s = text[:200].replace("\n", "\\n")
    return repr(s) if s else "(empty output)"


def checked_value(field: str, raw: Any, where: str, scale: float = 1.0) -> float | None:
    """One number, checked: finite, not negative, within LIMITS[field]. Perftest prints a NaN standard deviation when
    the variance rounds below zero; that one field becomes None, every other NaN is an error."""
    what = LIMITS[field][2] if field in LIMITS else field
    if isinstance(raw, bool) or raw is None or isinstance(raw, (list, dict)):
        raise PerftestParseError(f"{where}: {what} is {json.dumps(raw) if not isinstance(raw, str) else raw!r}, "
                                 "not a number")
    if isinstance(raw, str):
        tok = raw.strip()
        if not tok:
            raise PerftestParseError(f"{where}: {what} is empty")
        raw = tok
    lo, hi, _ = LIMITS.get(field, (0, 1e15, field))
    return checked_number(raw, what=what, where=where, bounds=(lo, hi), error=PerftestParseError,
                          whole=field in _INT_FIELDS, scale=scale if field in _SCALED_FIELDS else 1.0,
                          nan_is_none=field == "std")


def _check_row(r: Row) -> Row:
    """Consistency Perftest's own arithmetic guarantees (within print rounding)."""
    v = r.v

    def le(a: str, b: str) -> None:
        x, y = v.get(a), v.get(b)
        if x is not None and y is not None and x > y + 0.5 + 1e-9 * y:
            raise PerftestParseError(f"{r.where}: {LIMITS[a][2]} {x:g} is above {LIMITS[b][2]} {y:g}")

    if r.kind == "latency_summary":
        for a, b in (("min", "p50"), ("p50", "p90"), ("p90", "p99"), ("p99", "p9999"), ("p9999", "p999999"),
                     ("p999999", "max"), ("min", "ave"), ("ave", "max")):
            le(a, b)
    elif r.kind == "latency_interval":
        for a, b in (("min", "latency"), ("latency", "max"), ("min", "ave"), ("ave", "max")):
            le(a, b)
    return r


def _require(r: Row, fields: Iterable[str]) -> Row:
    missing = [f for f in fields if r.v.get(f) is None]
    if missing:
        raise PerftestParseError(f"{r.where}: no {', '.join(LIMITS[f][2] for f in missing)}")
    return r


_REQUIRED = {"latency_interval": ("latency",), "latency_summary": ("ave", "min", "max", "p50", "p90", "p99"),
             "throughput_interval": ("total", "sps", "mbps", "lost"),
             "throughput_summary": ("total", "sps_ave", "mbps_ave", "lost")}


def finish_row(r: Row) -> Row:
    return _check_row(_require(r, _REQUIRED[r.kind]))
