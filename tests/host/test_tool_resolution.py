"""Every program the runner starts is found by one lookup (sh.which / sh.exe: PATH, then the tools directory) and
started by the path found, also without the tools directory on PATH (issue 30: a testbed preset run from the
virtualenv failed every Skupper and ClusterLink run with `No such file or directory: 'edgebench-relay'`, which the
relay check had found in the tools directory)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

from edgebench import sh
from edgebench.substrates.clusters.workload_pods import ClusterEndpoint
from edgebench.substrates.local import intercluster
from edgebench.substrates.local.testbed import Endpoint, Testbed

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "containers" / "runner" / "src" / "edgebench"
TOOLS = os.path.expanduser("~/.local/share/edgebench/tools")


def system_path() -> str:
    """PATH without any tools directory: what a shell that activated only the virtualenv has."""
    tools = {os.path.normpath(TOOLS), os.path.normpath(os.environ.get("EDGEBENCH_TOOLS", TOOLS))}
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and os.path.normpath(d) not in tools)


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """A tools directory holding a fake `edgebench-relay` and `ebtool`, neither of them on PATH."""
    d = tmp_path / "tools"
    d.mkdir()
    for name in ("edgebench-relay", "ebtool"):
        (d / name).write_text("#!/bin/sh\necho ready\nexec sleep 30\n")
        (d / name).chmod(0o755)
    monkeypatch.setenv("PATH", system_path())
    monkeypatch.setenv("EDGEBENCH_TOOLS", str(d))
    return d


class FakePopen:
    started: list[list[str]] = []

    def __init__(self, argv, **kwargs):
        FakePopen.started.append(list(argv))
        self.pid, self.returncode = 4242, None
        self.stdout, self.stderr = _Lines(["ready\n"]), None

    def poll(self):
        return self.returncode


class _Lines:
    def __init__(self, lines):
        self.lines = list(lines)

    def readline(self):
        return self.lines.pop(0) if self.lines else ""

    def close(self):
        pass


def test_the_lookup_finds_the_tools_directory_and_names_an_absolute_path(tools):
    assert sh.which("ebtool") == sh.exe("ebtool") == str(tools / "ebtool")
    assert sh.which("no-such-tool-eb") is None and sh.exe("no-such-tool-eb") == "no-such-tool-eb"
    assert sh.exe(str(tools / "ebtool")) == str(tools / "ebtool")  # a resolved path resolves to itself
    assert os.path.isabs(sh.exe("ip"))  # PATH first
    sh.require("ebtool")


def test_the_programs_inside_wrappers_are_resolved(tools):
    argv = ["ip", "netns", "exec", "ns1", "env", "CYCLONEDDS_URI=<x/>", "ebtool", "ping", "size", "64"]
    assert sh.program_positions(argv) == [0, 4, 6]
    out = sh.resolved(argv)
    assert out[0] == sh.which("ip") and out[4] == sh.which("env") and out[6] == str(tools / "ebtool")
    assert out[1:4] == argv[1:4] and out[5] == argv[5] and out[7:] == argv[7:]
    assert sh.resolved(["ip", "-n", "ns1", "link", "show"])[1:] == ["-n", "ns1", "link", "show"]
    # a local endpoint's command (CPU class cgroups: a shell script that execs its argv) names the tool's path
    ep = Endpoint("ns1", "10.0.0.1", 1, cgroups=("/sys/fs/cgroup/x",))
    assert str(tools / "ebtool") in ep.cmd(["ebtool", "-s"])
    # in a pod the tool is named by its name: the image has it on its PATH; an image path stays
    pod = ClusterEndpoint("ns", "10.244.1.5", "w1", "eb-w1", "/k")
    assert pod.cmd(["env", "A=1", sh.exe("ebtool"), "-s"])[-4:] == ["env", "A=1", "ebtool", "-s"]
    assert pod.cmd(["/usr/bin/iperf3", "-s"])[-2:] == ["/usr/bin/iperf3", "-s"]


def test_the_relay_is_started_by_the_path_its_check_found(tools, tmp_path, monkeypatch):
    """The relay start (Skupper / ClusterLink on the testbed) with the tools directory off PATH: `ip netns exec`
    must be given the relay's absolute path, since its own lookup sees PATH only."""
    monkeypatch.setattr(intercluster, "STATE_DIR", tmp_path / "state")
    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    FakePopen.started = []
    from edgebench.plan.catalog import resolve_intercluster
    j = intercluster.Joiner(Testbed("ebtr", nodes=4, clusters=2), resolve_intercluster("skupper"))
    j.check()  # found in the tools directory
    j._start("egress", "ebtr-n1-p9", ["skupper-egress", "-listen", "10.244.1.9:5671"])
    (argv,) = FakePopen.started
    assert argv[4] == str(tools / "edgebench-relay") == sh.which(intercluster.RELAY)
    assert argv[:4] == [sh.which("ip"), "netns", "exec", "ebtr-n1-p9"]
    assert argv[5:] == ["skupper-egress", "-listen", "10.244.1.9:5671"]


def test_nothing_in_the_package_starts_a_program_around_the_lookup():
    """Only sh.py calls subprocess.run / Popen / check_output / os.exec* or shutil.which: every other start goes
    through sh.run / ok / call / popen, which resolve the program with sh.exe."""
    starters = {("subprocess", a) for a in ("run", "Popen", "call", "check_call", "check_output", "getoutput")}
    starters |= {("shutil", "which"), ("os", "system"), ("os", "popen")}
    starters |= {("os", f"exec{s}") for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")}
    found = []
    for py in PACKAGE.rglob("*.py"):
        if py.name == "sh.py" and py.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(py.read_text())):
            f = node.func if isinstance(node, ast.Call) else node.value if isinstance(node, ast.keyword) else None
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in starters:
                found.append(f"{py.relative_to(PACKAGE)}:{node.lineno} {f.value.id}.{f.attr}")  # called or passed
            if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Attribute):  # a default: x: T = f
                f = node.value
                if isinstance(f.value, ast.Name) and (f.value.id, f.attr) in starters:
                    found.append(f"{py.relative_to(PACKAGE)}:{node.lineno} {f.value.id}.{f.attr}")
            if isinstance(node, ast.ImportFrom) and node.module in ("subprocess", "shutil"):
                names = {a.name for a in node.names} & {a for _, a in starters}
                if names:
                    found.append(f"{py.relative_to(PACKAGE)}:{node.lineno} from {node.module} import {names}")
    assert found == []


@pytest.mark.skipif(os.geteuid() != 0, reason="builds a testbed of network namespaces: needs root")
def test_a_skupper_cell_runs_without_the_tools_directory_on_path(tmp_path, monkeypatch):
    """A small local sweep cell (Skupper's relay model, fortio's HTTP echo: both only in the tools directory) with
    PATH as the virtualenv leaves it; every run of it is measured."""
    if not (os.access(os.path.join(TOOLS, "edgebench-relay"), os.X_OK)
            and os.access(os.path.join(TOOLS, "fortio"), os.X_OK)):
        pytest.skip("edgebench-relay and fortio are not built in the tools directory (make tools)")
    from edgebench.plan import cells as cells_mod
    from edgebench.plan import spec
    from edgebench.substrates.local.provider import LocalProvider
    from edgebench.sweep import phases

    monkeypatch.setenv("PATH", system_path())
    monkeypatch.setenv("EDGEBENCH_TOOLS", TOOLS)
    assert sh.run(["sh", "-c", "command -v edgebench-relay fortio || true"]).strip() == ""  # not on PATH
    s = spec.from_parameters({"substrate": "local", "cnis": json.dumps(["flannel:vxlan"]),
                              "intercluster": json.dumps(["skupper"]), "repetitions": "1",
                              "workloads": json.dumps(["http:payload-echo"]), "http-payloads": json.dumps(["60"]),
                              "http-requests": "5", "http-paths": json.dumps(["pod-to-service:cross-node"])},
                             source="test")
    cell = cells_mod.expand(s)[0]
    Testbed("ebtr").down()
    try:
        ctx = phases.CellContext(s, cell, workdir=tmp_path / "work", results=tmp_path / "out",
                                 provider=LocalProvider(Testbed("ebtr"), cell), log=lambda m: None)
        phases.run_cell(ctx)
    finally:
        Testbed("ebtr").down()
    docs = [json.loads(f.read_text()) for f in (tmp_path / "out").rglob("manifest.json")]
    assert docs and all(d["status"] == "ok" for d in docs), [(d["status"], d.get("error")) for d in docs]
    assert {d["intercluster"] for d in docs} == {"skupper:amqp"}
