"""What every inter-cluster tool's rendering shares (intercluster.py dispatches to the tools): the plan and its
steps, the member clusters, and the step helpers (CLI install, readiness waits, rollouts, readback parsing). Pure."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

from edgebench.plan import catalog
from edgebench.substrates.clusters.inventory import Inventory
from edgebench.plan.matrix import distributions

WD = "${WORKDIR}"
PHASES = ("install", "connect", "wait", "export", "import", "readback", "unexport", "disconnect")
DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def installs() -> dict[str, Any]:
    return catalog.load("intercluster_installs.yaml")["tools"]


@dataclass(frozen=True)
class MemberCluster:
    """One of the two clusters: `index` 1 runs the server (exports), 2 the client (imports)."""

    index: int
    name: str  # cluster id (Submariner), site name (Skupper), peer name (ClusterLink)
    kubeconfig: str
    distribution: str
    pod_cidr: str
    service_cidr: str
    gateway_node: str
    gateway_address: str  # the gateway node's address the other cluster reaches (NodePort / cable endpoint)
    api_address: str  # the API server host as the other cluster's pods reach it (Submariner broker URL)
    api_port: int = 6443

    def kubectl(self, *argv: str) -> list[str]:
        return ["kubectl", "--kubeconfig", self.kubeconfig, *argv]


def member_from_inventory(inv: Inventory, index: int, name: str, kubeconfig: str, distribution: str,
                          cidrs: tuple[str, str]) -> MemberCluster:
    """Member `index` of an ssh inventory: its server is the API address, its gateway node (`gateway: true`, else
    its first agent) carries the tool. SpecError if the inventory has no such member."""
    nodes = inv.member(index)
    gw = inv.gateway_node(index)
    return MemberCluster(index, name, kubeconfig, distribution, cidrs[0], cidrs[1], gw.name, gw.address,
                         nodes.server.address, int(distributions()[distribution]["api_port"]))


@dataclass(frozen=True)
class Step:
    phase: str  # one of PHASES
    cluster: int | None  # the member the command acts on (None: the runner only)
    argv: tuple[str, ...]
    timeout: float = 600
    check: bool = True  # False: a failure is logged and ignored (disconnect steps are idempotent)
    capture: str | None = None  # readback: the key its stdout is stored under (see parse_readback)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"phase": self.phase, "cluster": self.cluster}
        if self.argv[:2] == ("sh", "-c") and len(self.argv) == 3:
            d["script"] = self.argv[2]
        else:
            d["run"] = shlex.join(self.argv)
        d["timeout"] = self.timeout
        if not self.check:
            d["check"] = False
        if self.capture:
            d["capture"] = self.capture
        if self.note:
            d["note"] = self.note
        return d


@dataclass
class InterclusterPlan:
    tool: str
    mode: str
    version: str
    members: tuple[MemberCluster, MemberCluster]
    service: str
    namespace: str
    port: int
    address: str = ""  # the DNS name a client in cluster 2 dials (with `port`)
    steps: list[Step] = field(default_factory=list)
    manifests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # ${WORKDIR}/<name> -> objects
    node_cleanup: str = ""  # shell script run as root on every node of both clusters at teardown (leftovers)

    def phase(self, *names: str) -> list[Step]:
        """The steps of the named phases, in execution order."""
        return [s for s in self.steps if s.phase in names]

    def manifest_text(self, name: str) -> str:
        return yaml.safe_dump_all(self.manifests[name], sort_keys=False)

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "mode": self.mode, "version": self.version,
                "members": [m.__dict__ for m in self.members],
                "service": {"name": self.service, "namespace": self.namespace, "port": self.port},
                "client_dials": f"{self.address}:{self.port}",
                "steps": [s.to_json() for s in self.steps],
                "manifests": self.manifests, "node_cleanup": self.node_cleanup}

    def text(self) -> str:
        """The plan as YAML (golden files): scripts as literal blocks, commands as one shell-quoted line."""
        return yaml.dump(self.to_json(), Dumper=_Dumper, sort_keys=False, width=4096, allow_unicode=True)


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


# ---------------------------------------------------------------------------------------------- shared pieces
def sh(script: str) -> tuple[str, ...]:
    return ("sh", "-c", script)


def q(s: str) -> str:
    return shlex.quote(s)


def install_cli(inst: dict[str, Any]) -> list[Step]:
    """Download the pinned CLI into ${WORKDIR}/bin (verified against the release's checksum file where the project
    publishes one), then print its version."""
    cli = inst["cli"]
    url = cli["url"].replace("<arch>", "$arch")
    archive = url.rsplit("/", 1)[1]
    strip = cli["member"].count("/")
    script = ["set -eu",
              'case "$(uname -m)" in x86_64|amd64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;; '
              '*) echo "no release for $(uname -m)" >&2; exit 1 ;; esac',
              f"mkdir -p {WD}/bin {WD}/download", f"cd {WD}/download",
              f'curl -fsSL --retry 3 -o "{archive}" "{url}"']
    if cli.get("checksums"):
        script += [f'curl -fsSL --retry 3 -o checksums.txt "{cli["checksums"]}"',
                   f'grep " {archive}$" checksums.txt | sha256sum -c -']
    comp = "J" if archive.endswith(".xz") else "z"
    script.append(f'tar -x{comp}f "{archive}" -C {WD}/bin' + (f" --strip-components={strip}" if strip else "")
                  + f' {cli["member"]}')
    script.append(f"chmod 0755 {WD}/bin/{cli['name']}")
    checked = "yes" if cli.get("checksums") else "none published"
    steps = [Step("install", None, sh("\n".join(script)), timeout=300,
                  note=f"{cli['name']} {inst['version']} (checksum: {checked})")]
    version = ("--version",) if cli["name"] == "clusterlink" else ("version",)
    if cli["name"] != "skupper":  # `skupper version` needs a cluster: it runs in readback
        steps.append(Step("install", None, (cli_path(inst), *version), timeout=30, capture="cli_version"))
    return steps


def cli_path(inst: dict[str, Any]) -> str:
    return f"{WD}/bin/{inst['cli']['name']}"


def until(m: MemberCluster, probe: str, what: str, seconds: int = 300, interval: int = 5, phase: str = "wait") -> Step:
    """Poll a shell probe until it succeeds; fail with a message naming what was awaited."""
    script = (f"for i in $(seq {max(1, seconds // interval)}); do ({probe}) >/dev/null 2>&1 && exit 0; "
              f"sleep {interval}; done; echo {q(f'timed out after {seconds}s waiting for {what}')} >&2; exit 1")
    return Step(phase, m.index, sh(script), timeout=seconds + 60, note=what)


def rollout(m: MemberCluster, ns: str, kind: str, name: str, seconds: int = 300) -> list[Step]:
    kc = q(m.kubeconfig)
    return [until(m, f"kubectl --kubeconfig {kc} get -n {ns} {kind}/{name}", f"{kind} {ns}/{name} in cluster "
                  f"{m.index}", seconds),
            Step("wait", m.index, tuple(m.kubectl("rollout", "status", "-n", ns, f"{kind}/{name}",
                                                  f"--timeout={seconds}s")), timeout=seconds + 60)]


def namespace_manifest(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def table_rows(text: str, columns: list[str]) -> list[dict[str, str]]:
    """Rows of a fixed-width table whose header line holds `columns` (names may contain spaces), sliced at the
    header's column offsets; other lines (status lines, `Cluster "x"` headers) are skipped."""
    rows: list[dict[str, str]] = []
    starts: list[int] | None = None
    for line in text.splitlines():
        if all(c in line for c in columns) and line.lstrip().startswith(columns[0]):
            starts, pos = [], 0
            for c in columns:
                pos = line.find(c, pos)
                starts.append(pos)
                pos += len(c)
            if -1 in starts:
                starts = None
            continue
        if starts is None or not line.strip() or line.startswith("Cluster ") or line.lstrip()[:1] in "•✓✗⚠":
            if not line.strip():
                starts = None
            continue
        ends = starts[1:] + [None]
        rows.append({c: line[s:e].strip() for c, s, e in zip(columns, starts, ends)})
    return rows


def image_tag(image: str) -> str | None:
    """quay.io/x/y:1.2.3 (sha256:...) -> 1.2.3."""
    ref = image.strip().split(" ")[0]
    name = ref.rsplit("/", 1)[-1]
    return name.split(":", 1)[1] if ":" in name else None


def lines(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").splitlines() if x.strip()]
