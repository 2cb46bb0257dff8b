"""What every benchmark part returns: rows of one table, each a figure measured side by side in the same run.

A part is a module in bench/ with `run(quick: bool) -> list[Row]` (quick: the smallest sizes that still exercise the
path, for development and `make bench QUICK=1`). Rows are reported, never asserted: a row that misses its target says
so, and `make bench` still exits 0.
"""
from __future__ import annotations

import contextlib
import math
import os
import statistics
from dataclasses import asdict, dataclass, field


# Student t, two-sided 95% (0.975 quantile) for df = 1..30, as analytics/macros/t_critical_95.sql has them
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
       2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t95(df: int) -> float:
    return T95[df - 1] if df <= len(T95) else 2.042 if df <= 40 else 2.021 if df <= 60 else 2.0 if df <= 120 else 1.98


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
    verdict: str = ""    # in place of meets / MISSES when ok is None for a reason: "inconclusive" (see band_verdict)

    def as_dict(self) -> dict:
        return asdict(self)


@contextlib.contextmanager
def scoped_env(values: dict[str, str]):
    """Set environment variables for the block and put the old values (or their absence) back after it."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def paired_ratio(a: list[float], b: list[float]) -> tuple[float, float, float, float]:
    """a / b from pairs measured back to back (a[i] beside b[i]): the geometric mean of the paired ratios and its 95%
    confidence interval (Student t on the log ratios, so the machine's drift between pairs cancels), plus the
    standard deviation of the log ratios. Returns (ratio, ci_low, ci_high, sd_log)."""
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    mean = statistics.mean(logs)
    sd = statistics.stdev(logs) if len(logs) > 1 else math.inf
    half = t95(len(logs) - 1) * sd / math.sqrt(len(logs)) if len(logs) > 1 else math.inf
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half), sd


def band_verdict(rule_verdict: str) -> tuple[bool | None, str]:
    """A bench row's outcome from the one rule's verdict (results/report/verdict.py) of the measured side against its
    reference with the target band as the margin: meets (equivalent: the CI lies inside the band), MISSES (better /
    worse: the CI excludes no difference and reaches beyond the band), else inconclusive (at this n the noise of the
    machine cannot tell). Returns (ok, verdict) with ok None and verdict "inconclusive" for the last."""
    if rule_verdict == "equivalent":
        return True, ""
    if rule_verdict in ("better", "worse"):
        return False, ""
    return None, "inconclusive"
