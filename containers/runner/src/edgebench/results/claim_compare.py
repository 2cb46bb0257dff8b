"""One comparison of a published claim (results/papers.py): two means with their 95% half-widths judged by the
project's one verdict rule (results/verdict.py)."""
from __future__ import annotations

import math

from edgebench.results import verdict


def compare(left: float, left_ci: float | None, right: float, right_ci: float | None, comparator: str,
            tolerance_pct: float | None = None, n_left: int | None = None, n_right: int | None = None,
            family: str = "throughput") -> str:
    """One comparison of two means with their 95% half-widths, judged by the project's one rule
    (results.verdict.decide) on left - right against right: 'agrees', 'disagrees' or 'cannot tell'.

    The interval of the difference: Welch's, from each side's run count and the standard deviation behind its
    half-width, when both counts are known; else the two half-widths combined (root sum of squares). The margin:
    tolerance_pct for `~`, the family's margin for `<` / `>`. `>` agrees when left is better (higher) beyond the
    margin, disagrees when it is lower or the two are equivalent (the claimed difference is not there at a
    practical size); `~` agrees when equivalent, disagrees when better or worse; inconclusive cannot tell."""
    if comparator not in (">", "<", "~"):
        raise ValueError(f"comparator {comparator!r} is not <, > or ~")
    if left is None or right is None or (isinstance(left, float) and math.isnan(left)):
        return "cannot tell"
    if left_ci is None or right_ci is None:
        return "cannot tell"
    if n_left and n_right and n_left >= 2 and n_right >= 2:
        ci = verdict.welch_ci95(n_left, _sd(left_ci, n_left), n_right, _sd(right_ci, n_right))
        na, nb = n_left, n_right
    else:
        ci, na, nb = math.sqrt(left_ci ** 2 + right_ci ** 2), 2, 2
    pct = (tolerance_pct or 0.0) if comparator == "~" else verdict.margin_pct(family)
    v = verdict.decide(left - right, ci, na, nb, right, True, pct)
    if comparator == "~":
        return {"equivalent": "agrees", "better": "disagrees", "worse": "disagrees"}.get(v, "cannot tell")
    wanted = "better" if comparator == ">" else "worse"
    if v == wanted:
        return "agrees"
    return "disagrees" if v in verdict.DECISIVE else "cannot tell"


def _sd(ci95: float, n: int) -> float:
    """The standard deviation behind a Student-t 95% half-width over n runs (the marts' *_ci95_* columns)."""
    return ci95 * math.sqrt(n) / verdict.t95(n - 1)


def metric_family(metric: str) -> str:
    """A mart metric's verdict family by its name: *_mbps / samples -> throughput, *_us / *_ms -> latency, cpu_* ->
    cpu, rss_* / *_mb -> memory."""
    if metric.startswith("cpu") or "_cpu" in metric:
        return "cpu"
    if metric.startswith("rss") or metric.endswith("_mb"):
        return "memory"
    if metric.endswith(("_us", "_ms")):
        return "latency"
    return "throughput"
