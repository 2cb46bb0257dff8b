"""Reruns on new CNI versions on a management cluster (Argo Events), offline.

The probe (WorkflowTemplate version-probe, CronWorkflow edgebench-version-probe) records a newer version in ConfigMap
edgebench-cni-version-<cni>; the resource EventSource edgebench-cni-versions sees the update; the Sensor
edgebench-rerun submits the `sweep` WorkflowTemplate with `cnis` and `trigger` from the event (also from the CI
webhook EventSource edgebench-ci). Checked here:
  * the objects build with kustomize and validate (vendored schemas, strict), and agree with each other and with the
    catalog (one ConfigMap per CNI with a release source, the probe's Role and volume, the Sensor's filters);
  * every identity has exactly the verbs its part needs;
  * an event payload becomes the sweep's parameters: rendered the way Argo Events applies `src.dataKey` -> `dest`
    (a Python rendering, always; and Argo Events' own code through edgebench-events-render when built), and the
    resulting Workflow's arguments validate with edgebench.plan.spec and name only the changed CNI's modes;
  * the real `argo-events lint` (v1.9.11, built by `make events-tools`) accepts the EventSources and the Sensor.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import manifest_validation as mv
from edgebench import sh
from edgebench.plan import versions
from edgebench.cli import app
from edgebench.errors import SpecError
from edgebench.plan import spec
from test_kustomize import KUSTOMIZE, by_kind, kustomize_build

REPO = mv.REPO
EVENTS = KUSTOMIZE / "base" / "events"
SENSOR_FILE = EVENTS / "edgebench-rerun-sensor.yaml"
TOOLS = Path(os.environ.get("EDGEBENCH_TOOLS", Path.home() / ".local/share/edgebench/tools"))
CNIS_WITH_RELEASES = list(versions.catalog_sources())
SWEEP_TEMPLATE = yaml.safe_load((REPO / "templates" / "sweep.yaml").read_text())
PROBE_TEMPLATE = yaml.safe_load((REPO / "templates" / "version-probe.yaml").read_text())


@pytest.fixture(scope="module")
def base() -> list[dict]:
    return kustomize_build(KUSTOMIZE / "base")


def one(objs, kind, name):
    (obj,) = by_kind(objs, kind, name)
    return obj


# ------------------------------------------------------------------------------------------------ the objects
def test_objects_build_and_validate(base):
    names = {(o["kind"], o["metadata"]["name"]) for o in base}
    expected = {("EventSource", "edgebench-cni-versions"), ("EventSource", "edgebench-ci"),
                ("Sensor", "edgebench-rerun"), ("CronWorkflow", "edgebench-version-probe"),
                ("WorkflowTemplate", "version-probe"), ("EventBus", "default"),
                *{("ConfigMap", versions.CONFIGMAP_PREFIX + c) for c in CNIS_WITH_RELEASES}}
    assert expected <= names
    mv.validate_all([o for o in base if (o["kind"], o["metadata"]["name"]) in expected], source="events")
    for path in sorted(EVENTS.glob("*.yaml")):
        (doc,) = mv.load_yaml_docs(path)  # one object per file
        mv.validate(doc, source=str(path))


def test_strict_validation_catches_a_typo_in_the_sensor():
    (sensor,) = mv.load_yaml_docs(SENSOR_FILE)
    bad = copy.deepcopy(sensor)
    bad["spec"]["triggers"][0]["template"]["argoWorkflow"]["parameters"][0]["src"]["datakey"] = "body"
    with pytest.raises(mv.ManifestError, match="datakey"):
        mv.validate(bad)


def test_one_version_configmap_per_cni_with_a_release_source(base):
    cms = [o for o in by_kind(base, "ConfigMap") if o["metadata"]["name"].startswith(versions.CONFIGMAP_PREFIX)]
    assert sorted(c["metadata"]["name"] for c in cms) == sorted(versions.CONFIGMAP_PREFIX + c for c in CNIS_WITH_RELEASES)
    for cm in cms:
        assert cm["metadata"]["labels"][versions.CONFIGMAP_LABEL] == "true"
        # only `cni`: re-applying the install never resets a recorded version
        assert cm["data"] == {"cni": cm["metadata"]["name"].removeprefix(versions.CONFIGMAP_PREFIX)}


def test_resource_eventsource_watches_exactly_the_version_configmaps(base):
    es = one(base, "EventSource", "edgebench-cni-versions")
    (name, res), = es["spec"]["resource"].items()
    assert name == "recorded"
    assert (res["namespace"], res["group"], res["version"], res["resource"]) == ("edgebench", "", "v1", "configmaps")
    assert res["eventTypes"] == ["UPDATE"]  # no ADD: a restart's initial list must not re-trigger old versions
    assert res["filter"]["labels"] == [{"key": versions.CONFIGMAP_LABEL, "operation": "==", "value": "true"}]


def test_webhook_eventsource_needs_a_token_and_no_api_access(base):
    es = one(base, "EventSource", "edgebench-ci")
    (name, hook), = es["spec"]["webhook"].items()
    assert name == "cni-version" and hook["method"] == "POST" and hook["port"] == "12000"
    assert hook["authSecret"] == {"name": "edgebench-webhook-token", "key": "token"}
    assert not by_kind(base, "Secret", "edgebench-webhook-token"), "the token is created by hand, never committed"
    assert es["spec"]["service"]["ports"] == [{"port": 12000, "targetPort": 12000}]
    assert 0 < hook["maxPayloadSize"] <= 1 << 20


def test_probe_schedule_and_template(base):
    cron = one(base, "CronWorkflow", "edgebench-version-probe")
    assert cron["spec"]["workflowSpec"] == {"workflowTemplateRef": {"name": "version-probe"}}
    assert cron["spec"]["concurrencyPolicy"] == "Forbid" and cron["spec"]["schedules"]
    wt = one(base, "WorkflowTemplate", "version-probe")["spec"]
    assert wt["serviceAccountName"] == "edgebench-version-probe"
    t = {x["name"]: x for x in wt["templates"]}
    args = t["check"]["container"]["args"]
    assert args[:2] == ["versions", "check"]
    mount = t["check"]["container"]["volumeMounts"][0]
    assert args[args.index("--known") + 1] == mount["mountPath"] and mount["readOnly"]
    assert args[args.index("--record") + 1] == t["check"]["outputs"]["parameters"][0]["valueFrom"]["path"]
    sources = [s["configMap"] for s in t["check"]["volumes"][0]["projected"]["sources"]]
    assert [s["name"] for s in sources] == [versions.CONFIGMAP_PREFIX + c for c in CNIS_WITH_RELEASES]
    assert all(s["optional"] and s["items"] == [{"key": "version", "path": s["name"].removeprefix(versions.CONFIGMAP_PREFIX)}]
               for s in sources)
    assert t["record"]["resource"] == {"action": "patch", "mergeStrategy": "merge",
                                       "manifest": "{{inputs.parameters.configmap}}"}
    step = t["probe"]["steps"][1][0]
    assert step["withParam"] == "{{steps.check.outputs.parameters.records}}"
    cnis = {p["name"]: p["value"] for p in wt["arguments"]["parameters"]}["cnis"]
    assert cnis == spec.DEFAULTS["cnis"], "the probe watches the default sweep's CNI modes"


# ------------------------------------------------------------------------------------------------ least privilege
def _rules(objs, name):
    return one(objs, "Role", name)["rules"]


def test_every_identity_has_exactly_what_it_needs(base):
    # the sensor: argo submit gets the template and creates the workflow, the trigger lists it (test_kustomize)
    assert _rules(base, "edgebench-sensor")[0]["verbs"] == ["create", "list"]
    # the resource EventSource's informer
    assert _rules(base, "edgebench-version-watch") == [{"apiGroups": [""], "resources": ["configmaps"],
                                                        "verbs": ["list", "watch"]}]
    # the probe: patch its ConfigMaps by name (kubectl reads what it patches), report outputs
    probe = _rules(base, "edgebench-version-probe")
    assert probe == [{"apiGroups": [""], "resources": ["configmaps"],
                      "resourceNames": [versions.CONFIGMAP_PREFIX + c for c in CNIS_WITH_RELEASES],
                      "verbs": ["get", "patch"]},
                     {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]}]
    # the webhook: no API access at all
    sa = one(base, "ServiceAccount", "edgebench-webhook")
    assert sa["automountServiceAccountToken"] is False
    assert not [rb for rb in by_kind(base, "RoleBinding") if any(s["name"] == "edgebench-webhook" for s in rb["subjects"])]
    # each part runs as its own identity
    sas = {o["metadata"]["name"] for o in by_kind(base, "ServiceAccount")}
    for kind, name, account in [("EventSource", "edgebench-cni-versions", "edgebench-version-watch"),
                                ("EventSource", "edgebench-ci", "edgebench-webhook"),
                                ("Sensor", "edgebench-rerun", "edgebench-sensor")]:
        assert one(base, kind, name)["spec"]["template"]["serviceAccountName"] == account and account in sas
    for role in by_kind(base, "Role"):
        for rule in role["rules"]:
            assert not {"delete", "deletecollection", "update", "*"} & set(rule["verbs"]), role["metadata"]["name"]


# ------------------------------------------------------------------------------------------------ the Sensor
def _sensor() -> dict:
    (doc,) = mv.load_yaml_docs(SENSOR_FILE)
    return doc


def _alternatives(pattern: str) -> list[str]:
    m = re.fullmatch(r"\^\((.*)\)\$", pattern)
    assert m, pattern
    return m.group(1).split("|")


def test_sensor_is_consistent(base):
    sensor = one(base, "Sensor", "edgebench-rerun")["spec"]
    deps = {d["name"]: d for d in sensor["dependencies"]}
    sources = {es["metadata"]["name"]: es["spec"] for es in by_kind(base, "EventSource")}
    for d in deps.values():
        es = sources[d["eventSourceName"]]
        assert any(d["eventName"] in es.get(kind, {}) for kind in ("resource", "webhook")), d
        for f in d["filters"]["data"]:
            if f["path"].endswith(".cni"):  # the CNIs it accepts are exactly those with a release source
                assert sorted(_alternatives(f["value"][0])) == sorted(CNIS_WITH_RELEASES)
    sweep_params = [p["name"] for p in SWEEP_TEMPLATE["spec"]["arguments"]["parameters"]]
    assert {t["template"]["conditions"] for t in sensor["triggers"]} == set(deps)
    for t in sensor["triggers"]:
        wf = t["template"]["argoWorkflow"]
        assert wf["operation"] == "submit"
        res = wf["source"]["resource"]
        assert res["kind"] == "Workflow" and res["spec"]["workflowTemplateRef"] == {"name": "sweep"}
        listed = [p["name"] for p in res["spec"]["arguments"]["parameters"]]
        assert listed == ["cnis", "trigger", "cni-versions"] and set(listed) <= set(sweep_params)
        for p in wf["parameters"]:
            assert p["src"]["dependencyName"] == t["template"]["conditions"]
            index = int(re.fullmatch(r"spec\.arguments\.parameters\.(\d+)\.value", p["dest"]).group(1))
            assert listed[index] == p["src"]["dataKey"].rsplit(".", 1)[1]  # body[.data].cnis -> cnis, ... -> trigger
        # at-least-once delivery, retries with backoff, a rate limit
        assert t["atLeastOnce"] is True
        assert t["retryStrategy"]["steps"] >= 2 and t["retryStrategy"]["factor"] > 1
        assert t["rateLimit"]["unit"] in ("Second", "Minute", "Hour") and t["rateLimit"]["requestsPerUnit"] > 0


@pytest.mark.parametrize("text", ["v3.31.8", "1.18.1", "v2.11", "1.19.0-rc.1", "1.2.3+k3s1", "v3.32.0-0.dev",
                                  "latest", "v3", "3.x.1", "v1.2.3.4", "main", "", "1.2.3-", "v 1.2.3"])
def test_sensor_version_filter_agrees_with_edgebench(text):
    for dep in _sensor()["spec"]["dependencies"]:
        (f,) = [f for f in dep["filters"]["data"] if f["path"].endswith((".version", ".new"))]
        assert bool(re.search(f["value"][0], text)) == versions.is_version(text), (dep["name"], text)


# a Python rendering of what the sensor does with an event (argo-events v1.9.11 pkg/sensors/triggers/params.go and
# pkg/sensors/dependencies/filter.go, for the parts this Sensor uses: string data filters, dataKey -> dest). The Lua
# script filter is not evaluated here; edgebench-events-render runs it with Argo Events' own code.
_MISSING = object()


def gjson_get(doc, path: str):
    """gjson's dotted path (keys, array indexes; `\\.` escapes a dot); _MISSING when absent."""
    cur = doc
    for key in re.split(r"(?<!\\)\.", path):
        key = key.replace("\\.", ".")
        if isinstance(cur, dict) and key in cur:
            cur = cur[key]
        elif isinstance(cur, list) and key.isdigit() and int(key) < len(cur):
            cur = cur[int(key)]
        else:
            return _MISSING
    return cur


def param_string(value) -> str:
    """getValueByKey: a JSON block as its JSON text, null as "null", a string as itself, else its JSON text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def sjson_set(obj, path: str, value: str) -> None:
    keys = path.split(".")
    cur = obj
    for key in keys[:-1]:
        cur = cur[int(key)] if isinstance(cur, list) else cur[key]
    last = keys[-1]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value


def data_filters_pass(filters: list[dict], data: dict) -> bool:
    for f in filters:
        found = gjson_get(data, f["path"])
        if found is _MISSING or f["type"] != "string":
            return False
        if not any(re.search(v, param_string(found)) for v in f["value"]):
            return False
    return True


def render(sensor: dict, dependency: str, data: dict) -> dict[str, dict]:
    """{trigger name: the Workflow it submits} for one event of `dependency`; {} when the filters reject it."""
    (dep,) = [d for d in sensor["spec"]["dependencies"] if d["name"] == dependency]
    if not data_filters_pass(dep.get("filters", {}).get("data", []), data):
        return {}
    out = {}
    for t in sensor["spec"]["triggers"]:
        if dependency not in [c.strip() for c in t["template"]["conditions"].split("||")]:
            continue
        wf = copy.deepcopy(t["template"]["argoWorkflow"]["source"]["resource"])
        for p in t["template"]["argoWorkflow"]["parameters"]:
            value = gjson_get(data, p["src"]["dataKey"])
            if value is _MISSING and "value" in p["src"]:
                value = p["src"]["value"]  # the source's default, used only when the dataKey is absent
            assert value is not _MISSING, p  # argo-events: an error (the trigger fails), here: a test failure
            sjson_set(wf, p["dest"], param_string(value))
        out[t["template"]["name"]] = wf
    return out


# ------------------------------------------------------------------------------------------------ payloads
BUMPED = "v3.31.8"


def _bumped_calico_index() -> bytes:
    index = yaml.safe_load((REPO / "tests/data/versions/calico-index.yaml").read_text())
    entry = copy.deepcopy(index["entries"]["tigera-operator"][1])
    entry.update(version=BUMPED, appVersion=BUMPED, urls=[entry["urls"][0].replace("v3.31.7", BUMPED)])
    index["entries"]["tigera-operator"].insert(0, entry)
    return yaml.safe_dump(index).encode()


def probe_records(known: dict[str, str] | None = None) -> list[dict]:
    """What the probe's check step writes (`edgebench versions check --record`) when calico has a newer release."""
    srcs = {"calico": versions.Source("calico", "helm", "https://docs.tigera.io/calico/charts", "tigera-operator")}
    entries = spec.PARAMS["cnis"].parse("cnis", spec.DEFAULTS["cnis"])
    sts = versions.check(entries, srcs, lambda url: _bumped_calico_index(), known=known)
    return [versions.configmap_record(s, s.trigger("2026-07-14T06:17:00Z")) for s in sts if s.newer]


def resource_event(base: list[dict], record: dict) -> dict:
    """The resource EventSource's event data for the probe's merge patch of the base ConfigMap."""
    old = copy.deepcopy(one(base, "ConfigMap", record["metadata"]["name"]))
    old["metadata"].update(namespace="edgebench", resourceVersion="1001")
    new = copy.deepcopy(old)
    new["data"].update(record["data"])
    new["metadata"]["resourceVersion"] = "1002"
    return {"type": "UPDATE", "body": new, "oldBody": old, "group": "", "version": "v1", "resource": "configmaps"}


CI_BODY = {"cnis": ["calico:bgp", "calico:vxlan"],
           "trigger": {"cni": "calico", "new": BUMPED, "previous": "v3.31.7", "source": "ci", "at": "2026-07-14T06:00:00Z"}}


def ci_event(body: dict) -> dict:
    return {"header": {"Content-Type": ["application/json"], "Authorization": ["Bearer redacted"]}, "body": body}


def sweep_of(workflow: dict) -> spec.Sweep:
    """The sweep Argo runs: the template's defaults with the submitted Workflow's arguments on top (what
    `edgebench cells --argo-parameters {{workflow.parameters.json}}` validates in expand-matrix)."""
    mv.validate(workflow, source="rendered by the sensor")
    raw = {p["name"]: str(p["value"]) for p in SWEEP_TEMPLATE["spec"]["arguments"]["parameters"]}
    raw.update({p["name"]: p["value"] for p in workflow["spec"]["arguments"]["parameters"]})
    return spec.from_parameters(raw, source="rerun workflow")


def test_probe_record_patches_the_base_configmap_into_a_valid_one(base):
    (record,) = probe_records()
    assert record["metadata"]["name"] == "edgebench-cni-version-calico"
    assert set(record["data"]) == {"cni", "version", "cnis", "trigger", "cni-versions"}
    assert record["data"]["version"] == BUMPED and json.loads(record["data"]["cni-versions"]) == ["v3.31.7", BUMPED]
    mv.validate(resource_event(base, record)["body"])
    # once recorded (the ConfigMap mount the probe reads), the same release is not recorded again
    assert probe_records(known={"calico": BUMPED}) == []


def test_probe_event_becomes_a_sweep_of_only_the_changed_modes(base):
    (record,) = probe_records()
    wfs = render(_sensor(), "cni-version-recorded", resource_event(base, record))
    assert list(wfs) == ["rerun-recorded-version"]
    sweep = sweep_of(wfs["rerun-recorded-version"])
    assert [cm.key for cm in sweep.values["cnis"]] == ["calico:bgp", "calico:vxlan", "calico:ipip"]
    assert sweep.values["trigger"] == {"cni": "calico", "new": BUMPED, "previous": "v3.31.7",
                                       "source": "https://docs.tigera.io/calico/charts/index.yaml",
                                       "at": "2026-07-14T06:17:00Z"}
    assert sweep.values["substrate"] == "ssh" and sweep.sweep_id.startswith("ssh-calico-v3-31-8-")
    # a paired rerun: every mode at the previous and the new version, interleaved by round in this one sweep
    assert sweep.values["cni-versions"] == ["v3.31.7", BUMPED]


def test_ci_event_becomes_a_sweep_of_only_the_changed_modes():
    wfs = render(_sensor(), "ci-version-bump", ci_event(CI_BODY))
    assert list(wfs) == ["rerun-ci-version"]
    sweep = sweep_of(wfs["rerun-ci-version"])
    assert [cm.key for cm in sweep.values["cnis"]] == ["calico:bgp", "calico:vxlan"]
    assert sweep.values["trigger"]["new"] == BUMPED and sweep.values["trigger"]["source"] == "ci"
    assert sweep.values["cni-versions"] == ["default"]  # the payload says no pair: the new version alone
    paired = render(_sensor(), "ci-version-bump", ci_event({**CI_BODY, "cni-versions": ["v3.31.7", BUMPED]}))
    assert sweep_of(paired["rerun-ci-version"]).values["cni-versions"] == ["v3.31.7", BUMPED]


def test_expand_matrix_of_the_rerun_keeps_the_trigger_id(base):
    """What the sweep's first step does with the submitted Workflow: cells of the changed modes only, all under the
    trigger's sweep id (not the random workflow name), so a redelivered event maps to the same keys."""
    (record,) = probe_records()
    wf = render(_sensor(), "cni-version-recorded", resource_event(base, record))["rerun-recorded-version"]
    params = {p["name"]: p for p in copy.deepcopy(SWEEP_TEMPLATE["spec"]["arguments"]["parameters"])}
    for p in wf["spec"]["arguments"]["parameters"]:
        params[p["name"]]["value"] = p["value"]
    res = CliRunner().invoke(app, ["cells", "--argo-parameters", json.dumps(list(params.values())),
                                   "--default-sweep-id", "edgebench-rerun-q8x2z"])
    assert res.exit_code == 0, res.output
    cells = json.loads(res.stdout)
    assert {(c["cni"], c["cni_mode"]) for c in cells} == {("calico", "bgp"), ("calico", "vxlan"), ("calico", "ipip")}
    assert {c["sweep_id"] for c in cells} == {sweep_of(wf).sweep_id}


@pytest.mark.parametrize("mutate", [
    lambda b: b["trigger"].update(cni="nope"),            # an unknown CNI
    lambda b: b["trigger"].update(new="latest"),          # a version that is not a version
    lambda b: b["trigger"].pop("new"),                    # no version at all
    lambda b: b.pop("trigger"),
], ids=["unknown-cni", "not-a-version", "no-version", "no-trigger"])
def test_bad_ci_payload_is_rejected_at_the_dependency(mutate):
    body = copy.deepcopy(CI_BODY)
    mutate(body)
    assert render(_sensor(), "ci-version-bump", ci_event(body)) == {}


def test_bad_probe_payload_is_rejected_at_the_dependency(base):
    (record,) = probe_records()
    event = resource_event(base, record)
    event["body"]["data"]["version"] = "next"
    assert render(_sensor(), "cni-version-recorded", event) == {}
    event["body"]["data"].pop("version")
    assert render(_sensor(), "cni-version-recorded", event) == {}


def test_payload_past_the_filters_naming_other_cnis_starts_no_sweep():
    """cnis that name another CNI than the trigger's pass the dependency filters, but expand-matrix rejects them
    (one message, exit 2) before any cell step exists."""
    body = copy.deepcopy(CI_BODY)
    body["cnis"] = ["calico:bgp", "flannel:vxlan"]
    wf = render(_sensor(), "ci-version-bump", ci_event(body))["rerun-ci-version"]
    with pytest.raises(SpecError, match="runs only calico modes; cnis also names flannel:vxlan"):
        sweep_of(wf)
    body["cnis"] = ["calico:nope"]
    with pytest.raises(SpecError, match="unknown mode 'nope' for CNI 'calico'"):
        sweep_of(render(_sensor(), "ci-version-bump", ci_event(body))["rerun-ci-version"])


# ------------------------------------------------------------------------------------------------ Argo Events' own code
def _tool(name: str) -> str:
    exe = sh.which(name) or (str(TOOLS / name) if os.access(TOOLS / name, os.X_OK) else None)
    if exe is None:
        pytest.skip(f"{name} is not built: `make events-tools` builds it from github.com/argoproj/argo-events "
                    f"v1.9.11 (Go, ~10 min once; see the Makefile)")
    return exe


def _go_render(tmp_path: Path, dependency: str, data: dict) -> dict:
    exe = _tool("edgebench-events-render")
    f = tmp_path / "event.json"
    f.write_text(json.dumps(data))
    proc = subprocess.run([exe, "--sensor", str(SENSOR_FILE), "--dependency", dependency, "--data", str(f)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # Argo Events' parameter resolution prints a missing optional key ("failed to get value by key: key
    # body.cni-versions does not exist ...") on stdout before the tool's JSON: the JSON starts at its first "{" line
    start = proc.stdout.find("{\n")
    assert start >= 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout[start:])


def test_argo_events_renders_the_same_workflows(base, tmp_path):
    (record,) = probe_records()
    for dep, event in [("cni-version-recorded", resource_event(base, record)), ("ci-version-bump", ci_event(CI_BODY))]:
        got = _go_render(tmp_path, dep, event)
        assert got["passed"], got
        mine = render(_sensor(), dep, event)
        assert got["workflows"].keys() == mine.keys()
        for name, wf in got["workflows"].items():  # gjson keeps a JSON block's raw spacing: compare as JSON
            args = lambda w: {p["name"]: json.loads(p["value"]) for p in w["spec"]["arguments"]["parameters"]}  # noqa: E731
            assert args(wf) == args(mine[name])
            assert {k: v for k, v in wf.items() if k != "spec"} == {k: v for k, v in mine[name].items() if k != "spec"}
        for wf in got["workflows"].values():
            assert {cm.cni for cm in sweep_of(wf).values["cnis"]} == {"calico"}


def test_argo_events_filters_reject_what_must_not_rerun(base, tmp_path):
    (record,) = probe_records()
    same = resource_event(base, record)
    same["oldBody"]["data"] = dict(same["body"]["data"])  # a relabel or re-apply: data.version did not change
    assert not _go_render(tmp_path, "cni-version-recorded", same)["passed"]
    bad = resource_event(base, record)
    bad["body"]["data"]["version"] = "v3.31.8; rm -rf /"
    assert not _go_render(tmp_path, "cni-version-recorded", bad)["passed"]
    for mutate in (lambda b: b["trigger"].update(cni="nope"), lambda b: b["trigger"].update(new="latest")):
        body = copy.deepcopy(CI_BODY)
        mutate(body)
        assert not _go_render(tmp_path, "ci-version-bump", ci_event(body))["passed"]


def test_events_tools_pin_the_vendored_argo_events_version():
    gomod = (REPO / "containers/events-check/go.mod").read_text()
    assert re.search(rf"^\s*(require )?github\.com/argoproj/argo-events {re.escape(mv.ARGO_EVENTS_VERSION)}$", gomod, re.M)
    make = (REPO / "Makefile").read_text()
    assert re.search(rf"^ARGO_EVENTS_VERSION := {re.escape(mv.ARGO_EVENTS_VERSION)}$", make, re.M)


def test_real_argo_events_lint_accepts_the_eventsources_and_sensor(tmp_path):
    exe = _tool("argo-events")
    go = shutil.which("go")
    if go:  # the binary is the pinned release
        info = subprocess.run([go, "version", "-m", exe], capture_output=True, text=True).stdout
        assert re.search(r"\bmod\s+github\.com/argoproj/argo-events\s+v1\.9\.11\s", info), info
    proc = subprocess.run([exe, "lint", "--strict", str(EVENTS)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    valid = [ln for ln in proc.stdout.splitlines() if ln.startswith("✓")]
    assert len(valid) == 3, proc.stdout  # two EventSources, one Sensor
    # and it is not a rubber stamp
    broken = tmp_path / "broken"
    broken.mkdir()
    text = (EVENTS / "edgebench-ci-eventsource.yaml").read_text().replace("endpoint: /cni-version", 'endpoint: ""')
    (broken / "edgebench-ci-eventsource.yaml").write_text(text)
    proc = subprocess.run([exe, "lint", str(broken)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "endpoint can't be empty" in proc.stdout
