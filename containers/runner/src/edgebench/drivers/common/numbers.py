"""What the DDS tools' parsers (ddsperf, Perftest) share: their output's complete lines, and the check every number
they print goes through before it reaches a manifest: a printed token or a JSON number becomes a float only if it is
a number, finite, not negative, whole where it counts something, and within the field's plausible range."""
from __future__ import annotations

import math
import re

# What a C printf prints for a double, nan and inf included (so that they are reported as such, not as "not a number")
NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|[-+]?(nan|inf|infinity)", re.I)


def complete_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, line without its \\r) of each line of text, without a final line that lacks its newline:
    the tools end every line with one, so that line was cut off."""
    lines = text.split("\n")
    lines.pop()  # "" after a final newline, or the unterminated (cut off) last line
    return [(i, ln.rstrip("\r")) for i, ln in enumerate(lines, 1)]


def checked_number(tok: str | int | float, *, what: str, where: str, bounds: tuple[float, float],
                   error: type[Exception], whole: bool = False, scale: float = 1.0,
                   nan_is_none: bool = False) -> float | None:
    """tok (a printed token, or an int / float from JSON; callers reject other types in their own words) as a float,
    multiplied by scale and checked to lie within bounds. Raises error naming `where` and `what` otherwise. NaN is an
    error, or None with nan_is_none (a field the tool prints as NaN when it has no value)."""
    if isinstance(tok, str):
        if not NUMBER.fullmatch(tok):
            raise error(f"{where}: {what} is {tok[:40]!r}, not a number")
        x = float(tok)
    else:
        try:
            x = float(tok)
        except OverflowError:
            raise error(f"{where}: {what} is too large") from None
    if math.isnan(x):
        if nan_is_none:
            return None
        raise error(f"{where}: {what} is NaN")
    if math.isinf(x):
        raise error(f"{where}: {what} is infinite")
    if x < 0:
        raise error(f"{where}: {what} is negative ({x:g})")
    if whole and x != int(x):
        raise error(f"{where}: {what} is {x:g}, not a whole number")
    x *= scale
    lo, hi = bounds
    if not lo <= x <= hi:
        raise error(f"{where}: {what} {x:g} is outside {lo:g}..{hi:g}")
    return x
