"""Matrix expansion: a sweep -> cells (one installed environment each) -> runs (one tool invocation each).

Ids are hashes of the parameters, so the same cell or run always gets the same id and the same object keys.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from edgebench.plan import catalog

if TYPE_CHECKING:  # spec imports the workloads, which build Runs: no import of spec at module level
    from edgebench.plan.spec import Sweep


def _digest(obj: Any, n: int) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:n]


@dataclass(frozen=True)
class Cell:
    sweep_id: str
    substrate: str
    distribution: str
    cni: str
    cni_mode: str
    tuning_profile: str = "default_settings"
    netem_scenario: str = "none"
    intercluster: str = "none"  # the inter-cluster tool entry (tool:mode); none = both ends in one cluster
    service_proxy: str = "default"  # the `service-proxy` entry (catalog/service_proxies.yaml); default = the substrate's
    cpu_class: str = "none"  # the `cpu-class` entry (catalog/cpu_classes.yaml); none = this machine's own cores

    @property
    def env(self) -> dict[str, str]:
        """The cell's identity. The baselines `intercluster: none`, `service_proxy: default` and `cpu_class: none` are
        left out, so that cells and keys stored before those dimensions existed keep their ids."""
        d = asdict(self)
        d.pop("sweep_id")
        if d["intercluster"] == "none":
            d.pop("intercluster")
        if d["service_proxy"] == "default":
            d.pop("service_proxy")
        if d["cpu_class"] == "none":
            d.pop("cpu_class")
        return d

    @property
    def cell_id(self) -> str:
        return "c-" + _digest(self.env, 10)

    @property
    def cni_info(self) -> catalog.CniMode:
        return catalog.resolve_cni(f"{self.cni}:{self.cni_mode}")

    @property
    def label(self) -> str:
        """The cell in progress lines: its CNI mode, then what differs from the defaults."""
        parts = [f"{self.cni}:{self.cni_mode}"]
        if self.intercluster != "none":
            parts.append(f"via {self.intercluster}")
        if self.tuning_profile != "default_settings":
            parts.append(f"tuning={self.tuning_profile}")
        if self.netem_scenario != "none":
            parts.append(f"netem={self.netem_scenario}")
        if self.service_proxy != "default":
            parts.append(f"proxy={self.service_proxy}")
        if self.cpu_class != "none":
            parts.append(f"cpu={self.cpu_class}")
        return " ".join(parts)

    @property
    def service_proxy_mode(self) -> str | None:
        """The service proxy this cell runs or models (catalog.service_proxy_mode): dnat, iptables, nftables, ipvs,
        none; None on a cluster whose distribution's default is not in the catalog."""
        return catalog.service_proxy_mode(self.substrate, self.distribution, self.cni, self.cni_mode, self.service_proxy)

    @property
    def intercluster_info(self) -> catalog.InterclusterTool:
        return catalog.resolve_intercluster(self.intercluster)

    def to_json(self) -> dict[str, Any]:
        # service_proxy is in env when it is not the default (so a default cell's JSON is what it always was)
        return {"cell_id": self.cell_id, "sweep_id": self.sweep_id, **self.env, "intercluster": self.intercluster}


@dataclass(frozen=True)
class Run:
    cell: Cell
    workload: str
    protocol: str
    path: str
    placement: str
    length_bytes: int
    duration_s: int | None
    repetition: int
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        key = {
            "sweep": self.cell.sweep_id,
            "cell": self.cell.cell_id,
            "workload": self.workload,
            "protocol": self.protocol,
            "path": self.path,
            "placement": self.placement,
            "length_bytes": self.length_bytes,
            "duration_s": self.duration_s,
            "repetition": self.repetition,
            "params": self.params,
        }
        return "r-" + _digest(key, 12)

    @property
    def prefix(self) -> str:
        """Object key prefix of this run (see docs/results-layout.md)."""
        return f"runs/{self.cell.sweep_id}/{self.cell.cell_id}/{self.run_id}/"

    @property
    def variant(self) -> str:
        """iperf3: tcp/udp; dds: latency/throughput; http: the service."""
        return self.params.get("mode") or self.params.get("service") or self.params.get("probe") or self.protocol

    @property
    def label(self) -> str:
        from edgebench.workloads import REGISTRY

        extra = REGISTRY[self.workload].describe(self) if self.workload in REGISTRY else ""
        across = "" if self.cell.intercluster == "none" else f" via {self.cell.intercluster}"
        return (
            f"{self.cell.cni}:{self.cell.cni_mode}{across} {self.workload}/{self.variant}{extra} {self.path} {self.placement} "
            f"len={self.length_bytes} rep={self.repetition}"
        )


def cell_json(sweep: "Sweep", cell: Cell) -> dict[str, Any]:
    """A cell as the Argo DAG passes it to every phase: its identity plus the sweep parameters it runs with."""
    return {**cell.to_json(), "parameters": {k: v for k, v in sweep.raw.items() if k != "cnis"}}


def from_json(doc: dict[str, Any] | str) -> tuple["Sweep", Cell]:
    """Inverse of cell_json(); re-validates everything and checks the cell id."""
    from edgebench.errors import SpecError
    from edgebench.plan.spec import from_parameters

    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except json.JSONDecodeError as exc:
            raise SpecError(f"--cell must be the JSON of a cell (from `edgebench cells`): {exc.msg}") from None
    if not isinstance(doc, dict) or not {"cni", "cni_mode", "sweep_id", "parameters"} <= set(doc):
        raise SpecError("--cell must be a cell object from `edgebench cells` (cni, cni_mode, sweep_id, parameters)")
    params = {**doc["parameters"], "cnis": json.dumps([f"{doc['cni']}:{doc['cni_mode']}"]),
              "tuning": json.dumps([doc.get("tuning_profile", "default_settings")]),
              "netem": json.dumps([doc.get("netem_scenario", "none")]),
              "intercluster": json.dumps([doc.get("intercluster", "none")]),
              "service-proxy": json.dumps([doc.get("service_proxy", "default")]),
              "cpu-class": json.dumps([doc.get("cpu_class", "none")])}
    sweep = from_parameters({**params, "sweep-id": doc["sweep_id"]}, source="cell")
    cell = expand(sweep)[0]
    if doc.get("cell_id") and doc["cell_id"] != cell.cell_id:
        raise SpecError(f"cell id {doc['cell_id']} does not match its parameters (expected {cell.cell_id})")
    return sweep, cell


def expand(sweep: "Sweep") -> list[Cell]:
    v = sweep.values
    distribution = "none" if v["substrate"] == "local" else v["distribution"]
    return [
        Cell(sweep.sweep_id, v["substrate"], distribution, cm.cni, cm.mode, tuning, scenario, tool.key, proxy, cpu)
        for tool in v["intercluster"] for cm in v["cnis"] for tuning in v["tuning"] for scenario in v["netem"]
        for proxy in v["service-proxy"] for cpu in v["cpu-class"]
    ]


def expand_checked(sweep: "Sweep", arches: frozenset[str] | None = None, inventory: Any = None
                   ) -> tuple[list[Cell], list[tuple[Cell, str]]]:
    """expand(), minus the cells that cannot exist on the sweep's distribution (and node architectures), which are
    returned with the reason so they can be reported as skipped before anything is installed. On real clusters an
    inter-cluster tool that is not run over the cell's CNI mode (catalog `cnis`) skips the cell too, and an ssh
    `inventory` (clusters.inventory.Inventory, when known) without a cluster 2 is a SpecError if any cell needs two."""
    ok, skipped = [], []
    for c in expand(sweep):
        reason = None
        if c.intercluster != "none" and c.cni_info.is_host:
            reason = (f"{c.intercluster} joins the pod networks of two clusters; the host-network baseline has none "
                      "(inter-cluster cells need a pod-network CNI)")
        elif sweep.values["substrate"] != "local":
            from edgebench.substrates.clusters.matrix import compatibility

            reason = (compatibility(c.distribution, c.cni, c.cni_mode, arches or frozenset())
                      or c.intercluster_info.unsupported_cni(c.cni, c.cni_mode, c.distribution))
        (skipped.append((c, reason)) if reason else ok.append(c))
    if inventory is not None and sweep.values["substrate"] == "ssh" and any(c.intercluster != "none" for c in ok):
        inventory.require_two_clusters()
    return ok, skipped


def runs_for(sweep: "Sweep", cell: Cell) -> list[Run]:
    """The runs of one cell, repetitions outermost so that slow drift spreads over all variants; each workload
    expands its own variants (workloads/<name>.py)."""
    from edgebench.workloads import REGISTRY

    v = sweep.values
    return [run for rep in range(1, v["repetitions"] + 1) for tool, variant in v["workloads"]
            for run in REGISTRY[tool].expand(v, cell, rep, variant)]
