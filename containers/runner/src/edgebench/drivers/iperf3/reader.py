"""Reading iperf3's `-J` output as checked JSON: duplicate keys and non-standard constants refused, every value
fetched by path with its type and range checked, Iperf3Error naming the field otherwise (see parser.py)."""
from __future__ import annotations

import json
import math
from typing import Any

from edgebench.errors import EdgebenchError


class Iperf3Error(EdgebenchError):
    """iperf3 ran but reported an error (its JSON "error" field), or its output is not iperf3 JSON."""


MISSING = object()


class _Obj(dict):
    """A JSON object that remembers which of its keys occurred more than once (cJSON writes duplicates)."""

    __slots__ = ("dups",)


def _pairs(pairs: list[tuple[str, Any]]) -> _Obj:
    obj, dups = _Obj(), set()
    for key, value in pairs:
        if key in obj:
            dups.add(key)
        obj[key] = value
    obj.dups = frozenset(dups)
    return obj


def _reject_constant(name: str) -> None:
    raise Iperf3Error(f"iperf3 output has the non-JSON constant {name} (cJSON never writes it)")


def load(text: Any) -> Any:
    if not isinstance(text, str):
        raise Iperf3Error(f"iperf3 output must be text, got {type(text).__name__}")
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise Iperf3Error(f"iperf3 output is not JSON ({exc.msg}): {text[:200]!r}") from None
    except (ValueError, RecursionError) as exc:  # int too long to convert, nesting too deep
        raise Iperf3Error(f"iperf3 output is not readable JSON: {str(exc)[:200]}") from None


def type_name(value: Any) -> str:
    return {dict: "object", _Obj: "object", list: "array", str: "string", bool: "boolean",
            type(None): "null", int: "number", float: "number"}.get(type(value), type(value).__name__)


def show(value: Any) -> str:
    """A value for an error message: short, and never the repr of a (possibly deeply nested) container."""
    if isinstance(value, (dict, list)) or value is MISSING:
        return "missing" if value is MISSING else type_name(value)
    return f"{type_name(value)} {repr(value)[:40]}"


def message(error: Any) -> str:
    return error[:300] if isinstance(error, str) else f"(an error field of type {type_name(error)})"


def get(obj: dict, key: str, path: str) -> Any:
    if key in getattr(obj, "dups", ()):
        raise Iperf3Error(f"{path}.{key} occurs more than once in the JSON, so which one is meant is unknown")
    return obj.get(key, MISSING)


def obj(parent: dict, key: str, path: str, required: bool = True) -> dict | None:
    value = get(parent, key, path)
    if value is MISSING or (value is None and not required):
        if required:
            raise Iperf3Error(f"{path}.{key} is missing")
        return None
    if not isinstance(value, dict):
        raise Iperf3Error(f"{path}.{key} must be a JSON object, got {type_name(value)}")
    return value


def num(parent: dict, key: str, path: str, lo: float, hi: float, integer: bool = False,
         required: bool = True) -> float | int | None:
    value = get(parent, key, path)
    if value is MISSING:
        if required:
            raise Iperf3Error(f"{path}.{key} is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Iperf3Error(f"{path}.{key} must be a number, got {show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise Iperf3Error(f"{path}.{key} is {value}, not a finite number")
    if not lo <= value <= hi:  # before any conversion: a huge int does not fit a float
        raise Iperf3Error(f"{path}.{key} = {show(value)} is outside the sane range [{lo}, {hi}]")
    if not integer:
        return float(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise Iperf3Error(f"{path}.{key} must be a whole number, got {value}")
        value = int(value)
    return value


def flag(parent: dict, key: str, path: str) -> bool | None:
    """iperf3 writes flags as 0/1 (test_start) or true/false (sender); absent -> None."""
    value = get(parent, key, path)
    if value is MISSING:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise Iperf3Error(f"{path}.{key} must be 0/1 or true/false, got {show(value)}")


def array(parent: dict, key: str, path: str) -> list:
    value = get(parent, key, path)
    if value is MISSING:
        return []
    if not isinstance(value, list):
        raise Iperf3Error(f"{path}.{key} must be a JSON array, got {type_name(value)}")
    return value
