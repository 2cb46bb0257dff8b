"""Sweep spec validation and matrix expansion (no side effects)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.plan import spec
from edgebench.plan.cells import expand, runs_for
from edgebench.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "workflows" / "sweep.yaml"


def test_default_sweep_file_loads_and_expands():
    s = spec.load(SWEEP, substrate="local")
    cells = expand(s)
    assert [c.cni for c in cells][0] == "host"
    assert {c.substrate for c in cells} == {"local"} and {c.distribution for c in cells} == {"none"}
    runs = runs_for(s, cells[0])
    v = s.values
    per_rep = 0
    for tool, variant in v["workloads"]:
        if tool == "iperf3":
            per_rep += len(v["iperf3-paths"]) * len(v["iperf3-lengths" if variant == "tcp" else "iperf3-udp-lengths"])
        elif tool == "dds":
            per_rep += (len(v["dds-placements"]) * len(v["dds-payloads"]) * len(v["dds-reliability"])
                        * len(v["dds-transports"]) * len(v["dds-security"]) * len(v["dds-batching"])
                        * (len(v["dds-subscribers"]) if variant == "throughput" else 1))
        else:
            per_rep += len(v["http-paths"]) * (1 if variant == "static-reply" else len(v["http-payloads"]))
    assert len(runs) == per_rep * v["repetitions"]
    assert {r.workload for r in runs} == {tool for tool, _ in v["workloads"]}
    assert len({r.run_id for r in runs}) == len(runs)
    assert [r.repetition for r in runs] == sorted(r.repetition for r in runs)  # repetitions outermost


def test_ids_are_deterministic_and_parameter_sensitive():
    a = spec.load(SWEEP, {"repetitions": "1"}, substrate="local")
    b = spec.load(SWEEP, {"repetitions": "1"}, substrate="local")
    c = spec.load(SWEEP, {"repetitions": "1", "duration": "9"}, substrate="local")
    assert a.sweep_id == b.sweep_id != c.sweep_id
    ra = [r.run_id for cell in expand(a) for r in runs_for(a, cell)]
    rb = [r.run_id for cell in expand(b) for r in runs_for(b, cell)]
    rc = [r.run_id for cell in expand(c) for r in runs_for(c, cell)]
    assert ra == rb and not set(ra) & set(rc)
    assert spec.load(SWEEP, {"sweep-id": "lab-1"}).sweep_id == "lab-1"


def test_overrides_and_default_mode():
    s = spec.load(SWEEP, {"cnis": '["flannel","kube-router:bgp","calico:vxlan"]', "iperf3-lengths": '["64K","1M"]'})
    assert [m.key for m in s.values["cnis"]] == ["flannel:vxlan", "kube-router:bgp", "calico:vxlan"]
    assert s.values["iperf3-lengths"] == [65536, 1048576]


@pytest.mark.parametrize(
    "override, message",
    [
        ("cnis=[\"nope\"]", "unknown CNI 'nope'"),
        ("cnis=[\"flannel:bogus\"]", "unknown mode 'bogus' for CNI 'flannel'"),
        ("cnis=[host", "must be a JSON list of strings"),
        ("cnis=\"host\"", "must be a JSON list of strings"),
        ("cnis=[]", "must not be empty"),
        ("cnis=[\"flannel\",\"flannel:vxlan\"]", "twice"),
        ("duration=-5", "'duration' must be >= 1"),
        ("repetitions=two", "must be an integer"),
        ("workloads=[\"iperf3:sctp\"]", "unknown variant 'sctp'"),
        ("iperf3-udp-lengths=[\"70000\"]", "outside 16..65507"),
        ("iperf3-lengths=[\"12Q\"]", "is not a size"),
        ("iperf3-paths=[\"pod-to-moon:same-node\"]", "unknown path"),
        ("iperf3-udp-bitrate=fast", "bitrate"),
        ("sweep-id=Bad_Id", "lower-case"),
        ("dds-reliability=[\"sometimes\"]", "unknown value 'sometimes'"),
        ("dds-subscribers=[\"0\"]", "not an integer in 1..16"),
        ("workloads=[\"http:teapot\"]", "unknown variant 'teapot'"),
        ("http-requests=0", "must be >= 1"),
        ("dds-duration=1", "'dds-duration' must be >= 2"),  # ddsperf prints nothing for a 1 s run
        ("colour=blue", "unknown parameter 'colour'"),
        ("novalue", "NAME=VALUE"),
        ("repetitions=" + "9" * 5000, "at most 12 digits"),
        ("dds-subscribers=[\"" + "1" * 5000 + "\"]", "not an integer in 1..16"),
        ("http-payloads=[\"" + "1" * 5000 + "\"]", "is not a size"),
        ("netem-custom={\"x\": {\"delay_ms\": " + "1" * 5000 + "}}", "must be a JSON object"),
    ],
)
def test_bad_input_is_one_clear_message_exit_2_and_no_side_effects(tmp_path, override, message):
    env = {**os.environ, "EDGEBENCH_STATE": str(tmp_path / "state"), "EDGEBENCH_TESTBED_PREFIX": "ebspec",
           "EDGEBENCH_S3_ENDPOINT": "http://127.0.0.1:1"}
    proc = subprocess.run([sys.executable, "-m", "edgebench.cli", "sweep", str(SWEEP), "--local", "-p", override],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "state").exists()
    assert "ebspec" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_bad_files(tmp_path):
    with pytest.raises(SpecError, match="does not exist"):
        spec.load(tmp_path / "missing.yaml")
    p = tmp_path / "pod.yaml"
    p.write_text("apiVersion: v1\nkind: Pod\n")
    with pytest.raises(SpecError, match="not an Argo Workflow"):
        spec.load(p)
    p.write_text("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nspec:\n  arguments:\n    parameters:\n"
                 "      - name: cnis\n        value: '[\"host\"]'\n      - name: bogus\n        value: x\n")
    with pytest.raises(SpecError, match="unknown parameter 'bogus'"):
        spec.load(p)


def test_cells_command_prints_json_for_withparam():
    proc = subprocess.run([sys.executable, "-m", "edgebench.cli", "cells", str(SWEEP), "--local"],
                          capture_output=True, text=True, check=True)
    cells = json.loads(proc.stdout)
    assert cells[0]["cni"] == "host" and all(c["cell_id"].startswith("c-") for c in cells)


def test_catalog_command_lists_every_mode_with_its_facts():
    proc = subprocess.run([sys.executable, "-m", "edgebench.cli", "catalog", "--json"],
                          capture_output=True, text=True, check=True)
    doc = json.loads(proc.stdout)
    rows = {f"{r['cni']}:{r['mode']}": r for r in doc["cnis"]}
    tools = doc["intercluster"]
    assert tools["submariner"]["version"] == "0.18.0" and set(tools["submariner"]["modes"]) == {
        "libreswan", "wireguard", "vxlan"}
    assert tools["skupper"]["modes"]["amqp"]["local"]["implementation"] == "emulated"
    assert rows["flannel:vxlan"]["udp_port"] == 8472 and rows["flannel:vxlan"]["mtu"] == 1450
    assert rows["calico:vxlan"]["udp_port"] == 4789 and rows["calico:ipip"]["mtu"] == 1480
    assert rows["cilium:geneve"]["udp_port"] == 6081
    assert rows["calico:bgp"]["multicast"] == "no"
    assert rows["weave:fastdp"]["mtu"] == 1376
    for r in rows.values():
        assert r["datapath"] and r["encapsulation"] and r["mtu"] and r["sources"]
        assert r["version"] or r["datapath"] == "host", f"{r['cni']}:{r['mode']} has no pinned version"


def test_every_catalog_source_tag_resolves():
    from edgebench.plan import catalog

    tags = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                tags.update(v) if k == "sources" and isinstance(v, list) else walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for name in ("cnis.yaml", "workloads.yaml", "distributions.yaml", "cni_installs.yaml"):
        walk(catalog._load(name))
    known = catalog.sources()
    assert tags and not sorted(tags - set(known)), sorted(tags - set(known))
    assert all(isinstance(v, str) and v for v in known.values())


def test_repeated_parameters_are_rejected(tmp_path):
    p = tmp_path / "twice.yaml"
    p.write_text("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nspec:\n  arguments:\n    parameters:\n"
                 "      - name: cnis\n        value: '[\"host\"]'\n      - name: repetitions\n        value: '2'\n"
                 "      - name: repetitions\n        value: '5'\n")
    with pytest.raises(SpecError, match="'repetitions' is listed twice"):
        spec.load(p)
    with pytest.raises(SpecError, match="given twice"):
        spec.parse_overrides(["duration=1", "duration=2"])


@pytest.mark.parametrize("text", [
    "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nspec:\n  arguments:\n    parameters:\n"
    "      - name: repetitions\n        value: " + "7" * 5000 + "\n",
    "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nspec: [1, 2]\n",
    "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nspec:\n  arguments:\n    parameters: {a: 1}\n",
    "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nspec:\n  arguments:\n    parameters:\n      - name: [1]\n",
])
def test_malformed_sweep_files_are_spec_errors(tmp_path, text):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(SpecError):
        spec.load(p)
    p.write_bytes(b"\xff\xfe" + text.encode())
    with pytest.raises(SpecError):
        spec.load(p)


def test_intercluster_parameter_bad_input_is_one_clear_message():
    from edgebench.errors import SpecError

    for value, words in [('["vpn"]', "unknown inter-cluster tool 'vpn'"),
                         ('["submariner:gre"]', "unknown cable driver 'gre' for submariner; choices: libreswan"),
                         ('["skupper","skupper:amqp"]', "names skupper:amqp twice"),
                         ('not json', "intercluster")]:
        with pytest.raises(SpecError) as exc:
            spec.from_parameters({"substrate": "local", "intercluster": value}, source="t")
        assert words in str(exc.value), str(exc.value)
    with pytest.raises(SpecError) as exc:  # a tool on a distribution it does not support: before anything runs
        spec.from_parameters({"substrate": "ssh", "distribution": "microk8s", "intercluster": '["submariner"]'},
                             source="t")
    assert "does not run on microk8s" in str(exc.value) and "Calico API server" in str(exc.value)


def test_the_baseline_intercluster_value_keeps_sweep_ids():
    base = spec.from_parameters({"substrate": "local"}, source="t")
    same = spec.from_parameters({"substrate": "local", "intercluster": '[ "none" ]'}, source="t")
    other = spec.from_parameters({"substrate": "local", "intercluster": '["none","skupper"]'}, source="t")
    assert base.sweep_id == same.sweep_id != other.sweep_id


# ---- the papers' run lengths (run-lengths=paper) ---------------------------------------------------------------

def test_run_lengths_paper_takes_the_papers_lengths_and_names_another_sweep():
    from pathlib import Path

    preset = Path(__file__).resolve().parents[2] / "workflows/presets/seed-003-tuned-profiles.testbed.yaml"
    short = spec.load(preset, {}, substrate="local")
    full = spec.load(preset, {"run-lengths": "paper"}, substrate="local")
    assert (short.values["duration"], short.values["sockperf-duration"], short.values["repetitions"]) == (2, 2, 3)
    assert (full.values["duration"], full.values["sockperf-duration"], full.values["repetitions"]) == (10, 10, 5)
    assert short.sweep_id != full.sweep_id
    # the recorded lengths alone change no sweep id: a preset keeps the id it had before it carried them
    bare = spec.from_parameters({k: v for k, v in short.raw.items() if k != "paper-run-lengths"}, source="t")
    assert bare.sweep_id == short.sweep_id


@pytest.mark.parametrize("raw, message", [
    ({"run-lengths": "paper"}, "run-lengths=paper needs paper-run-lengths"),
    ({"run-lengths": "long"}, "parameter 'run-lengths' must be one of preset, paper; got 'long'"),
    ({"paper-run-lengths": '{"cnis": "x"}'}, "may set only run lengths"),
    ({"paper-run-lengths": "[1]"}, "must be a JSON object of run lengths"),
    ({"paper-run-lengths": '{"duration": true}'}, "every value must be a string or an integer"),
])
def test_run_lengths_bad_input(raw, message):
    with pytest.raises(spec.SpecError, match=re.escape(message)):
        spec.from_parameters({"cnis": '["host"]', **raw}, source="t")


def test_every_testbed_preset_records_its_papers_lengths():
    from pathlib import Path

    for preset in sorted((Path(__file__).resolve().parents[2] / "workflows/presets").glob("*.testbed.yaml")):
        s = spec.load(preset, {}, substrate="local")
        lengths = s.values["paper-run-lengths"]
        assert lengths, preset.name
        # the testbed runs shorter or fewer than the paper, never longer, and its header says how to run the paper's
        assert all(int(s.raw[k]) < int(v) for k, v in lengths.items()), preset.name
        assert "-p run-lengths=paper" in preset.read_text(), preset.name
