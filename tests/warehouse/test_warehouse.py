"""warehouse.build() on the fixture raw data in a local directory (EDGEBENCH_RAW_ROOT = a bucket-shaped dir)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import fixture_manifests as fx
from edgebench.results import warehouse
from edgebench.results.report.marts import summaries
from edgebench.results.warehouse import dbt_runner


def q(path, sql, *params):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def test_row_counts(fixture_warehouse):
    assert q(fixture_warehouse, "select count(*) from stg_edgebench__runs") == [(fx.N_MANIFESTS,)]
    assert q(fixture_warehouse, "select count(*) from int_runs__deduplicated") == [(fx.N_MANIFESTS - 1,)]
    assert q(fixture_warehouse, "select count(*) from fct_iperf3_runs") == [(fx.N_IPERF3_RUNS,)]
    assert q(fixture_warehouse, "select count(*) from cmp_iperf3_vs_host") == [(fx.N_OVERHEAD_ROWS,)]


def test_duplicate_run_id_keeps_latest(fixture_warehouse):
    rows = q(fixture_warehouse, """select sweep_id, throughput_mbps, n_manifests from int_runs__deduplicated
                                   where n_manifests > 1""")
    assert rows == [("fixture-sweep-1", 9000.0, 2)]


def test_overhead_pct_known_example(fixture_warehouse):
    rows = q(fixture_warehouse, """
        select protocol, n_runs, throughput_mbps, host_throughput_mbps, host_n_runs, overhead_pct
        from cmp_iperf3_vs_host
        where substrate = 'local' and cni = 'flannel' order by protocol""")
    (tcp, udp) = rows
    assert tcp[:5] == ("tcp", 3, 7000.0, 9000.0, 3) and tcp[5] == pytest.approx(fx.OVERHEAD_LOCAL_TCP_FLANNEL)
    assert udp[:5] == ("udp", 3, 960.0, 1000.0, 3) and udp[5] == pytest.approx(fx.OVERHEAD_LOCAL_UDP_FLANNEL)
    # stddev of 7000/7200/6800 is 200; CI half-width = t(0.975, 2) * 200 / sqrt(3)
    ci = q(fixture_warehouse, """select throughput_ci95_mbps from cmp_iperf3_vs_host
                                 where substrate='local' and cni='flannel' and protocol='tcp'""")[0][0]
    assert ci == pytest.approx(4.303 * 200 / 3 ** 0.5)


def test_host_baseline_only_from_same_substrate(fixture_warehouse):
    # kind has no host runs in the fixtures: the local host baseline must not be used
    rows = q(fixture_warehouse, """select host_throughput_mbps, overhead_pct from cmp_iperf3_vs_host
                                   where substrate = 'kind'""")
    assert rows == [(None, None)]


def test_failed_and_unsupported_visible_but_not_in_overhead(fixture_warehouse):
    rows = q(fixture_warehouse, """select cni, cni_mode, status, error, throughput_mbps from fct_iperf3_runs
                                   where status <> 'ok' order by status""")
    assert [(r[0], r[1], r[2]) for r in rows] == [("calico", "vxlan", "failed"), ("calico", "ipip", "unsupported")]
    assert rows[1][3] == "unsupported: kernel has no ipip" and all(r[4] is None for r in rows)
    assert q(fixture_warehouse, "select count(*) from cmp_iperf3_vs_host where cni_mode = 'ipip'") == [(0,)]
    # calico/vxlan udp: 2 ok runs + 1 failed -> mean over the 2 ok ones only
    assert q(fixture_warehouse, """select n_runs, throughput_mbps from cmp_iperf3_vs_host
                                   where cni='calico' and protocol='udp'""") == [(2, 950.0)]


def test_other_workloads_do_not_reach_iperf3_models(fixture_warehouse):
    assert q(fixture_warehouse, "select workload, count(*) from stg_edgebench__runs group by 1 order by 1") == [
        ("dds", fx.N_DDS_RUNS), ("http", fx.N_HTTP_RUNS), ("iperf3", fx.N_IPERF3_RUNS + 1)]
    assert q(fixture_warehouse, "select typeof(started_at) from fct_iperf3_runs limit 1") == [("TIMESTAMP",)]


def test_iperf3_summary(fixture_warehouse):
    rows = summaries.iperf3_summary(fixture_warehouse)
    by = {(r["substrate"], r["cni"], r["cni_mode"], r["protocol"]): r for r in rows}
    assert by[("local", "flannel", "vxlan", "tcp")]["overhead_pct"] == pytest.approx(fx.OVERHEAD_LOCAL_TCP_FLANNEL)
    assert by[("local", "host", "host", "tcp")]["overhead_pct"] == 0
    ipip = by[("local", "calico", "ipip", "tcp")]
    assert (ipip["n_ok"], ipip["n_unsupported"], ipip["throughput_mbps"]) == (0, 1, None)
    assert by[("kind", "flannel", "vxlan", "tcp")]["overhead_pct"] is None
    # every comparison carries a verdict: the host is the baseline; flannel (7000 vs 9000 Mbit/s, the interval of
    # the difference far beyond the 5 % margin) is worse; kind has no host run under the same conditions
    assert by[("local", "host", "host", "tcp")]["verdict"] == "baseline"
    flannel = by[("local", "flannel", "vxlan", "tcp")]
    assert flannel["verdict"] == "worse" and flannel["throughput_mbps"] < flannel["host_throughput_mbps"]
    assert flannel["verdict_margin_pct"] == 5.0 and flannel["host_n_runs"] >= 2
    assert by[("kind", "flannel", "vxlan", "tcp")]["verdict"] == "no baseline"


def test_broken_fixture_fails_build_and_keeps_old_warehouse(tmp_path, fixture_warehouse):
    """dbt data tests run inside build(): an unknown status must make it raise, leaving the warehouse as it was."""
    ms = fx.fixture_manifests()
    ms[0]["status"] = "exploded"
    root = fx.write_tree(tmp_path / "raw", ms)
    target = tmp_path / "wh.duckdb"
    target.write_bytes(fixture_warehouse.read_bytes())
    before = target.read_bytes()
    with pytest.raises(warehouse.WarehouseError) as exc:
        warehouse.build(warehouse_path=target, raw_root=str(root), quiet=True)
    # the failing rule is named with its column and the offending value (column_contract's rows, rerun by build())
    assert "status: accepted_values" in str(exc.value) and "e.g. exploded" in str(exc.value)
    assert target.read_bytes() == before
    # no temp database left behind; dbt's logs and compiled SQL are kept for diagnosis
    # beside the warehouse: dbt's partial-parse state and the build lock (.wh.duckdb.dbt), no half-built file
    assert sorted(p.name for p in tmp_path.iterdir()) == [".wh.duckdb.dbt", "dbt-last-failure", "raw", "wh.duckdb"]
    assert "dbt-last-failure" in str(exc.value)


def test_no_results_raises_clear_error(tmp_path):
    (tmp_path / "raw").mkdir()
    with pytest.raises(warehouse.NoResultsError, match="make sweep"):
        warehouse.build(warehouse_path=tmp_path / "wh.duckdb", raw_root=str(tmp_path / "raw"), quiet=True)
    assert not (tmp_path / "wh.duckdb").exists()


def _prewarmed_dbt_children() -> list[int]:
    """Processes whose parent is this one and that run dbt_runner._DBT_PRELUDE (dbt imported ahead of its arguments)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = (d / "stat").read_text().rsplit(")", 1)[1].split()[1]
            cmdline = (d / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if ppid == str(os.getpid()) and b"from dbt.cli.main import cli" in cmdline:
            found.append(int(d.name))
    return found


def test_a_build_that_stops_before_dbt_leaves_no_dbt_process(tmp_path):
    """dbt's interpreter starts with the build (it imports dbt while the raw cache syncs); a build that ends before
    dbt is needed (here: no results) stops it."""
    (tmp_path / "raw").mkdir()
    with pytest.raises(warehouse.NoResultsError):
        warehouse.build(warehouse_path=tmp_path / "wh.duckdb", raw_root=str(tmp_path / "raw"), quiet=True)
    assert _prewarmed_dbt_children() == []


@pytest.mark.parametrize("prewarmed", [True, False])
def test_dbt_runs_prewarmed_or_from_path(monkeypatch, prewarmed):
    """The prewarmed interpreter runs dbt as its entry point does; without dbt in this interpreter, the dbt
    executable is started instead. Both give dbt's own exit code and output."""
    if not prewarmed:
        real = dbt_runner.importlib.util.find_spec
        monkeypatch.setattr(dbt_runner.importlib.util, "find_spec",
                            lambda name, *a: None if name.startswith("dbt") else real(name, *a))
    dbt, bad = dbt_runner.Dbt(dict(os.environ)), dbt_runner.Dbt(dict(os.environ))
    try:
        assert (dbt.proc is not None) == prewarmed
        code, text = dbt.run(["--version"], quiet=True)
        assert code == 0 and "Core:" in text and "duckdb" in text
        code, text = bad.run(["no-such-command"], quiet=True)
        assert code != 0 and "no-such-command" in text
    finally:
        dbt.close()
        bad.close()


def test_env_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("EDGEBENCH_RAW_ROOT", raising=False)
    monkeypatch.setenv("EDGEBENCH_BUCKET", "other")
    assert warehouse.default_raw_root() == "s3://other"
    monkeypatch.setenv("EDGEBENCH_WAREHOUSE", str(tmp_path / "w.duckdb"))
    assert warehouse.default_warehouse_path() == tmp_path / "w.duckdb"
    monkeypatch.delenv("EDGEBENCH_WAREHOUSE")
    assert warehouse.default_warehouse_path() == warehouse.analytics_dir().parent / ".edgebench/warehouse.duckdb"


def test_ensure_httpfs_is_idempotent():
    warehouse.ensure_httpfs()
    warehouse.ensure_httpfs()
    with duckdb.connect() as con:
        con.execute("LOAD httpfs")


def test_malformed_manifest_fails_naming_the_file(tmp_path):
    root = fx.write_tree(tmp_path / "raw")
    bad = sorted(root.rglob("manifest.json"))[0]
    bad.write_text("{not json")
    with pytest.raises(warehouse.WarehouseError, match="malformed JSON in manifest .*" + bad.parent.name):
        warehouse.build(warehouse_path=tmp_path / "wh.duckdb", raw_root=str(root), quiet=True)


def test_dds_and_http_summaries_come_from_the_overhead_marts(fixture_warehouse):
    dds = summaries.dds_summary(fixture_warehouse)
    http = summaries.http_summary(fixture_warehouse)
    assert dds and http
    host = [r for r in dds if r["cni"] == "host"]
    assert host and all(r["latency_p90_overhead_pct"] == 0 for r in host)
    assert all(r["latency_p50_us"] <= r["latency_p99_us"] for r in dds if r["latency_p50_us"] is not None)
    assert all(r["response_p50_ms"] <= r["response_p90_ms"] for r in http if r["response_p50_ms"] is not None)
    assert {r["service"] for r in http} <= {"payload-echo", "payload-recv", "static-reply"}
    assert all(r["verdict"] == "baseline" for r in dds + http if r["cni"] == "host")
    verdicts = {r["verdict"] for r in dds + http}
    assert verdicts <= {"baseline", "equivalent", "better", "worse", "inconclusive", "n < 2", "no baseline"}
    # the fixtures give decided and undecided comparisons alike (see test_verdict for each row's arithmetic)
    assert {"baseline", "worse", "inconclusive", "n < 2"} <= verdicts, verdicts
    # (paired by round where a sweep ran in round blocks, else Welch: the fixture's sweeps ran cell by cell)
    assert all(r["verdict_margin_pct"] == 5.0 and r["verdict_method"] in ("welch", "paired", "pooled") for r in dds + http
               if r["verdict"] not in ("baseline", "no baseline"))


# ------------------------------------------------------------------ httpfs on a machine that never saw the project
def _duckdb_in_home(home: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(home), **env})


def test_httpfs_installs_into_an_empty_extension_directory_and_loads(tmp_path):
    """The bug a green CI once hid: a fresh HOME has no ~/.duckdb, so ensure_httpfs must really install."""
    home = tmp_path / "home"
    home.mkdir()
    load = "import duckdb; duckdb.connect().execute('LOAD httpfs'); print('loaded')"
    before = _duckdb_in_home(home, load)
    assert before.returncode != 0, "httpfs loaded from an empty HOME: the test would prove nothing"
    # the temporary repository path carries a quote, which must survive SQL quoting
    tmpdir = tmp_path / "o'brien"
    tmpdir.mkdir()
    installed = _duckdb_in_home(home, "from edgebench.results.warehouse import ensure_httpfs; ensure_httpfs()",
                                TMPDIR=str(tmpdir))
    assert installed.returncode == 0, installed.stderr
    files = list((home / ".duckdb" / "extensions").rglob("httpfs.duckdb_extension"))
    assert files, "ensure_httpfs installed nothing under ~/.duckdb/extensions"
    after = _duckdb_in_home(home, load)
    assert after.returncode == 0 and "loaded" in after.stdout, after.stderr
    assert not list(tmpdir.iterdir()), "the temporary extension repository was left behind"


# ------------------------------------------------------------------ the dbt project's layering
def test_dbt_layers_never_point_backwards_and_every_model_is_documented():
    import re

    import yaml

    root = Path(__file__).resolve().parents[2] / "analytics" / "models"
    layer = {"staging": 0, "intermediate": 1, "marts": 2}
    models = {p.stem: (layer[p.parent.name], p) for p in root.rglob("*.sql")}
    # one yml per model, beside it and named after it, describing that model only
    for name, (_, path) in models.items():
        yml = path.with_suffix(".yml")
        assert yml.exists(), f"{name}: no {yml.name} beside {path.name}"
        described = [m["name"] for m in (yaml.safe_load(yml.read_text()).get("models") or [])]
        assert described == [name], f"{yml.name} describes {described}, not {name} alone"
    for yml in root.rglob("*.yml"):
        for m in yaml.safe_load(yml.read_text()).get("models") or []:
            assert yml.stem == m["name"], f"{yml.relative_to(root)} describes {m['name']}"
    for name, (level, path) in models.items():
        for ref in re.findall(r"ref\('([a-z0-9_]+)'\)", path.read_text()):
            assert models[ref][0] <= level, f"{name} ({path.parent.name}) refs {ref} of a later layer"
            if level < 2:
                assert models[ref][0] < level or ref != name
        prefixes = {0: ("stg_",), 1: ("int_",), 2: ("fct_", "cmp_")}[level]  # marts: facts, comparisons
        assert name.startswith(prefixes), f"{name}: {path.parent.name} models are named {'/'.join(prefixes)}*"
    portal = "\n".join(p.read_text() for p in (root.parents[1] / "app").rglob("*.py"))
    assert not re.search(r"\b(stg|int)_[a-z0-9_]+__", portal), "the portal reads marts only"


# Models whose yml lists every column the model builds, in the built order, each with a description. The other
# ymls list a subset (the columns worth a word); a model joins this set once its yml is complete.
FULLY_DOCUMENTED = frozenset({
    "stg_edgebench__loaded_latency",
    "int_runs__cpu_headroom", "int_sweeps__round_blocks",
    "int_iperf3__comparable_runs", "int_sockperf__comparable_runs", "int_dds__comparable_runs",
    "int_http__comparable_runs",
    "int_dds__runs", "int_dds__samples", "int_dds__config_stats",
    "int_http__requests", "int_http__run_stats", "int_http__kpis", "int_http__config_stats",
    "int_http__intercluster_stats",
    "cmp_resources_vs_host", "fct_cni_support",
})


def test_each_yml_names_the_columns_the_model_builds(fixture_warehouse):
    """A yml names only columns its model builds (a renamed or dropped column fails here, not in a reader's
    query); for FULLY_DOCUMENTED models the yml lists all of them, in the built order, each described."""
    import yaml

    root = Path(__file__).resolve().parents[2] / "analytics" / "models"
    built = {}
    for table, column in q(fixture_warehouse, "select table_name, column_name from information_schema.columns "
                                              "where table_schema = 'main' order by table_name, ordinal_position"):
        built.setdefault(table, []).append(column)
    documented = set()
    for yml in sorted(root.rglob("*.yml")):
        for m in yaml.safe_load(yml.read_text()).get("models") or []:
            name, columns = m["name"], m.get("columns") or []
            listed = [c["name"] for c in columns]
            assert name in built, f"{yml.name}: {name} is not in the warehouse"
            assert not set(listed) - set(built[name]), f"{yml.name} lists columns {name} does not build: " \
                                                       f"{sorted(set(listed) - set(built[name]))}"
            assert len(listed) == len(set(listed)), f"{yml.name} lists a column twice"
            if name in FULLY_DOCUMENTED:
                documented.add(name)
                assert listed == built[name], f"{yml.name}: listed {listed} != built {built[name]}"
                assert all((c.get("description") or "").strip() for c in columns), f"{yml.name}: undescribed"
    assert documented == FULLY_DOCUMENTED


def test_the_per_run_models_spell_the_run_columns_alike(fixture_warehouse):
    """The per-run models write their select lists out in plain SQL; the run's attributes (ids, cell dimensions,
    MTU, link conditions, inter-cluster tool) lead each of them and its outcome ends each, under the same names in
    the same order; the two DDS marts differ only in their mode's metrics, and the DDS parameters follow dds_mode."""
    def columns(table):
        return [r[0] for r in q(fixture_warehouse, "select column_name from information_schema.columns "
                                                   "where table_name = ? order by ordinal_position", table)]

    attributes = columns("fct_runs")[:columns("fct_runs").index("intercluster_model") + 1]
    outcome = columns("fct_runs")[columns("fct_runs").index("status"):]
    assert attributes[:3] == ["run_id", "sweep_id", "cell_id"] and outcome[-1] == "low_cpu_headroom"
    for table in ("fct_iperf3_runs", "fct_http_runs", "fct_dds_latency", "fct_dds_throughput", "int_dds__runs"):
        cols = columns(table)
        assert cols[:len(attributes)] == attributes, table
        assert cols[-len(outcome):] == outcome, table
    dds = ["reliability", "transport", "subscribers", "discovery", "security", "batching", "rate", "ping_timeout_ms"]
    latency, throughput = columns("fct_dds_latency"), columns("fct_dds_throughput")
    assert latency[:latency.index("latency_mean_us")] == throughput[:throughput.index("samples_per_s")]
    assert latency[latency.index("cpu_pub_pct"):] == throughput[throughput.index("cpu_pub_pct"):]
    for table in ("int_dds__runs", "int_dds__samples"):
        cols = columns(table)
        assert cols[cols.index("dds_mode") + 1:cols.index("dds_mode") + 1 + len(dds)] == dds, table
    assert latency[latency.index("repetition") + 1:latency.index("repetition") + 1 + len(dds)] == dds


def test_the_cell_dimensions_are_named_in_one_macro(fixture_warehouse):
    """Models name the cell dimension columns only through macros/cell_dimensions.sql (staging too): a new
    dimension is one entry there. Every comparison mart carries them, in the macro's order, first or after the ids."""
    import re

    analytics = Path(__file__).resolve().parents[2] / "analytics"
    naming = sorted(str(p.relative_to(analytics)) for p in analytics.rglob("*.sql")
                    if "target" not in p.parts and re.search(r"\bcpu_class\b", p.read_text()))
    assert naming == ["macros/cell_dimensions.sql"]  # staging parses them through it too
    dims = ["substrate", "lab", "distribution", "cni", "cni_mode", "datapath", "netem_scenario", "tuning_profile",
            "cpu_class"]
    # cmp_emulation_vs_real / _overhead compare the substrates with each other: substrate and distribution are not
    # their grain
    marts = [r[0] for r in q(fixture_warehouse, "select table_name from information_schema.tables "
                                                "where table_name like 'cmp_%' and table_name not in "
                                                "('cmp_distributions', 'cmp_cni_version_regressions', "
                                                "'cmp_emulation_vs_real', 'cmp_emulation_overhead')")]
    assert len(marts) == 10  # cmp_sockperf_vs_host the tenth
    for mart in marts:
        cols = [r[0] for r in q(fixture_warehouse, "select column_name from information_schema.columns "
                                                   "where table_name = ? order by ordinal_position", mart)]
        assert cols[:len(dims)] == dims, mart
    cols = [r[0] for r in q(fixture_warehouse, "select column_name from information_schema.columns "
                                               "where table_name = 'fct_runs' order by ordinal_position")]
    assert cols[:3 + len(dims)] == ["run_id", "sweep_id", "cell_id", *dims]


def test_column_contract_names_each_broken_rule(tmp_path):
    """One column_contract test per model checks its not_null, accepted_values and unique rules in one pass; a
    broken rule fails the build, and the message names the column, the rule and what broke it."""
    ms = [m for m in fx.http_manifests() if m["status"] == "ok"][:2]
    ms[0]["schema_version"] = 2                                   # accepted_values on a number (unquoted)
    root = fx.write_tree(tmp_path / "raw", ms)
    requests = fx.http_requests(ms[1])
    requests[1]["seq"] = requests[0]["seq"]                       # (raw_key, seq) unique as a combination
    requests[2]["seq"] = None                                     # not_null
    (root / fx.key(ms[1])).with_name("http-requests.json").write_text(json.dumps(requests))
    with pytest.raises(warehouse.WarehouseError) as exc:
        warehouse.build(warehouse_path=tmp_path / "wh.duckdb", raw_root=str(root), quiet=True)
    text = str(exc.value)
    assert "stg_edgebench__runs__column_contract" in text and "stg_edgebench__http_requests__column_contract" in text
    assert "rule=schema_version: accepted_values, problem=1 rows outside [1], e.g. 2" in text
    assert "rule=seq: not_null, problem=1 null rows" in text
    assert "rule=raw_key, seq: unique, problem=1 duplicate rows" in text
