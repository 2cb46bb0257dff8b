"""The air-gapped artifact source of the `ssh` substrate (catalog/artifacts.yaml): binaries, OCI image archives,
unit files and CNI manifests taken from a local mirror instead of pkgs.k8s.io, GitHub and image registries.

A source is an HTTP(S) URL (the nodes download from it) whose root holds index.yaml; `index DIR` writes that
index for a directory laid out as the catalog says (scripts/lab-local/mirror.sh builds one here). Before anything
is installed, `check` answers, for every node of the inventory, whether each artifact the cell needs exists for
that node's architecture; the provider stops with one message listing what is missing.

    python -m edgebench.substrates.clusters.install.artifacts index DIR     # write DIR/index.yaml
    python -m edgebench.substrates.clusters.install.artifacts check URL INVENTORY [CNI...]
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml

from edgebench.errors import SpecError
from edgebench.plan import catalog
from edgebench.substrates.clusters import inventory as inv_mod
from edgebench.substrates.clusters.inventory import Inventory

ENV_SOURCE = "EDGEBENCH_ARTIFACT_SOURCE"
ARCHES = ("amd64", "arm64")
SCHEMA = "edgebench-artifacts/1"


def spec() -> dict[str, Any]:
    return catalog.load("artifacts.yaml")


def _at_version(names: list[str], cni: str, version: str | None) -> list[str]:
    """`names` with the CNI's artifacts at `version` (name@version, catalog `versions:`) in place of the pinned
    ones; the pin itself, or no version, changes nothing. SpecError for a version the catalog does not carry."""
    if not version:
        return names
    arts = spec()["artifacts"]
    pins = {arts[n].get("version") for n in names if arts[n].get("cni") == cni or n == cni}
    if version in pins:
        return names
    carried = spec().get("versions", {}).get(cni, [])
    if version not in carried:
        raise SpecError(f"the artifact source carries {cni} at {', '.join(sorted({*pins, *carried} - {None}))} only, "
                        f"not {version} (plan/catalog/artifacts.yaml `versions:`; nothing was installed)")
    return [f"{n}@{version}" if f"{n}@{version}" in arts else n for n in names]


def needed(distribution: str, cni: str, version: str | None = None) -> list[str]:
    """The artifacts a cell of `distribution` x `cni` takes from the source (the host baseline installs flannel so
    that kubeadm's nodes become Ready, see cni.render); `version`: a triggered rerun's, whose CNI artifacts replace
    the pinned ones."""
    n = spec()["needs"]
    if distribution not in n["distributions"]:
        why = spec().get("unavailable_distributions", {}).get(distribution)
        raise SpecError(f"the artifact source has no install path for distribution {distribution!r} "
                        f"(only {', '.join(sorted(n['distributions']))})" + (f": {why}" if why else ""))
    cnis = n["cnis"]
    inner = "flannel" if cni == "host" and distribution == "kubeadm" else cni
    if inner not in cnis:
        raise SpecError(f"the artifact source has no {cni!r} artifacts (only {', '.join(sorted(c for c in cnis if cnis[c]))}); "
                        "its images and manifest would come from the internet")
    mine = _at_version(list(cnis[inner]), inner, version if cni != "host" else None)
    return list(dict.fromkeys([*n["distributions"][distribution], *mine, *n["workloads"]]))


def unavailable(cni: str) -> str | None:
    """Why the artifact source cannot carry `cni` (catalog), else None."""
    reason = spec().get("unavailable", {}).get(cni)
    return f"unsupported: {reason}" if reason else None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build_index(root: Path) -> dict[str, Any]:
    """The index of a mirror directory: for each catalog artifact, the architectures whose file exists (with size and
    sha256). Arch-independent files (no {arch} in the path) count for every architecture."""
    out: dict[str, Any] = {"schema": SCHEMA, "kubernetes_version": spec()["kubernetes_version"], "artifacts": {}}
    for name, a in spec()["artifacts"].items():
        files = {}
        for arch in ARCHES:
            rel = a["path"].replace("{arch}", arch)
            p = root / rel
            if p.is_file():
                files[arch] = {"path": rel, "size": p.stat().st_size, "sha256": _sha256(p)}
        entry = {k: a[k] for k in ("kind", "version", "ref", "upstream_version", "source") if k in a}
        entry["arches"] = files
        out["artifacts"][name] = entry
    return out


def write_index(root: Path) -> Path:
    path = root / "index.yaml"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(build_index(root), sort_keys=False))
    os.replace(tmp, path)
    return path


@dataclass
class Source:
    """An artifact source: its base URL and its index."""

    url: str
    index: dict[str, Any]

    def file_url(self, name: str, arch: str) -> str:
        entry = self.index["artifacts"][name]["arches"][arch]
        return self.url.rstrip("/") + "/" + entry["path"]

    def sha256(self, name: str, arch: str) -> str:
        return self.index["artifacts"][name]["arches"][arch]["sha256"]

    def artifact(self, name: str) -> dict[str, Any]:
        return self.index["artifacts"].get(name) or {}

    def missing(self, names: Iterable[str], arches: Iterable[str]) -> list[str]:
        """'<artifact> for <arch>' for each needed artifact the source lacks for a node's architecture."""
        out = []
        for name in names:
            have = (self.index.get("artifacts", {}).get(name) or {}).get("arches", {})
            for arch in sorted(set(arches)):
                if arch not in have:
                    out.append(f"{name} for {arch}")
        return out

    def manifest(self, cni: str, fetch, version: str | None = None) -> tuple[str, dict[str, Any]]:
        """The CNI's mirrored manifest (image references already rewritten by the mirror) and its catalog entry; at
        `version` (a triggered rerun's) where the catalog carries another version's."""
        pinned = f"{cni}-manifest"
        wanted = _at_version([pinned], cni, version) if pinned in spec()["artifacts"] else []
        for name, a in spec()["artifacts"].items():
            if a["kind"] == "manifest" and a.get("cni") == cni and (not wanted or name in wanted):
                entry = self.index["artifacts"].get(name, {})
                if "any" not in entry.get("arches", {}) and not entry.get("arches"):
                    raise SpecError(f"the artifact source {self.url} has no {name}")
                arch = next(iter(entry["arches"]))
                return fetch(self.file_url(name, arch)), {**a, "name": name}
        raise SpecError(f"the artifact source has no manifest for CNI {cni!r}")


    def chart(self, cni: str) -> tuple[str, dict[str, Any]]:
        """The chart repository URL of the CNI's mirrored Helm chart and its catalog entry (its `values`)."""
        for name, a in spec()["artifacts"].items():
            if a["kind"] == "chart" and a.get("cni") == cni:
                if not (self.index["artifacts"].get(name) or {}).get("arches"):
                    raise SpecError(f"the artifact source {self.url} has no {name}")
                return self.url.rstrip("/") + "/" + a["repo"].strip("/"), {**a, "name": name}
        raise SpecError(f"the artifact source has no Helm chart for CNI {cni!r}")


def _read(url: str, timeout: float = 20) -> str:
    if "://" not in url:
        return Path(url).read_text()
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (the user's own mirror)
        return r.read().decode()


def open_source(url: str, read=_read) -> Source:
    """The source at `url` (its index.yaml); one clear SpecError when it cannot be read or is not an index."""
    if not url.startswith(("http://", "https://")):
        raise SpecError(f"artifact source {url!r}: give an http(s) URL the nodes can reach "
                        "(scripts/lab-local/mirror.sh serve serves a mirror directory)")
    where = url.rstrip("/") + "/index.yaml"
    try:
        doc = yaml.safe_load(read(where))
    except (OSError, urllib.error.URLError, ValueError) as exc:
        raise SpecError(f"artifact source: cannot read {where}: {getattr(exc, 'reason', exc)}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"artifact source: {where} is not YAML: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise SpecError(f"artifact source: {where} is not an edgebench artifact index (schema {SCHEMA})")
    return Source(url.rstrip("/"), doc)


def check(source: Source, inventory: Inventory, distribution: str, cni: str, version: str | None = None) -> None:
    """SpecError naming every missing artifact and the nodes that need it, before anything is installed."""
    names = needed(distribution, cni, version)
    problems = []
    for node in inventory.nodes:
        miss = source.missing(names, [node.arch])
        if miss:
            problems.append(f"node {node.name} ({node.arch}): " + ", ".join(miss))
    if problems:
        raise SpecError(f"the artifact source {source.url} lacks what the cell needs: " + "; ".join(problems)
                        + " (nothing was installed)")


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "edgebench" / "artifacts"


def fetch_archive(source: Source, name: str, arch: str, cache: Path | None = None) -> Path:
    """The artifact `name` for `arch` as a local file (kind loads image archives from the runner), downloaded once
    into a cache named by its sha256 and checked; SpecError when the source lacks it or the checksum differs."""
    if source.missing([name], [arch]):
        raise SpecError(f"the artifact source {source.url} has no {name} for {arch} (nothing was loaded)")
    want = source.sha256(name, arch)
    path = (cache or cache_dir()) / f"{want}.{name}"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    h = hashlib.sha256()
    url = source.file_url(name, arch)
    try:
        with urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as out:  # noqa: S310 (the user's mirror)
            for chunk in iter(lambda: r.read(1 << 20), b""):
                h.update(chunk)
                out.write(chunk)
    except (OSError, urllib.error.URLError) as exc:
        tmp.unlink(missing_ok=True)
        raise SpecError(f"artifact {name}: cannot download {url}: {getattr(exc, 'reason', exc)}") from None
    if h.hexdigest() != want:
        tmp.unlink(missing_ok=True)
        raise SpecError(f"artifact {name}: checksum mismatch ({url}: {h.hexdigest()}, the index says {want})")
    tmp.rename(path)
    return path


# ---------------------------------------------------------------------------------------------- node setup
def images_for(distribution: str, cni: str, version: str | None = None) -> list[str]:
    return [n for n in needed(distribution, cni, version) if spec()["artifacts"][n]["kind"] == "image"]


def _fetch_line(source: Source, name: str, dest: str, arches: Iterable[str], check_only: bool = False) -> list[str]:
    """Shell lines: download `name` for the node's $ARCH to `dest` and check its sha256 (check_only: only set $url
    and $sum, or stop with one message when the source lacks the node's architecture)."""
    lines = ['case "$ARCH" in']
    for arch in sorted(set(arches)):
        lines.append(f"  {arch}) url={shlex.quote(source.file_url(name, arch))}; sum={source.sha256(name, arch)} ;;")
    lines.append(f'  *) echo "edgebench: the artifact source has no {name} for $ARCH" >&2; exit 2 ;;')
    lines.append("esac")
    if check_only:
        return lines
    lines.append(f'curl -fsSL --retry 3 -o {dest} "$url"')
    lines.append(f'echo "$sum  {dest}" | sha256sum -c --quiet - || {{ echo "edgebench: {name}: checksum mismatch" >&2; exit 2; }}')
    return lines


def kubeadm_node_setup(source: Source, cni: str, arches: Iterable[str], version: str | None = None) -> str:
    """The air-gapped node setup of kubeadm: the same result as the package install (containerd, kubeadm, kubelet,
    kubectl, CNI plugins, the kubelet unit), from the source, plus the cluster's images imported into containerd.
    On a node without systemd as init (sd_booted: /run/systemd/system) the kubelet and containerd use the cgroupfs
    driver, as a service supervisor other than systemd needs."""
    arches = list(arches)
    lines = [
        "set -eu",
        'ARCH=$(dpkg --print-architecture 2>/dev/null || uname -m | sed "s/x86_64/amd64/; s/aarch64/arm64/")',
        "swapoff -a",
        # built into the kernel (no module file) counts as loaded: checked, not assumed
        "modprobe overlay 2>/dev/null || grep -qw overlay /proc/filesystems || "
        "{ echo 'edgebench: the kernel has no overlay filesystem (containerd needs it)' >&2; exit 2; }",
        "modprobe br_netfilter 2>/dev/null || [ -d /proc/sys/net/bridge ] || "
        "{ echo 'edgebench: the kernel has no br_netfilter (kube-proxy and the CNIs need it)' >&2; exit 2; }",
        "printf 'overlay\\nbr_netfilter\\n' > /etc/modules-load.d/edgebench-k8s.conf",
        "printf 'net.bridge.bridge-nf-call-iptables=1\\nnet.bridge.bridge-nf-call-ip6tables=1\\n"
        "net.ipv4.ip_forward=1\\n' > /etc/sysctl.d/90-edgebench-k8s.conf",
        "sysctl --system >/dev/null",
        "tmp=$(mktemp -d); trap 'rm -rf \"$tmp\"' EXIT",
        "if ! command -v containerd >/dev/null || ! command -v runc >/dev/null; then",
        *["  " + x for x in _fetch_line(source, "containerd-debs", "$tmp/containerd.tgz", arches)],
        '  mkdir -p "$tmp/debs" && tar -xzf "$tmp/containerd.tgz" -C "$tmp/debs" && dpkg -i "$tmp"/debs/*.deb',
        "fi",
        "if [ -d /run/systemd/system ]; then CGROUP_DRIVER=systemd; else CGROUP_DRIVER=cgroupfs; fi",
        "mkdir -p /etc/containerd",
        "containerd config default | sed -e \"s/SystemdCgroup = .*/SystemdCgroup = $( [ $CGROUP_DRIVER = systemd ] "
        "&& echo true || echo false)/\" -e 's#sandbox_image = .*#sandbox_image = \"registry.k8s.io/pause:3.10\"#'"
        " > /etc/containerd/config.toml",
        # a node that may not lower a process's OOM score (a container, a sandbox) cannot start pods whose score
        # the kubelet lowers: containerd clamps them to its own instead
        "if ! (echo -998 > /proc/self/oom_score_adj) 2>/dev/null; then",
        "  sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' /etc/containerd/config.toml",
        "fi",
        "systemctl restart containerd",
    ]
    for b in ("kubeadm", "kubelet", "kubectl"):
        lines += _fetch_line(source, b, f"$tmp/{b}", arches)
        lines.append(f"install -m 0755 $tmp/{b} /usr/local/bin/{b}")
    lines += _fetch_line(source, "cni-plugins", "$tmp/cni.tgz", arches)
    lines.append("mkdir -p /opt/cni/bin && tar -xzf $tmp/cni.tgz -C /opt/cni/bin")
    lines.append("mkdir -p /etc/systemd/system/kubelet.service.d")
    lines += [f"curl -fsSL --retry 3 -o /etc/systemd/system/kubelet.service {shlex.quote(source.file_url('kubelet-unit', arches[0]))}",
              f"curl -fsSL --retry 3 -o /etc/systemd/system/kubelet.service.d/10-kubeadm.conf "
              f"{shlex.quote(source.file_url('kubeadm-dropin', arches[0]))}"]
    lines.append('[ "$CGROUP_DRIVER" = systemd ] || '
                 "echo 'KUBELET_EXTRA_ARGS=--cgroup-driver=cgroupfs' > /etc/default/kubelet")
    lines.append("for i in $(seq 1 30); do ctr version >/dev/null 2>&1 && break; sleep 1; done")
    # an image imported by an earlier cell stays (as a pulled one would), unless the source has another build of it:
    # a marker per imported archive (its sha256) says which one is in containerd
    lines.append("have=$(ctr -n k8s.io images ls -q); mkdir -p /var/lib/edgebench/images")
    for img in images_for("kubeadm", cni, version):
        ref = shlex.quote(spec()["artifacts"][img]["ref"])
        lines += _fetch_line(source, img, "$tmp/image.tar", arches, check_only=True)
        lines.append(f"if [ ! -e /var/lib/edgebench/images/$sum ] || ! printf '%s\\n' \"$have\" | grep -qxF {ref}; then")
        lines.append('  curl -fsSL --retry 3 -o $tmp/image.tar "$url"')
        lines.append(f'  echo "$sum  $tmp/image.tar" | sha256sum -c --quiet - || {{ echo "edgebench: {img}: checksum mismatch" >&2; exit 2; }}')
        lines.append("  ctr -n k8s.io images import $tmp/image.tar >/dev/null && rm -f $tmp/image.tar")
        lines.append("  touch /var/lib/edgebench/images/$sum")
        lines.append("fi")
    lines.append("systemctl daemon-reload")
    lines.append("systemctl enable --now kubelet")
    return "\n".join(lines)


def mirror_images(patches: list[dict[str, Any]], source: Source) -> list[dict[str, Any]]:
    """Manifest patches with each `image` patch pointed at the source's image of the same repository (the catalog
    pins one tag; the mirror has the image it could build, named in its index)."""
    refs = [a["ref"] for a in source.index["artifacts"].values() if a.get("kind") == "image" and a.get("ref")]
    out = []
    for p in patches:
        if p.get("op") == "image":
            repo = p["image"].rsplit(":", 1)[0]
            match = next((r for r in refs if r.rsplit(":", 1)[0] == repo), None)
            if match is None:
                raise SpecError(f"the artifact source has no image of {repo} (the manifest asks for {p['image']})")
            p = dict(p, image=match)
        out.append(p)
    return out


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Helm values `over` merged into `base` (mappings key by key, anything else replaced), as `helm -f a -f b` does."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merged(base[k], v) if isinstance(base.get(k), dict) and isinstance(v, dict) else v
    return out


def mirror_helm(plan: Any, source: Source) -> Any:
    """A Helm install plan (cni.render) pointed at the source: `helm repo add` names the mirror's chart repository
    instead of the upstream one, and the chart's catalog `values` (images by tag, as imported; what the source lacks
    turned off) are merged over the plan's values file."""
    url, art = source.chart(plan.cni)
    added = False
    for argv in plan.commands:
        if "repo" in argv and "add" in argv:
            argv[argv.index("add") + 2] = url  # helm repo add NAME URL
            added = True
    if not added:
        raise SpecError(f"the {plan.cni} install adds no Helm repository to point at the artifact source")
    values = _merged(yaml.safe_load(plan.files.get("cni-values.yaml") or "{}") or {}, art.get("values") or {})
    plan.files["cni-values.yaml"] = yaml.safe_dump(values, sort_keys=True)
    return plan


def rewrite_manifest(text: str, rewrites: dict[str, str]) -> str:
    """Apply the catalog's image rewrites to an upstream manifest (exact references; a bare name only where it is
    not already followed by a tag or digest)."""
    for old, new in rewrites.items():
        text = re.sub(re.escape(old) + r"(?![:@\w/.-])", new, text)
    return text


def _main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "index":
        print(write_index(Path(argv[1])))
        return 0
    if len(argv) >= 3 and argv[0] == "check":
        try:
            src = open_source(argv[1])
            inv = inv_mod.load(Path(argv[2]))
            for cni in argv[3:] or ["flannel"]:
                check(src, inv, "kubeadm", cni)
        except SpecError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print("ok: every node's architecture has every artifact")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
