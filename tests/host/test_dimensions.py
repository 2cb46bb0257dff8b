"""The table of cell dimensions (edgebench/plan/dimensions.py) and what is derived from it: the sweep parameters,
Cell fields / identity / label / JSON round trip / expansion, the manifest fields, the dbt macro file and the
portal's filters."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from edgebench.errors import SpecError
from edgebench.plan import cells, dimensions, dimensions_dbt, spec
from edgebench.plan.dimensions import DIMENSIONS, Cell, Dimension
from edgebench.results.records.runstore import manifest
from edgebench.results.report import marts
from edgebench.results.report.marts import iperf3

REPO = Path(__file__).resolve().parents[2]
MACRO = REPO / "analytics" / "macros" / "cell_dimensions.sql"


def _sweep(**params: str) -> spec.Sweep:
    return spec.from_parameters({"cnis": '["host","flannel:vxlan"]', "workloads": '["iperf3:tcp"]',
                                 "repetitions": "1", **params})


def test_committed_dbt_macro_is_what_the_table_generates():
    assert MACRO.read_text(encoding="utf-8") == dimensions_dbt.dbt_macro(), (
        f"{MACRO.relative_to(REPO)} differs from the table of cell dimensions: run `edgebench dimensions-macro --write`")


def test_the_macro_it_calls_exists():
    defined = "".join(p.read_text(encoding="utf-8") for p in MACRO.parent.glob("*.sql"))
    assert "{% macro column_list(columns, prefix='') -%}" in defined


def test_dbt_macro_lists_the_grain_columns_in_order():
    text = dimensions_dbt.dbt_macro()
    assert "{% macro cell_dimension_columns(prefix='') -%}" in text
    assert ("return(['substrate', 'lab', 'distribution', 'cni', 'cni_mode', 'datapath', 'netem_scenario', "
            "'tuning_profile', 'cpu_class'])") in text
    assert "coalesce({{ prefix }}cpu_class, 'none') = 'none'" in text


def test_a_new_dimension_reaches_every_derived_place(monkeypatch):
    """One table entry is the whole Python side of a new dimension."""
    extra = Dimension("radio", "radio", lambda n, v: spec.json_list(n, v), '["wired"]', "the node link",
                      neutral="wired", substrates=("local",), label="radio={}", filter_label="Radio",
                      substrate_note="radio is emulated on the testbed only")
    table = (*DIMENSIONS, extra)
    monkeypatch.setattr(dimensions, "DIMENSIONS", table)
    monkeypatch.setattr(dimensions, "BY_PARAM", {d.param: d for d in table})
    assert "radio" in [p.name for p in dimensions.dimension_params()]
    assert "radio" in dimensions.neutral_params()
    assert dimensions.warehouse_columns()[-1] == "radio"
    assert "'radio'" in dimensions_dbt.dbt_macro()
    assert "coalesce({{ manifest }}->>'radio', 'wired') as radio" in dimensions_dbt.dbt_macro()  # staging parses it
    assert dimensions.substrate_problems("kind", {**{d.param: [d.base] for d in DIMENSIONS}, "radio": ["5g"]},
                                         {"radio": '["5g"]'}) == [
        'radio is emulated on the testbed only; leave it ["wired"]; got ["5g"]']
    radio_cell = dimensions.cell_class(table)
    assert [f.name for f in dataclasses.fields(radio_cell)][-1] == "radio"
    wired = radio_cell("s", "local", "none", "flannel", "vxlan")
    assert wired.radio == "wired" and "radio" not in wired.env  # neutral: stored ids stay what they were
    g5 = dataclasses.replace(wired, radio="5g")
    assert g5.env["radio"] == "5g" and g5.label == "flannel:vxlan radio=5g"
    assert json.loads(g5.parameters()["radio"]) == ["5g"]
    assert g5.manifest_fields()["radio"] == "5g"


def test_cell_fields_follow_the_table():
    names = [f.name for f in dataclasses.fields(Cell)]
    assert names == ["sweep_id", "substrate", "distribution", "cni", "cni_mode", *(d.field for d in DIMENSIONS)]
    c = Cell("s", "local", "none", "flannel", "vxlan")
    assert {d.field: getattr(c, d.field) for d in DIMENSIONS} == {
        "netem_scenario": "none", "tuning_profile": "default_settings", "intercluster": "none",
        "service_proxy": "default", "cpu_class": "none", "requested_version": "default"}


def test_neutral_values_leave_the_identity_and_others_enter_it():
    base = Cell("s", "local", "none", "flannel", "vxlan")
    assert set(base.env) == {"substrate", "distribution", "cni", "cni_mode", "netem_scenario", "tuning_profile"}
    pi = dataclasses.replace(base, cpu_class="pi4")
    assert pi.env["cpu_class"] == "pi4" and pi.cell_id != base.cell_id
    assert base.label == "flannel:vxlan"
    both = dataclasses.replace(base, intercluster="skupper", netem_scenario="edg5", cpu_class="pi4")
    assert both.label == "flannel:vxlan via skupper netem=edg5 cpu=pi4"
    assert dataclasses.replace(both, tuning_profile="kernel_optimizations").label == (
        "flannel:vxlan via skupper tuning=kernel_optimizations netem=edg5 cpu=pi4")


def test_expansion_nests_as_it_always_did():
    """intercluster outside the CNI loop, then tuning, netem, service proxy, CPU class (cell order decides which
    consecutive cells share a testbed)."""
    s = _sweep(tuning='["default_settings","kernel_optimizations"]', netem='["none","edg5"]')
    assert [(c.cni, c.tuning_profile, c.netem_scenario) for c in cells.expand(s)][:4] == [
        ("host", "default_settings", "none"), ("host", "default_settings", "edg5"), ("host", "kernel_optimizations", "none"),
        ("host", "kernel_optimizations", "edg5")]


def test_expansion_product_round_trip_and_manifest():
    s = _sweep(**{"cpu-class": '["none","pi4"]', "tuning": '["default_settings"]'})
    made = cells.expand(s)
    assert [(c.cni, c.cpu_class) for c in made] == [("host", "none"), ("host", "pi4"), ("flannel", "none"),
                                                     ("flannel", "pi4")]
    for c in made:
        again_sweep, again = cells.from_json(json.dumps(cells.cell_json(s, c)))
        assert again == c and again_sweep.sweep_id == s.sweep_id
    run = cells.runs_for(s, made[1])[0]
    doc = manifest(run, "ok", "2026-01-01T00:00:00Z", env={}, conditions={"cpu_class": {"quota": 1}})
    for d in DIMENSIONS:
        assert doc[d.manifest_field] == getattr(made[1], d.field)
    assert doc["cpu_class_detail"] == {"quota": 1}


def test_local_only_dimensions_are_refused_elsewhere():
    with pytest.raises(SpecError, match="cpu-class emulates edge hardware on the local testbed only"):
        _sweep(substrate="kind", distribution="kind", **{"cpu-class": '["pi4"]'})
    with pytest.raises(SpecError, match="service-proxy chooses a kube-proxy mode"):
        _sweep(substrate="ssh", **{"service-proxy": '["ipvs"]'})


def test_portal_filters_come_from_the_table():
    """The portal's filters (its selections' conditions live in the read API, edgebench.results.report.marts)."""
    labels = {d.warehouse_column: d.filter_label for d in DIMENSIONS if d.filter_label}
    assert labels and all(marts.FILTERS[k] == v for k, v in labels.items())
    assert marts.BASELINE_VALUES["cpu_class"] == "none"  # the untouched value first among the offered ones
    # the resources page's mart holds the own-cores dimension at its neutral value: no filter on it
    assert dimensions.OWN_CORES.warehouse_column == "cpu_class" and "cpu_class" not in iperf3.RESOURCE_FILTERS
    assert "Raspberry Pi 4" in dimensions.OWN_CORES.note("pi4")  # the portal's warning, declared with the dimension


# ---- cni-versions: a CNI mode at several versions in one sweep (paired reruns) -------------------------------------
def test_cni_versions_expand_the_cni_modes_not_the_host():
    plain = cells.expand(_sweep())
    paired = cells.expand(_sweep(**{"cni-versions": '["v0.28.8","v0.28.9"]'}))
    assert [(c.cni, c.requested_version) for c in paired] == [
        ("host", "default"), ("flannel", "v0.28.8"), ("flannel", "v0.28.9")]
    assert paired[0].cell_id == plain[0].cell_id  # the host cell is the plain sweep's
    assert len({c.cell_id for c in paired}) == 3
    assert "requested_version" not in plain[1].env  # default: ids and keys of earlier sweeps unchanged
    assert [c.label for c in paired[1:]] == ["flannel:vxlan v=v0.28.8", "flannel:vxlan v=v0.28.9"]


@pytest.mark.parametrize("bad", ['["v1 beta"]', '["v1","v1"]', '[""]', '[1]'])
def test_cni_versions_rejects_bad_entries(bad):
    with pytest.raises(SpecError, match="parameter 'cni-versions'"):
        _sweep(**{"cni-versions": bad})


def test_the_requested_version_reaches_provider_and_manifest():
    from edgebench.results.records.runstore import with_trigger

    sweep = _sweep(**{"cni-versions": '["v0.28.8","v0.28.9"]'})
    host, old, new = cells.expand(sweep)
    assert [sweep.cni_version_requested(c) for c in (host, old, new)] == [None, "v0.28.8", "v0.28.9"]
    doc = with_trigger({"environment": {"kernel": "k"}}, None, "v0.28.8")
    assert doc["environment"] == {"kernel": "k", "cni_version_requested": "v0.28.8"} and "trigger" not in doc
    assert with_trigger({"environment": {}}, None, None) == {"environment": {}}
    trig = {"cni": "flannel", "new": "v0.29.0", "previous": "v0.28.9", "source": "s", "at": "2026-11-26T00:00:00Z"}
    rerun = _sweep(cnis='["flannel:vxlan"]', trigger=json.dumps(trig))
    assert rerun.cni_version_requested(cells.expand(rerun)[0]) == "v0.29.0"
    assert with_trigger({"environment": {}}, trig)["environment"]["cni_version_requested"] == "v0.29.0"


def test_a_paired_rerun_runs_the_previous_and_the_new_version():
    from edgebench.sweep import watch

    base = spec.from_parameters({"cnis": '["host","flannel:vxlan","kube-router"]', "workloads": '["iperf3:tcp"]',
                                 "repetitions": "2"})
    trig = {"cni": "flannel", "new": "v0.29.0", "previous": "v0.28.9", "source": "s", "at": "2026-11-26T00:00:00Z"}
    paired = watch.rerun_sweep(base, trig, paired=True)
    assert [(c.cni, c.requested_version) for c in cells.expand(paired)] == [
        ("flannel", "v0.28.9"), ("flannel", "v0.29.0")]
    assert [c.requested_version for c in cells.expand(watch.rerun_sweep(base, trig))] == ["default"]
    first = watch.rerun_sweep(base, {**trig, "previous": None}, paired=True)  # nothing measured before: new alone
    assert [c.requested_version for c in cells.expand(first)] == ["default"]
