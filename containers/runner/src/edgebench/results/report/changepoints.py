"""Change points over a CNI mode's whole version history (`edgebench report --history`), beyond the regression card's
newest-against-previous: per configuration x metric, where in the sequence of measured versions did the metric
move, and by how much?

Binary segmentation in the manner of e-divisive / Hunter (as cloud-bulldozer's Orion uses): among the splits of
the version sequence, take the one whose two sides differ most (the largest |diff| / half-width); it is a change
point when the one verdict rule (results/report/verdict.py) calls the runs after it better or worse than the runs before
it (Welch, the metric family's margin); then look for more on each side. Two guards against false positives at the
start of the window, which Orion had to add:
  - a minimum segment length (MIN_SEGMENT versions on each side) for a change point inside the history;
  - a change point with fewer versions before it than that (at the start of the history, where no longer look-back
    exists) must give the same verdict against the next MIN_SEGMENT versions alone as against all later ones, and
    is reported as `early`.
Pure functions; the CLI reads int_cni_versions__run_metrics.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from edgebench.results.report.marts.reports import SERIES_CONFIG, version_history
from edgebench.results.report.verdict import Comparison, compare, family_of_unit, margin_pct

MIN_SEGMENT = 2

Fetch = Callable[[str, list], list[dict]]


@dataclass(frozen=True)
class ChangePoint:
    index: int               # the first version after the change
    before: str              # the last version before it
    after: str               # the first version after it
    comparison: Comparison   # the runs after against the runs before, in its segment
    early: bool              # fewer than MIN_SEGMENT versions before it (re-checked with the whole look-back)


def _pool(history: Sequence[tuple[str, Sequence[float]]], lo: int, hi: int) -> list[float]:
    return [v for _, values in history[lo:hi] for v in values]


def detect(history: Sequence[tuple[str, Sequence[float]]], *, higher_is_better: bool, pct: float,
           min_segment: int = MIN_SEGMENT) -> list[ChangePoint]:
    """history: (version, per-run values) oldest first. The change points, in version order."""
    found: list[ChangePoint] = []

    def segment(lo: int, hi: int) -> None:
        best = None
        for k in range(lo + 1, hi):
            early = k - lo < min_segment and lo == 0
            if not early and (k - lo < min_segment or hi - k < min_segment):
                continue
            if early and hi - k < 1:
                continue
            c = compare(_pool(history, k, hi), _pool(history, lo, k), higher_is_better=higher_is_better, pct=pct)
            if c.diff is None or c.ci95 is None:
                continue
            score = abs(c.diff) / c.ci95 if c.ci95 > 0 else float("inf")
            if best is None or score > best[0]:
                best = (score, k, c, early)
        if best is None:
            return
        _, k, c, early = best
        if c.verdict not in ("better", "worse"):
            return
        if early:  # too little history before it: it must hold against the next versions alone, too
            near = compare(_pool(history, k, min(k + min_segment, hi)), _pool(history, 0, k),
                           higher_is_better=higher_is_better, pct=pct)
            if near.verdict != c.verdict:
                return
        found.append(ChangePoint(k, history[k - 1][0], history[k][0], c, early))
        segment(lo, k)
        segment(k, hi)

    segment(0, len(history))
    return sorted(found, key=lambda p: p.index)


def history_report(fetch: Fetch, cni: str | None = None) -> list[dict]:
    """One entry per configuration x metric measured at 3 or more versions: its versions, n per version and the
    change points (with the one rule's verdict, size and interval)."""
    series: dict[tuple, list[dict]] = {}
    for r in version_history(fetch, cni):
        series.setdefault(tuple(r[k] for k in SERIES_CONFIG), []).append(r)
    out = []
    for key, versions in series.items():
        if len(versions) < 3:
            continue  # two versions are the regression card's newest-against-previous
        history = [(v["version"], [x for x in v["vals"] if x is not None]) for v in versions]
        points = detect(history, higher_is_better=bool(versions[0]["is_higher_better"]),
                        pct=margin_pct(family_of_unit(versions[0]["unit"])))
        out.append({**dict(zip(SERIES_CONFIG, key)),
                    "unit": versions[0]["unit"], "versions": [h[0] for h in history],
                    "n_runs": [len(h[1]) for h in history], "change_points": points})
    return out
