"""The node inventory of the `ssh` substrate (kustomize/overlays/lab/inventory.yaml, ConfigMap edgebench-inventory)
and the SSH key that reaches its nodes.

    target: lab
    nodes:
      - {name: pi-server-1, address: 192.0.2.11, arch: arm64, role: server, user: edgebench}
      - {name: x86-agent-1, address: 192.0.2.21, arch: amd64, role: agent, user: edgebench, port: 22}

Inter-cluster cells (two clusters joined by a tool) mark each node's member cluster and the gateway node(s):

      - {name: pi-server-2, address: 192.0.2.31, arch: arm64, role: server, user: edgebench, cluster: 2}
      - {name: x86-agent-2, address: 192.0.2.41, arch: amd64, role: agent, user: edgebench, cluster: 2, gateway: true}

A node whose CPU is emulated (a qemu TCG guest: the local lab's VM nodes, scripts/lab-local/vm.py) says so:

      - {name: lab-va1, address: 10.77.0.41, arch: arm64, role: agent, user: edgebench, cpu: emulated}

`cpu` is native (default) or emulated; the runs of a cell with an emulated node record it (preflight.node_kinds)
and stay out of every performance comparison (they show what works, never how fast).

`cluster` is 1 (default) or 2, each member cluster has exactly one server; `gateway` (default false) picks the node
that carries the tool's tunnel/router (default: the member's first agent). Inventories without `cluster` are one
cluster, as before.

Everything is validated before anything connects: a bad inventory raises SpecError naming the node and field.
The private key is never read from the repository: `--ssh-key`, else $EDGEBENCH_SSH_KEY, else the Secret mount
/etc/edgebench/ssh/id_ed25519. Like ssh, a key that others can read is refused.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from edgebench.errors import SpecError

ARCHES = ("amd64", "arm64")
ROLES = ("server", "agent")
CPUS = ("native", "emulated")  # emulated: a qemu TCG guest (proves function, never speed)
INVENTORY_MOUNT = Path("/etc/edgebench/inventory")  # ConfigMap edgebench-inventory (key inventory.yaml)
INVENTORY_FILE = "inventory.yaml"
SSH_MOUNT = Path("/etc/edgebench/ssh")  # Secret edgebench-ssh-key (keys id_ed25519, optional known_hosts)
SSH_KEY_MOUNT = SSH_MOUNT / "id_ed25519"
KNOWN_HOSTS_MOUNT = SSH_MOUNT / "known_hosts"
ENV_INVENTORY = "EDGEBENCH_INVENTORY"
ENV_SSH_KEY = "EDGEBENCH_SSH_KEY"
ENV_KNOWN_HOSTS = "EDGEBENCH_KNOWN_HOSTS"

_NODE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
_TARGET = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_NODE_FIELDS = {"name", "address", "arch", "role", "user", "port", "cluster", "gateway", "cpu"}
CLUSTERS = (1, 2)
_REPO_ROOT = Path(__file__).resolve().parents[6]  # containers/runner/src/edgebench/substrates/clusters/ -> repository root


@dataclass(frozen=True)
class Node:
    name: str
    address: str
    arch: str
    role: str
    user: str
    port: int = 22
    cluster: int = 1  # member cluster of an inter-cluster cell (1 exports the server, 2 runs the client)
    gateway: bool = False  # carries the inter-cluster tool's tunnel / router
    cpu: str = "native"  # or emulated (CPUS)

    @property
    def is_server(self) -> bool:
        return self.role == "server"


@dataclass(frozen=True)
class Inventory:
    target: str
    nodes: tuple[Node, ...]
    source: str = "<inventory>"
    artifact_source: str | None = None  # the lab's air-gapped mirror (http URL); --artifact-source / the env win

    @property
    def server(self) -> Node:
        """The server of the first member cluster: the control plane every other node of that cluster joins."""
        first = min(n.cluster for n in self.nodes)
        return next(n for n in self.nodes if n.is_server and n.cluster == first)

    @property
    def agents(self) -> list[Node]:
        return [n for n in self.nodes if not n.is_server]

    @property
    def clusters(self) -> list[int]:
        """The member clusters the nodes belong to ([1] for an inventory without `cluster` fields)."""
        return sorted({n.cluster for n in self.nodes})

    def member(self, cluster: int) -> "Inventory":
        """The nodes of one member cluster as an inventory of its own (what a ClusterProvider installs)."""
        nodes = tuple(n for n in self.nodes if n.cluster == cluster)
        if not nodes:
            raise SpecError(f"{self.source}: no node belongs to cluster {cluster} (clusters: "
                            f"{', '.join(map(str, self.clusters))})")
        return Inventory(self.target, nodes, f"{self.source} (cluster {cluster})", self.artifact_source)

    def members(self) -> dict[int, "Inventory"]:
        return {c: self.member(c) for c in self.clusters}

    def gateway_node(self, cluster: int = 1) -> Node:
        """The member's gateway: its first node marked `gateway: true`, else its first agent, else its server."""
        inv = self.member(cluster)
        return next((n for n in inv.nodes if n.gateway), inv.agents[0] if inv.agents else inv.server)

    def require_two_clusters(self) -> None:
        """SpecError unless clusters 1 and 2 both have a server (an inter-cluster cell needs two clusters)."""
        missing = [c for c in CLUSTERS if not any(n.is_server and n.cluster == c for n in self.nodes)]
        if missing:
            raise SpecError(f"{self.source}: an inter-cluster cell needs two clusters, but cluster "
                            f"{' and '.join(map(str, missing))} has no server; mark the nodes of the second cluster "
                            "with `cluster: 2` (one of them `role: server`)")

    @property
    def arches(self) -> set[str]:
        return {n.arch for n in self.nodes}

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise SpecError(f"{self.source}: no node named {name!r} (nodes: {', '.join(n.name for n in self.nodes)})")


def _address_ok(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        pass
    if re.fullmatch(r"[0-9.]+", text):  # looks like IPv4 but is not one (e.g. 192.0.2.300)
        return False
    return bool(_HOSTNAME.match(text))


def parse(doc: Any, source: str = "<inventory>") -> Inventory:
    """Validate an inventory document (the parsed YAML); SpecError names the node and the field."""
    if not isinstance(doc, Mapping):
        raise SpecError(f"{source}: an inventory is a mapping with `target` and `nodes`")
    unknown = sorted(set(doc) - {"target", "nodes", "artifact_source"})
    if unknown:
        raise SpecError(f"{source}: unknown field(s) {', '.join(unknown)} (known: target, nodes, artifact_source)")
    mirror = doc.get("artifact_source")
    if mirror is not None and (not isinstance(mirror, str) or not re.match(r"^https?://[^\s/]+", mirror)):
        raise SpecError(f"{source}: `artifact_source` must be the http(s) URL of the lab's artifact mirror, "
                        f"got {mirror!r}")
    target = doc.get("target")
    if not isinstance(target, str) or not _TARGET.match(target):
        raise SpecError(f"{source}: `target` must be a short lowercase name (letters, digits, '-'), got {target!r}")
    raw_nodes = doc.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise SpecError(f"{source}: `nodes` must be a non-empty list")
    nodes: list[Node] = []
    names: dict[str, int] = {}
    addresses: dict[str, str] = {}
    for i, raw in enumerate(raw_nodes):
        where = f"{source}: nodes[{i}]"
        if not isinstance(raw, Mapping):
            raise SpecError(f"{where}: each node is a mapping with name, address, arch, role, user")
        name = raw.get("name")
        if isinstance(name, str):
            where = f"{source}: node {name!r}"
        extra = sorted(set(raw) - _NODE_FIELDS)
        if extra:
            raise SpecError(f"{where}: unknown field(s) {', '.join(map(str, extra))} "
                            f"(known: {', '.join(sorted(_NODE_FIELDS))})")
        for field in ("name", "address", "arch", "role", "user"):
            if raw.get(field) in (None, ""):
                raise SpecError(f"{where}: field `{field}` is required")
        if not isinstance(name, str) or not _NODE_NAME.match(name):
            raise SpecError(f"{where}: `name` {name!r} must be a Kubernetes node name "
                            "(lowercase letters, digits, '-', at most 63 characters)")
        if name in names:
            raise SpecError(f"{where}: duplicate node name {name!r} (also nodes[{names[name]}])")
        names[name] = i
        address = str(raw["address"]).strip()
        if not _address_ok(address):
            raise SpecError(f"{where}: `address` {raw['address']!r} is not an IPv4/IPv6 address or DNS name")
        key = address.lower()
        if key in addresses:
            raise SpecError(f"{where}: duplicate address {address} (also node {addresses[key]!r})")
        addresses[key] = name
        arch = raw["arch"]
        if arch not in ARCHES:
            hint = " (a 64-bit OS is required on Raspberry Pi)" if arch in ("arm", "armhf", "armv7l", "aarch64") else ""
            raise SpecError(f"{where}: `arch` {arch!r} is not one of {', '.join(ARCHES)}{hint}")
        role = raw["role"]
        if role not in ROLES:
            raise SpecError(f"{where}: `role` {role!r} is not one of {', '.join(ROLES)}")
        user = raw["user"]
        if not isinstance(user, str) or not _USER.match(user):
            raise SpecError(f"{where}: `user` {user!r} is not a valid login name")
        port = raw.get("port", 22)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise SpecError(f"{where}: `port` {port!r} must be an integer between 1 and 65535")
        cluster = raw.get("cluster", 1)
        if isinstance(cluster, bool) or cluster not in CLUSTERS:
            raise SpecError(f"{where}: `cluster` {cluster!r} must be 1 or 2 (the member cluster of an inter-cluster "
                            "cell; default 1)")
        gateway = raw.get("gateway", False)
        if not isinstance(gateway, bool):
            raise SpecError(f"{where}: `gateway` {gateway!r} must be true or false")
        cpu = raw.get("cpu", "native")
        if cpu not in CPUS:
            raise SpecError(f"{where}: `cpu` {cpu!r} is not one of {', '.join(CPUS)} (emulated: a qemu TCG guest; "
                            "default native)")
        nodes.append(Node(name, address, arch, role, user, port, cluster, gateway, cpu))
    several = len({n.cluster for n in nodes}) > 1
    for c in sorted({n.cluster for n in nodes}):
        of = f" of cluster {c}" if several or c != 1 else ""
        servers = [n for n in nodes if n.is_server and n.cluster == c]
        if not servers:
            raise SpecError(f"{source}: no node{of} has role `server` (one node must run the control plane)")
        if len(servers) > 1:
            raise SpecError(f"{source}: nodes {', '.join(repr(n.name) for n in servers)}{of} all have role `server`; "
                            "edgebench installs one control plane per cluster: make the others `agent`")
    return Inventory(target, tuple(nodes), source, mirror)


def loads(text: str, source: str = "<inventory>") -> Inventory:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {exc}") from None
    return parse(doc, source)


def load(path: str | os.PathLike | None = None) -> Inventory:
    """Read the inventory: `path` (a file, or a directory such as the ConfigMap mount holding inventory.yaml),
    else $EDGEBENCH_INVENTORY, else the ConfigMap mount /etc/edgebench/inventory/inventory.yaml."""
    p = Path(path or os.environ.get(ENV_INVENTORY) or INVENTORY_MOUNT)
    if p.is_dir():
        p = p / INVENTORY_FILE
    if not p.is_file():
        raise SpecError(f"inventory {p} not found: pass --inventory FILE, set {ENV_INVENTORY}, or mount ConfigMap "
                        f"edgebench-inventory at {INVENTORY_MOUNT}")
    return loads(p.read_text(encoding="utf-8"), str(p))


def ssh_key_path(explicit: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The private key for the nodes: --ssh-key, else $EDGEBENCH_SSH_KEY, else the Secret mount. The key must
    exist, be readable, live outside the repository and not be readable by others (as ssh refuses such keys)."""
    env = os.environ if env is None else env
    raw = explicit or env.get(ENV_SSH_KEY) or SSH_KEY_MOUNT
    p = Path(raw).expanduser()
    try:
        found = p.is_file()
    except PermissionError:
        raise SpecError(f"SSH key {p} is not readable by this user (uid {os.getuid()})") from None
    if not found:
        raise SpecError(f"SSH key {p} not found: pass --ssh-key FILE, set {ENV_SSH_KEY}, or mount Secret "
                        f"edgebench-ssh-key at {SSH_MOUNT}")
    resolved = p.resolve()
    in_repo = (_REPO_ROOT / "containers" / "runner").is_dir() and (
        resolved == _REPO_ROOT or _REPO_ROOT in resolved.parents)
    if in_repo:
        raise SpecError(f"SSH key {p} is inside the repository ({_REPO_ROOT}); keep private keys out of it "
                        "(use ~/.ssh or the edgebench-ssh-key Secret)")
    st = resolved.stat()
    if st.st_mode & (stat.S_IROTH | stat.S_IWOTH):
        raise SpecError(f"SSH key {p} is accessible by others (mode {stat.S_IMODE(st.st_mode):04o}); "
                        f"run `chmod 600 {p}` (Secret mounts: defaultMode 0440 with fsGroup)")
    if st.st_uid == os.getuid() and st.st_mode & (stat.S_IRGRP | stat.S_IWGRP | stat.S_IXGRP | stat.S_IXOTH):
        raise SpecError(f"SSH key {p} permissions {stat.S_IMODE(st.st_mode):04o} are too open (ssh refuses it); "
                        f"run `chmod 600 {p}`")
    if not os.access(resolved, os.R_OK):
        raise SpecError(f"SSH key {p} is not readable by this user (uid {os.getuid()})")
    return p


def known_hosts_path(explicit: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """A known_hosts file to pin host keys with: --known-hosts, $EDGEBENCH_KNOWN_HOSTS, or the Secret's
    known_hosts if mounted; None if there is none (then host keys are accepted on first use)."""
    env = os.environ if env is None else env
    raw = explicit or env.get(ENV_KNOWN_HOSTS)
    if raw:
        p = Path(raw).expanduser()
        if not p.is_file():
            raise SpecError(f"known_hosts file {p} not found")
        return p
    return KNOWN_HOSTS_MOUNT if KNOWN_HOSTS_MOUNT.is_file() else None
