"""A CNI's manifest as edgebench installs it: the patches of a mode (flannel's net-conf, kube-router's image and
arguments, weave's environment), applied to the upstream multi-document manifest, and Calico eBPF's services
endpoint. `p` is a cni.ClusterParams."""

from __future__ import annotations

import json
from typing import Any

import yaml

from edgebench.plan.matrix import cni_installs


def substitute(value: Any, env: dict[str, str]) -> Any:
    if isinstance(value, str):
        for k, v in env.items():
            value = value.replace("${" + k + "}", v)
        return value
    if isinstance(value, list):
        return [substitute(v, env) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, env) for k, v in value.items()}
    return value



def services_endpoint(p: Any, namespace: str, name: str) -> dict[str, Any]:
    """Calico eBPF: where calico-node reaches the API server without kube-proxy (cal-ebpf)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"KUBERNETES_SERVICE_HOST": p.api_host, "KUBERNETES_SERVICE_PORT": str(p.api_port)}}


def manifest_patches(cni: str, mode: str, p: Any, env: dict[str, str],
                     info: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """`info`: the catalog entry as installed (at_version() for a triggered rerun); default the catalog's."""
    info = info or cni_installs()[cni]
    m = info["modes"][mode]
    if cni == "flannel":
        net_conf = {"Network": p.pod_cidr, "EnableNFTables": False, "Backend": substitute(m["backend"], env)}
        return [{"op": "configmap", "namespace": "kube-flannel", "name": info["net_conf"]["configmap"],
                 "key": info["net_conf"]["key"], "value": json.dumps(net_conf, indent=2, sort_keys=True) + "\n"}]
    if cni == "kube-router":
        return [{"op": "image", "kind": "DaemonSet", "name": "kube-router", "container": "kube-router",
                 "image": info["image"]},
                {"op": "args", "kind": "DaemonSet", "name": "kube-router", "container": "kube-router",
                 "set": dict(m["args"])}]
    if cni == "weave":
        return [{"op": "env", "kind": "DaemonSet", "name": "weave-net", "container": "weave",
                 "env": substitute(dict(m["env"]), env)}]
    return []


def apply_patches(text: str, patches: list[dict[str, Any]]) -> str:
    """Apply manifest patches to a multi-document YAML manifest; every patch must hit something."""
    docs = [d for d in yaml.safe_load_all(text) if d]
    for patch in patches:
        hit = False
        for doc in docs:
            for obj in (doc.get("items") or [doc]) if doc.get("kind", "").endswith("List") else [doc]:
                md = obj.get("metadata") or {}
                if patch["op"] == "configmap":
                    if obj.get("kind") == "ConfigMap" and md.get("name") == patch["name"]:
                        obj.setdefault("data", {})[patch["key"]] = patch["value"]
                        hit = True
                    continue
                if obj.get("kind") != patch["kind"] or md.get("name") != patch["name"]:
                    continue
                for c in obj["spec"]["template"]["spec"].get("containers", []):
                    if c.get("name") != patch["container"]:
                        continue
                    hit = True
                    if patch["op"] == "image":
                        c["image"] = patch["image"]
                    elif patch["op"] == "env":
                        envs = [e for e in c.get("env", []) if e.get("name") not in patch["env"]]
                        c["env"] = envs + [{"name": k, "value": str(v)} for k, v in patch["env"].items()]
                    elif patch["op"] == "args":
                        keep = [a for a in c.get("args", []) if a.split("=", 1)[0] not in patch["set"]]
                        c["args"] = keep + [f"{k}={v}" for k, v in patch["set"].items()]
        if not hit:
            raise ValueError(f"manifest patch {patch['op']} {patch.get('kind', 'ConfigMap')}/{patch['name']} "
                             "matched nothing (upstream manifest changed?)")
    return yaml.safe_dump_all(docs, sort_keys=False)
