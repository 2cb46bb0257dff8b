"""kind pieces: the cluster config of a cell (not a Kubernetes object), the create/delete commands, and offline the
node image check and the image loads from an artifact source."""

from __future__ import annotations

import hashlib
import ipaddress
import os
from typing import Any, Callable

from edgebench import sh
from edgebench.errors import SpecError
from edgebench.substrates.clusters.install import artifacts
from edgebench.substrates.clusters.install.cni import CniPlan
from edgebench.plan.matrix import distributions


def subnets(cell_id: str) -> tuple[str, str]:
    """Distinct pod/service subnets per cell (so concurrent or multi-cluster kind clusters never overlap):
    pod 10.<100..163>.0.0/16, service 10.<200..231>.<n>.0/20-style slots derived from the cell id."""
    slot = int(hashlib.sha256(cell_id.encode()).hexdigest(), 16) % 32
    pod = ipaddress.ip_network(f"10.{100 + slot}.0.0/16")
    svc = ipaddress.ip_network(f"10.{200 + slot}.0.0/16")
    return str(pod), str(svc)


def cluster_name(cell_id: str) -> str:
    return f"eb-{cell_id.removeprefix('c-')}"[:32]


ENV_NODE_IMAGE = "EDGEBENCH_KIND_NODE_IMAGE"


def node_image(offline: bool = False) -> str:
    """The node image: $EDGEBENCH_KIND_NODE_IMAGE, else the one built here (scripts/kind/node-image.sh) when the cell
    takes its artifacts from a source (offline), else the catalog's upstream image."""
    d = distributions()["kind"]
    return os.environ.get(ENV_NODE_IMAGE) or (d["node_image_local"] if offline else d["node_image"])


def config(cni: CniPlan, workers: int = 2, pod_subnet: str | None = None, service_subnet: str | None = None,
           image: str | None = None) -> dict[str, Any]:
    d = distributions()["kind"]
    image = image or d["node_image"]
    s = cni.dist_settings
    networking: dict[str, Any] = {"disableDefaultCNI": bool(s.get("disable_default_cni")),
                                  "kubeProxyMode": s.get("kube_proxy_mode", "iptables"),
                                  "podSubnet": pod_subnet or d["pod_cidr"],
                                  "serviceSubnet": service_subnet or d["service_cidr"]}
    return {"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4", "networking": networking,
            "nodes": [{"role": "control-plane", "image": image}]
            + [{"role": "worker", "image": image} for _ in range(workers)]}


def create_argv(name: str, config_path: str, kubeconfig: str) -> list[str]:
    return ["kind", "create", "cluster", "--name", name, "--config", config_path, "--kubeconfig", kubeconfig,
            "--wait", "0s"]


def delete_argv(name: str, kubeconfig: str | None = None) -> list[str]:
    argv = ["kind", "delete", "cluster", "--name", name]
    return argv + (["--kubeconfig", kubeconfig] if kubeconfig else [])


def node_names(name: str, workers: int = 2) -> list[str]:
    return [f"{name}-control-plane"] + [f"{name}-worker" + (str(i) if i > 1 else "") for i in range(1, workers + 1)]


def load_archive_argv(name: str, archive: str) -> list[str]:
    """Load an image archive (docker-archive) into every node of the cluster."""
    return ["kind", "load", "image-archive", archive, "--name", name]


def check_node_image(local: Callable[..., str], image: str) -> None:
    """SpecError, before anything is created, when the engine lacks the node image (offline, kind would try to pull
    it) or no engine answers."""
    try:
        local(["docker", "image", "inspect", "-f", "{{.Id}}", image])
    except sh.CommandError as exc:
        if "connect to the docker daemon" in str(exc).lower():
            raise SpecError("no Docker engine answers: scripts/kind/dockerd.sh install && scripts/kind/dockerd.sh up "
                            "starts one (nothing was created)") from None
        raise SpecError(f"the kind node image {image} is not in the Docker engine: scripts/kind/node-image.sh builds "
                        "and loads it (nothing was created)") from None


def load_images(local: Callable[..., str], name: str, source: Any, cni: str, version: str | None, arch: str,
                timings: Any) -> None:
    """The cell's image artifacts (the CNI's and the workloads') from the artifact source into every node: downloaded
    once into the runner's cache, checked, then `kind load image-archive` (the node image carries the rest)."""
    for image in artifacts.images_for("kind", cni, version):
        archive = artifacts.fetch_archive(source, image, arch)
        timings.timed(f"load {image}", "local", lambda: local(load_archive_argv(name, str(archive))))


def node_exec(node: str, script: str) -> list[str]:
    """Run a script inside a kind node container (e.g. installing CNI plugins flannel needs)."""
    return ["docker", "exec", node, "sh", "-c", script]


def boot_id(local: Callable[..., str], node: str) -> str | None:
    """The kernel boot id a kind node reads: the engine host's (its nodes are containers of that kernel)."""
    try:
        return local(node_exec(node, "cat /proc/sys/kernel/random/boot_id")).strip() or None
    except Exception:  # a node that stopped answering: the runs record no boot id rather than fail here
        return None
