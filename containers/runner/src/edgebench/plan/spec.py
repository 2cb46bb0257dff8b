"""The sweep spec: an Argo Workflow whose spec.arguments.parameters carry the matrix.

The same file is submitted with `argo submit` and run here with `edgebench sweep FILE --local`. Everything is
validated before any side effect: bad input raises SpecError (one message, exit code 2).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from edgebench.errors import SpecError
from edgebench.plan import catalog, netem, selection, versions
from edgebench.plan.dimensions import CNIS, dimension_params, neutral_params, substrate_problems
from edgebench.plan.params import Param, choice, integer, json_default, json_list, short, sweep_time_budget
from edgebench.plan.workload_plans import PLANS, params as workload_params

SUBSTRATES = ("local", "kind", "ssh")
DISTRIBUTIONS = ("k3s", "k0s", "microk8s", "kubeadm", "kind")
_SWEEP_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def _workloads(name: str, value: str) -> list[tuple[str, str]]:
    known = PLANS
    out = []
    for item in json_list(name, value):
        tool, _, variant = item.partition(":")
        if tool not in known:
            raise SpecError(f"unknown workload {tool!r} in {item!r}; known workloads: {', '.join(known)}")
        variants = known[tool].variants
        for v in [variant] if variant else variants:
            if v not in variants:
                raise SpecError(f"unknown variant {v!r} of workload {tool!r}; choices: {', '.join(variants)}")
            if (tool, v) in out:
                raise SpecError(f"parameter {name!r} names {tool}:{v} twice")
            out.append((tool, v))
    return out


def _sweep_id(name: str, value: str) -> str:
    if value and not _SWEEP_ID.match(value):
        raise SpecError(
            f"parameter {name!r} must be lower-case letters, digits and '-', at most 63 characters; got {value!r}"
        )
    return value


TRIGGER_KEYS = ("cni", "new", "previous", "source", "at")
# the parameters a paper's run lengths may set (run-lengths=paper): how long and how often, never what is measured
LENGTH_PARAMS = ("duration", "dds-duration", "sockperf-duration", "http-requests", "repetitions", "min-repetitions",
                 "max-repetitions")


def _run_lengths(name: str, value: str) -> dict[str, str]:
    """paper-run-lengths: a JSON object {parameter: value} of LENGTH_PARAMS, values as strings or integers."""
    try:
        data = json.loads(value)
    except ValueError:
        raise SpecError(f"parameter {name!r} must be a JSON object of run lengths, e.g. "
                        f'{{"dds-duration": "120", "repetitions": "3"}}; got {value!r}') from None
    if not isinstance(data, dict):
        raise SpecError(f"parameter {name!r} must be a JSON object of run lengths; got {value!r}")
    bad = sorted(k for k in data if k not in LENGTH_PARAMS)
    if bad:
        raise SpecError(f"parameter {name!r} may set only run lengths ({', '.join(LENGTH_PARAMS)}); got "
                        f"{', '.join(map(repr, bad))}")
    if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in data.values()):
        raise SpecError(f"parameter {name!r}: every value must be a string or an integer; got {value!r}")
    return {k: str(v) for k, v in data.items()}


AIM_KEYS = ("left", "right", "filters", "metric", "tolerance_pct")


def _aim(name: str, value: str) -> list[dict[str, Any]]:
    """aim: a JSON list of {left, right, metric, filters?, tolerance_pct?} (sweep/aim.py); [] aims at nothing."""
    example = ('[{"left": {"cni": "flannel", "cni_mode": "host-gw"}, "right": {"cni": "flannel", "cni_mode": '
               '"vxlan"}, "metric": "throughput_mbps"}]')
    try:
        data = json.loads(value or "[]")
    except ValueError:
        raise SpecError(f"parameter {name!r} must be a JSON list of comparisons, e.g. {example}; got {value!r}") \
            from None
    if not isinstance(data, list):
        raise SpecError(f"parameter {name!r} must be a JSON list of comparisons, e.g. {example}; got {value!r}")
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not all(isinstance(item.get(k), dict) and item.get(k)
                                                 for k in ("left", "right")) or not item.get("metric"):
            raise SpecError(f"parameter {name!r}: comparison {i + 1} needs non-empty objects left and right and a "
                            f"metric, e.g. {example}; got {json.dumps(item)}")
        unknown = sorted(set(item) - set(AIM_KEYS))
        if unknown:
            raise SpecError(f"parameter {name!r}: comparison {i + 1} has unknown key(s) {', '.join(unknown)}; "
                            f"known: {', '.join(AIM_KEYS)}")
    return data


def _trigger(name: str, value: str) -> dict[str, Any]:
    """What triggered a rerun: {cni, new, previous, source, at} (cni and new required), or {} for a plain sweep."""
    try:
        data = json.loads(value or "{}")
    except ValueError as exc:
        raise SpecError(f"parameter {name!r} must be a JSON object {{cni, new, previous, source, at}}; got "
                        f"{short(value)} ({getattr(exc, 'msg', exc)})") from None
    if not isinstance(data, dict):
        raise SpecError(f"parameter {name!r} must be a JSON object {{cni, new, previous, source, at}}; got {short(value)}")
    if not data:
        return {}
    unknown = sorted(set(data) - set(TRIGGER_KEYS))
    if unknown:
        raise SpecError(f"parameter {name!r}: unknown key(s) {', '.join(map(repr, unknown))}; known: "
                        f"{', '.join(TRIGGER_KEYS)}")
    for key in ("cni", "new"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise SpecError(f"parameter {name!r} needs {key!r} (a string): the CNI whose version changed and its new "
                            "version")
    cni = data["cni"]
    if cni not in catalog.cnis():
        raise SpecError(f"parameter {name!r}: unknown CNI {short(cni)}; known CNIs: {', '.join(sorted(catalog.cnis()))}")
    if catalog.resolve_cni(cni).host_network:
        raise SpecError(f"parameter {name!r}: {cni} runs the host-network baseline (no CNI software): it has no version to rerun")
    versions.parse_version(data["new"], f"{name}.new")
    if data.get("previous") not in (None, ""):
        versions.parse_version(data["previous"], f"{name}.previous")
    for key in ("source", "at"):
        if data.get(key) is not None and (not isinstance(data[key], str) or len(data[key]) > 2048):
            raise SpecError(f"parameter {name!r}: {key!r} must be a string of at most 2048 characters")
    if data.get("at"):
        try:
            dt.datetime.fromisoformat(data["at"].replace("Z", "+00:00"))
        except ValueError:
            raise SpecError(f"parameter {name!r}: 'at' must be an ISO 8601 time (e.g. 2026-07-14T06:00:00Z); got "
                            f"{short(data['at'])}") from None
    return {key: data.get(key) or None for key in TRIGGER_KEYS}


def triggered(raw: dict[str, str]) -> bool:
    """Whether raw parameters carry a non-empty trigger (bad JSON counts as not: validation reports it)."""
    try:
        return bool(json.loads(raw.get("trigger") or "{}"))
    except ValueError:
        return False


def _target(name: str, value: str) -> str:
    if not _SWEEP_ID.match(value):
        raise SpecError(f"parameter {name!r} must be a DNS label (lower-case letters, digits, '-'); got {value!r}")
    return value


# the core parameters; each workload declares its own (workloads/<name>.py)
CORE_PARAMS: tuple[Param, ...] = (
    Param("substrate", lambda n, v: choice(n, v, SUBSTRATES), "local",
          "where cells run: local (network-namespace testbed), kind, ssh (edge lab inventory); "
          "`edgebench sweep --local` forces local"),
    Param("distribution", lambda n, v: choice(n, v, DISTRIBUTIONS), "k3s",
          "Kubernetes distribution of the target clusters: k3s, k0s, microk8s, kubeadm, kind (ignored on local)"),
    CNIS,
    Param("workloads", _workloads, json_default(["iperf3:tcp", "iperf3:udp", "dds:latency", "dds:throughput",
                                                 "http:payload-echo"]),
          "workload entries, name or name:variant (e.g. iperf3:tcp, dds:latency, http:payload-echo); "
          "`edgebench params` lists every workload and its variants"),
    Param("repetitions", lambda n, v: "auto" if v.strip().lower() == "auto" else integer(n, v, 1), "3",
          "repetitions of every run (each a separate measurement, in interleaved rounds), or auto: at least "
          "min-repetitions, then each variant of a CNI cell stops once its comparison with the host baseline is "
          "decided (equivalent, better or worse; docs/verdicts.md) or cannot be within max-repetitions, at most "
          "max-repetitions (local runner; Argo runs the maximum)"),
    Param("min-repetitions", lambda n, v: integer(n, v, 2), "3", "with repetitions=auto: rounds every cell runs"),
    Param("max-repetitions", lambda n, v: integer(n, v, 2), "10", "with repetitions=auto: rounds at most"),
    Param("aim", _aim, "[]",
          "with repetitions=auto: comparisons to decide instead of each cell's against the host, JSON list of "
          "{left, right, metric, filters?, tolerance_pct?} (left/right: {dimension or run parameter: value}); a "
          "variant stops once every aimed comparison it is a side of is decided or cannot be, one no comparison "
          "uses at min-repetitions (local runner; `edgebench papers run` sets it from the claims it measures)",
          neutral_at_default=True),
    Param("select", selection.parse, "[]",
          "only the runs of the grid that match one of these conditions, JSON list of {field: value or [values]} "
          "(fields as the marts name them: cni, cni_mode, is_host_baseline, tuning_profile, netem_scenario, "
          "intercluster_tool, workload, protocol, length_bytes, dds_mode, reliability, subscribers, service, ...); "
          "a cell with no run selected is skipped; run ids are the full grid's; [] = every run (`edgebench papers "
          "run` sets it to what the claims it measures compare)", neutral_at_default=True),
    Param("time-budget", sweep_time_budget, "none",
          "with repetitions=auto: the sweep's wall time at most (none, or seconds, 20m, 1h, or 3r: the time 3 full "
          "rounds of every variant take, measured on this sweep's first rounds: fixed 3's wall time on this "
          "machine); after the minimum rounds a further round starts only while, at the pace of the last round, it "
          "ends within the budget (local runner)"),
    Param("duration", lambda n, v: integer(n, v, 1), "3", "seconds per measurement"),
)
LATE_PARAMS: tuple[Param, ...] = (  # after the workloads' parameters, as the Argo files list them
    *dimension_params(),  # plan/dimensions.py
    Param("sweep-id", _sweep_id, "",
          "results namespace in MinIO; empty = derived: the workflow name on Argo, a hash of the parameters locally "
          "(a triggered rerun: <substrate>-<cni>-<new version>-<hash>, the same for every delivery of the trigger)"),
    Param("target", _target, "lab",
          "target cluster / node inventory (key in the edgebench-semaphores ConfigMap: one cell at a time per target)"),
    Param("run-lengths", lambda n, v: choice(n, v, ("preset", "paper")), "preset",
          "preset: the run durations and repetitions this file sets (a paper preset for the testbed runs shorter than "
          "its paper and says so in its header); paper: the paper's own, from paper-run-lengths, which then replace "
          "the file's", neutral_at_default=True),
    Param("paper-run-lengths", _run_lengths, "{}",
          "a paper preset's run lengths as the paper measured them: JSON object of duration, dds-duration, "
          "sockperf-duration, http-requests, repetitions (e.g. {\"dds-duration\": \"120\"}); applied with run-lengths=paper, "
          "otherwise only recorded", neutral_at_default=True),
    Param("trigger", _trigger, "{}",
          "what triggered this sweep as a rerun (`edgebench watch`, the Argo Events sensor): JSON object {cni, new, "
          "previous, source, at}; cnis then names only modes of that CNI, and every run's manifest records the "
          "trigger and environment.cni_version_requested = new; {} = not a triggered rerun"),
)

PARAMS: dict[str, Param] = {p.name: p for p in (*CORE_PARAMS, *workload_params(), *LATE_PARAMS)}
DEFAULTS: dict[str, str] = {name: p.default for name, p in PARAMS.items()}
CORE_NAMES = frozenset(p.name for p in (*CORE_PARAMS, *LATE_PARAMS))
# dimensions and workload parameters added after sweeps were stored: at their default they change no sweep id, cell
# id or object key
NEUTRAL_AT_DEFAULT = frozenset({"trigger", "min-repetitions", "max-repetitions", "time-budget", *neutral_params(),
                                *(p.name for p in PARAMS.values() if p.neutral_at_default)})


@dataclass(frozen=True)
class Sweep:
    """A validated sweep: raw string parameters (as Argo sees them) and their parsed values."""

    source: str
    raw: dict[str, str]
    values: dict[str, Any]

    @property
    def sweep_id(self) -> str:
        if self.values["sweep-id"]:
            return self.values["sweep-id"]
        # the core parameters and those of the workloads the sweep runs: a parameter of a workload that is not
        # run does not change the id (so adding a workload keeps every existing sweep's keys)
        used = {tool for tool, _ in self.values["workloads"]}
        counted = CORE_NAMES | {p.name for w in used for p in PLANS[w].params}
        # paper-run-lengths changes nothing measured by itself (with run-lengths=paper the lengths it sets do)
        ids = {k: v for k, v in self.raw.items() if k not in ("sweep-id", "paper-run-lengths") and k in counted
               and not (k in NEUTRAL_AT_DEFAULT and PARAMS[k].parse(k, v) == PARAMS[k].parse(k, DEFAULTS[k]))}
        trig = self.values.get("trigger")
        if trig:  # a rerun is named by what it measures (CNI, new version), not by when or from where it was asked
            ids["trigger"] = json.dumps({"cni": trig["cni"], "new": trig["new"]}, sort_keys=True)
        digest = hashlib.sha256(json.dumps(ids, sort_keys=True).encode()).hexdigest()
        if trig:
            head = f"{self.values['substrate']}-{trig['cni']}-"
            slug = re.sub(r"[^a-z0-9]+", "-", trig["new"].lower()).strip("-")[: 63 - len(head) - 9].strip("-")
            return f"{head}{slug}-{digest[:8]}"
        return f"{self.values['substrate']}-{digest[:10]}"

    def cni_version_requested(self, cell: Any) -> str | None:
        """The version `cell` asks for: its cni-versions entry, else a triggered rerun's new version for the trigger's
        CNI; None for the catalog pin (or the host network). Cluster substrates install it instead of the catalog pin
        (substrates.get(cni_version=...)); the testbed records it."""
        version = getattr(cell, "requested_version", "default")
        if version != "default":
            return version
        trig = self.values.get("trigger") or {}
        return trig["new"] if trig.get("cni") == cell.cni else None


def parse_overrides(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SpecError(f"-p takes NAME=VALUE (as argo submit -p does); got {short(item)}")
        if name.strip() in out:
            raise SpecError(f"-p {name.strip()} is given twice; give each parameter once")
        out[name.strip()] = value
    return out


def parse_argo_parameters(text: str) -> dict[str, str]:
    """Argo's {{workflow.parameters.json}} (a JSON list of {name, value, ...}) -> {name: value}."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise SpecError(f"--argo-parameters must be a JSON list of {{name, value}}: {getattr(exc, 'msg', exc)}") from None
    if not isinstance(doc, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in doc):
        raise SpecError("--argo-parameters must be a JSON list of {name, value} objects")
    out: dict[str, str] = {}
    for entry in doc:
        if entry["name"] in out:
            raise SpecError(f"--argo-parameters names {entry['name']!r} twice")
        out[entry["name"]] = str(entry.get("value", ""))
    return out


def argo_overrides(text: str | None, overrides: dict[str, str] | None = None,
                   default_sweep_id: str | None = None) -> dict[str, str]:
    """Argo's {{workflow.parameters.json}} plus `-p` overrides, with the sweep id the DAG uses: `default_sweep_id`
    (on Argo the workflow name) when sweep-id is empty, except for a triggered rerun, which keeps its own derived
    id (the same keys on every delivery of the trigger)."""
    out = {**parse_argo_parameters(text or "[]"), **(overrides or {})}
    if default_sweep_id and not out.get("sweep-id") and not triggered(out):
        out["sweep-id"] = default_sweep_id
    return out


def load(path: str | Path, overrides: dict[str, str] | None = None, substrate: str | None = None) -> Sweep:
    """Read and validate a sweep file; overrides are `-p` values, substrate forces e.g. `local`."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"sweep file {p} does not exist") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"sweep file {p} is not valid YAML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"sweep file {p} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit, raised while YAML builds it
        raise SpecError(f"sweep file {p}: a value cannot be read ({exc})") from None
    except OSError as exc:
        raise SpecError(f"cannot read sweep file {p}: {exc.strerror}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "Workflow" or not str(doc.get("apiVersion", "")).startswith(
        "argoproj.io/"
    ):
        raise SpecError(f"{p} is not an Argo Workflow (apiVersion argoproj.io/v1alpha1, kind Workflow)")
    spec_ = doc.get("spec")
    if spec_ is not None and not isinstance(spec_, dict):
        raise SpecError(f"{p}: spec must be a mapping (with arguments.parameters)")
    arguments = spec_.get("arguments") if isinstance(spec_, dict) else None
    if arguments is not None and not isinstance(arguments, dict):
        raise SpecError(f"{p}: spec.arguments must be a mapping (with parameters)")
    params = (arguments.get("parameters") if isinstance(arguments, dict) else None) or []
    if not isinstance(params, list):
        raise SpecError(f"{p}: spec.arguments.parameters must be a list of {{name, value}}")
    raw: dict[str, str] = dict(DEFAULTS)
    seen: set[str] = set()
    for entry in params:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise SpecError(f"{p}: every spec.arguments.parameters entry needs a name; got {entry!r}")
        if entry["name"] not in PARAMS:
            raise SpecError(f"{p}: unknown parameter {entry['name']!r}; known: {', '.join(PARAMS)}")
        if "value" not in entry:
            raise SpecError(f"{p}: parameter {entry['name']!r} has no value")
        if entry["name"] in seen:
            raise SpecError(f"{p}: parameter {entry['name']!r} is listed twice in spec.arguments.parameters "
                            "(Argo would take one silently); keep one")
        seen.add(entry["name"])
        raw[entry["name"]] = str(entry["value"])
    for name, value in (overrides or {}).items():
        if name not in PARAMS:
            raise SpecError(f"unknown parameter {name!r} in -p; known: {', '.join(PARAMS)}")
        raw[name] = value
    if substrate:
        raw["substrate"] = substrate
    return from_parameters(raw, source=str(p))


def from_parameters(raw: dict[str, str], source: str = "parameters") -> Sweep:
    """Validate a complete set of string parameters (defaults filled in) into a Sweep."""
    raw = {**DEFAULTS, **raw}
    unknown = sorted(set(raw) - set(PARAMS))
    if unknown:
        raise SpecError(f"{source}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(PARAMS)}")
    if PARAMS["run-lengths"].parse("run-lengths", raw["run-lengths"]) == "paper":
        lengths = PARAMS["paper-run-lengths"].parse("paper-run-lengths", raw["paper-run-lengths"])
        if not lengths:
            raise SpecError(f"{source}: run-lengths=paper needs paper-run-lengths (the paper presets in "
                            "workflows/presets/ set it); this sweep has none")
        raw = {**raw, **lengths}  # the paper's lengths replace the file's, and so name another sweep
    if "cnis" not in raw:
        raise SpecError(f"{source}: parameter 'cnis' is required")
    values = {name: PARAMS[name].parse(name, raw[name]) for name in PARAMS if name in raw}
    values["adaptive"] = values["repetitions"] == "auto"
    if values["adaptive"]:  # plan the maximum; the local runner stops each cell once its comparisons are decided
        if values["min-repetitions"] > values["max-repetitions"]:
            raise SpecError(f"{source}: min-repetitions ({values['min-repetitions']}) is above max-repetitions "
                            f"({values['max-repetitions']})")
        values["repetitions"] = values["max-repetitions"]
    for scenario in values["netem"]:
        netem.resolve(scenario, custom=values["netem-custom"].get(scenario))  # unknown names: SpecError
    trig = values["trigger"]
    if trig:
        others = [cm.key for cm in values["cnis"] if cm.cni != trig["cni"]]
        if others:
            raise SpecError(f"{source}: a rerun triggered by a new {trig['cni']} version runs only {trig['cni']} modes; "
                            f"cnis also names {', '.join(others)}")
    if (values["substrate"] == "kind") != (values["distribution"] == "kind"):
        raise SpecError(f"{source}: substrate kind and distribution kind go together (kind clusters are both); got "
                        f"substrate={values['substrate']!r}, distribution={values['distribution']!r}")
    for problem in substrate_problems(values["substrate"], values, raw):
        raise SpecError(f"{source}: {problem}")
    if values["service-proxy"] != ["default"] and [t.key for t in values["intercluster"]] != ["none"]:
        raise SpecError(f"{source}: service-proxy modes are modelled in one-cluster cells only (an inter-cluster tool "
                        "exports services with its own rules); run them in a sweep with intercluster [\"none\"]")
    if values["substrate"] != "local":
        for tool in values["intercluster"]:
            reason = tool.unsupported_distribution(values["distribution"])
            if reason:
                raise SpecError(f"{source}: inter-cluster tool {tool.key} does not run on {values['distribution']}: "
                                f"{reason}")
    return Sweep(source=source, raw=raw, values=values)
