"""`edgebench watch`: reruns on new CNI versions without a cluster (what the Argo Events probe + sensor do there).

One round: read the release sources of the CNIs the sweep runs (versions.check), compare upstream's newest release
with what edgebench already has (catalog pin, warehouse, versions already triggered here), and for every CNI with
a newer version run the sweep again for ONLY that CNI's modes, as a rerun sweep whose `trigger` parameter names the
change. The rerun's sweep id is derived from the CNI and its new version, so a round that is interrupted and
repeated resumes the same sweep (runs already stored are skipped) and nothing is measured twice.

What was triggered is remembered in a state file (<state>/cni-versions.json): a trigger is written there as
`pending` before its rerun starts (so a resumed rerun keeps its trigger, `at` included) and as the CNI's recorded
version once the rerun finished. Every rerun is validated before the first one starts: bad input starts none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from edgebench.plan import versions
from edgebench.sweep.release_sources import http_fetch
from edgebench.errors import SpecError
from edgebench.plan import spec
from edgebench.plan.spec import Sweep
from edgebench.results.records.store import state_dir
from edgebench.results.report.marts import summaries

STATE_FILE = "cni-versions.json"
Log = Callable[[str], None]


@dataclass(frozen=True)
class Rerun:
    cni: str
    trigger: dict[str, Any]
    sweep: Sweep

    @property
    def modes(self) -> list[str]:
        return [cm.key for cm in self.sweep.values["cnis"]]


@dataclass
class State:
    """Versions already triggered here: {"cnis": {cni: {version, sweep_id, trigger, finished_at}},
    "pending": {cni: trigger}}."""

    path: Path
    cnis: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> "State":
        if not path.exists():
            return cls(path)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SpecError(f"watch state {path} cannot be read ({exc}); fix or remove it") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("cnis", {}), dict) \
                or not isinstance(doc.get("pending", {}), dict):
            raise SpecError(f"watch state {path} is not a watch state file (cnis, pending); fix or remove it")
        return cls(path, dict(doc.get("cnis", {})), dict(doc.get("pending", {})))

    def known(self) -> dict[str, str]:
        out = {cni: rec["version"] for cni, rec in self.cnis.items() if isinstance(rec, dict) and rec.get("version")}
        for cni, v in out.items():
            versions.parse_version(v, f"recorded version of {cni} ({self.path})")
        return out

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".part")
        tmp.write_text(json.dumps({"cnis": self.cnis, "pending": self.pending}, indent=2, sort_keys=True))
        tmp.replace(self.path)


def state_path() -> Path:
    return state_dir() / STATE_FILE


def rerun_sweep(base: Sweep, trigger: dict[str, Any], paired: bool = False) -> Sweep | None:
    """The base sweep for only the modes of the trigger's CNI (None if it runs none), named by the trigger. paired:
    each mode at the previous and the new version in the same sweep (cni-versions), interleaved by round, so that
    the regression card compares runs under the same drift of the machine (without a previous version: the new
    one alone)."""
    modes = [cm.key for cm in base.values["cnis"] if cm.cni == trigger["cni"]]
    if not modes:
        return None
    raw = {**base.raw, "cnis": json.dumps(modes), "trigger": json.dumps(trigger, sort_keys=True), "sweep-id": ""}
    if paired and trigger.get("previous") and trigger["previous"] != trigger["new"]:
        raw["cni-versions"] = json.dumps([trigger["previous"], trigger["new"]])
    return spec.from_parameters(raw, source=f"{base.source} (rerun of {trigger['cni']} at {trigger['new']})")


def plan(base: Sweep, sts: list[versions.CniStatus], state: State, at: str | None = None, paired: bool = False
         ) -> tuple[list[Rerun], list[str]]:
    """Pure: the reruns for the CNIs with a newer version (a pending trigger for the same version is reused), and
    notes on newer versions that need no rerun."""
    reruns, notes = [], []
    for st in sts:
        if not st.newer:
            continue
        pending = state.pending.get(st.cni)
        trigger = pending if pending and pending.get("new") == st.latest else st.trigger(at)
        sweep = rerun_sweep(base, trigger, paired)
        if sweep is None:
            notes.append(f"{st.cni} {st.latest} is newer than {st.baseline}, but the sweep runs no {st.cni} mode")
            continue
        reruns.append(Rerun(st.cni, trigger, sweep))
    return reruns, notes


@dataclass
class Round:
    statuses: list[versions.CniStatus]
    reruns: list[Rerun]
    notes: list[str]
    reports: dict[str, Any] = field(default_factory=dict)  # cni -> the runner's report


def watch_once(base: Sweep, run: Callable[[Sweep], Any] | None, *, fetch: versions.Fetch = http_fetch,
               srcs: dict[str, versions.Source] | None = None, state_file: Path | None = None,
               warehouse_path: str | None = None, log: Log = print, paired: bool = False) -> Round:
    """One round. `run` runs one rerun sweep (the local runner); None = plan only (dry run, nothing written).
    Sources, the state file and every rerun are checked before anything runs; an error raises, changing nothing."""
    state = State.load(state_file or state_path())
    measured = summaries.measured_versions(warehouse_path)
    if measured is None:
        log("no warehouse yet: comparing with the catalog pins and the versions already triggered here")
    sts = versions.check(base.values["cnis"], srcs if srcs is not None else versions.sources(), fetch,
                         measured=measured, known=state.known())
    reruns, notes = plan(base, sts, state, paired=paired)
    rnd = Round(sts, reruns, notes)
    for st in sts:
        log(f"{st.cni}: newest release {st.latest}, edgebench has {st.baseline or 'none'}"
            + (" -> newer" if st.newer else ""))
    for note in notes:
        log(note)
    if run is None:
        return rnd
    for r in reruns:
        t = r.trigger
        log(f"rerun {r.sweep.sweep_id}: {', '.join(r.modes)} at {t['new']} (previous {t['previous'] or 'none'}, "
            f"from {t['source']})")
        state.pending[r.cni] = t
        state.save()
        rnd.reports[r.cni] = run(r.sweep)
        state.cnis[r.cni] = {"version": t["new"], "sweep_id": r.sweep.sweep_id, "trigger": t,
                             "finished_at": versions.now()}
        state.pending.pop(r.cni, None)
        state.save()
    return rnd
