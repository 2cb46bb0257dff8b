"""Offline validation of Kubernetes manifests (a helper module for the tests, not a test file).

    from manifest_validation import load_yaml_docs, validate, find_problems

    for obj in load_yaml_docs("templates/cell-phase.yaml"):
        validate(obj, source="templates/cell-phase.yaml")   # raises ManifestError listing every problem

What is checked, by the object's apiVersion group and kind:

* Argo Workflows kinds (Workflow, WorkflowTemplate, ClusterWorkflowTemplate, CronWorkflow, WorkflowEventBinding):
  the JSON Schema (draft 2020-12) of argo-workflows (v4.1.2 vendored, else the v3.7.9 module), with IntOrString
  patched to accept integers as Kubernetes does (likewise resource Quantity, e.g. `cpu: 1`); then *strict*
  unknown-field detection against the CRD openAPIV3Schema (the vendored install.yaml, or the module's full CRDs),
  honouring x-kubernetes-preserve-unknown-fields, and, for `metadata`, against ObjectMeta.
  The JSON schema alone accepts `contaner:`; the strict walk does not. Then the rules the workflow controller
  checks at submission that no schema states (`_controller_rules`, found on a real controller by `make e2e-argo`).
* Argo Events kinds (EventSource, Sensor, EventBus): the JSON Schema (draft 7) plus the same strict walk
  over its definitions (the Events CRDs preserve unknown fields, so they cannot catch typos).
* Built-in Kubernetes kinds (core, apps, rbac, batch, policy, ...): the `kubernetes-validate` package against
  Kubernetes K8S_SCHEMA_VERSION in strict mode (unknown fields rejected).
* Anything else is an error ("no schema"), so a typo in apiVersion or kind does not slip through.

The Argo schemas and CRDs come from argo_schemas.py: ../shared/vendor's pinned releases where present, else the
pinned Go modules (argo-workflows/v3 v3.7.9, argo-events v1.9.11) in the Go module cache; a test that needs one that
neither place has is skipped with the reason. Loading is cached per process (the workflows CRDs take ~2 s).
"""
from __future__ import annotations

import copy
import functools
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

import jsonschema
import pytest
import yaml

import argo_schemas

REPO = Path(__file__).resolve().parents[1]
ARGO_WORKFLOWS_VERSION = argo_schemas.ARGO_WORKFLOWS_VERSION  # the pinned releases
ARGO_EVENTS_VERSION = argo_schemas.ARGO_EVENTS_VERSION
K8S_SCHEMA_VERSION = "1.33"  # the kind management cluster's node image (kindest/node:v1.33.x)

WORKFLOW_KINDS = frozenset({"Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow",
                            "WorkflowEventBinding"})
EVENTS_KINDS = frozenset({"EventSource", "Sensor", "EventBus"})
# API groups served by Kubernetes itself (validated with kubernetes-validate); "" is the core group.
BUILTIN_GROUPS = frozenset({"", "apps", "batch", "rbac.authorization.k8s.io", "policy", "networking.k8s.io",
                            "autoscaling", "scheduling.k8s.io", "storage.k8s.io", "coordination.k8s.io",
                            "apiextensions.k8s.io", "admissionregistration.k8s.io", "discovery.k8s.io",
                            "node.k8s.io", "certificates.k8s.io"})
_MAX_PROBLEMS = 25


class ManifestError(ValueError):
    """A manifest failed validation; `.problems` lists every finding as '<field path>: <message>'."""

    def __init__(self, obj_id: str, problems: list[str]):
        self.obj_id, self.problems = obj_id, problems
        super().__init__(f"{obj_id}: {len(problems)} problem(s)\n  - " + "\n  - ".join(problems))


# ---------------------------------------------------------------------------------------------- loading
def schema_source(family: str) -> argo_schemas.Source:
    """Where the "workflows" or "events" schemas come from; skips the calling test when nowhere has them."""
    try:
        return argo_schemas.source(family)
    except argo_schemas.Unavailable as e:
        pytest.skip(str(e))


def load_yaml_docs(src: str | os.PathLike | bytes) -> list[dict]:
    """All non-empty YAML documents of a file (a Path, or a str naming an existing file) or of YAML text.

    `kind: List` documents are flattened into their items."""
    if isinstance(src, bytes):
        text = src.decode()
    elif isinstance(src, os.PathLike) or (isinstance(src, str) and "\n" not in src and Path(src).is_file()):
        text = Path(src).read_text()
    else:
        text = str(src)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: list[dict] = []
    for doc in yaml.load_all(text, Loader=loader):
        if doc is None:
            continue
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out.extend(doc["items"])
        else:
            out.append(doc)
    return out


@functools.lru_cache(maxsize=None)
def _json(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


@functools.lru_cache(maxsize=None)
def _crd_schemas(files: tuple[Path, ...]) -> dict[str, dict]:
    """kind -> openAPIV3Schema of the served version of every CRD in some YAML files (an install.yaml)."""
    out = {}
    for doc in (d for f in files for d in load_yaml_docs(f)):
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            version = next(v for v in doc["spec"]["versions"] if v.get("served", True))
            out[doc["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return out


def _definition_name(definitions: dict, kind: str, prefix: str) -> str:
    name = f"{prefix}.{kind}"
    if name not in definitions:
        raise KeyError(f"{kind} not found in the schema ({prefix}.*)")
    return name


@functools.lru_cache(maxsize=None)
def _workflows_schema() -> dict:
    schema = copy.deepcopy(_json(str(schema_source("workflows").schema)))
    # Quirk: IntOrString is typed "string" only; Kubernetes and upstream examples also use integers.
    schema["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {
        "type": ["integer", "string"], "format": "int-or-string"}
    # Same for resource quantities (`cpu: 1`), which Kubernetes accepts as numbers too.
    schema["definitions"]["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {"type": ["number", "string"]}
    return schema


@functools.lru_cache(maxsize=None)
def _events_schema() -> dict:
    return _json(str(schema_source("events").schema))


@functools.lru_cache(maxsize=None)
def _validator(family: str, kind: str) -> jsonschema.protocols.Validator:
    if family == "workflows":
        full, prefix, cls = _workflows_schema(), "io.argoproj.workflow.v1alpha1", jsonschema.Draft202012Validator
    else:
        full, prefix, cls = _events_schema(), "io.argoproj.events.v1alpha1", jsonschema.Draft7Validator
    # definitions are referenced as "#/definitions/<name>": keep them in the root document.
    root = {"definitions": full["definitions"], "$ref": f"#/definitions/{_definition_name(full['definitions'], kind, prefix)}"}
    return cls(root)


# ---------------------------------------------------------------------------------------------- helpers
def _path(parts: Iterable[Any]) -> str:
    s = ""
    for p in parts:
        s += f"[{p}]" if isinstance(p, int) else (f".{p}" if s else str(p))
    return s or "<root>"


def object_id(obj: Any, source: str | None = None) -> str:
    if not isinstance(obj, dict):
        return f"<{type(obj).__name__}>" + (f" in {source}" if source else "")
    md = obj.get("metadata") or {}
    name = md.get("name") or md.get("generateName") or "<unnamed>"
    ns = f"{md['namespace']}/" if md.get("namespace") else ""
    return f"{obj.get('kind', '<no kind>')} {ns}{name}" + (f" ({source})" if source else "")


def _schema_errors(validator, obj: dict) -> list[str]:
    out = []
    for err in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        if err.context:  # oneOf/anyOf: report the most relevant branch
            err = jsonschema.exceptions.best_match(err.context)
        out.append(f"{_path(err.absolute_path)}: {err.message[:300]}")
    return out


def _unknown_fields(value: Any, schema: Any, path: list, resolve, out: list[str]) -> None:
    """Report keys of `value` that `schema` (CRD openAPIV3Schema or JSON Schema with $refs) does not declare."""
    schema = resolve(schema)
    if not isinstance(schema, dict):
        return
    branches = [resolve(s) for key in ("allOf", "anyOf", "oneOf") for s in schema.get(key, [])]
    if isinstance(value, dict):
        props = dict(schema.get("properties") or {})
        for b in branches:
            if isinstance(b, dict):
                props.update(b.get("properties") or {})
        extra = schema.get("additionalProperties")
        open_ended = schema.get("x-kubernetes-preserve-unknown-fields") or extra is True
        if not props and not isinstance(extra, dict):
            return  # a free-form object: nothing declared, nothing to check
        for key, sub in value.items():
            if key in props:
                _unknown_fields(sub, props[key], path + [key], resolve, out)
            elif isinstance(extra, dict):
                _unknown_fields(sub, extra, path + [key], resolve, out)
            elif not open_ended:
                hint = sorted(props)
                out.append(f"{_path(path + [key])}: unknown field {key!r} (known here: {', '.join(hint[:40])})")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _unknown_fields(item, schema["items"], path + [i], resolve, out)


def _resolver(definitions: dict):
    def resolve(schema):
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 50:
            schema = definitions.get(schema["$ref"].rsplit("/", 1)[-1], {})
            seen += 1
        return schema
    return resolve


def _strict_argo(obj: dict, family: str) -> list[str]:
    out: list[str] = []
    kind = obj["kind"]
    if family == "workflows":
        defs = _workflows_schema()["definitions"]
        resolve = _resolver(defs)
        src = schema_source("workflows")
        crd = _crd_schemas(src.crd_files).get(kind)
        if crd is None:
            return [f"<root>: no CRD for {kind} in {src.describe()}"]
        body = {k: v for k, v in obj.items() if k != "metadata"}
        _unknown_fields(body, crd, [], resolve, out)
        _unknown_fields(obj.get("metadata"), {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
                        ["metadata"], resolve, out)
    else:
        defs = _events_schema()["definitions"]
        resolve = _resolver(defs)
        _unknown_fields(obj, {"$ref": f"#/definitions/io.argoproj.events.v1alpha1.{kind}"}, [], resolve, out)
    return out


def _builtin_problems(obj: dict) -> list[str]:
    import kubernetes_validate  # imported lazily: only needed for built-in kinds

    try:
        kubernetes_validate.validate(obj, K8S_SCHEMA_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{_path(e.path)}: {e.message[:300]}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"<root>: {e.message}"]
    return []


# ---------------------------------------------------------------------------------------------- public API
def _workflow_spec(obj: dict) -> dict:
    spec = obj.get("spec") or {}
    return (spec.get("workflowSpec") or {}) if obj.get("kind") == "CronWorkflow" else spec


def _controller_rules(obj: dict) -> list[str]:
    """Rules the workflow controller enforces when it validates a workflow, which the JSON schema cannot express
    (each found by running the templates on a real controller: scripts/e2e-argo, `make e2e-argo`)."""
    out = []
    spec = _workflow_spec(obj)
    base = "spec.workflowSpec" if obj.get("kind") == "CronWorkflow" else "spec"
    for i, t in enumerate(spec.get("templates") or []):
        if not isinstance(t, dict):
            continue
        # v3.7.9: "templates.<name>.activeDeadlineSeconds is only valid for leaf templates"; a DAG or steps
        # template is bounded by the workflow's spec.activeDeadlineSeconds instead
        if "activeDeadlineSeconds" in t and ("dag" in t or "steps" in t):
            out.append(f"{base}.templates[{i}].activeDeadlineSeconds: only valid for leaf templates "
                       f"(template {t.get('name')!r} is a {'dag' if 'dag' in t else 'steps'} template)")
        # "failed to resolve {{inputs.parameters.x}}": a template uses only the inputs it declares
        declared = {p.get("name") for p in (t.get("inputs") or {}).get("parameters") or []}
        for used in sorted(set(re.findall(r"\{\{\s*inputs\.parameters\.([A-Za-z0-9_-]+)\s*\}\}", json.dumps(t)))):
            if used not in declared:
                out.append(f"{base}.templates[{i}]: {{{{inputs.parameters.{used}}}}} is not an input of template "
                           f"{t.get('name')!r} (the controller fails to resolve it)")
        tasks = (t.get("dag") or {}).get("tasks") or [s for group in t.get("steps") or [] for s in group]
        for j, task in enumerate(tasks):
            hook = ((task or {}).get("hooks") or {}).get("exit")
            if not hook:
                continue
            where = f"{base}.templates[{i}] task {task.get('name')!r}: exit hook"
            # v3.7.9 left {{item}} unresolved in the arguments of a fanned-out task's hook
            if "{{item" in json.dumps(hook.get("arguments") or {}):
                out.append(f"{where} arguments use {{{{item}}}}, which the controller does not resolve there "
                           "(pass the item into a template and hook a task inside it)")
            # ... and ran the hook of a task its `when` had skipped
            if "when" in task:
                out.append(f"{where} on a task with `when`: the controller runs it even when the task is skipped")
    return out


def find_problems(obj: Any, *, strict: bool = True) -> list[str]:
    """Every problem of one Kubernetes object as '<field path>: <message>' (empty list: valid)."""
    if not isinstance(obj, dict):
        return [f"<root>: expected a mapping (a Kubernetes object), got {type(obj).__name__}"]
    problems = [f"{f}: required" for f in ("apiVersion", "kind", "metadata") if not obj.get(f)]
    if problems:
        return problems
    md = obj["metadata"]
    if not isinstance(md, dict) or not (md.get("name") or md.get("generateName")):
        return ["metadata.name: required (or metadata.generateName)"]
    api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    if group == "argoproj.io" and kind in WORKFLOW_KINDS | EVENTS_KINDS:
        family = "workflows" if kind in WORKFLOW_KINDS else "events"
        problems = _schema_errors(_validator(family, kind), obj)
        if strict:
            problems += [p for p in _strict_argo(obj, family) if p not in problems]
        if family == "workflows":
            problems += _controller_rules(obj)
    elif group in BUILTIN_GROUPS:
        problems = _builtin_problems(obj)
    else:
        problems = [f"<root>: no schema known for apiVersion {api_version!r} kind {kind!r} "
                    "(Argo Workflows/Events kinds and built-in Kubernetes kinds are supported)"]
    return problems[:_MAX_PROBLEMS]


def validate(obj: Any, *, source: str | None = None, strict: bool = True) -> None:
    """Raise ManifestError (naming the object, and `source` if given) unless `obj` is valid."""
    problems = find_problems(obj, strict=strict)
    if problems:
        raise ManifestError(object_id(obj, source), problems)


def validate_all(objs: Iterable[Any], *, source: str | None = None, strict: bool = True) -> int:
    """Validate several objects; raise one ManifestError covering all failures. Returns how many were checked."""
    failures, n = [], 0
    for n, obj in enumerate(objs, 1):
        for p in find_problems(obj, strict=strict):
            failures.append(f"{object_id(obj)}: {p}")
    if failures:
        raise ManifestError(source or "manifests", failures)
    return n


def validate_schema_definition(value: Any, definition: str, family: str = "workflows") -> list[str]:
    """Problems of a fragment against one named definition (e.g. the artifact repository in a ConfigMap):
    JSON Schema errors plus unknown fields."""
    full = _workflows_schema() if family == "workflows" else _events_schema()
    cls = jsonschema.Draft202012Validator if family == "workflows" else jsonschema.Draft7Validator
    ref = {"$ref": f"#/definitions/{definition}"}
    problems = _schema_errors(cls({"definitions": full["definitions"], **ref}), value)
    _unknown_fields(value, ref, [], _resolver(full["definitions"]), problems)
    return problems
