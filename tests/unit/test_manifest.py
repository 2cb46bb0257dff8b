"""The typed run manifest (results/records/manifest.py) against what the writers write: every field a manifest gets
is declared in RunManifest, every Required field is there, the cell dimensions' fields are declared, and the
manifest stays a plain dict (the JSON written is what json.dumps makes of it, unchanged by the typing)."""

from __future__ import annotations

import json
from pathlib import Path

import fixture_manifests as fx
from edgebench.plan import spec
from edgebench.plan.cells import expand, runs_for
from edgebench.plan.dimensions import DIMENSIONS
from edgebench.results.records import importer, parsing, provenance
from edgebench.results.records.manifest import Environment, Imported, RunManifest, Trigger
from edgebench.results.records.runstore import manifest, now, with_trigger, write_run

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
FIELDS = set(RunManifest.__annotations__)


def _runs():
    params = {"cnis": '["host","flannel:vxlan"]', "workloads": '["iperf3:tcp","dds:latency"]',
              "repetitions": "1", "sweep-id": "typed-1"}
    sweep = spec.load(REPO / "workflows" / "sweep.yaml", params, substrate="local")
    return [run for cell in expand(sweep) for run in runs_for(sweep, cell)]


def _declared(doc: dict, where: str) -> None:
    undeclared = sorted(set(doc) - FIELDS)
    assert not undeclared, f"{where}: fields not declared in RunManifest: {undeclared}"
    missing = sorted(RunManifest.__required_keys__ - set(doc))
    assert not missing, f"{where}: Required fields of RunManifest missing: {missing}"


def test_every_dimension_field_is_declared():
    for d in DIMENSIONS:
        assert d.manifest_field in FIELDS, f"dimension {d.field}: declare {d.manifest_field} in RunManifest"
        if d.detail:
            assert d.detail in FIELDS, f"dimension {d.field}: declare {d.detail} in RunManifest"


def test_measured_runs_write_the_declared_fields(tmp_path):
    env = provenance.environment(None)
    assert set(env) <= set(Environment.__annotations__)
    runs = _runs()
    assert {r.workload for r in runs} == {"iperf3", "dds"}
    for run in runs:
        doc = manifest(run, "ok", now(), metrics={"x": 1}, raw_files=["a.json"], mtu=1450, env=env)
        _declared(doc, f"runstore.manifest({run.run_id})")
        assert type(doc) is dict
    trigger = {"cni": "flannel", "new": "v0.27.0", "previous": "v0.26.0", "source": "test", "at": None}
    assert set(trigger) == set(Trigger.__annotations__)
    triggered = with_trigger(doc, trigger)
    _declared(triggered, "with_trigger")
    assert set(triggered["environment"]) <= set(Environment.__annotations__)
    write_run(tmp_path / "run", triggered, {"a.json": b"{}"})
    text = (tmp_path / "run" / "manifest.json").read_text()
    assert text == json.dumps(triggered, indent=2, sort_keys=True)  # the JSON is the dict's, nothing added


def test_imported_runs_write_the_declared_fields():
    path = sorted(DATA.rglob("ddsperf-lat64-reliable-ping.log"))[0]
    labels = importer.parse_labels(["placement=cross-node", "reliability=reliable", "transport=unicast",
                                    "discovery=multicast", "length_bytes=64", "cni=calico"])
    record = parsing.parse_file("ddsperf", path)
    _, doc, _ = importer.build_run("ddsperf", record, path.read_bytes(), labels)
    _declared(doc, "importer.build_run")
    assert set(doc["imported"]) == set(Imported.__annotations__)
    assert set(doc["environment"]) <= set(Environment.__annotations__)


def test_fixture_manifests_are_declared():
    """The manifests the warehouse tests build from (tests/fixture_manifests/) use only declared fields too."""
    for m in [*fx.fixture_manifests(), *fx.dds_manifests(), *fx.http_manifests(), *fx.intercluster_manifests()]:
        assert not set(m) - FIELDS, f"{fx.key(m)}: fields not declared in RunManifest: {sorted(set(m) - FIELDS)}"
