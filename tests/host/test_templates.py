"""The Argo side, offline: every manifest in workflows/ and templates/ is valid against the vendored schemas,
references resolve, parameters match, every `edgebench` invocation exists, and the DAG runs the local order."""

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer
import yaml

from edgebench.sweep import phases
from edgebench.plan import spec
from edgebench.cli import app
from manifest_validation import REPO, load_yaml_docs, validate

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_FILES = sorted((ROOT / "templates").glob("*.yaml"))
# incl. presets/; not the parameter files beside them (argo submit --parameter-file: name -> value, tiny.params.yaml)
WORKFLOW_FILES = sorted(p for p in (ROOT / "workflows").rglob("*.yaml") if not p.name.endswith(".params.yaml"))
TEMPLATES = {d["metadata"]["name"]: d for f in TEMPLATE_FILES for d in load_yaml_docs(f)
             if d.get("kind") == "WorkflowTemplate"}
MEASUREMENTS = {"run-workloads", "tune-nodes", "apply-netem"}  # never retried: a failed measurement is recorded


def all_templates():
    for wt_name, wt in TEMPLATES.items():
        for t in wt["spec"]["templates"]:
            yield wt_name, t


@pytest.mark.parametrize("path", TEMPLATE_FILES + WORKFLOW_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_manifests_validate_against_vendored_schemas(path):
    for obj in load_yaml_docs(path):
        if obj.get("kind") != "Kustomization":
            validate(obj, source=str(path))


def test_validator_can_fail():
    bad = yaml.safe_load((ROOT / "templates" / "cell-phase.yaml").read_text())
    bad["spec"]["templates"][0]["contaner"] = bad["spec"]["templates"][0].pop("container")
    with pytest.raises(Exception, match="contaner"):
        validate(bad)


def test_one_template_per_file_named_after_it_with_annotations():
    listed = yaml.safe_load((ROOT / "templates" / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in TEMPLATE_FILES if p.name != "kustomization.yaml")
    for path in TEMPLATE_FILES:
        if path.name == "kustomization.yaml":
            continue
        (doc,) = load_yaml_docs(path)
        assert doc["metadata"]["name"] == path.stem
        ann = doc["metadata"]["annotations"]
        assert ann["workflows.argoproj.io/description"] and ann["workflows.argoproj.io/version"]
    # one parameterized template for every phase but collect-results (which merges and stores the cell's tree);
    # version-probe records newer CNI versions for the Argo Events rerun path (tests/host/test_events.py)
    assert set(TEMPLATES) == {"sweep", "cell-phases", "cell-phase", "collect-results", "version-probe"}


def _phase_tasks():
    """(task, phase name, its arguments by name) for every use of the cell-phase template."""
    for wt_name, t, task in _refs():
        if task.get("templateRef", {}).get("name") == "cell-phase":
            args = {p["name"]: p["value"] for p in task["arguments"]["parameters"]}
            yield task, args["phase"], args


def test_every_leaf_template_has_a_deadline_and_parameters_have_descriptions():
    for wt_name, t in all_templates():
        if "dag" in t or "steps" in t:
            # the controller rejects deadlines on DAG/steps templates (the workflow's own deadline bounds them)
            assert "activeDeadlineSeconds" not in t, f"{wt_name}/{t['name']}"
            continue
        deadline = str(t["activeDeadlineSeconds"])
        if deadline == "{{inputs.parameters.deadline}}":  # cell-phase: every caller passes one, or the default
            declared = {p["name"]: p for p in t["inputs"]["parameters"]}
            assert int(declared["deadline"]["value"]) > 0
        else:
            assert int(deadline) > 0, f"{wt_name}/{t['name']}"
        for p in t.get("inputs", {}).get("parameters", []):
            assert p.get("description"), f"{wt_name}/{t['name']} parameter {p['name']}"
    sweep = TEMPLATES["sweep"]["spec"]
    assert sweep["activeDeadlineSeconds"] > 0 and sweep["podGC"]["strategy"] and sweep["ttlStrategy"]
    assert all(p.get("description") for p in sweep["arguments"]["parameters"])


def test_retries_only_on_idempotent_phases_with_backoff():
    for wt_name, t in all_templates():
        if wt_name in ("sweep", "cell-phases"):
            assert "retryStrategy" not in t, f"{wt_name}/{t['name']} must not retry"
        if wt_name in ("cell-phase", "collect-results"):
            assert t["retryStrategy"]["backoff"]["duration"], wt_name
    seen = set()
    for task, phase, args in _phase_tasks():
        seen.add(phase)
        assert int(args["deadline"]) > 0, phase
        if phase in MEASUREMENTS:
            assert args["retries"] == "0", f"{phase} must not retry a measurement"
        elif phase in ("provision-cluster", "install-cni"):
            assert int(args["retries"]) > 0, phase
    assert MEASUREMENTS <= seen


def test_no_endpoint_or_secret_in_templates():
    text = "\n".join(p.read_text() for p in TEMPLATE_FILES + WORKFLOW_FILES)
    for word in ("endpoint", "accessKeySecret", "secretKeySecret", "minio.", "password"):
        assert word not in text
    for wt_name, t in all_templates():
        for a in t.get("outputs", {}).get("artifacts", []):
            assert set(a.get("s3", {})) <= {"key"}, "only key-only S3 artifacts (default artifact repository)"


def _refs():
    for wt_name, t in all_templates():
        steps = [s for group in t.get("steps", []) for s in group]
        for task in t.get("dag", {}).get("tasks", []) + steps:
            yield wt_name, t, task
            for hook in task.get("hooks", {}).values():
                yield wt_name, t, {**hook, "name": f"{task['name']}-hook"}


def test_template_refs_resolve_and_parameters_are_declared():
    for wt_name, t, task in _refs():
        if "templateRef" in task:
            ref = task["templateRef"]
            assert ref["name"] in TEMPLATES, f"{wt_name}/{task['name']} -> {ref['name']}"
            targets = {x["name"]: x for x in TEMPLATES[ref["name"]]["spec"]["templates"]}
            assert ref["template"] in targets
            callee = targets[ref["template"]]
        else:
            local = {x["name"]: x for x in TEMPLATES[wt_name]["spec"]["templates"]}
            assert task["template"] in local, f"{wt_name}/{task['name']}"
            callee = local[task["template"]]
        declared = {p["name"] for p in callee.get("inputs", {}).get("parameters", [])}
        passed = {p["name"] for p in task.get("arguments", {}).get("parameters", [])}
        assert passed <= declared, f"{wt_name}/{task['name']} passes undeclared {passed - declared}"
        required = {p["name"] for p in callee.get("inputs", {}).get("parameters", []) if "value" not in p
                    and "default" not in p}
        assert required <= passed, f"{wt_name}/{task['name']} misses {required - passed}"
        arts_declared = {a["name"] for a in callee.get("inputs", {}).get("artifacts", [])}
        arts_passed = {a["name"] for a in task.get("arguments", {}).get("artifacts", [])}
        assert arts_passed <= arts_declared
        for spec_ in ("entrypoint",):
            if "templateRef" in task:
                wt = TEMPLATES[task["templateRef"]["name"]]["spec"]
                assert wt[spec_] in {x["name"] for x in wt["templates"]}


def test_workflows_reference_the_sweep_template_with_its_parameters():
    declared = {p["name"] for p in TEMPLATES["sweep"]["spec"]["arguments"]["parameters"]}
    assert parameter_drift(TEMPLATES["sweep"]["spec"]["arguments"]["parameters"]) == []
    for path in WORKFLOW_FILES:
        (doc,) = load_yaml_docs(path)
        assert doc["kind"] == "Workflow" and doc["metadata"]["generateName"]
        assert doc["spec"]["workflowTemplateRef"]["name"] == "sweep"
        assert set(doc["spec"]) == {"workflowTemplateRef", "arguments"}, "thin Workflow files"
        passed = {p["name"] for p in doc["spec"]["arguments"]["parameters"]}
        assert passed <= declared, f"{path.name}: undeclared {passed - declared}"
        spec.load(path)  # and they validate as sweep specs (what `edgebench sweep --local` reads)


def _edgebench_invocations():
    """(template, name, argv) of every `edgebench` container; cell-phase once per phase its callers pass."""
    for wt_name, t in all_templates():
        c = t.get("container")
        if c and c.get("command") == ["edgebench"]:
            if c["args"][0] == "{{inputs.parameters.phase}}":
                for phase in sorted({phase for _, phase, _ in _phase_tasks()}):
                    yield wt_name, t["name"], [phase, *c["args"][1:]]
            else:
                yield wt_name, t["name"], c["args"]


def test_every_edgebench_invocation_names_an_existing_command_and_options():
    group = typer.main.get_command(app)
    seen = set()
    for wt_name, tname, args in _edgebench_invocations():
        cmd = group.commands.get(args[0])
        assert isinstance(cmd, click.Command), f"{wt_name}/{tname}: no subcommand {args[0]!r}"
        seen.add(args[0])
        rest = args[1:]
        while isinstance(cmd, click.Group):  # `edgebench versions check ...`
            cmd, rest = cmd.commands.get(rest[0]), rest[1:]
            assert isinstance(cmd, click.Command), f"{wt_name}/{tname}: no subcommand in {args}"
        options = {o for p in cmd.params for o in getattr(p, "opts", [])}
        for a in rest:
            if a.startswith("-"):
                assert a in options, f"{wt_name}/{tname}: `edgebench {args[0]}` has no option {a}"
    assert set(phases.PHASES) <= seen
    assert {"cells", "run-cell"} <= seen


def test_expand_matrix_passes_every_sweep_parameter_at_once():
    """Argo's {{workflow.parameters.json}} carries every declared parameter; `edgebench cells` reads it."""
    t = {x["name"]: x for x in TEMPLATES["sweep"]["spec"]["templates"]}["expand-matrix"]
    args = t["container"]["args"]
    assert "-p" not in args
    assert args[args.index("--argo-parameters") + 1] == "{{workflow.parameters.json}}"
    assert args[args.index("--default-sweep-id") + 1] == "{{workflow.name}}"
    # what Argo substitutes: the template's parameter list as JSON; the cells it gives equal the file's
    argo_json = json.dumps(TEMPLATES["sweep"]["spec"]["arguments"]["parameters"])
    proc = subprocess.run([sys.executable, "-m", "edgebench.cli", "cells", "--argo-parameters", argo_json,
                           "--default-sweep-id", "edgebench-sweep-abcde", "--local"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    cells = json.loads(proc.stdout)
    assert cells and {c["sweep_id"] for c in cells} == {"edgebench-sweep-abcde"}


def parameter_drift(listed: list[dict], choices: frozenset = frozenset({"substrate"})) -> list[str]:
    """How an Argo parameter list differs from the one declaration (spec.CORE_PARAMS + workloads/<name>.py).
    Every core parameter is listed; a workload's parameters are listed all or none (`edgebench cells` fills the
    defaults of those not listed, so a new workload needs no Argo change); the order is the declaration's; the
    descriptions and values equal the declared ones (except `choices`, values a file may choose, substrate=ssh)."""
    from edgebench import workloads
    from edgebench.cli.results import _sentence

    problems = []
    names = [p["name"] for p in listed]
    unknown = [n for n in names if n not in spec.PARAMS]
    if unknown:
        problems.append(f"undeclared {unknown}")
    if [n for n in spec.PARAMS if n in names] != [n for n in names if n in spec.PARAMS]:
        problems.append(f"order {names} differs from the declaration {list(spec.PARAMS)}")
    missing = [n for n in spec.CORE_NAMES if n not in names]
    if missing:
        problems.append(f"core parameters missing: {sorted(missing)}")
    for w in workloads.REGISTRY.values():
        have = [p.name for p in w.params if p.name in names]
        if have and len(have) != len(w.params):
            problems.append(f"workload {w.name}: lists {have}, not all of {[p.name for p in w.params]}")
    for p in listed:
        declared = spec.PARAMS.get(p["name"])
        if declared is None:
            continue
        if p.get("description") != _sentence(declared.help):
            problems.append(f"{p['name']}: description drifted")
        if p["name"] not in choices and str(p.get("value")) != declared.default:
            problems.append(f"{p['name']}: value {p.get('value')!r} != declared default {declared.default!r}")
    return problems


@pytest.mark.parametrize("where", ["templates/sweep.yaml", "workflows/sweep.yaml"])
def test_argo_parameter_lists_equal_the_declaration(where):
    """Regenerate with `edgebench params --argo` when a parameter changes."""
    (doc,) = load_yaml_docs(REPO / where)
    assert parameter_drift(doc["spec"]["arguments"]["parameters"]) == []


def test_drift_is_detected():
    """A template that disagrees with the declaration fails the check above: a changed default, a changed
    description, a missing parameter, a reordered list."""
    (doc,) = load_yaml_docs(REPO / "templates/sweep.yaml")
    good = doc["spec"]["arguments"]["parameters"]
    changed = copy.deepcopy(good)
    changed[[p["name"] for p in changed].index("duration")]["value"] = "7"
    assert parameter_drift(changed) == ["duration: value '7' != declared default '3'"]
    described = copy.deepcopy(good)
    described[0]["description"] = "something else"
    assert parameter_drift(described) == ["substrate: description drifted"]
    assert parameter_drift(good[:-1]) == ["core parameters missing: ['trigger']"]
    assert parameter_drift(list(reversed(good)))[0].startswith("order")
    no_http = [p for p in good if p["name"] != "http-requests"]
    assert parameter_drift(no_http)[0].startswith("workload http: lists")
    assert parameter_drift([*good, {"name": "colour", "value": "blue", "description": "x"}])[0].startswith("undeclared")


def test_default_sweep_run_keys_are_unchanged():
    """The redesign keeps every run key of the default sweep (tests/golden/default-sweep-run-keys.txt)."""
    from edgebench.plan import cells as cells_mod

    sweep = spec.load(REPO / "workflows" / "sweep.yaml", substrate="local")
    rows = [f"{r.prefix} {r.label}" for c in cells_mod.expand(sweep) for r in cells_mod.runs_for(sweep, c)]
    golden = (REPO / "tests" / "golden" / "default-sweep-run-keys.txt").read_text().splitlines()
    assert rows == golden


def test_dag_phase_order_equals_the_local_runner():
    local = {x["name"]: x for x in TEMPLATES["sweep"]["spec"]["templates"]}
    (chain,) = TEMPLATES["cell-phases"]["spec"]["templates"]  # its own WorkflowTemplate (sweep.yaml stays small)
    tasks = {t["name"]: t for t in chain["dag"]["tasks"]}
    # topological order of the cell DAG, following `depends`
    order, placed = [], set()
    while len(order) < len(tasks):
        ready = [n for n, t in tasks.items() if n not in placed
                 and all(d in placed for d in re.findall(r"[a-z0-9-]+(?=\.|$)", t.get("depends", "")) if d in tasks)]
        assert len(ready) == 1, f"the cell DAG must be a chain, ready={ready}"
        order.append(ready[0])
        placed.add(ready[0])
    # the cell template runs that chain as one task whose exit hook is the teardown (under the cell's semaphore)
    (phases_task,) = local["cell"]["dag"]["tasks"]
    assert phases_task["templateRef"] == {"name": "cell-phases", "template": "main"}
    hook = phases_task["hooks"]["exit"]
    hook_args = {p["name"]: p["value"] for p in hook["arguments"]["parameters"]}
    teardown = hook_args["phase"]
    assert hook_args["cell-id"] == "{{inputs.parameters.cell-id}}"
    assert tuple(order + [teardown]) == phases.PHASES
    # each cell-phase task runs the phase it is named after
    for task, phase, _ in _phase_tasks():
        assert task["name"] in (phase, "phases-hook", "teardown-after-failure"), (task["name"], phase)
    # the local-substrate cell runs all phases in one process: `edgebench run-cell` uses phases.PHASES itself


def test_teardown_runs_on_exit_and_cells_take_the_target_semaphore():
    spec_ = TEMPLATES["sweep"]["spec"]
    local = {x["name"]: x for x in spec_["templates"]}
    handler = local[spec_["onExit"]]
    step = handler["steps"][0][0]
    assert step["templateRef"]["name"] == "cell-phase" and "workflow.status" in step["when"]
    assert {p["name"]: p["value"] for p in step["arguments"]["parameters"]}["phase"] == "teardown-cluster"
    for name in ("cell", "cell-local"):
        sem = local[name]["synchronization"]["semaphores"][0]["configMapKeyRef"]
        assert sem["name"] == "edgebench-semaphores" and "target" in sem["key"]


def _argo_cells(tmp_path, *extra):
    """What expand-matrix writes for the template's default parameters: (items, sweep id, the cells' JSON)."""
    argo_json = json.dumps(TEMPLATES["sweep"]["spec"]["arguments"]["parameters"])
    proc = subprocess.run([sys.executable, "-m", "edgebench.cli", "cells", "--argo-parameters", argo_json,
                           "--default-sweep-id", "edgebench-sweep-abcde", "--items", str(tmp_path / "items.json"),
                           "--sweep-id-file", str(tmp_path / "sweep-id"), "--plan-dir", str(tmp_path / "plan"),
                           *extra], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return (json.loads((tmp_path / "items.json").read_text()), (tmp_path / "sweep-id").read_text(),
            json.loads(proc.stdout), argo_json)


def test_fan_out_items_are_short_and_name_readable_nodes(tmp_path):
    """Argo names every fanned-out node after its item: the items are a cell id and a short label, never the cell's
    JSON (whose parameters made node names thousands of characters long)."""
    items, sweep_id, cells, _ = _argo_cells(tmp_path, "--local")
    assert sweep_id == "edgebench-sweep-abcde"
    assert [i["cell"] for i in items] == [c["cell_id"] for c in cells] and len(items) == 8
    for i, item in enumerate(items):
        assert set(item) == {"cell", "label"} and len(json.dumps(item)) < 80, item
        # the node name the controller builds for a map item: sorted key:value pairs
        node = f"cell-local({i}:" + ",".join(f"{k}:{v}" for k, v in sorted(item.items())) + ")"
        assert len(node) < 80, node
    assert items[1] == {"cell": "c-808ea30ce9", "label": "flannel:vxlan"}
    local = {x["name"]: x for x in TEMPLATES["sweep"]["spec"]["templates"]}
    fanned = [t for t in local["sweep"]["dag"]["tasks"] if "withParam" in t]
    fanned += [s for group in local["exit-handler"]["steps"] for s in group if "withParam" in s]
    assert {t["name"] for t in fanned} == {"cell", "cell-local", "teardown-after-failure"}
    for t in fanned:
        values = [p["value"] for p in t["arguments"]["parameters"]]
        assert "{{item.cell}}" in values and "{{item}}" not in values, t["name"]
    out = {p["name"]: p for p in local["expand-matrix"]["outputs"]["parameters"]}
    args = local["expand-matrix"]["container"]["args"]
    assert out["cells"]["valueFrom"]["path"] == args[args.index("--items") + 1]
    assert out["sweep-id"]["valueFrom"]["path"] == args[args.index("--sweep-id-file") + 1]


def test_a_cell_looked_up_by_id_is_the_cell_its_json_gives(tmp_path):
    """Every cell step gets the cell id and the workflow's parameters: the (sweep, cell) it resolves equals what the
    cell's full JSON (the former fan-out item) gives. An id the sweep does not have is an error that says so."""
    from edgebench.cli.phases import cell_of as _cell_of
    from edgebench.errors import SpecError
    from edgebench.plan.cells import from_json, runs_for

    items, sweep_id, cells, argo_json = _argo_cells(tmp_path)
    for item, cell in zip(items, cells):
        s, c = _cell_of(None, item["cell"], argo_json, "edgebench-sweep-abcde")
        s0, c0 = from_json(cell)
        assert (c, s.raw) == (c0, s0.raw) and c.sweep_id == sweep_id
        assert [r.prefix for r in runs_for(s, c)] == [r.prefix for r in runs_for(s0, c0)]
    with pytest.raises(SpecError, match="no cell 'c-0000000000'"):
        _cell_of(None, "c-0000000000", argo_json, "edgebench-sweep-abcde")
    with pytest.raises(SpecError, match="--cell-id with --argo-parameters"):
        _cell_of(None, items[0]["cell"], None, None)


def test_expand_matrix_stores_the_plan_that_status_reads(tmp_path):
    """expand-matrix writes the sweep's record to sweeps/<sweep id>/sweep.json (the `plan` artifact, key-only
    under `sweeps`): `edgebench status` reads every fanned-out cell and its runs from it."""
    from edgebench.plan.cells import from_json, runs_for
    from edgebench.results.report import sweep_status

    items, sweep_id, cells, _ = _argo_cells(tmp_path)
    t = {x["name"]: x for x in TEMPLATES["sweep"]["spec"]["templates"]}["expand-matrix"]
    (art,) = t["outputs"]["artifacts"]
    args = t["container"]["args"]
    assert art["path"] == args[args.index("--plan-dir") + 1] and art["s3"] == {"key": "sweeps"} and "none" in art["archive"]
    record = json.loads((tmp_path / "plan" / sweep_id / "sweep.json").read_text())
    planned = sweep_status._planned(record)
    assert [c.cell_id for c in planned] == [i["cell"] for i in items]
    assert [len(c.planned) for c in planned] == [len(runs_for(*from_json(c))) for c in cells]
