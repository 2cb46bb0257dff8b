"""Where the Argo Workflows / Argo Events schemas and CRDs that validate the manifests come from (a helper for the
tests, and the script behind `make argo-schemas`).

Two places, in this order, for each project:

1. the shared vendor folder, when it holds the pinned release: <vendor>/argo-workflows-v4.1.2 and
   <vendor>/argo-events-v1.9.11, each with schema.json and install.yaml. <vendor> is $EDGEBENCH_SHARED_VENDOR,
   else $EDGEBENCH_SHARED/vendor, else <repo>/../shared/vendor;
2. the Go modules of the same projects in the Go module cache ($GOMODCACHE, else `go env GOMODCACHE`), which carry
   api/jsonschema/schema.json and the CRDs under manifests/: github.com/argoproj/argo-workflows/v3@v3.7.9 (the
   release the e2e run proves; the Go proxy does not serve the /v4 module) and github.com/argoproj/argo-events@v1.9.11.
   A module copy is used only if the cache's checksum of its zip (the .ziphash file) is the one pinned below.

`python tests/argo_schemas.py fetch` (run by `make test` through `make argo-schemas`) downloads the two modules
with `go mod download` and checks their checksums. When neither place has a project, the tests that need it skip
and say why. The pytest header and terminal summary say which versions a run validated against.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# the releases the project pins for users (kustomize/upstream, the Makefile's ARGO_VERSION / ARGO_EVENTS_VERSION)
ARGO_WORKFLOWS_VERSION = "v4.1.2"
ARGO_EVENTS_VERSION = "v1.9.11"


@dataclass(frozen=True)
class Module:
    path: str
    version: str
    sum: str  # the go.sum h1: checksum of the module zip (GOSUMDB is off when fetching: this is the check)
    schema: str  # JSON schema, relative to the module root
    crds: str  # glob of the YAML files holding the CRDs with their full openAPIV3Schema
    install: str  # the install: a YAML file, or a kustomization folder (rendered with kustomize)

    @property
    def ref(self) -> str:
        return f"{self.path}@{self.version}"


MODULES = {
    "workflows": Module("github.com/argoproj/argo-workflows/v3", "v3.7.9",
                        "h1:h3KPCzhFX04EuzFaLe7w7INB0JMA95S42N55hDZ49lE=", "api/jsonschema/schema.json",
                        "manifests/base/crds/full/argoproj.io_*.yaml", "manifests/cluster-install"),
    # the same version and checksum as containers/events-check/go.sum
    "events": Module("github.com/argoproj/argo-events", "v1.9.11",
                     "h1:lDRu5E8ReFN1RJxGIibNOHuNEIPwzGleEkP3DZDNN2s=", "api/jsonschema/schema.json",
                     "manifests/install.yaml", "manifests/install.yaml"),
}
PROJECTS = {"workflows": ("Argo Workflows", "argo-workflows", ARGO_WORKFLOWS_VERSION),
            "events": ("Argo Events", "argo-events", ARGO_EVENTS_VERSION)}


@dataclass(frozen=True)
class Source:
    """One project's schema.json and CRDs, and where they were found."""
    family: str  # "workflows" | "events"
    version: str
    origin: str  # "shared vendor" | "Go module"
    root: Path
    schema: Path
    crd_files: tuple[Path, ...]
    install: Path  # an install.yaml, or a folder to render with kustomize
    skipped: tuple[str, ...] = field(default=())  # why a preferred place was not used

    @property
    def project(self) -> str:
        return PROJECTS[self.family][0]

    def describe(self) -> str:
        what = self.origin if self.origin == "shared vendor" else f"{self.origin} {MODULES[self.family].ref}"
        return f"{self.project} {self.version} ({what}: {self.root})"


class Unavailable(LookupError):
    """Neither place has the project's schemas; the message says what was looked at."""


def vendor_dir() -> Path:
    if env := os.environ.get("EDGEBENCH_SHARED_VENDOR"):
        return Path(env).resolve()
    shared = os.environ.get("EDGEBENCH_SHARED")
    return (Path(shared) / "vendor" if shared else REPO / ".." / "shared" / "vendor").resolve()


def gomodcache() -> Path | None:
    if env := os.environ.get("GOMODCACHE"):
        return Path(env)
    if go := shutil.which("go"):
        out = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, timeout=60).stdout.strip()
        return Path(out) if out else None
    return None


def _escape(module_path: str) -> str:
    """The module cache's case encoding (an upper-case letter is '!' and its lower case)."""
    return "".join(f"!{c.lower()}" if c.isupper() else c for c in module_path)


def _from_vendor(family: str) -> tuple[Source | None, str]:
    _, folder, version = PROJECTS[family]
    root = vendor_dir() / f"{folder}-{version}"
    schema, install = root / "schema.json", root / "install.yaml"
    if schema.is_file() and install.is_file():
        return Source(family, version, "shared vendor", root, schema, (install,), install), ""
    return None, f"no {root}/{{schema.json,install.yaml}}"


def _from_module(family: str, cache: Path | None) -> tuple[Source | None, str]:
    m = MODULES[family]
    if cache is None:
        return None, f"no Go module cache (neither $GOMODCACHE nor the go command) for {m.ref}"
    root = cache / f"{_escape(m.path)}@{m.version}"
    ziphash = cache / "cache" / "download" / _escape(m.path) / "@v" / f"{m.version}.ziphash"
    if not root.is_dir():
        return None, f"{m.ref} is not in the Go module cache {cache} (make argo-schemas downloads it)"
    got = ziphash.read_text().strip() if ziphash.is_file() else "none"
    if got != m.sum:
        return None, f"{m.ref} in {cache} has checksum {got}, not the pinned {m.sum}: not used"
    crds = tuple(sorted(root.glob(m.crds)))
    if not (root / m.schema).is_file() or not crds:
        return None, f"{m.ref} in {cache} lacks {m.schema} or {m.crds}"
    return Source(family, m.version, "Go module", root, root / m.schema, crds, root / m.install), ""


_cache: dict[str, Source | str] = {}
used: dict[str, Source] = {}  # what this process validated against (read by the pytest terminal summary)


def find(family: str) -> Source | str:
    """The Source of a family, or why there is none (a str). Looked up once per process."""
    if family not in _cache:
        src, why_not_vendor = _from_vendor(family)
        if src is None:
            src, why_not_module = _from_module(family, gomodcache())
            if src is not None:
                src = replace(src, skipped=(why_not_vendor,))
        _cache[family] = src if src is not None else f"{why_not_vendor}; {why_not_module}"
    return _cache[family]


def source(family: str) -> Source:
    """The Source of a family, recorded as used; Unavailable (with the reason) when there is none."""
    src = find(family)
    if isinstance(src, str):
        raise Unavailable(f"no {PROJECTS[family][0]} schemas: {src}")
    used[family] = src
    return src


def install_yaml(src: Source, dest: Path, kustomize: list[str]) -> Path:
    """The project's install as one YAML file in `dest` (copied, or rendered with the `kustomize` command)."""
    out = dest / "install.yaml"
    if src.install.is_file():
        shutil.copy(src.install, out)
    else:
        proc = subprocess.run([*kustomize, str(src.install)], capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(kustomize)} {src.install} failed:\n{proc.stderr}")
        out.write_text(proc.stdout)
    return out


def report_lines(what: dict[str, Source] | None = None) -> list[str]:
    """One line per family: the source used (or found), or why there is none."""
    lines = []
    for family in PROJECTS:
        src = (what or {}).get(family) or find(family)
        if isinstance(src, str):
            lines.append(f"{PROJECTS[family][0]}: none, tests that validate against it skip ({src})")
        else:
            note = f" [preferred not found: {src.skipped[0]}]" if src.skipped else ""
            lines.append(src.describe() + note)
    return lines


def fetch() -> int:
    """Download the pinned modules into the Go module cache and check their checksums. 0 when done or when the Go
    toolchain / network is missing (the tests then skip and say why); 1 on a checksum mismatch."""
    go = shutil.which("go")
    if go is None:
        print("argo-schemas: no go command: the Argo modules cannot be fetched (tests use ../shared/vendor or skip)")
        return 0
    status = 0
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOSUMDB": "off"}
    with tempfile.TemporaryDirectory() as cwd:  # outside any Go module
        for family, m in MODULES.items():
            proc = subprocess.run([go, "mod", "download", "-json", m.ref], cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=900)
            try:
                info = json.loads(proc.stdout or "{}")
            except json.JSONDecodeError:
                info = {}
            if proc.returncode != 0 or info.get("Error") or not info.get("Dir"):
                why = info.get("Error") or proc.stderr.strip().splitlines()[-1:] or ["unknown error"]
                print(f"argo-schemas: {m.ref} not downloaded ({why if isinstance(why, str) else why[0]})")
            elif info.get("Sum") != m.sum:
                print(f"argo-schemas: error: {m.ref} has checksum {info.get('Sum')}, pinned {m.sum}", file=sys.stderr)
                status = 1
            else:
                print(f"argo-schemas: {m.ref} in {info['Dir']}")
    return status


if __name__ == "__main__":
    if sys.argv[1:] == ["fetch"]:
        sys.exit(fetch())
    if sys.argv[1:] == ["report"]:
        print("\n".join(report_lines()))
        sys.exit(0)
    sys.exit("usage: python tests/argo_schemas.py fetch|report")
