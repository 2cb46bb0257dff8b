#!/usr/bin/env bash
# `make e2e-argo`: the sweep on a real Argo controller and a real single-node Kubernetes on this machine.
#   1. build (once, cached) Kubernetes, Argo's controller + executor, CoreDNS, kubectl (build.sh) and the OCI
#      images (images.sh: pause, workflow-controller, argoexec, minio, mc, the edgebench runner) - no Docker;
#   2. start etcd, the control plane, containerd + kubelet with bridge CNI, kube-proxy, CoreDNS (cluster.sh);
#   3. install Argo Workflows and Events (kustomize/overlays/e2e/{argo,events}) and edgebench
#      (kustomize/overlays/e2e: the same base as kind);
#   4. submit workflows/smoke.yaml and a tiny sweep as Workflow objects, wait, check the run keys in MinIO; then
#      bump calico's version on a local index server: the version probe records it, Argo Events' EventSource and
#      Sensor submit a rerun of only calico's cells, checked the same way; build the warehouse (e2e.py);
#   5. stop everything (cluster.sh down), also on failure. KEEP=1 leaves the cluster up to look around
#      (`make e2e-argo-down` removes it).
# Times of each step go to .edgebench/e2e-argo/report.json beside the workflows' results.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
E2E=${EDGEBENCH_E2E:-$HOME/.local/share/edgebench/e2e-argo}
export PATH=$E2E/bin:$PATH
KUBECONFIG_E2E=/var/lib/edgebench-e2e/pki/admin.kubeconfig
PY=${PY:-$REPO/.venv/bin/python}
t_start=$SECONDS
step() { echo "e2e-argo: == $* ($((SECONDS - t_start)) s)"; }

[[ $(id -u) == 0 ]] || { echo "e2e-argo: error: needs root (containerd, kubelet, network)" >&2; exit 1; }
step "build binaries (cached after the first run)"
"$HERE/build.sh"
step "build images (cached after the first run)"
"$HERE/images.sh" build
"$HERE/images.sh" build events   # nats + argo-events (the binary from make events-tools)
t_ready=$SECONDS
if [[ ${KEEP:-0} != 1 ]]; then trap '"$HERE/cluster.sh" down' EXIT; fi
"$HERE/cluster.sh" down >/dev/null 2>&1 || true   # a crashed earlier run leaves nothing in the way
step "start the single-node cluster"
"$HERE/cluster.sh" up
step "install Argo Workflows, Argo Events and edgebench (install.sh)"
"$HERE/install.sh" kubectl --kubeconfig "$KUBECONFIG_E2E"
t_installed=$SECONDS
step "submit and check the workflows"
rc=0
"$PY" "$HERE/e2e.py" --kubeconfig "$KUBECONFIG_E2E" --report "$REPO/.edgebench/e2e-argo/report.json" || rc=$?
step "done: cluster start + install $((t_installed - t_ready)) s, workflows $((SECONDS - t_installed)) s"
exit $rc
