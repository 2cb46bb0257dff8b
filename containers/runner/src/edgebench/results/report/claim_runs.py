"""Which planned runs a published claim compares: its sides under its filters, as conditions on a preset's runs.

A claim (analytics/seeds/published_claims.csv) is judged on mart rows (results/report/papers.evaluate_claim): the
rows its filters keep, the left subject's against the right's, within groups of rows that agree on every column the
claim does not name. Its runs are the same rows before the warehouse pools them, so the same conditions pick them
from a preset's plan (plan/selection.py names the fields as the marts do):

  conditions()  the claim's sides under its filters as `select` conditions (`edgebench papers run` measures only
                those); with host=True also each side's host-network counterpart, for the presets whose variants
                stop on their comparison with the host (and the claims on a metric relative to it)
  measures()    whether a preset's runs hold both sides of the claim in one group, so that it can be judged

A claim column no run holds (the resources mart's `component`) constrains nothing here: every run may feed it.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from edgebench.plan import selection, spec
from edgebench.plan.cells import expand_checked, runs_for
from edgebench.results.records.store import repo_root
from edgebench.results.report.claim_compare import parse_subject, threshold
from edgebench.results.report.papers import FREED_TOGETHER, GRAINS, freed_by

Side = dict[str, list[str]]
# the columns that name the network: a host counterpart drops them and names the host network instead
NETWORK = next(g for g in FREED_TOGETHER if "cni" in g)


def sides(claim: dict[str, Any]) -> tuple[Side, Side | None, Side] | None:
    """(left, right, filters) as {column: [values]}, right None when it is a threshold; None when the claim's
    subjects or filters cannot be read."""
    try:
        left = parse_subject(str(claim.get("left_subject") or ""))
        right_text = str(claim.get("right_subject") or "")
        right = None if threshold(right_text) is not None else parse_subject(right_text)
        raw = claim.get("filters")
        filters = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
    except (ValueError, TypeError):
        return None
    if not left or right == {} or not isinstance(filters, dict):
        return None
    listed = {k: [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in filters.items()}
    return ({k: sorted(v) for k, v in left.items()}, None if right is None else {k: sorted(v) for k, v in right.items()},
            listed)


def _known(side: Side) -> Side:
    """The columns a run holds (plan/selection.FIELDS); the others constrain nothing."""
    return {k: v for k, v in side.items() if k in selection.FIELDS}


def _merge(a: Side, b: Side) -> Side | None:
    """Both constraints at once; None when a column's values do not overlap (nothing matches)."""
    out = dict(a)
    for k, v in b.items():
        if k in out:
            both = [x for x in out[k] if selection.text(x) in {selection.text(y) for y in v}]
            if not both:
                return None
            out[k] = both
        else:
            out[k] = v
    return out


def conditions(claim: dict[str, Any], host: bool = False) -> list[dict[str, Any]] | None:
    """The claim's sides under its filters as `select` conditions (each side one condition; with host, each side's
    host-network counterpart too); None when they cannot be read or one would select every run."""
    parsed = sides(claim)
    if parsed is None:
        return None
    left, right, filters = parsed
    out: list[dict[str, Any]] = []
    for side in [left] + ([right] if right is not None else []):
        cond = _merge(_known(filters), _known(side))
        if cond is None:
            continue
        conds = [cond]
        if host:
            conds.append({**{k: v for k, v in cond.items() if k not in NETWORK}, "cni": ["host"]})
        for c in conds:
            if not c:
                return None
            c = {k: (v[0] if len(v) == 1 else v) for k, v in
                 ((k, sorted({selection.text(x) for x in v})) for k, v in sorted(c.items()))}
            if c not in out:
                out.append(c)
    return out


def measures(claim: dict[str, Any], runs: list[Any]) -> bool:
    """Do the runs (one round of a preset's plan) hold both sides of the claim in one group, as evaluate_claim
    groups the mart rows (every column of the claim's mart the claim does not name alike; all of a run's fields
    where the mart is not known)? A threshold claim needs its left side."""
    parsed = sides(claim)
    if parsed is None:
        return False
    grain = GRAINS.get(str(claim.get("mart") or ""))
    left, right, filters = parsed
    named = set(left) | set(right or {})
    freed = freed_by(named) | {"substrate"}
    for alias, key in selection.ALIASES.items():
        if alias in freed or key in freed:
            freed |= {alias, key}
    left, filters = _known(left), _known(filters)
    right = None if right is None else _known(right)
    groups: dict[str, list[bool]] = {}
    for run in runs:
        f = selection.run_fields(run)
        if not selection.matches(f, filters):
            continue
        is_left = selection.matches(f, left)
        is_right = not is_left and right is not None and selection.matches(f, right)
        if is_left or is_right:
            key = json.dumps({k: selection.text(v) for k, v in f.items()
                              if k not in freed and (grain is None or k in grain)}, sort_keys=True)
            seen = groups.setdefault(key, [False, False])
            seen[0 if is_left else 1] = True
    return any(lft and (rgt or right is None) for lft, rgt in groups.values())


@lru_cache(maxsize=None)
def _grid(path: str, substrate: str | None, params: tuple[tuple[str, str], ...]) -> tuple[Any, ...]:
    s = spec.load(Path(path), {"repetitions": "1", **dict(params)}, substrate=substrate)
    cells, _ = expand_checked(s)
    return tuple(r for c in cells for r in runs_for(s, c))


def grid(preset: str, root: Path | None = None, substrate: str | None = "local",
         params: dict[str, str] | None = None) -> list[Any]:
    """One round of a preset's runs as it plans them on the substrate (the testbed by default; None: the preset's
    own), with `params` as `-p` overrides; cells it skips left out."""
    return list(_grid(str((root or repo_root()) / preset), substrate, tuple(sorted((params or {}).items()))))
