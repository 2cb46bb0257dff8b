"""Where the Argo schemas come from (argo_schemas.py): ../shared/vendor first, then the pinned Go modules with their
checksums, else a skip that says why; and the pins agree with the rest of the repository."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import argo_schemas as a
import manifest_validation as mv

REPO = a.REPO


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No lookups cached, an empty vendor folder and an empty module cache under tmp_path."""
    monkeypatch.setattr(a, "_cache", {})
    monkeypatch.setattr(a, "used", {})
    (tmp_path / "vendor").mkdir()
    (tmp_path / "modcache").mkdir()
    monkeypatch.setenv("EDGEBENCH_SHARED_VENDOR", str(tmp_path / "vendor"))
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "modcache"))
    return tmp_path


def vendor(root: Path, family: str) -> Path:
    _, folder, version = a.PROJECTS[family]
    d = root / "vendor" / f"{folder}-{version}"
    d.mkdir(parents=True)
    (d / "schema.json").write_text("{}")
    (d / "install.yaml").write_text("")
    return d


def module(root: Path, family: str, ziphash: str | None = None) -> Path:
    m = a.MODULES[family]
    d = root / "modcache" / f"{a._escape(m.path)}@{m.version}"
    (d / m.schema).parent.mkdir(parents=True)
    (d / m.schema).write_text("{}")
    crd = d / m.crds.replace("*", "x")
    crd.parent.mkdir(parents=True, exist_ok=True)
    crd.write_text("")
    dl = root / "modcache" / "cache" / "download" / a._escape(m.path) / "@v"
    dl.mkdir(parents=True)
    (dl / f"{m.version}.ziphash").write_text((ziphash or m.sum) + "\n")
    return d


@pytest.mark.parametrize("family", sorted(a.PROJECTS))
def test_shared_vendor_is_preferred_to_the_module(fresh, family):
    v = vendor(fresh, family)
    module(fresh, family)
    src = a.source(family)
    assert (src.origin, src.version, src.root, src.schema) == ("shared vendor", a.PROJECTS[family][2], v,
                                                             v / "schema.json")
    assert a.used == {family: src}
    assert "(shared vendor: " in a.report_lines()[list(a.PROJECTS).index(family)]


@pytest.mark.parametrize("family", sorted(a.PROJECTS))
def test_without_the_vendor_folder_the_pinned_module_is_used(fresh, family):
    d = module(fresh, family)
    src = a.source(family)
    assert (src.origin, src.version, src.root) == ("Go module", a.MODULES[family].version, d)
    assert src.crd_files and all(f.is_file() for f in src.crd_files)
    assert str(fresh / "vendor") in src.skipped[0], "the summary says why the vendor copy was not used"
    assert a.MODULES[family].ref in src.describe()


def test_a_module_with_another_checksum_is_not_used(fresh):
    module(fresh, "workflows", ziphash="h1:tampered=")
    found = a.find("workflows")
    assert isinstance(found, str) and "h1:tampered=" in found and a.MODULES["workflows"].sum in found
    with pytest.raises(a.Unavailable):
        a.source("workflows")


def test_nothing_anywhere_skips_with_the_reason(fresh):
    with pytest.raises(pytest.skip.Exception, match=r"no Argo Events schemas: no .*vendor/argo-events-v1\.9\.11.*"
                                                    r"not in the Go module cache"):
        mv.schema_source("events")
    assert a.used == {}
    assert all("none, tests that validate against it skip" in line for line in a.report_lines())


def test_legacy_shared_variable_still_names_the_vendor_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("EDGEBENCH_SHARED_VENDOR", raising=False)
    monkeypatch.setenv("EDGEBENCH_SHARED", str(tmp_path))
    assert a.vendor_dir() == (tmp_path / "vendor").resolve()
    monkeypatch.delenv("EDGEBENCH_SHARED")
    assert a.vendor_dir() == (REPO.parent / "shared" / "vendor").resolve()


def test_pins_agree_with_the_repository():
    make = (REPO / "Makefile").read_text()
    assert re.search(r"^test: .*\bargo-schemas\b", make, re.M), "make test fetches the modules first"
    assert re.search(rf"^ARGO_VERSION\s*:= {re.escape(a.ARGO_WORKFLOWS_VERSION)}$", make, re.M)
    # the events module is the one containers/events-check builds against, with the same checksum
    m = a.MODULES["events"]
    gosum = (REPO / "containers" / "events-check" / "go.sum").read_text()
    assert f"{m.path} {m.version} {m.sum}" in gosum
    assert m.version == a.ARGO_EVENTS_VERSION
    # the workflows module is the release the e2e run proves
    assert a.MODULES["workflows"].version in (REPO / "scripts" / "e2e-argo" / "install.sh").read_text()
