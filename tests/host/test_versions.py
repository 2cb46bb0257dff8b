"""Knowing CNI versions (edgebench.plan.versions and sweep.release_sources, `edgebench versions show|check`) and planning reruns
(edgebench.sweep.watch), without the testbed: release sources served by a local HTTP server with real-shaped files
(tests/data/versions/), the warehouse as a small DuckDB file, the runner replaced by a recording function."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import socket
import threading
from pathlib import Path

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from edgebench.plan import versions
from edgebench.sweep.release_sources import http_fetch
from edgebench.results.report.marts import summaries
from edgebench.cli import app
from edgebench.errors import SpecError
from edgebench.plan import catalog, spec
from edgebench.results.records.runstore import with_trigger
from edgebench.sweep import watch

DATA = Path(__file__).parents[1] / "data" / "versions"
ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------------ a local server
class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def server(tmp_path):
    """Serves tmp_path/www over HTTP on 127.0.0.1; yields (base URL, directory)."""
    www = tmp_path / "www"
    www.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(www)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", www
    finally:
        httpd.shutdown()
        httpd.server_close()


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there any more


def _publish(www: Path) -> None:
    """The real-shaped fixtures, laid out as a mirror would: a Helm repository per chart, a releases list, tags."""
    (www / "calico").mkdir()
    shutil.copy(DATA / "calico-index.yaml", www / "calico" / "index.yaml")
    (www / "cilium").mkdir()
    shutil.copy(DATA / "cilium-index.yaml", www / "cilium" / "index.yaml")
    shutil.copy(DATA / "flannel-releases.json", www / "flannel-releases.json")
    shutil.copy(DATA / "kube-router-tags.txt", www / "kube-router-tags.txt")


def _sources_file(tmp_path: Path, base: str) -> Path:
    doc = {"calico": {"type": "helm", "url": f"{base}/calico", "chart": "tigera-operator"},
           "cilium": {"type": "helm", "url": f"{base}/cilium/"},  # chart from the catalog's helm entry
           "flannel": {"type": "github-releases", "url": f"{base}/flannel-releases.json"},
           "kube-router": {"type": "tags", "url": f"{base}/kube-router-tags.txt"}}
    path = tmp_path / "sources.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


# ------------------------------------------------------------------------------------------------ versions
@pytest.mark.parametrize("lower, higher", [
    ("v3.31.7", "v3.31.8"), ("1.18.0", "1.18.1"), ("v1.9.0", "v1.10.0"), ("1.18.1-rc.0", "1.18.1"),
    ("1.18.1-rc.2", "1.18.1-rc.10"), ("1.2.3-1", "1.2.3-alpha"), ("1.2.3-alpha", "1.2.3-alpha.1"),
    ("v2.11", "v2.11.1"), ("v0.28.9", "v0.29.0"),
])
def test_versions_order_as_semver(lower, higher):
    assert versions.parse_version(lower) < versions.parse_version(higher)


def test_spelling_is_kept_and_v_prefix_and_build_metadata_do_not_change_order():
    v = versions.parse_version("v3.31.8")
    assert str(v) == "v3.31.8" and v == versions.parse_version("3.31.8")
    assert versions.parse_version("1.2.3+k3s1") == versions.parse_version("1.2.3")
    assert versions.newest_release(versions.parse_version(x) for x in ["1.0.0", "1.1.0-rc.1", "0.9.9"]).text == "1.0.0"
    assert versions.newest_release([versions.parse_version("1.1.0-rc.1")]) is None


@pytest.mark.parametrize("text", ["latest", "", "v", "3", "v3.x.1", "1.2.3.4", "main", "v1.2.3 ", "1..2", None, 3.1,
                                  "v1.2.3-", "1" * 90 + ".1"])
def test_not_a_version_is_one_clear_message(text):
    if text == "v1.2.3 ":
        assert versions.is_version(text)  # surrounding blanks are trimmed
        return
    with pytest.raises(versions.VersionError, match=r"is not a version \(expected MAJOR\.MINOR"):
        versions.parse_version(text, "trigger.new")
    assert not versions.is_version(text)


# ------------------------------------------------------------------------------------------------ parsers
def test_helm_index_real_shape():
    calico = versions.parse_helm_index((DATA / "calico-index.yaml").read_bytes(), "tigera-operator")
    assert [v.text for v in calico] == ["v3.32.0-0.dev", "v3.31.7", "v3.30.5"]  # v3.31.6 is deprecated
    assert versions.newest_release(calico).text == "v3.31.7"
    cilium = versions.parse_helm_index((DATA / "cilium-index.yaml").read_bytes(), "cilium")
    assert versions.newest_release(cilium).text == "1.18.1"  # not 1.19.0-pre.2, not tetragon's 1.6.0


@pytest.mark.parametrize("data, message", [
    (b"apiVersion: v1\nentries: [oops\n", "not a Helm repository index (invalid YAML"),
    (b"<html><body>Bad gateway</body></html>", "no `entries` mapping"),
    (b"apiVersion: v1\ngenerated: now\n", "no `entries` mapping"),
    (b"apiVersion: v1\nentries:\n  cilium: []\n", "has no chart 'tigera-operator' (charts: cilium)"),
    (b"apiVersion: v1\nentries:\n  tigera-operator: {version: v1.0.0}\n", "must be a list of chart versions"),
    (b"apiVersion: v1\nentries:\n  tigera-operator:\n  - {version: latest}\n", "lists no version"),
    (b"\xff\xfe\x00garbage", "is not UTF-8 text"),
])
def test_malformed_helm_index_is_one_clear_message(data, message):
    with pytest.raises(versions.SourceFormatError) as exc:
        versions.parse_helm_index(data, "tigera-operator", "calico release source http://mirror/index.yaml")
    assert message in str(exc.value) and "\n" not in str(exc.value)
    assert exc.value.exit_code == 2


def test_github_releases_skip_drafts_prereleases_and_non_versions():
    found = versions.parse_github_releases((DATA / "flannel-releases.json").read_bytes())
    assert [v.text for v in found] == ["v0.28.9", "v0.28.8"]
    with pytest.raises(versions.SourceFormatError, match="not a GitHub releases list"):
        versions.parse_github_releases(b'{"message": "API rate limit exceeded"}')
    with pytest.raises(versions.SourceFormatError, match="invalid JSON"):
        versions.parse_github_releases(b"<!DOCTYPE html>")


def test_plain_tag_list():
    found = versions.parse_tags((DATA / "kube-router-tags.txt").read_bytes())
    assert versions.newest_release(found).text == "v2.11.2"
    for garbage in (b"<html>login</html>", b'{"tags": []}', b"latest\nmain\n", b""):
        with pytest.raises(versions.SourceFormatError):
            versions.parse_tags(garbage)


# ------------------------------------------------------------------------------------------------ sources
def test_catalog_names_a_release_source_for_every_cni_with_a_version():
    srcs = versions.catalog_sources()
    installs = catalog._load("cni_installs.yaml")["cnis"]
    def released_on_its_own(info: dict) -> bool:  # kindnet's version follows kind's node image: no source of its own
        possible = [e for e in info["distributions"].values() if not e.get("impossible", {}).get("*")]
        return not all(e["via"] == "builtin" for e in possible)

    assert set(srcs) == {cni for cni, info in installs.items() if info.get("version") and released_on_its_own(info)}
    assert "kindnet" not in srcs and "flannel" in srcs
    for cni, src in srcs.items():
        assert src.type in versions.SOURCE_TYPES
        if installs[cni].get("helm"):  # a CNI with a chart: the chart repository's index (the rule)
            assert src.type == "helm" and src.url == installs[cni]["helm"]["url"]
            assert src.chart == installs[cni]["helm"]["chart"].split("/")[-1]
            assert src.location.endswith("/index.yaml")
        else:  # installed from a release manifest: that project's GitHub releases
            assert src.type == "github-releases" and src.url.startswith("https://api.github.com/repos/")
            assert src.url.split("/")[5] in installs[cni]["manifest"] + installs[cni].get("image", "")


def test_sources_file_overrides_the_catalog(tmp_path, monkeypatch):
    path = _sources_file(tmp_path, "http://mirror.lab")
    srcs = versions.sources(path)
    assert srcs["calico"].location == "http://mirror.lab/calico/index.yaml"
    assert srcs["cilium"].chart == "cilium" and srcs["cilium"].location == "http://mirror.lab/cilium/index.yaml"
    assert srcs["weave"] == versions.catalog_sources()["weave"]  # not overridden
    monkeypatch.setenv(versions.ENV_SOURCES, str(path))
    assert versions.sources()["kube-router"].type == "tags"


@pytest.mark.parametrize("doc, message", [
    ("calico: {type: ftp, url: x}", "must be one of helm, github-releases, tags"),
    ("calico: {type: tags}", "needs a url"),
    ("nope: {type: tags, url: x}", "'nope' is not a CNI with releases"),
    ("calico: {type: tags, url: x, tag: 1}", "unknown key(s) tag"),
    ("[1, 2]", "must map CNI names"),
    ("calico: {type: tags, url: [unclosed", "cannot be read as YAML"),
])
def test_bad_sources_file(tmp_path, doc, message):
    path = tmp_path / "sources.yaml"
    path.write_text(doc)
    with pytest.raises(SpecError) as exc:
        versions.sources(path)
    assert message in str(exc.value)


# ------------------------------------------------------------------------------------------------ the check, over HTTP
DEFAULT_ENTRIES = spec.PARAMS["cnis"].parse("cnis", spec.DEFAULTS["cnis"])


def test_check_over_http_finds_the_newer_cnis(server, tmp_path):
    base, www = server
    _publish(www)
    sts = versions.check(DEFAULT_ENTRIES, versions.sources(_sources_file(tmp_path, base)), http_fetch)
    by = {s.cni: s for s in sts}
    assert list(by) == ["flannel", "calico", "cilium", "kube-router"]  # catalog order; host has no version
    assert {c for c, s in by.items() if s.newer} == {"cilium", "kube-router"}
    assert (by["cilium"].pinned, by["cilium"].latest) == ("1.18.0", "1.18.1")
    assert by["calico"].modes == ["calico:bgp", "calico:vxlan", "calico:ipip"]
    assert by["kube-router"].modes == ["kube-router:bgp"]
    t = by["cilium"].trigger("2026-07-14T06:00:00Z")
    assert t == {"cni": "cilium", "new": "1.18.1", "previous": "1.18.0", "source": f"{base}/cilium/index.yaml",
                 "at": "2026-07-14T06:00:00Z"}


def test_measured_and_known_versions_raise_the_baseline(server, tmp_path):
    base, www = server
    _publish(www)
    srcs = versions.sources(_sources_file(tmp_path, base))
    sts = versions.check(DEFAULT_ENTRIES, srcs, http_fetch,
                         measured={"cilium": {"installed": ["1.18.1"], "requested": []}},
                         known={"kube-router": "v2.11.2"})
    assert not any(s.newer for s in sts)


def test_a_source_that_is_down_or_answers_garbage_changes_nothing(server, tmp_path):
    base, www = server
    _publish(www)
    srcs = versions.sources(_sources_file(tmp_path, base))
    dead = {**srcs, "calico": versions.Source("calico", "helm", _dead_url(), "tigera-operator")}
    with pytest.raises(versions.SourceError) as exc:
        versions.check(DEFAULT_ENTRIES, dead, http_fetch)
    assert str(exc.value).startswith("calico: cannot read http://127.0.0.1:") and exc.value.exit_code == 1
    missing = {**srcs, "cilium": versions.Source("cilium", "helm", f"{base}/nothing-here", "cilium")}
    with pytest.raises(versions.SourceError, match=r"cilium: cannot read .*/nothing-here/index.yaml: HTTP 404"):
        versions.check(DEFAULT_ENTRIES, missing, http_fetch)
    (www / "calico" / "index.yaml").write_text("<html><h1>502 Bad Gateway</h1></html>")
    with pytest.raises(versions.SourceFormatError, match="calico release source .* is not a Helm repository index"):
        versions.check(DEFAULT_ENTRIES, srcs, http_fetch)


def test_file_urls_for_air_gapped_labs():
    src = versions.Source("kube-router", "tags", str(DATA / "kube-router-tags.txt"))
    assert versions.newest_release(versions.upstream_versions(src, http_fetch)).text == "v2.11.2"
    with pytest.raises(versions.SourceError, match="only http, https and file URLs"):
        http_fetch("ftp://mirror/tags.txt")


def test_measured_versions_from_the_warehouse(tmp_path, monkeypatch):
    assert summaries.measured_versions(tmp_path / "none.duckdb") is None

    def nowhere():
        raise summaries.WarehouseError("cannot find the dbt project analytics/")
    monkeypatch.setattr(summaries, "default_warehouse_path", nowhere)  # the runner image on a cluster
    assert summaries.measured_versions() is None
    monkeypatch.undo()
    # the runner image has no duckdb (no analytics extra): the modules import, nothing measured, no crash (seen on a
    # real Argo run)
    import importlib
    import sys

    import edgebench.results as package
    import edgebench.results.report as report_package
    import edgebench.results.warehouse as warehouse_package
    from edgebench.results.report import marts as marts_package

    monkeypatch.setitem(sys.modules, "duckdb", None)
    for pkg, name in ((marts_package, "summaries"), (report_package, "marts"), (package, "warehouse"),
                      (warehouse_package, "builder"), (warehouse_package, "raw_cache")):
        monkeypatch.delitem(sys.modules, f"{pkg.__name__}.{name}")
        monkeypatch.setattr(pkg, name, getattr(pkg, name))  # restored with sys.modules by undo()
    fresh = importlib.import_module("edgebench.results.report.marts.summaries")
    assert fresh.duckdb is None
    assert fresh.measured_versions(tmp_path / "any.duckdb") is None
    monkeypatch.undo()
    path = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create table stg_edgebench__runs (cni varchar, status varchar, environment json)")
    rows = [("calico", "ok", {"cni_version": "v3.31.7", "cni_version_requested": None}),
            ("calico", "ok", {"cni_version": None, "cni_version_requested": "v3.31.8"}),
            ("calico", "failed", {"cni_version": "v3.40.0"}),  # not measured: the run failed
            ("flannel", "ok", {"cni_version": "unknown"}),     # not a version: ignored
            ("host", "ok", {"cni_version": None})]
    for cni, status, env in rows:
        con.execute("insert into stg_edgebench__runs values (?, ?, ?)", [cni, status, json.dumps(env)])
    con.close()
    m = summaries.measured_versions(path)
    assert m["calico"] == {"installed": ["v3.31.7"], "requested": ["v3.31.8"]}
    assert m["flannel"] == {"installed": [], "requested": []}


def test_known_versions_from_a_configmap_mount_or_a_file(tmp_path):
    mount = tmp_path / "mount"
    mount.mkdir()
    (mount / "calico").write_text("v3.31.8\n")
    (mount / "cilium").write_text("")  # a ConfigMap without a version yet
    (mount / "..data").mkdir()         # kubelet's atomic-writer entries are skipped
    assert versions.read_known(mount) == {"calico": "v3.31.8"}
    f = tmp_path / "known.yaml"
    f.write_text("calico: v3.31.8\nflannel: null\n")
    assert versions.read_known(f) == {"calico": "v3.31.8"}
    (mount / "calico").write_text("not-a-version")
    with pytest.raises(versions.VersionError, match="recorded version of calico"):
        versions.read_known(mount)
    assert versions.read_known(tmp_path / "absent") == {}


# ------------------------------------------------------------------------------------------------ CLI
def test_cli_check_and_show(server, tmp_path, monkeypatch):
    base, www = server
    _publish(www)
    monkeypatch.setenv(versions.ENV_SOURCES, str(_sources_file(tmp_path, base)))
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(tmp_path / "no-warehouse.duckdb"))
    monkeypatch.setenv("EDGEBENCH_STATE", str(tmp_path / "state"))
    runner = CliRunner()
    record = tmp_path / "records.json"
    res = runner.invoke(app, ["versions", "check", "--json", "--record", str(record)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout[res.stdout.index("["):])
    assert {d["cni"] for d in doc if d["newer"]} == {"cilium", "kube-router"}
    records = json.loads(record.read_text())
    assert [r["metadata"]["name"] for r in records] == ["edgebench-cni-version-cilium", "edgebench-cni-version-kube-router"]
    assert json.loads(records[0]["data"]["cnis"]) == ["cilium:vxlan"]
    assert json.loads(records[0]["data"]["trigger"])["new"] == records[0]["data"]["version"] == "1.18.1"
    res = runner.invoke(app, ["versions", "check", "--cnis", '["calico:vxlan","flannel"]'])
    assert res.exit_code == 0 and "no CNI has a newer version" in res.stdout
    res = runner.invoke(app, ["versions", "check"])
    assert "newer: cilium 1.18.0 -> 1.18.1: cilium:vxlan" in res.stdout
    res = runner.invoke(app, ["versions", "show", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout[res.stdout.index("["):])[0]["latest"] is None  # no network
    (www / "calico" / "index.yaml").write_text("apiVersion: v1\nentries: {}\n")
    res = runner.invoke(app, ["versions", "check", "--record", str(tmp_path / "r2.json")])
    assert isinstance(res.exception, versions.SourceFormatError) and res.exception.exit_code == 2  # main() -> exit 2
    assert "has no chart 'tigera-operator'" in str(res.exception)
    assert not (tmp_path / "r2.json").exists()  # nothing written


def test_cli_check_via_console_script_one_message(server, tmp_path):
    import os
    import subprocess
    import sys

    base, www = server
    _publish(www)
    (www / "calico" / "index.yaml").write_text("garbage: [")
    env = {**os.environ, versions.ENV_SOURCES: str(_sources_file(tmp_path, base)),
           "EDGEBENCH_WAREHOUSE": str(tmp_path / "none.duckdb"), "EDGEBENCH_STATE": str(tmp_path / "state")}
    proc = subprocess.run([sys.executable, "-m", "edgebench.cli", "versions", "check"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "calico release source" in lines[0] and "not a Helm repository index" in lines[0]


# ------------------------------------------------------------------------------------------------ the trigger parameter
GOOD_TRIGGER = {"cni": "calico", "new": "v3.31.8", "previous": "v3.31.7", "source": "http://mirror/index.yaml",
                "at": "2026-07-14T06:00:00Z"}


def _triggered(**extra):
    raw = {"cnis": '["calico:bgp","calico:vxlan"]', "trigger": json.dumps(GOOD_TRIGGER), "substrate": "local"}
    return spec.from_parameters({**raw, **extra})


def test_triggered_sweep_id_is_named_by_cni_and_version_and_ignores_when():
    s = _triggered()
    assert s.sweep_id.startswith("local-calico-v3-31-8-") and spec._SWEEP_ID.match(s.sweep_id)
    later = {**GOOD_TRIGGER, "at": "2026-07-15T00:00:00Z", "source": "ci", "previous": None}
    assert spec.from_parameters({**s.raw, "trigger": json.dumps(later)}).sweep_id == s.sweep_id
    newer = {**GOOD_TRIGGER, "new": "v3.31.9"}
    assert spec.from_parameters({**s.raw, "trigger": json.dumps(newer)}).sweep_id != s.sweep_id
    assert spec.from_parameters({**s.raw, "cnis": '["calico:bgp"]'}).sweep_id != s.sweep_id
    long = {**GOOD_TRIGGER, "cni": "kube-router", "new": "v2.11.2-rc.1.build.20260714.abcdef0123456789"}
    sid = spec.from_parameters({"cnis": '["kube-router"]', "trigger": json.dumps(long)}).sweep_id
    assert len(sid) <= 63 and spec._SWEEP_ID.match(sid), sid


def test_default_sweeps_keep_their_ids():
    assert "trigger" in spec.NEUTRAL_AT_DEFAULT
    assert spec.from_parameters({}).sweep_id == spec.from_parameters({"trigger": "{}"}).sweep_id
    assert spec.from_parameters({"trigger": "{}"}).values["trigger"] == {}


@pytest.mark.parametrize("trigger, cnis, message", [
    ({"cni": "calico", "new": "latest"}, '["calico:bgp"]', "trigger.new 'latest' is not a version"),
    ({"cni": "calico", "new": "v3.31.8", "previous": "3.x"}, '["calico:bgp"]', "trigger.previous '3.x' is not a version"),
    ({"cni": "nope", "new": "1.0.0"}, '["calico:bgp"]', "unknown CNI 'nope'"),
    ({"cni": "host", "new": "1.0.0"}, '["host"]', "host-network baseline"),
    ({"new": "1.0.0"}, '["calico:bgp"]', "needs 'cni'"),
    ({"cni": "calico", "new": "v3.31.8", "extra": 1}, '["calico:bgp"]', "unknown key(s) 'extra'"),
    ({"cni": "calico", "new": "v3.31.8", "at": "yesterday"}, '["calico:bgp"]', "'at' must be an ISO 8601 time"),
    ({"cni": "calico", "new": "v3.31.8"}, '["calico:bgp","flannel:vxlan"]', "cnis also names flannel:vxlan"),
    ({"cni": "calico", "new": "v3.31.8"}, '["host","calico:bgp"]', "cnis also names host:host"),
])
def test_bad_trigger_is_one_clear_message(trigger, cnis, message):
    with pytest.raises(SpecError) as exc:
        spec.from_parameters({"cnis": cnis, "trigger": json.dumps(trigger)})
    assert message in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("value", ["[1]", "nope", '"x"', "{bad json"])
def test_trigger_must_be_a_json_object(value):
    with pytest.raises(SpecError, match="must be a JSON object"):
        spec.from_parameters({"cnis": '["calico:bgp"]', "trigger": value})


def test_manifest_records_the_trigger_as_requested_never_as_installed():
    doc = {"status": "ok", "environment": {"cni_version": None, "cni_version_requested": None, "kernel": "6.1"},
           "trigger": None}
    out = with_trigger(doc, _triggered().values["trigger"])
    assert out["trigger"] == GOOD_TRIGGER
    assert out["environment"] == {"cni_version": None, "cni_version_requested": "v3.31.8", "kernel": "6.1"}
    assert with_trigger(doc, {}) is doc and doc["trigger"] is None


def test_argo_cells_of_a_triggered_rerun_keep_the_trigger_id():
    """On Argo the sweep id defaults to the workflow name; a triggered rerun keeps its own (every delivery of the
    event maps to the same keys)."""
    params = [{"name": "cnis", "value": '["calico:bgp","calico:vxlan"]'}, {"name": "trigger", "value": json.dumps(GOOD_TRIGGER)},
              {"name": "substrate", "value": "local"}]
    res = CliRunner().invoke(app, ["cells", "--argo-parameters", json.dumps(params), "--default-sweep-id", "edgebench-rerun-x7k2p"])
    assert res.exit_code == 0, res.output
    cells = json.loads(res.stdout)
    assert {c["sweep_id"] for c in cells} == {_triggered().sweep_id}
    assert {(c["cni"], c["cni_mode"]) for c in cells} == {("calico", "bgp"), ("calico", "vxlan")}
    assert all(json.loads(c["parameters"]["trigger"]) == GOOD_TRIGGER for c in cells)
    plain = [{"name": "cnis", "value": '["calico:bgp"]'}]
    res = CliRunner().invoke(app, ["cells", "--argo-parameters", json.dumps(plain), "--default-sweep-id", "edgebench-sweep-abc"])
    assert {c["sweep_id"] for c in json.loads(res.stdout)} == {"edgebench-sweep-abc"}


# ------------------------------------------------------------------------------------------------ watch (no testbed)
def _base(**params) -> spec.Sweep:
    overrides = {"cnis": '["host","flannel:vxlan","calico:vxlan","calico:bgp"]', "workloads": '["iperf3:tcp"]',
                 "sweep-id": "baseline-1", **params}
    return spec.load(ROOT / "workflows" / "sweep.yaml", overrides, substrate="local")


def _status(cni, latest, pinned=None, modes=None):
    src = versions.catalog_sources()[cni]
    return versions.CniStatus(cni, modes or [], src, pinned or catalog.resolve_cni(cni).version, latest=latest)


def test_plan_reruns_only_the_changed_cnis_modes(tmp_path):
    base = _base()
    state = watch.State(tmp_path / "state.json")
    sts = [_status("calico", "v3.31.8"), _status("flannel", "v0.28.9"), _status("cilium", "1.18.1")]
    reruns, notes = watch.plan(base, sts, state, at="2026-07-14T06:00:00Z")
    assert [r.cni for r in reruns] == ["calico"]
    (r,) = reruns
    assert r.modes == ["calico:vxlan", "calico:bgp"]  # the sweep's calico modes, not host, not flannel
    assert r.sweep.sweep_id.startswith("local-calico-v3-31-8-") and r.sweep.sweep_id != base.sweep_id
    assert r.sweep.values["trigger"]["previous"] == "v3.31.7"
    assert {k: r.sweep.raw[k] for k in ("workloads", "repetitions", "duration")} == \
        {k: base.raw[k] for k in ("workloads", "repetitions", "duration")}
    assert notes == ["cilium 1.18.1 is newer than 1.18.0, but the sweep runs no cilium mode"]
    # a pending trigger of the same version is reused as it was (a resumed rerun keeps `at`)
    state.pending["calico"] = {**r.trigger, "at": "2026-07-01T00:00:00Z"}
    (again,), _ = watch.plan(base, sts, state, at="2026-07-14T07:00:00Z")
    assert again.trigger["at"] == "2026-07-01T00:00:00Z" and again.sweep.sweep_id == r.sweep.sweep_id


def test_watch_once_runs_each_rerun_once_and_remembers(server, tmp_path, monkeypatch):
    base_url, www = server
    _publish(www)
    srcs = versions.sources(_sources_file(tmp_path, base_url))
    ran = []
    state_file = tmp_path / "state" / "cni-versions.json"
    sweep = _base(cnis='["host","flannel:vxlan","cilium:vxlan","kube-router"]')
    common = dict(srcs=srcs, state_file=state_file, warehouse_path=tmp_path / "none.duckdb", log=lambda m: None)
    rnd = watch.watch_once(sweep, ran.append, **common)
    assert [s.values["trigger"]["cni"] for s in ran] == ["cilium", "kube-router"]
    assert [[cm.key for cm in s.values["cnis"]] for s in ran] == [["cilium:vxlan"], ["kube-router:bgp"]]
    st = json.loads(state_file.read_text())
    assert st["pending"] == {} and st["cnis"]["cilium"]["version"] == "1.18.1"
    assert st["cnis"]["cilium"]["sweep_id"] == ran[0].sweep_id and len(rnd.reruns) == 2
    again = watch.watch_once(sweep, ran.append, **common)
    assert len(ran) == 2 and not again.reruns  # nothing rerun twice


def test_watch_bad_input_starts_nothing_and_writes_nothing(server, tmp_path):
    base_url, www = server
    _publish(www)
    srcs = versions.sources(_sources_file(tmp_path, base_url))
    state_file = tmp_path / "state" / "cni-versions.json"
    ran = []
    common = dict(state_file=state_file, warehouse_path=tmp_path / "none.duckdb", log=lambda m: None)
    sweep = _base(cnis='["cilium:vxlan","kube-router"]')
    (www / "kube-router-tags.txt").write_text("<html>mirror login</html>")  # one source answers garbage
    with pytest.raises(versions.SourceFormatError):
        watch.watch_once(sweep, ran.append, srcs=srcs, **common)
    bad = {**srcs, "kube-router": versions.Source("kube-router", "tags", _dead_url())}  # one is down
    with pytest.raises(versions.SourceError):
        watch.watch_once(sweep, ran.append, srcs=bad, **common)
    (www / "kube-router-tags.txt").write_text("v2.11.1\nv2.99.0-not..a.version\n")
    (www / "cilium" / "index.yaml").write_text("apiVersion: v1\nentries:\n  cilium:\n  - {version: 1.18.1}\n")
    state_file.parent.mkdir()
    state_file.write_text('{"cnis": {"cilium": {"version": "one.eighteen"}}, "pending": {}}')
    with pytest.raises(versions.VersionError, match="recorded version|not a version"):
        watch.watch_once(sweep, ran.append, srcs=srcs, **common)
    assert ran == [] and json.loads(state_file.read_text())["cnis"]["cilium"]["version"] == "one.eighteen"
