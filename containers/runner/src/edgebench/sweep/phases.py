"""The phases of a cell. The Argo `sweep` DAG runs them as steps (`edgebench <phase> --cell ...`), the local
runner calls the same functions in the same order (PHASES; a test checks the DAG against it).

State between phases lives in the cell's work directory (`state.json`); on Argo the directory travels between
steps as an artifact. Results are written as the raw layout of docs/results-layout.md under
`<results>/runs/<sweep_id>/<cell_id>/<run_id>/`, which is the spool locally and the output artifact on Argo.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from edgebench import workloads
from edgebench.errors import EdgebenchError
from edgebench.plan import intercluster, netem, tuning
from edgebench.plan.cells import Cell, Run, runs_for
from edgebench.plan.dimensions import DIMENSIONS
from edgebench.plan.spec import Sweep
from edgebench.results.records.manifest import RunManifest
from edgebench.results.records.provenance import environment
from edgebench.results.records.runstore import manifest, now, with_trigger, write_run
from edgebench.substrates.base import Provider, Unsupported
from edgebench.substrates.clusters.install import node_steps
from edgebench.sweep.sampling import sampler as _sampler


Log = Callable[[str], None]
Sink = Callable[[Run, dict[str, Any]], None]


@dataclass
class CellContext:
    sweep: Sweep
    cell: Cell
    workdir: Path
    results: Path
    provider: Provider
    log: Log = print
    sink: Sink | None = None  # called after every stored run (the local runner uploads there)
    only: set[str] | None = None  # run ids to (re)measure; None = all
    attempts: dict[str, int] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    # the local runner's reuse of one cluster by consecutive cells of the same build (Provider.build_key):
    reuse: dict[str, Any] | None = None  # the previous cell's reset cluster: handover() of that cell
    keep: bool = False  # the next cell builds the same cluster: reset it for that cell instead of tearing it down
    on_phase: Callable[[str], None] | None = None  # told each phase's name as it starts (the sweep's progress)
    # runs a duet round measured together with other members' (sweep/duet.py): run id -> (started, Measurement)
    premeasured: dict[str, tuple[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        f = self.workdir / "state.json"
        if f.exists():
            self.state = json.loads(f.read_text())
            if self.state.get("cell_id") not in (None, self.cell.cell_id):
                raise EdgebenchError(f"{self.workdir} holds the state of cell {self.state['cell_id']}, "
                                     f"not {self.cell.cell_id}")
        self.state["cell_id"] = self.cell.cell_id

    def save(self) -> None:
        (self.workdir / "state.json").write_text(json.dumps(self.state, indent=2, sort_keys=True))

    def run_dir(self, run: Run) -> Path:
        return self.results / run.prefix

    def runs(self, workload: str) -> list[Run]:
        return [r for r in runs_for(self.sweep, self.cell) if r.workload == workload
                and (self.only is None or r.run_id in self.only)]

    def store(self, run: Run, doc: RunManifest, raw: dict[str, bytes]) -> None:
        # every manifest of a triggered rerun, and of a cell asking for a version
        doc = with_trigger(doc, self.sweep.values.get("trigger"), self.sweep.cni_version_requested(self.cell))
        write_run(self.run_dir(run), doc, raw)
        self.state.setdefault("stored", [])
        if run.run_id not in self.state["stored"]:
            self.state["stored"].append(run.run_id)
        self.save()
        if self.sink:
            self.sink(run, doc)


def provision_cluster(ctx: CellContext) -> None:
    """Create the cell's cluster (local: the LAN and node namespaces), replacing a leftover one; or, when the local
    runner kept the previous cell's cluster of the same build (ctx.reuse, reset and verified by reset_cluster), take
    that one."""
    ctx.state["provisioned_at"] = now()
    ctx.state.pop("idle_baseline", None)  # every cell samples its own idle baseline (_sampler)
    if ctx.reuse is not None:
        ctx.state["reused_cluster_of"] = ctx.reuse["cell_id"]
        ctx.log(f"{ctx.cell.label}: the cluster of the previous cell, reset and verified, is reused")
    else:
        try:
            ctx.provider.provision()
        finally:
            _stages(ctx, "provision-cluster")
            _record_lab(ctx)
    ctx.state["provisioned"] = True
    ctx.save()


def _stages(ctx: CellContext, phase: str) -> None:
    """A real cluster's stage times of the phase (node_steps.Timings): kept in the cell's state, said in one line."""
    timings = getattr(ctx.provider, "timings", None)
    stages = timings.take() if timings is not None else []
    if stages:
        ctx.state.setdefault("stage_seconds", {})[phase] = stages
        ctx.log(f"{ctx.cell.label}: {phase}: {node_steps.summary(stages)}")


# what install-cni records about the built cluster: handed on with it to the next cell that reuses it
# (and what the substrate read back of a cell dimension, e.g. the CPU class calibration: plan/dimensions.py `detail`)
READBACK_KEYS = ("service_proxy", *(d.field for d in DIMENSIONS if d.detail))
INSTALL_KEYS = ("supported", "reason", "mtu", "datapath", "cni_version", "distribution_version", "cni_invalid_reason",
                *READBACK_KEYS, "cluster", "built")


def install_cni(ctx: CellContext) -> None:
    """Install the CNI mode and read back its MTU; a datapath the kernel lacks (or, in a triggered rerun, a CNI the
    distribution provides itself, whose version edgebench cannot change) is recorded as unsupported. A triggered
    version that the cluster does not read back makes the cell's runs invalid (kept, but out of the comparisons),
    as a tuning readback mismatch does."""
    cm = ctx.cell.cni_info
    if ctx.reuse is not None:  # built by an earlier cell of the same build (Provider.build_key) and reset since
        ctx.state.update(ctx.reuse["install"])
        if ctx.state.get("cni_invalid_reason"):
            ctx.state.update(is_valid=False, invalid_reason=ctx.state["cni_invalid_reason"])
        ctx.save()
        return
    try:
        readback = ctx.provider.install_cni(cm)
        _stages(ctx, "install-cni")
    except Unsupported as exc:
        ctx.state.update(supported=False, reason=str(exc))
        ctx.log(f"{cm.key}: {exc}")
    else:
        problem = readback.get("invalid_reason")  # e.g. "CNI version not in force: calico v3.31.8 was requested, ..."
        ctx.state.update(supported=True, reason=None, mtu=readback["mtu"], datapath=cm.datapath,
                         cni_version=readback.get("cni_version"),  # None on the testbed: no CNI software runs
                         distribution_version=readback.get("distribution_version"), cni_invalid_reason=problem,
                         # the testbed's proxy mode and its readback, the CPU class calibration (testbed);
                         # a real cluster: the lab's target, whether its nodes share a kernel, the sources
                         cluster=readback.get("cluster"), **{key: readback.get(key) for key in READBACK_KEYS})
        if problem:
            ctx.state.update(is_valid=False, invalid_reason=problem)
            ctx.log(f"{cm.key}: {problem}; its runs are recorded as invalid")
        if ctx.keep:  # the next cell reuses this cluster: what reset_cluster must find again
            ctx.state["built"] = ctx.provider.fingerprint()
    ctx.save()


def _record_lab(ctx: CellContext) -> None:
    """A real cluster's preflight record (the lab, the cell's nodes: kind, arch, cpu, kernel) into the cell's state,
    also when provisioning failed or the cell turns out unsupported: every run of the cell carries it
    (environment.cluster), install-cni replaces it with the fuller readback."""
    record = getattr(ctx.provider, "lab_record", None)
    lab = record() if callable(record) else None
    if lab:
        ctx.state["cluster"] = lab
        ctx.save()


def connect_clusters(ctx: CellContext) -> None:
    """Join the cell's two clusters with its inter-cluster tool (a no-op for `none`) and read back what is in force;
    a tool the substrate or kernel cannot carry is recorded as unsupported on the cell's runs."""
    tool = ctx.cell.intercluster_info
    if tool.is_none or ctx.state.get("supported") is False:
        return
    try:
        ctx.state["intercluster"] = ctx.provider.connect_clusters(tool)
    except Unsupported as exc:
        _cannot(ctx, exc)
        ctx.log(f"{tool.key}: {exc}")
    ctx.save()


def disconnect_clusters(ctx: CellContext) -> None:
    """Undo connect-clusters (unexport, remove the tool from both clusters). Idempotent; teardown runs it too."""
    if ctx.cell.intercluster != "none":
        ctx.provider.disconnect_clusters()
        ctx.state["disconnected_at"] = now()
        ctx.save()


def _cannot(ctx: CellContext, exc: Unsupported) -> None:
    """The substrate lacks a capability the cell asks for: the cell's runs are recorded as unsupported."""
    ctx.state.update(supported=False, reason=f"unsupported: {exc}")


def tune_nodes(ctx: CellContext) -> None:
    """Apply the cell's tuning profile where the substrate can carry it, read back what is in force, and record
    what cannot be applied (e.g. a global sysctl inside a network namespace) as unsupported. A readback that does
    not match the request makes the cell's runs invalid (kept, but out of the comparisons)."""

    profile = ctx.cell.tuning_profile
    if ctx.state.get("supported") is False:
        return
    try:
        ctx.state["tuning"] = ctx.provider.apply_tuning(profile)
        ctx.state["tuning"].setdefault("mtu", ctx.state.get("mtu"))  # a cluster's: the pod MTU install-cni read
    except Unsupported as exc:
        if profile != "default_settings":
            _cannot(ctx, exc)
        ctx.state["tuning"] = {"profile": profile, "requested": {}, "readback": {}, "unsupported": {},
                               "mtu": ctx.state.get("mtu")}
    valid, reason = tuning.validate(ctx.state["tuning"])
    if ctx.state.get("cni_invalid_reason"):  # install-cni's version readback mismatch stands
        valid, reason = False, "; ".join(r for r in (ctx.state["cni_invalid_reason"], reason) if r)
    ctx.state.update(is_valid=valid, invalid_reason=reason)
    ctx.save()


def apply_netem(ctx: CellContext) -> None:
    """Apply the cell's link condition (tc netem where the kernel has it, else the userspace NFQUEUE emulator on
    the testbed; rate limits with htb/tbf) on every node's uplink and record the mechanism and readback."""

    if ctx.state.get("supported") is False:
        return
    v = ctx.sweep.values
    scenario = netem.resolve(ctx.cell.netem_scenario, custom=v["netem-custom"].get(ctx.cell.netem_scenario),
                             scope=v["netem-scope"])
    try:
        ctx.state["netem"] = ctx.provider.apply_netem(scenario)
    except Unsupported as exc:
        if not scenario.untouched:
            _cannot(ctx, exc)
        ctx.state["netem"] = netem.manifest_object(scenario, "none", "")
    ctx.save()


def _unsupported_cell(ctx: CellContext, run: Run, attempt: int, env: dict[str, Any]) -> bool:
    """Record the run as unsupported if the cell's datapath could not be built; True if it was."""
    if ctx.state.get("supported") is False:
        ctx.store(run, manifest(run, "unsupported", now(), error=ctx.state["reason"], attempt=attempt, env=env), {})
        return True
    if not ctx.state.get("supported"):
        raise EdgebenchError("the CNI is not installed in this cell: run install-cni first")
    return False


Measurement = workloads.Measurement


def _run_all(ctx: CellContext, workload: str, measure: Callable[[Run], Measurement]) -> None:
    """The loop every run-* phase shares: skip what the cell cannot run, measure, store one manifest per run.
    `measure` returns (raw files, metrics, error, params to record instead of the run's own); an error starting
    with "unsupported:" records the run as unsupported, any other error as failed."""
    env = {**environment(workload, (ctx.state.get("netem") or {}).get("mechanism")), "cni_version": ctx.state.get("cni_version"),
           "distribution_version": ctx.state.get("distribution_version")}
    if getattr(ctx.provider, "pinning", None) is not None:  # the testbed's client and server CPUs (or None)
        env["cpu_pinning"] = ctx.provider.pinning() if workloads.REGISTRY[workload].pin_cpus else None
    if ctx.state.get("cluster"):  # a real cluster: the lab's target, whether its nodes share one kernel, sources
        env["cluster"] = ctx.state["cluster"]
    for run in ctx.runs(workload):
        attempt = ctx.attempts.get(run.run_id, 1)
        if _unsupported_cell(ctx, run, attempt, env):
            continue
        across = intercluster.run_reason(run)
        if across:  # the tool cannot carry this run: recorded, not measured
            ctx.store(run, manifest(run, "unsupported", now(), error=f"unsupported: {across}", attempt=attempt,
                                    env=env, conditions=_conditions(ctx)), {})
            continue
        if run.run_id in ctx.premeasured:  # measured in one window with other members (sweep/duet.py)
            started, (raw, metrics, error, params) = ctx.premeasured.pop(run.run_id)
        else:
            started, (raw, metrics, error, params) = now(), _measured(ctx, run, measure)
        status = "ok" if error is None else "unsupported" if error.startswith("unsupported:") else "failed"
        ctx.store(run, manifest(run, status, started, error=error, metrics=metrics, raw_files=sorted(raw),
                                mtu=ctx.state.get("mtu"), attempt=attempt, env=env, params=params,
                                conditions=_conditions(ctx)), raw)


def _measured(ctx: CellContext, run: Run, measure: Callable[[Run], Measurement]) -> Measurement:
    """One run measured, its resources sampled meanwhile (resources.json); a failure is the run's error."""
    sampler = _sampler(ctx)
    try:
        raw, metrics, error, params = measure(run)
    except Unsupported as exc:  # the substrate cannot do what this run needs
        raw, metrics, error, params = {}, None, f"unsupported: {exc}", None
    except Exception as exc:  # a setup command failed: record the run as failed, keep going
        raw, metrics, error, params = {}, None, str(exc), None
    finally:
        samples = sampler.stop() if sampler else None
    if samples:
        raw["resources.json"] = json.dumps(samples).encode()
    return raw, metrics, error, params


def _conditions(ctx: CellContext) -> dict[str, Any]:
    """netem, tuning and validity as in force after the run (the link condition is read back again)."""
    netem_obj = dict(ctx.state.get("netem") or {})
    valid, reason = ctx.state.get("is_valid", True), ctx.state.get("invalid_reason")
    if netem_obj and netem_obj.get("mechanism") != "none":
        netem_obj["readback"] = ctx.provider.netem_readback()
        problem = ctx.provider.conditions_problem()
        if problem:
            valid, reason = False, f"link condition not in force: {problem}"
    return {"netem": netem_obj or None, "tuning": ctx.state.get("tuning"), "is_valid": valid,
            "invalid_reason": reason, "intercluster": ctx.state.get("intercluster"),
            **{key: ctx.state.get(key) for key in READBACK_KEYS}}


def run_workload(ctx: CellContext, name: str) -> None:
    """Run the cell's runs of one workload (workloads/<name>.py), one manifest and the raw outputs each."""
    _run_all(ctx, name, lambda run: workloads.REGISTRY[name].measure(ctx, run))


def run_workloads(ctx: CellContext) -> None:
    """Run the cell's runs of every workload it has, in registry order (iperf3, dds, http, ...); one manifest and
    the raw tool outputs per run. A failed run is recorded, not repeated."""
    for name in workloads.REGISTRY:
        run_workload(ctx, name)


def collect_results(ctx: CellContext, reason: str | None = None) -> list[str]:
    """Make sure every expected run has a manifest (a run that never finished gets a `failed` one with `reason`);
    return the run ids. Uploading is the caller's (local: the spool flush; Argo: the output artifact)."""
    stored = set(ctx.state.get("stored", []))
    expected = [r for r in runs_for(ctx.sweep, ctx.cell) if ctx.only is None or r.run_id in ctx.only]
    lab = ctx.state.get("cluster")  # a real cluster's lab and nodes, as the other runs of the cell record them
    for run in expected:
        if run.run_id not in stored:
            env = {**environment(run.workload), "cluster": lab} if lab else None
            ctx.store(run, manifest(run, "failed", now(), attempt=ctx.attempts.get(run.run_id, 1), env=env,
                                    error=reason or "the run did not complete (no manifest was written)"), {})
    return [r.run_id for r in expected]


def merge_results(ctx: CellContext, sources: list[Path]) -> None:
    """Copy the run directories of this cell from other result trees (the run-* steps' artifacts on Argo) into
    ctx.results and note them as stored. Missing sources are skipped (a step that never ran has no artifact)."""
    for src in sources:
        cell_dir = src / "runs" / ctx.cell.sweep_id / ctx.cell.cell_id
        if not cell_dir.is_dir():
            continue
        for run_dir in sorted(p for p in cell_dir.iterdir() if (p / "manifest.json").exists()):
            dest = ctx.results / "runs" / ctx.cell.sweep_id / ctx.cell.cell_id / run_dir.name
            shutil.copytree(run_dir, dest, dirs_exist_ok=True)
            ctx.state.setdefault("stored", [])
            if run_dir.name not in ctx.state["stored"]:
                ctx.state["stored"].append(run_dir.name)
    ctx.save()


def teardown_cluster(ctx: CellContext) -> list[str]:
    """Disconnect the clusters, revert link conditions and tuning, then remove the cell's cluster(s) and everything
    the CNI left behind. Idempotent; runs on success and failure."""
    _announce(ctx, "teardown-cluster")
    try:
        disconnect_clusters(ctx)
    except Exception as exc:  # the clusters go away next anyway; say so and carry on
        ctx.log(f"disconnecting the clusters failed ({exc}); removing the clusters anyway")
    try:
        ctx.provider.revert_conditions()
    except Exception as exc:  # the cluster goes away next anyway; say so and carry on
        ctx.log(f"revert of tuning/netem failed ({exc}); removing the cluster anyway")
    removed = ctx.provider.teardown()
    _stages(ctx, "teardown-cluster")
    ctx.state["torn_down_at"] = now()
    ctx.save()
    return removed


def reset_cluster(ctx: CellContext) -> bool:
    """In place of teardown-cluster when the next cell builds the same cluster (ctx.keep; the local runner): undo
    this cell's link condition, tuning and services, stop what still runs, and verify that the cluster reads as it
    did when built (Provider.reset). False, and the caller tears down as usual, if anything differs or the cell's
    cluster was not built."""
    if not ctx.keep or ctx.state.get("supported") is not True or "built" not in ctx.state:
        return False
    try:
        problems = ctx.provider.reset(ctx.state["built"])
    except Exception as exc:  # noqa: BLE001 - any failure means: not reusable, tear it down
        problems = [f"reset failed: {exc}"]
    if problems:
        ctx.log(f"{ctx.cell.label}: cluster not reused ({'; '.join(problems[:3])}); tearing it down")
        return False
    ctx.state["reset_at"] = now()
    ctx.save()
    return True


def handover(ctx: CellContext) -> dict[str, Any]:
    """What the next cell needs to reuse this cell's reset cluster (CellContext.reuse)."""
    return {"cell_id": ctx.cell.cell_id, "install": {k: ctx.state[k] for k in INSTALL_KEYS if k in ctx.state}}


FUNCTIONS: dict[str, Callable[[CellContext], Any]] = {
    "provision-cluster": provision_cluster,
    "install-cni": install_cni,
    "connect-clusters": connect_clusters,
    "tune-nodes": tune_nodes,
    "apply-netem": apply_netem,
    "run-workloads": run_workloads,
    "collect-results": collect_results,
    "disconnect-clusters": disconnect_clusters,
    "teardown-cluster": teardown_cluster,
}
PHASES = tuple(FUNCTIONS)


def _announce(ctx: CellContext, phase: str) -> None:
    if getattr(ctx, "on_phase", None):  # a stand-in context (tests) may have none
        ctx.on_phase(phase)


def run_cell(ctx: CellContext) -> bool:
    """All phases in order; teardown (which disconnects too) always runs, also on failure or interrupt, except that
    with ctx.keep a cluster that reset_cluster verified is left for the next cell. Returns True if it was left."""
    try:
        for phase in PHASES[:-1]:
            _announce(ctx, phase)
            FUNCTIONS[phase](ctx)
        if reset_cluster(ctx):
            return True
    except BaseException:  # a failed phase, or an interrupt (also one during the reset)
        teardown_cluster(ctx)
        raise
    teardown_cluster(ctx)
    return False
