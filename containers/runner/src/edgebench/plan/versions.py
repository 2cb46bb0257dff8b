"""CNI versions: what upstream has released, what the catalog pins, what was measured, and which CNIs are behind.

Where each CNI publishes releases is catalog data (catalog/cni_installs.yaml `releases:`): the Helm repository
index.yaml of its chart, a GitHub releases list, or a plain tag list. A user's mirror or an air-gapped lab replaces
them per CNI with a sources file (--sources FILE or $EDGEBENCH_VERSION_SOURCES).

Everything here is pure: reading a source takes a fetch function (sweep/release_sources.http_fetch reads the
network); what the warehouse measured is results/report/marts/summaries.measured_versions. A source that is down
raises SourceError; one that answers with something that is not a release list raises SourceFormatError; a version
string that is not a version raises VersionError. Each is one message, and callers change nothing when one is
raised.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from edgebench.errors import EdgebenchError, SpecError
from edgebench.plan import catalog
from edgebench.plan.versioning import (Version, VersionError, is_version, newest_release,  # noqa: F401 (re-exported)
                                       parse_version)



ENV_SOURCES = "EDGEBENCH_VERSION_SOURCES"
SOURCE_TYPES = ("helm", "github-releases", "tags")

class SourceError(EdgebenchError):
    """A release source cannot be read (down, refused, HTTP error): exit code 1, nothing changed."""


class SourceFormatError(SpecError):
    """A release source answered with something that is not a release list (exit code 2, nothing changed)."""


# ------------------------------------------------------------------------------------------------ sources
@dataclass(frozen=True)
class Source:
    """Where one CNI's releases are read: a Helm repository (index.yaml + chart), a GitHub releases list, or a
    plain tag list."""

    cni: str
    type: str
    url: str
    chart: str | None = None

    @property
    def location(self) -> str:
        """The URL that is read."""
        if self.type == "helm":
            return self.url.rstrip("/") + "/index.yaml"
        return self.url

    def describe(self) -> str:
        return f"helm chart {self.chart} at {self.location}" if self.type == "helm" else f"{self.type} {self.location}"


def _source(cni: str, entry: Any, where: str) -> Source:
    if not isinstance(entry, dict):
        raise SpecError(f"{where}: the release source of {cni} must be a mapping {{type, url[, chart]}}; got {entry!r}")
    unknown = sorted(set(entry) - {"type", "url", "chart"})
    if unknown:
        raise SpecError(f"{where}: release source of {cni} has unknown key(s) {', '.join(unknown)} "
                        "(known: type, url, chart)")
    kind = entry.get("type")
    if kind not in SOURCE_TYPES:
        raise SpecError(f"{where}: release source type of {cni} must be one of {', '.join(SOURCE_TYPES)}; got {kind!r}")
    url, chart = entry.get("url"), entry.get("chart")
    if kind == "helm" and (url is None or chart is None):  # the catalog's helm install names the repository and chart
        helm = (catalog.load("cni_installs.yaml")["cnis"].get(cni) or {}).get("helm") or {}
        url = url or helm.get("url")
        chart = chart or (str(helm["chart"]).split("/")[-1] if helm.get("chart") else None)
    if not isinstance(url, str) or not url.strip():
        raise SpecError(f"{where}: release source of {cni} needs a url")
    if kind == "helm" and (not isinstance(chart, str) or not chart.strip()):
        raise SpecError(f"{where}: the helm release source of {cni} needs a chart name")
    return Source(cni, kind, url.strip(), chart.strip() if kind == "helm" else None)


def catalog_sources() -> dict[str, Source]:
    """The upstream release source of every CNI that has one (the host baseline has none)."""
    out = {}
    for cni, info in catalog.load("cni_installs.yaml")["cnis"].items():
        if info.get("releases") is not None:
            out[cni] = _source(cni, info["releases"], "catalog/cni_installs.yaml")
    return out


def load_overrides(path: str | os.PathLike) -> dict[str, Source]:
    """A sources file: a YAML mapping CNI -> {type, url[, chart]} (a mirror, an air-gapped lab's file server)."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"version sources file {p} does not exist") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SpecError(f"version sources file {p} cannot be read as YAML: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise SpecError(f"version sources file {p} must map CNI names to {{type, url[, chart]}}")
    known = catalog_sources()
    out = {}
    for cni, entry in doc.items():
        if cni not in known:
            raise SpecError(f"version sources file {p}: {cni!r} is not a CNI with releases; known: "
                            f"{', '.join(sorted(known))}")
        out[cni] = _source(cni, entry, f"version sources file {p}")
    return out


def sources(overrides: str | os.PathLike | None = None) -> dict[str, Source]:
    """The catalog's sources with those of the sources file (argument, else $EDGEBENCH_VERSION_SOURCES) on top."""
    out = catalog_sources()
    path = overrides or os.environ.get(ENV_SOURCES)
    if path:
        out.update(load_overrides(path))
    return out


# ------------------------------------------------------------------------------------------------ parsers (pure)
def _text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceFormatError(f"{where} is not UTF-8 text (not a release list)") from None


def parse_helm_index(data: bytes, chart: str, where: str = "index") -> list[Version]:
    """The versions of `chart` in a Helm repository index.yaml (apiVersion v1, entries: chart -> [{version, ...}]);
    deprecated chart versions are left out. A malformed index or a missing chart is a SourceFormatError."""
    try:
        doc = yaml.safe_load(_text(data, where))
    except yaml.YAMLError as exc:
        raise SourceFormatError(f"{where} is not a Helm repository index (invalid YAML: "
                                f"{str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), dict):
        raise SourceFormatError(f"{where} is not a Helm repository index (no `entries` mapping)")
    if chart not in doc["entries"]:
        names = sorted(map(str, doc["entries"]))
        raise SourceFormatError(f"{where} has no chart {chart!r} (charts: {', '.join(names[:12]) or 'none'})")
    entries = doc["entries"][chart]
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise SourceFormatError(f"{where}: entries.{chart} must be a list of chart versions")
    out = []
    for e in entries:
        if e.get("deprecated") is True:
            continue
        v = e.get("version")
        if is_version(v):
            out.append(parse_version(v))
    if not out:
        raise SourceFormatError(f"{where}: chart {chart!r} lists no version of the form MAJOR.MINOR.PATCH")
    return out


def parse_github_releases(data: bytes, where: str = "releases") -> list[Version]:
    """The versions in a GitHub releases API answer (a JSON list of {tag_name, draft, prerelease, ...}); drafts and
    releases marked prerelease are left out, and tags that are not versions are ignored."""
    try:
        doc = json.loads(_text(data, where))
    except ValueError as exc:
        raise SourceFormatError(f"{where} is not a GitHub releases list (invalid JSON: {getattr(exc, 'msg', exc)})") from None
    if not isinstance(doc, list) or not all(isinstance(e, dict) and "tag_name" in e for e in doc):
        raise SourceFormatError(f"{where} is not a GitHub releases list (a JSON list of objects with tag_name)")
    out = [parse_version(e["tag_name"]) for e in doc
           if not e.get("draft") and not e.get("prerelease") and is_version(e["tag_name"])]
    if not out:
        raise SourceFormatError(f"{where}: no release tag of the form MAJOR.MINOR.PATCH")
    return out


def parse_tags(data: bytes, where: str = "tags") -> list[Version]:
    """A plain tag list: one tag per line, `#` comments and blank lines ignored, lines that are not versions
    ignored (a repository's tag list holds other tags too). No version at all is a SourceFormatError."""
    text = _text(data, where)
    if "\x00" in text or text.lstrip().startswith(("<", "{", "[")):
        raise SourceFormatError(f"{where} is not a plain tag list (one tag per line)")
    lines = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    out = [parse_version(ln) for ln in lines if ln and is_version(ln)]
    if not out:
        raise SourceFormatError(f"{where}: no tag of the form MAJOR.MINOR.PATCH")
    return out


def parse_source(source: Source, data: bytes) -> list[Version]:
    where = f"{source.cni} release source {source.location}"
    if source.type == "helm":
        return parse_helm_index(data, source.chart or "", where)
    if source.type == "github-releases":
        return parse_github_releases(data, where)
    return parse_tags(data, where)


# ------------------------------------------------------------------------------------------------ fetching
Fetch = Callable[[str], bytes]


def upstream_versions(source: Source, fetch: Fetch) -> list[Version]:
    return parse_source(source, fetch(source.location))


# ------------------------------------------------------------------------------------------------ known
def read_known(path: str | os.PathLike | None) -> dict[str, str]:
    """Versions already recorded (and so already triggered) per CNI: a directory with one file per CNI holding
    its version (a mounted ConfigMap) or a YAML/JSON file {cni: version}. Missing or empty entries are skipped;
    an entry that is not a version is a VersionError."""
    if path is None:
        return {}
    p = Path(path)
    if p.is_dir():
        items = {f.name: f.read_text(encoding="utf-8").strip() for f in sorted(p.iterdir())
                 if f.is_file() and not f.name.startswith(".")}
    elif p.is_file():
        try:
            doc = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise SpecError(f"known versions file {p} is not YAML/JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise SpecError(f"known versions file {p} must map CNI names to versions")
        items = {str(k): "" if v is None else str(v) for k, v in doc.items()}
    else:
        return {}
    out = {}
    for cni, text in items.items():
        if text:
            parse_version(text, f"recorded version of {cni} ({p})")
            out[cni] = text
    return out


# ------------------------------------------------------------------------------------------------ the check
@dataclass
class CniStatus:
    """One CNI: its release source, catalog pin, measured and recorded versions, upstream's newest release."""

    cni: str
    modes: list[str]
    source: Source
    pinned: str | None
    latest: str | None = None
    measured: list[str] = field(default_factory=list)   # installed on clusters (environment.cni_version)
    requested: list[str] = field(default_factory=list)  # asked of testbed reruns (environment.cni_version_requested)
    known: str | None = None                           # already recorded / triggered (watch state, ConfigMap)

    @property
    def baseline(self) -> Version | None:
        """The newest version edgebench already has: pin, measured, requested or recorded."""
        vs = [parse_version(v) for v in [self.pinned, *self.measured, *self.requested, self.known] if v]
        return max(vs) if vs else None

    @property
    def newer(self) -> bool:
        if self.latest is None:
            return False
        base = self.baseline
        return base is None or parse_version(self.latest) > base

    def trigger(self, at: str | None = None) -> dict[str, Any]:
        """The `trigger` sweep parameter of a rerun at the newer version."""
        return {"cni": self.cni, "new": self.latest, "previous": str(self.baseline) if self.baseline else None,
                "source": self.source.location, "at": at or now()}

    def to_json(self) -> dict[str, Any]:
        return {"cni": self.cni, "modes": self.modes, "pinned": self.pinned, "measured": self.measured,
                "requested": self.requested, "known": self.known,
                "baseline": str(self.baseline) if self.baseline else None, "latest": self.latest,
                "newer": self.newer, "source": self.source.location, "source_type": self.source.type}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def statuses(cni_entries: Iterable[catalog.CniMode], srcs: dict[str, Source], *,
             measured: dict[str, dict[str, list[str]]] | None = None,
             known: dict[str, str] | None = None) -> list[CniStatus]:
    """One CniStatus per CNI of `cni_entries` that has a release source (catalog order), without upstream data."""
    modes: dict[str, list[str]] = {}
    for cm in cni_entries:
        if cm.cni in srcs:
            modes.setdefault(cm.cni, []).append(cm.key)
    out = []
    for cni in [c for c in catalog.cnis() if c in modes]:
        m = (measured or {}).get(cni) or {}
        pin = catalog.resolve_cni(cni).version
        out.append(CniStatus(cni, modes[cni], srcs[cni], pin, measured=list(m.get("installed", [])),
                             requested=list(m.get("requested", [])), known=(known or {}).get(cni)))
    return out


def check(cni_entries: Iterable[catalog.CniMode], srcs: dict[str, Source], fetch: Fetch, *,
          measured: dict[str, dict[str, list[str]]] | None = None,
          known: dict[str, str] | None = None) -> list[CniStatus]:
    """Read every source, then fill in upstream's newest release. All or nothing: if one source is down or
    answers garbage the error is raised (naming the CNI and the URL) and no status is returned."""
    out = statuses(cni_entries, srcs, measured=measured, known=known)
    for st in out:
        try:
            found = upstream_versions(st.source, fetch)
        except SourceError as exc:
            raise SourceError(f"{st.cni}: {exc}") from None
        latest = newest_release(found)
        if latest is None:
            raise SourceFormatError(f"{st.cni} release source {st.source.location} lists only pre-releases")
        st.latest = latest.text
    return out


# ------------------------------------------------------------------------------------------------ the cluster record
CONFIGMAP_PREFIX = "edgebench-cni-version-"
CONFIGMAP_LABEL = "edgebench.io/cni-version-record"


def configmap_record(st: CniStatus, trigger: dict[str, Any]) -> dict[str, Any]:
    """The ConfigMap that records a newer version on a management cluster (kustomize/base/versions/): the Argo probe
    merge-patches it, the resource EventSource sees the update, the Sensor submits the sweep with `cnis` and
    `trigger` taken from its data, and `cni-versions` [previous, new]: a paired rerun, both versions interleaved by
    round in one sweep (docs/reruns.md; ["default"], the new one alone, when there is no previous version). Only data
    is patched; the label that the EventSource selects on is in base."""
    prev = trigger.get("previous")
    paired = [prev, trigger["new"]] if prev and prev != trigger["new"] else ["default"]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIGMAP_PREFIX + st.cni},
            "data": {"cni": st.cni, "version": trigger["new"],
                     "cnis": json.dumps(st.modes, separators=(",", ":")),
                     "trigger": json.dumps(trigger, separators=(",", ":"), sort_keys=True),
                     "cni-versions": json.dumps(paired, separators=(",", ":"))}}
