"""What every benchmark part returns: rows of one table, each a figure measured side by side in the same run.

A part is a module in bench/ with `run(quick: bool) -> list[Row]` (quick: the smallest sizes that still exercise the
path, for development and `make bench QUICK=1`). Rows are reported, never asserted: a row that misses its target says
so, and `make bench` still exits 0.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Row:
    part: str            # fidelity | overhead | warehouse | portal
    name: str            # what was compared, e.g. "iperf3 tcp host: sweep / by hand"
    value: float | None  # the figure: a ratio of two sides measured in this run (or None when it could not be measured)
    unit: str            # "ratio", "s", "%"
    target: str          # the target in words, e.g. "0.98-1.02", "<= 1.15", "< 60 s"
    ok: bool | None      # meets the target (None: no target or not measured)
    detail: str = ""     # the two sides' own figures, n, how it was measured
    extra: dict = field(default_factory=dict)  # machine-readable details for the JSON

    def as_dict(self) -> dict:
        return asdict(self)


def within(ratio: float | None, tolerance: float) -> bool | None:
    """ratio within 1 +- tolerance (None when not measured)."""
    return None if ratio is None else abs(ratio - 1) <= tolerance
