"""Distribution installers (k3s, k0s, MicroK8s, kubeadm): render the install / join / kubeconfig / teardown
steps for an inventory and a CNI plan. Steps are data (golden-tested); ClusterProvider runs them.

Step.where: "server", "agents", "all" (every node), a node name, or "local" (the runner: k0sctl, kubectl).
Values known only at run time appear as <<name>> and are filled from earlier steps' captured output
(`capture`) or from secrets the provider generates (<<cluster_token>>)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

from edgebench.substrates.clusters.install import artifacts as artifacts_mod
from edgebench.substrates.clusters.install.artifacts import Source
from edgebench.substrates.clusters.inventory import Inventory, Node
from edgebench.substrates.clusters.install.cni import CniPlan
from edgebench.plan.matrix import cni_installs, distributions


@dataclass
class Step:
    where: str
    command: Any  # argv list or shell script text
    sudo: bool = True
    capture: str | None = None
    check: bool = True
    timeout: float = 900
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        d = {"where": self.where, "command": self.command, "sudo": self.sudo}
        if self.capture:
            d["capture"] = self.capture
        if not self.check:
            d["check"] = False
        if self.note:
            d["note"] = self.note
        return d


@dataclass
class DistributionPlan:
    distribution: str
    version: str
    install: list[Step] = field(default_factory=list)
    kubeconfig: Step | None = None
    teardown: list[Step] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # runner work-dir files (k0sctl.yaml)
    api_port: int = 6443

    def to_json(self) -> dict[str, Any]:
        return {"distribution": self.distribution, "version": self.version, "api_port": self.api_port,
                "install": [s.to_json() for s in self.install],
                "kubeconfig": self.kubeconfig.to_json() if self.kubeconfig else None,
                "teardown": [s.to_json() for s in self.teardown], "files": self.files}


PREFLIGHT = "uname -r; uname -m; cat /proc/cmdline"


def render(distribution: str, inv: Inventory, cni: CniPlan, workdir: str = "${WORKDIR}",
           key_path: str = "${SSH_KEY}", pod_cidr: str | None = None, service_cidr: str | None = None,
           artifacts: Source | None = None) -> DistributionPlan:
    """`pod_cidr`/`service_cidr` override the distribution's defaults (member 2 of an inter-cluster cell, see
    intercluster.cidr_plan); the cluster DNS address moves with the service CIDR (its .10). Distributions whose
    CIDRs the installer cannot set (`cidrs_configurable: false`) refuse an override. `artifacts`: the air-gapped
    artifact source (artifacts.py): the nodes take binaries and images from it, and the Kubernetes version is
    the source's."""
    fn = {"k3s": _k3s, "k0s": _k0s, "microk8s": _microk8s, "kubeadm": _kubeadm}.get(distribution)
    if fn is None:
        raise ValueError(f"distribution {distribution!r} is not installed over SSH (kind has its own provider)")
    d = with_cidrs(distribution, pod_cidr, service_cidr)
    if artifacts is not None:
        artifacts_mod.needed(distribution, cni.cni, cni.version_requested)  # no air-gapped path: SpecError
        d = dict(d, version=artifacts.index["kubernetes_version"],
                 node_setup=artifacts_mod.kubeadm_node_setup(artifacts, cni.cni, inv.arches, cni.version_requested))
    plan = fn(d, inv, cni, workdir, key_path)
    plan.install.insert(0, Step("all", PREFLIGHT, sudo=False, capture="preflight", note="kernel/arch/cmdline"))
    plan.teardown += [Step(n.name, cleanup_script(distribution, cni.leftovers, n), check=False,
                           note="CNI + distribution leftovers") for n in inv.nodes]
    return plan


def with_cidrs(distribution: str, pod_cidr: str | None = None, service_cidr: str | None = None) -> dict[str, Any]:
    """The distribution's catalog entry with the pod/service CIDRs (and cluster DNS) replaced where given."""
    import ipaddress

    d = dict(distributions()[distribution])
    changed = (pod_cidr and pod_cidr != d["pod_cidr"]) or (service_cidr and service_cidr != d["service_cidr"])
    if changed and not d.get("cidrs_configurable", True):
        raise ValueError(f"{distribution}'s pod/service CIDRs are not set by its installer (keep "
                         f"{d['pod_cidr']} and {d['service_cidr']})")
    if pod_cidr:
        d["pod_cidr"] = pod_cidr
    if service_cidr and service_cidr != d["service_cidr"]:
        d["service_cidr"] = service_cidr
        d["cluster_dns"] = str(ipaddress.ip_network(service_cidr).network_address + 10)
    return d


def _q(s: str) -> str:
    return shlex.quote(s)


# ---------------------------------------------------------------------------------------------- k3s
def _k3s(d: dict, inv: Inventory, cni: CniPlan, workdir: str, key: str) -> DistributionPlan:
    s = cni.dist_settings
    srv = inv.server
    flags = ["server", f"--node-name={srv.name}", f"--node-ip={srv.address}", f"--tls-san={srv.address}",
             f"--cluster-cidr={d['pod_cidr']}", f"--service-cidr={d['service_cidr']}",
             f"--cluster-dns={d['cluster_dns']}", f"--flannel-backend={s['flannel_backend']}"]
    if s.get("disable_network_policy"):
        flags.append("--disable-network-policy")
    if not s.get("kube_proxy", True):
        flags.append(d["kube_proxy_off"])
    flags += d["extra_server_flags"]
    url = d["install_url"]
    server = (f"curl -sfL {url} | INSTALL_K3S_VERSION={_q(d['version'])} K3S_TOKEN='<<cluster_token>>' "
              f"INSTALL_K3S_EXEC={_q(' '.join(flags))} sh -")
    plan = DistributionPlan("k3s", d["version"], api_port=d["api_port"])
    plan.install.append(Step("server", server, note="k3s server"))
    plan.install.append(Step("server", ["k3s", "kubectl", "wait", "--for=condition=Ready", f"node/{srv.name}",
                                        "--timeout=300s"] if s["flannel_backend"] != "none" else
                             ["sh", "-c", "until k3s kubectl get node " + srv.name + "; do sleep 2; done"],
                             note="server registered"))
    for a in inv.agents:
        agent = (f"curl -sfL {url} | INSTALL_K3S_VERSION={_q(d['version'])} "
                 f"K3S_URL=https://{srv.address}:{d['api_port']} K3S_TOKEN='<<cluster_token>>' "
                 f"INSTALL_K3S_EXEC={_q(f'agent --node-name={a.name} --node-ip={a.address}')} sh -")
        plan.install.append(Step(a.name, agent, note="k3s agent join"))
    plan.kubeconfig = Step("server", ["cat", d["kubeconfig_path"]], capture="kubeconfig")
    plan.teardown += [Step(a.name, [d["teardown"]["agent"]], check=False) for a in inv.agents]
    plan.teardown.append(Step("server", [d["teardown"]["server"]], check=False))
    return plan


# ---------------------------------------------------------------------------------------------- k0s
def k0sctl_config(d: dict, inv: Inventory, cni: CniPlan, key: str, name: str = "edgebench") -> dict[str, Any]:
    s = cni.dist_settings
    network: dict[str, Any] = {"provider": s["provider"], "podCIDR": d["pod_cidr"], "serviceCIDR": d["service_cidr"],
                               "kubeProxy": {"disabled": not s.get("kube_proxy", True)}}
    if s["provider"] == "calico":
        network["calico"] = {**s["calico"], "mtu": 0}
    if s["provider"] == "kuberouter":
        network["kuberouter"] = s.get("kuberouter", {"autoMTU": True})
    hosts = []
    for n in inv.nodes:
        h: dict[str, Any] = {"role": "controller+worker" if n.is_server else "worker",
                             "ssh": {"address": n.address, "user": n.user, "port": n.port, "keyPath": key},
                             "hostname": n.name, "privateAddress": n.address}
        if n.is_server:
            h["noTaints"] = True
        hosts.append(h)
    return {"apiVersion": "k0sctl.k0sproject.io/v1beta1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"hosts": hosts, "k0s": {"version": d["version"], "config": {
                "apiVersion": "k0s.k0sproject.io/v1beta1", "kind": "ClusterConfig", "metadata": {"name": "k0s"},
                "spec": {"api": {"address": inv.server.address, "sans": [inv.server.address]},
                         "network": network}}}}}


def _k0s(d: dict, inv: Inventory, cni: CniPlan, workdir: str, key: str) -> DistributionPlan:
    plan = DistributionPlan("k0s", d["version"], api_port=d["api_port"])
    plan.files["k0sctl.yaml"] = yaml.safe_dump(k0sctl_config(d, inv, cni, key), sort_keys=False)
    cfg = f"{workdir}/k0sctl.yaml"
    plan.install.append(Step("local", ["k0sctl", "apply", "--config", cfg, "--disable-telemetry"], sudo=False,
                             timeout=1800, note=f"k0sctl {d['k0sctl_version']} installs and joins every host"))
    plan.kubeconfig = Step("local", ["k0sctl", "kubeconfig", "--config", cfg], sudo=False, capture="kubeconfig")
    plan.teardown.append(Step("local", ["k0sctl", "reset", "--config", cfg, "--force"], sudo=False, check=False))
    plan.teardown += [Step(n.name, "k0s stop; k0s reset", check=False) for n in inv.nodes]
    return plan


# ---------------------------------------------------------------------------------------------- MicroK8s
def _microk8s(d: dict, inv: Inventory, cni: CniPlan, workdir: str, key: str) -> DistributionPlan:
    plan = DistributionPlan("microk8s", d["version"], api_port=d["api_port"])
    srv = inv.server
    install = (f"snap install microk8s --classic --channel={d['version']} && microk8s status --wait-ready"
               " && microk8s enable dns")
    plan.install.append(Step("server", install, timeout=1800))
    if cni.dist_settings.get("disable_ha_cluster"):  # flannel + etcd; before any node joins
        plan.install.append(Step("server", ["microk8s", "disable", "ha-cluster", "--force"], timeout=900))
        plan.install.append(Step("server", ["microk8s", "status", "--wait-ready"]))
    for a in inv.agents:
        plan.install.append(Step(a.name, f"snap install microk8s --classic --channel={d['version']}"
                                          " && microk8s status --wait-ready", timeout=1800))
        plan.install.append(Step("server", ["microk8s", "add-node", "--token", f"<<join_token_{a.name}>>",
                                            "--token-ttl", "3600", "--format", "token-check"],
                                 capture=f"join_check_{a.name}"))
        plan.install.append(Step(a.name, ["microk8s", "join", f"{srv.address}:25000/<<join_check_{a.name}>>",
                                          "--worker"], timeout=900))
    plan.kubeconfig = Step("server", ["microk8s", "config"], capture="kubeconfig")
    for a in inv.agents:
        plan.teardown.append(Step(a.name, ["microk8s", "leave"], check=False))
        plan.teardown.append(Step("server", ["microk8s", "remove-node", a.name, "--force"], check=False))
    plan.teardown += [Step(n.name, ["snap", "remove", "microk8s", "--purge"], check=False) for n in inv.nodes]
    return plan


# ---------------------------------------------------------------------------------------------- kubeadm
def kubeadm_node_setup(d: dict) -> str:
    minor = d["apt_repo"]
    return "\n".join([
        "set -eu",
        "swapoff -a",
        "modprobe overlay; modprobe br_netfilter",
        "printf 'overlay\\nbr_netfilter\\n' > /etc/modules-load.d/edgebench-k8s.conf",
        "printf 'net.bridge.bridge-nf-call-iptables=1\\nnet.bridge.bridge-nf-call-ip6tables=1\\n"
        "net.ipv4.ip_forward=1\\n' > /etc/sysctl.d/90-edgebench-k8s.conf",
        "sysctl --system >/dev/null",
        "apt-get update -q && apt-get install -y -q apt-transport-https ca-certificates curl gpg containerd",
        "mkdir -p /etc/containerd /etc/apt/keyrings",
        "containerd config default | sed 's/SystemdCgroup = false/SystemdCgroup = true/' > /etc/containerd/config.toml",
        "systemctl restart containerd",
        f"curl -fsSL {minor}Release.key | gpg --dearmor --yes -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg",
        f"echo 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] {minor} /' "
        "> /etc/apt/sources.list.d/kubernetes.list",
        "apt-get update -q",
        f"apt-get install -y -q --allow-downgrades kubelet={d['package_version']} kubeadm={d['package_version']} "
        f"kubectl={d['package_version']}",
        "apt-mark hold kubelet kubeadm kubectl",
        "systemctl enable --now kubelet",
    ])


# kube-proxy sizes the kernel's conntrack table (nf_conntrack_max), which only the initial network namespace may
# write: on nodes that are containers or namespaces of one kernel (kind, the local lab) it exits "open
# /proc/sys/net/netfilter/nf_conntrack_max: permission denied". Where the node reads it but may not write it,
# kube-proxy is told to leave it as it is (conntrack.maxPerCore: 0, as kind configures it); elsewhere nothing changes,
# nor where kubeadm installed no kube-proxy (a CNI that replaces it: --skip-phases=addon/kube-proxy).
KUBE_PROXY_CONNTRACK = """f=/proc/sys/net/netfilter/nf_conntrack_max
if [ -e "$f" ] && ! [ -w "$f" ] && kubectl --kubeconfig {kc} -n kube-system get configmap kube-proxy >/dev/null 2>&1; then
  kubectl --kubeconfig {kc} -n kube-system get configmap kube-proxy -o yaml \\
    | sed 's/maxPerCore: null/maxPerCore: 0/' | kubectl --kubeconfig {kc} apply -f -
  kubectl --kubeconfig {kc} -n kube-system rollout restart daemonset kube-proxy
fi"""


EMULATED_CONTROL_PLANE_TIMEOUT = "20m0s"  # a control plane on a qemu TCG guest: measured > 4 min on 2 busy cores
KUBEADM_INIT_CONFIG = "/etc/kubernetes/edgebench-kubeadm-init.yaml"


def kubeadm_init_config(d: dict, address: str, name: str, control_plane_timeout: str) -> str:
    """`kubeadm init` from a configuration file (kubeadm.k8s.io/v1beta4) that says what the flags say
    (version, pod and service CIDRs, advertise address, certificate SAN, node name) plus the control plane's health
    check and the kubelet's health check timeouts (4 minutes each by default), which no flag sets. A shell step: it writes the file, then runs kubeadm init --config."""
    config = "\n".join([
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: InitConfiguration",
        "localAPIEndpoint:",
        f"  advertiseAddress: {address}",
        "nodeRegistration:",
        f"  name: {name}",
        "timeouts:",
        f"  controlPlaneComponentHealthCheck: {control_plane_timeout}",
        f"  kubeletHealthCheck: {control_plane_timeout}",
        "---",
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: ClusterConfiguration",
        f"kubernetesVersion: {d['version']}",
        "networking:",
        f"  podSubnet: {d['pod_cidr']}",
        f"  serviceSubnet: {d['service_cidr']}",
        "apiServer:",
        f"  certSANs: [{address}]",
    ])
    return (f"mkdir -p /etc/kubernetes && cat > {KUBEADM_INIT_CONFIG} <<'EDGEBENCH_EOF'\n{config}\nEDGEBENCH_EOF\n"
            f"kubeadm init --config {KUBEADM_INIT_CONFIG}")


def _kubeadm(d: dict, inv: Inventory, cni: CniPlan, workdir: str, key: str) -> DistributionPlan:
    plan = DistributionPlan("kubeadm", d["version"], api_port=d["api_port"])
    srv = inv.server
    plan.install.append(Step("all", d.get("node_setup") or kubeadm_node_setup(d), timeout=1800,
                             note="containerd + kubeadm " + ("from the artifact source" if d.get("node_setup") else "packages")))
    if srv.cpu == "emulated":
        # kubeadm waits 4 minutes for a healthy control plane; an emulated CPU (qemu TCG) starts it slower than that.
        # Only a configuration file raises the wait (v1beta4 timeouts), and kubeadm takes no such flags beside it.
        init = kubeadm_init_config(d, srv.address, srv.name, EMULATED_CONTROL_PLANE_TIMEOUT)
    else:
        init = ["kubeadm", "init", f"--kubernetes-version={d['version']}", f"--pod-network-cidr={d['pod_cidr']}",
                f"--service-cidr={d['service_cidr']}", f"--apiserver-advertise-address={srv.address}",
                f"--apiserver-cert-extra-sans={srv.address}", f"--node-name={srv.name}"]
    if cni.dist_settings.get("skip_kube_proxy"):
        init = init + (" " + d["kube_proxy_off"] if isinstance(init, str) else [d["kube_proxy_off"]])
    plan.install.append(Step("server", init, timeout=1800,
                             note="kubeadm init (from a configuration file)" if isinstance(init, str) else ""))
    plan.install.append(Step("server", KUBE_PROXY_CONNTRACK.format(kc=d["kubeconfig_path"]), check=True,
                             note="nodes in a network namespace of their own cannot resize the kernel's conntrack table"))
    plan.install.append(Step("server", ["kubectl", "--kubeconfig", d["kubeconfig_path"], "taint", "nodes", "--all",
                                        "node-role.kubernetes.io/control-plane-"], check=False,
                             note="the server also runs workload pods"))
    if inv.agents:
        plan.install.append(Step("server", ["kubeadm", "token", "create", "--print-join-command"],
                                 capture="join_command"))
    for a in inv.agents:
        plan.install.append(Step(a.name, f"<<join_command>> --node-name={a.name}", timeout=900))
    plan.kubeconfig = Step("server", ["cat", d["kubeconfig_path"]], capture="kubeconfig")
    plan.teardown += [Step(n.name, ["kubeadm", "reset", "-f"], check=False) for n in inv.agents + [srv]]
    remove = ("systemctl disable --now kubelet; rm -f /usr/local/bin/kubeadm /usr/local/bin/kubelet "
              "/usr/local/bin/kubectl /etc/systemd/system/kubelet.service /etc/default/kubelet; "
              "rm -rf /etc/systemd/system/kubelet.service.d; " if d.get("node_setup") else
              "apt-mark unhold kubelet kubeadm kubectl; apt-get purge -y -q kubelet kubeadm kubectl; ")
    plan.teardown += [Step(n.name, remove + "rm -rf /etc/kubernetes /var/lib/kubelet /var/lib/etcd /root/.kube "
                                   "/etc/sysctl.d/90-edgebench-k8s.conf /etc/modules-load.d/edgebench-k8s.conf",
                           check=False) for n in inv.nodes]
    return plan


# ---------------------------------------------------------------------------------------------- leftovers
ALL_CNI_INTERFACES = sorted({i for info in cni_installs().values() for i in info.get("leftovers", {}).get("interfaces", [])}
                            | {"cni0", "flannel.1", "kube-ipvs0", "nodelocaldns"})


def cleanup_script(distribution: str, leftovers: dict[str, Any], node: Node) -> str:
    """Remove what a CNI and the distribution leave on a node: interfaces (every CNI's, not only this cell's,
    so a cell after a failed one starts clean), CNI config/state, and iptables/nft rules of Kubernetes/CNIs."""
    fixed = [i for i in ALL_CNI_INTERFACES if not i.endswith("+")]
    prefixes = sorted({i[:-1] for i in ALL_CNI_INTERFACES if i.endswith("+")})
    files = sorted(set(leftovers.get("files", [])) | {"/etc/cni/net.d", "/var/lib/cni", "/run/flannel",
                                                       "/var/run/calico", "/var/lib/calico", "/run/cilium"})
    lines = [
        "# edgebench cleanup: " + distribution + " on " + node.name,
        "set +e",
        f"for dev in {' '.join(fixed)}; do ip link delete \"$dev\" 2>/dev/null; done",
        f"for prefix in {' '.join(prefixes)}; do",
        "  for dev in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep \"^$prefix\"); do",
        "    ip link delete \"$dev\" 2>/dev/null",
        "  done",
        "done",
        "for t in iptables ip6tables; do",
        "  command -v $t-save >/dev/null || continue",
        # kube-router's FORWARD rule carries no chain name of its own, only its comment
        "  $t-save | grep -viE 'cilium|KUBE-|CALI|cali:|FLANNEL|ANTREA|WEAVE|KUBE-ROUTER|kube-ovn|OVN|"
        "node port traffic on node interface' | $t-restore",
        "done",
        "if command -v nft >/dev/null; then",
        "  for tbl in $(nft list tables 2>/dev/null | awk '{print $2\":\"$3}' | grep -iE 'kube|cilium|calico|antrea|flannel'); do",
        "    nft delete table ${tbl%%:*} ${tbl#*:}",
        "  done",
        "fi",
        "ip route show | grep -E 'via .* dev (flannel|cilium|tunl0|vxlan.calico|kube-bridge|antrea|ovn0|weave)' |"
        " while read -r r; do ip route del $r; done",
        # kube-router's BGP routes to the other nodes' pod CIDRs go via the node's own interface (protocol 17) and its
        # policy rule `from <pod CIDR> lookup 77` outlive its pods: left, the next cluster's pod CIDRs (given in join
        # order) were routed to the wrong node and a flannel cell after kube-router failed every cross-node run
        "ip route show proto 17 | while read -r r; do ip route del $r proto 17; done",
        "while ip rule del lookup 77 2>/dev/null; do :; done",
        "ipvsadm --clear 2>/dev/null",
        "rm -rf " + " ".join(files),
        "rm -f /opt/cni/bin/weave-* /opt/cni/bin/flannel /opt/cni/bin/calico /opt/cni/bin/calico-ipam "
        "/opt/cni/bin/cilium-cni /opt/cni/bin/antrea /opt/cni/bin/kube-ovn",
        "exit 0",
    ]
    return "\n".join(lines) + "\n"
