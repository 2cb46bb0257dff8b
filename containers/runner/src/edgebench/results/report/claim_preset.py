"""Which preset measures a published claim, or that none does and why: the one answer the scorecard's hints
(`edgebench report --paper all`, the portal's Papers page) and `edgebench papers run` all take.

home(claim, paper, root, substrate) -> Home, among the testbed presets (`*.testbed.yaml`) on substrate local, or when
the substrate is not known yet and the testbed can measure the claim (papers.substrate_limit); among the cluster
presets otherwise:

  1. a preset whose grid holds both sides of the claim under its filters (claim_runs.measures): the paper's preset
     whose name's last word (multicast, security, kubeadm, ...) is a value of the claim's subjects, else a word of
     its statement, first; then the paper's other presets of the kind; then every other paper's (seed 002's testbed
     grid has the runc container seed 000's Fig. 4 compares);
  2. else the paper's presets together, where the claim's sides are in different grids (seed 004's distributions
     are a cluster preset each);
  3. else that first preset of the paper with `-p tuning=[...]` / `-p netem=[...]`: its own profiles or link
     conditions and the ones the claim names, where the grid so widened holds both sides (Home.params; on the
     testbed with what it cannot carry of the added tuned profiles, Home.note);
  4. else none (Home.why).

A claim whose subjects cannot be read goes to that first preset: its grid cannot be checked.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from edgebench.plan import spec, tuning
from edgebench.results.records.store import repo_root
from edgebench.results.report import claim_runs, papers
from edgebench.results.report.claim_compare import named_values, norm, parse_subject, substrate_limit, threshold

TESTBED, CLUSTER = "testbed", "cluster"
# cell dimensions a claim may name that a preset's grid may lack: mart column -> the sweep parameter that lists them
GRID_PARAMS = {"tuning_profile": "tuning", "netem_scenario": "netem"}


@dataclass(frozen=True)
class Home:
    """Where a claim is measured on one kind of substrate (testbed or cluster)."""

    kind: str
    presets: tuple[str, ...] = ()  # more than one: the claim's sides are in different presets' grids
    params: dict[str, str] = field(default_factory=dict)  # -p that adds the claim's conditions to the grid
    why: str | None = None  # no preset: why not
    note: str | None = None  # what the substrate cannot carry of what params add

    @property
    def preset(self) -> str | None:
        return self.presets[0] if self.presets else None

    @property
    def holds(self) -> bool:
        """One preset's grid, as it is, holds both sides of the claim (`edgebench papers run` can run it)."""
        return len(self.presets) == 1 and not self.params

    def command(self) -> str:
        """'`edgebench sweep P --local -p ...`' ('`argo submit P -p ...`' on a cluster), or why nothing measures it."""
        if not self.presets:
            return f"not measurable on the {self.kind} as its presets stand: {self.why}"
        extra = "".join(f" -p '{k}={v}'" for k, v in self.params.items())
        run = [f"`edgebench sweep {p} --local{extra}`" if self.kind == TESTBED else f"`argo submit {p}{extra}`"
               for p in self.presets]
        return " and ".join(run) + (f" ({self.note})" if self.note else "")


def kind_for(claim: dict, substrate: str | None) -> str:
    """testbed on substrate local, or when it is not known and the testbed can measure the claim; cluster else."""
    if substrate == "local" or substrate is None and substrate_limit(claim, "local") is None:
        return TESTBED
    return CLUSTER


def _of_kind(names: list[str], kind: str) -> list[str]:
    return [n for n in names if n.endswith(".testbed.yaml") == (kind == TESTBED)]


def _named(claim: dict, options: list[str]) -> str | None:
    """The preset whose name's last word is a value of the claim's subjects, else a word of its statement, else
    the first."""
    if not options:
        return None
    values = [v for k in ("left_subject", "right_subject") if threshold(str(claim.get(k) or "")) is None
              for vs in parse_subject(str(claim.get(k) or "")).values() for v in vs]

    def named(text: str) -> list[str]:
        words = set(re.findall(r"[a-z0-9]+", text.lower()))
        return [p for p in options if Path(p).name.split(".")[0].rsplit("-", 1)[-1] in words]
    # the subjects' values name the condition more surely than the statement's words ("every unicast CNI")
    return (named(" ".join(values)) or named(str(claim.get("claim") or "")) or options)[0]


def _grid(preset: str, kind: str, root: Path | None, params: dict[str, str] | None = None) -> list:
    try:
        return claim_runs.grid(preset, root, "local" if kind == TESTBED else None, params)
    except Exception:  # a preset that does not load says so when it is run; here it holds nothing
        return []


def _widened(claim: dict, preset: str, root: Path | None) -> dict[str, str]:
    """{param: JSON list}: the preset's own values and the claim's, for each cell dimension whose values the claim
    names and the preset's grid lacks ({} when it lacks none)."""
    try:
        raw = spec.load((root or repo_root()) / preset).raw
    except Exception:
        return {}
    out = {}
    for column, param in GRID_PARAMS.items():
        have = json.loads(raw.get(param) or "[]") if str(raw.get(param) or "").startswith("[") else []
        want = sorted(named_values(claim, column) - set(have))
        if want:
            out[param] = json.dumps(have + want, separators=(",", ":"))
    return out


def _not_carried(added: list[str]) -> dict[str, tuple[int, int]]:
    """{profile: (settings the testbed cannot carry, all its settings)} for tuned profiles: a network namespace takes
    only net.* sysctls and offloads (substrates/local/tuning.py); host settings and vm.*/kernel.* sysctls are
    recorded unsupported, never applied (a net.* one may be too: global on some kernels)."""
    out = {}
    for name in added:
        p = tuning.profile(name)
        lost = len(p["host"]) + sum(not k.startswith("net.") for k in p["sysctl"])
        if lost:
            out[name] = (lost, len(tuning.requested(name)))
    return out


def home(claim: dict, paper: str, root: Path | None = None, substrate: str | None = "local",
         skip: dict[str, str] | None = None) -> Home:
    """The preset(s) that measure the claim on the substrate, with the -p that adds its conditions where a grid
    lacks them, or why none does (the module's doc: the order the presets are tried in). `skip`: presets this
    substrate cannot run, each with the reason (a lab's mirror without their distribution); never chosen, and
    named in `why` where the claim is left without a preset."""
    kind = kind_for(claim, substrate)
    base = root or repo_root()
    skip = skip or {}
    own = [p for p in papers.presets(paper, root)[kind] if p not in skip]
    every = [p for p in _of_kind(sorted(str(papers.PRESETS / f.name) for f in (base / papers.PRESETS).glob("*.yaml")),
                                 kind) if p not in skip]
    first = _named(claim, own) or (every[0] if every else None)
    mine = [Path(p).name for p in skip if Path(p).name.startswith(f"seed-{paper}")]
    left_out = f"; left out, this substrate cannot run them: {', '.join(mine)}" if mine else ""
    if first is None:
        return Home(kind, why=f"there is no {kind} preset in {papers.PRESETS}/ this substrate can run{left_out}")
    parsed = claim_runs.sides(claim)
    if parsed is None:
        return Home(kind, (first,))
    for preset in dict.fromkeys([first, *own, *every]):
        if claim_runs.measures(claim, _grid(preset, kind, root)):
            return Home(kind, (preset,))
    # the sides in different grids of the paper: every one of its presets that holds runs of a side
    left, right, filters = parsed
    sides = [s for s in (left, right) if s is not None]
    part = [p for p in own
            if any(claim_runs.measures({**claim, **_only(s, filters)}, _grid(p, kind, root)) for s in sides)]
    if len(part) > 1 and claim_runs.measures(claim, [r for p in part for r in _grid(p, kind, root)]):
        return Home(kind, tuple(part))
    params = _widened(claim, first, root)
    widened = " ".join(f"-p '{k}={v}'" for k, v in params.items())
    where = ", where " + ", ".join(f"{k}={'|'.join(norm(x) for x in (v if isinstance(v, list) else [v]))}"
                                   for k, v in _filters(claim).items()) if filters else ""
    why = (f"no {kind} preset's grid holds both sides ({claim.get('left_subject')} against "
           f"{claim.get('right_subject')}{where})")
    if params and claim_runs.measures(claim, _grid(first, kind, root, params)):
        lost = {}
        if kind == TESTBED and "tuning" in params:
            have = json.loads(spec.load(base / first).raw.get("tuning") or "[]")
            lost = _not_carried([p for p in json.loads(params["tuning"]) if p not in have])
        empty = [name for name, (n_lost, n) in lost.items() if n_lost == n]
        kinds = "host settings, vm.* and kernel.* sysctls"
        if not empty:
            note = None if not lost else "on the testbed " + ", ".join(
                f"{name} runs without {n_lost} of its {n} settings" for name, (n_lost, n) in lost.items()
            ) + f": {kinds}, which a network namespace cannot carry"
            return Home(kind, (first,), params, note=note)
        one = len(empty) == 1
        return Home(kind, why=(
            f"{why}; {widened} would add {', '.join(empty)} to {first}'s grid, but a network namespace carries none "
            f"of {'its' if one else 'their'} settings ({kinds}): on the testbed {'it' if one else 'they'} would run "
            "as default_settings"))
    if params:
        why += f", not even {first} with {widened}"
    return Home(kind, why=why + left_out)


def _filters(claim: dict) -> dict:
    raw = claim.get("filters")
    return json.loads(raw) if isinstance(raw, str) and raw.strip() else dict(raw or {})


def _only(side: dict[str, list[str]], filters: dict[str, list[str]]) -> dict:
    """A one-sided claim (left side only, a threshold on the right) for one side under the claim's filters."""
    return {"left_subject": ";".join(f"{k}={'|'.join(v)}" for k, v in side.items()), "right_subject": "0",
            "filters": json.dumps(filters)}
