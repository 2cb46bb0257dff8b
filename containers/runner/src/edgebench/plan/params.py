"""Sweep parameters: the declaration type (name, parser, default, help) and the value parsers they share.

Every parameter is declared once: the core ones in spec.py, each workload's in its module under workloads/. The
spec parser, `edgebench sweep --help`/`edgebench params`, and the Argo parameter lists in workflows/ and templates/
(checked by tests/host/test_templates.py) all come from these declarations. Parsers take (name, raw string) and return
the parsed value or raise SpecError with one clear message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from edgebench.plan import catalog
from edgebench.errors import SpecError


@dataclass(frozen=True)
class Param:
    name: str
    parse: Callable[[str, str], Any]
    default: str  # the raw string, as an Argo parameter value
    help: str
    neutral_at_default: bool = False  # added after sweeps were stored: at its default it changes no sweep id


def json_default(value: Any) -> str:
    """A default written as Python data -> its Argo string (lists as compact JSON)."""
    return json.dumps(value, separators=(",", ":")) if isinstance(value, (list, dict)) else str(value)


_SIZE = re.compile(r"^(\d{1,12})([KkMm]?)$")
_INT = re.compile(r"^[+-]?\d{1,12}$")  # 12 digits: beyond any sane count, far below Python's int() digit limit
_RATE = re.compile(r"^(\d+(?:\.\d+)?)([KMG]?)$")


def parse_size(text: str) -> int:
    """iperf3-style size: 1400, 128K, 1M (binary multiples, as iperf3 reads them)."""
    m = _SIZE.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a size (examples: 1400, 128K, 1M)")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]


def json_list(name: str, value: str) -> list[str]:
    try:
        data = json.loads(value)
    except ValueError as exc:  # JSONDecodeError, or an integer literal beyond Python's digit limit
        raise SpecError(
            f"parameter {name!r} must be a JSON list of strings, e.g. [\"a\",\"b\"]; got {short(value)} "
            f"({getattr(exc, 'msg', exc)})"
        ) from None
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise SpecError(f"parameter {name!r} must be a JSON list of strings; got {value!r}")
    if not data:
        raise SpecError(f"parameter {name!r} must not be empty")
    dupes = sorted({x for x in data if data.count(x) > 1})
    if dupes:
        raise SpecError(f"parameter {name!r} lists {', '.join(dupes)} more than once")
    return data


def short(value: object, limit: int = 60) -> str:
    """repr of a user value, cut so that a 5,000-character input still gives a one-line message."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(str(value))} characters)"


def integer(name: str, value: str, minimum: int) -> int:
    text = str(value).strip()
    if not _INT.match(text):
        raise SpecError(f"parameter {name!r} must be an integer of at most 12 digits; got {short(value)}")
    n = int(text)
    if n < minimum:
        raise SpecError(f"parameter {name!r} must be >= {minimum}; got {n}")
    return n


def time_budget(name: str, value: str) -> int | None:
    """A wall-time budget: none, or seconds (`1200`, `1200s`), minutes (`20m`) or hours (`1h`) -> seconds."""
    text = str(value).strip().lower()
    if text == "none":
        return None
    m = re.fullmatch(r"([0-9]{1,7})([smh]?)", text)
    if not m or int(m.group(1)) == 0:
        raise SpecError(f"parameter {name!r} must be none or a positive time such as 1200, 20m or 1h; got "
                        f"{short(value)}")
    return int(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


@dataclass(frozen=True)
class Rounds:
    """A time budget of `n` full rounds: the wall time the fixed plan of `n` repetitions takes, measured on the
    sweep's own first rounds (sweep/runner.py), so that it holds on a slow machine and a fast one alike."""
    n: int

    def __str__(self) -> str:
        return f"{self.n} full rounds' time (fixed {self.n}'s)"


def sweep_time_budget(name: str, value: str) -> int | Rounds | None:
    """A sweep's time budget: what `time_budget` takes, or `3r`: the time 3 full rounds take on this machine."""
    m = re.fullmatch(r"([0-9]{1,3})r", str(value).strip().lower())
    if m:
        if int(m.group(1)) == 0:
            raise SpecError(f"parameter {name!r} in rounds must be at least 1r; got {short(value)}")
        return Rounds(int(m.group(1)))
    try:
        return time_budget(name, value)
    except SpecError:
        raise SpecError(f"parameter {name!r} must be none, a positive time such as 1200, 20m or 1h, or full rounds "
                        f"such as 3r; got {short(value)}") from None


def choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise SpecError(f"parameter {name!r} must be one of {', '.join(choices)}; got {value!r}")
    return value


def sizes(name: str, value: str, lo: int, hi: int) -> list[int]:
    out = []
    for item in json_list(name, value):
        try:
            n = parse_size(item)
        except ValueError as exc:
            raise SpecError(f"parameter {name!r}: {exc}") from None
        if not lo <= n <= hi:
            raise SpecError(f"parameter {name!r}: {item} is outside {lo}..{hi} bytes")
        out.append(n)
    return out


def paths(name: str, value: str) -> list[tuple[str, str]]:
    """path:placement entries (pod-to-pod|pod-to-service : same-node|cross-node)."""
    allowed = catalog.workloads()["iperf3"]["paths"]
    out = []
    for item in json_list(name, value):
        if item not in allowed:
            raise SpecError(f"parameter {name!r}: unknown path {item!r}; choices: {', '.join(allowed)}")
        path, _, placement = item.partition(":")
        out.append((path, placement))
    return out


def subset(choices: tuple[str, ...]) -> Callable[[str, str], list[str]]:
    def parse(name: str, value: str) -> list[str]:
        items = json_list(name, value)
        for item in items:
            if item not in choices:
                raise SpecError(f"parameter {name!r}: unknown value {item!r}; choices: {', '.join(choices)}")
        return items
    return parse


def integers(name: str, value: str, lo: int, hi: int) -> list[int]:
    out = []
    for item in json_list(name, value):
        if not _INT.match(item) or not lo <= int(item) <= hi:
            raise SpecError(f"parameter {name!r}: {short(item)} is not an integer in {lo}..{hi}")
        out.append(int(item))
    return out


def bitrate(name: str, value: str) -> str:
    if not _RATE.match(value.strip()):
        raise SpecError(f"parameter {name!r} must be a bitrate such as 0 (unlimited), 500M or 1G; got {value!r}")
    return value.strip()
