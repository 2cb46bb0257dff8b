#!/usr/bin/env bash
# The kind management cluster from this machine's own builds, offline (issue 44): what `make up` and `make down` run
# where no container registry answers.
#   mgmt.sh up       a Docker engine (the one running, else dockerd.sh's own), kind v0.33.0 (Go module proxy), the
#                    node image (node-image.sh), the cluster (kustomize/overlays/kind/kind-cluster.local.yaml:
#                    1 control plane + 1 worker; the image's default CNI: flannel), the project's images loaded
#                    (`kind load image-archive`), Argo Workflows v3.7.9, Argo Events v1.9.11, MinIO and edgebench
#                    (kustomize/overlays/e2e: the images built here); idempotent
#   mgmt.sh down     the cluster deleted, then the engine stopped if up started it, and what up changed on the host
#                    restored; PURGE=1 also drops the engine's image cache
#   mgmt.sh submit [ARGS]   argo submit $SWEEP --watch on the cluster (the argo CLI v3.7.9 scripts/e2e-argo built)
#   mgmt.sh e2e      scripts/e2e-argo/e2e.py on the cluster: the smoke workflow, the tiny sweep, a CNI version bump that
#                    Argo Events reruns, the warehouse (make e2e-kind: up, e2e, down)
#   mgmt.sh lab [ARGS]   the local lab's sweep submitted here (make lab-argo): the runner image rebuilt if the
#                    checkout changed and loaded, then scripts/lab-local/argo.py with this cluster's kubeconfig, MinIO
#                    through a port-forward and the kind network's gateway as the host address pods reach
#   mgmt.sh running  exit 0 when the cluster exists
#   mgmt.sh kubeconfig   write the cluster's kubeconfig and print its path
#   mgmt.sh status   what runs
# Inputs, built once and cached (cold: about 30 min for Kubernetes and Argo, docs/e2e-argo.md; then seconds):
#   scripts/lab-local/mirror.sh build   the control plane, etcd, CoreDNS, pause, kube-proxy and flannel archives,
#                                       kubeadm/kubelet/kubectl, the CNI plugins
#   scripts/e2e-argo/build.sh, images.sh build, images.sh build events
#                                       Argo's controller and executor, MinIO, mc, NATS, Argo Events, the runner
# Every step prints its elapsed time; the times of the last `up` go to $STATE/up-times.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
E2E=${EDGEBENCH_E2E:-$HOME/.local/share/edgebench/e2e-argo}
LABC=${EDGEBENCH_LAB_CACHE:-$HOME/.local/share/edgebench/lab}
TOOLS=${EDGEBENCH_TOOLS:-$HOME/.local/share/edgebench/tools}
KIND_VERSION=v0.33.0
CLUSTER=${CLUSTER:-edgebench}
CONFIG=${KIND_CONFIG:-$REPO/kustomize/overlays/kind/kind-cluster.local.yaml}
KIND=$TOOLS/kind-$KIND_VERSION
ARCH=amd64
KUBECTL=$LABC/mirror/bin/$ARCH/kubectl
STATE=/var/lib/edgebench-kind-mgmt   # what up changed on the host, for down
IMAGES=(workflow-controller argoexec minio mc runner nats argo-events)
t0=$SECONDS
log() { echo "mgmt: $*" >&2; }
die() { echo "mgmt: error: $*" >&2; exit 2; }
step() { log "== $* ($((SECONDS - t0)) s)"; echo "$((SECONDS - t0)) $*" >>"$STATE/up-times"; }
k() { "$KUBECTL" --context "kind-$CLUSTER" "$@"; }

engine_answers() { docker info >/dev/null 2>&1; }

# one `up` or `down` at a time on this machine: they share $STATE (whether up started the engine, the host's
# settings to restore). A second one stops with the holder's pid instead of stopping the first one's engine.
LOCK=/run/edgebench-kind-mgmt.lock
lock() {
  exec 9>>"$LOCK"
  if ! flock -n 9; then
    die "another mgmt.sh up/down runs (pid $(cat "$LOCK.pid" 2>/dev/null || echo '?')): wait for it, or stop it first"
  fi
  echo $$ >"$LOCK.pid"
  trap 'rm -f "$LOCK.pid"' EXIT   # the lock itself goes with fd 9; its pid note with this shell
}

kind_bin() {
  if [[ ! -x $KIND ]]; then
    log "kind $KIND_VERSION: go install from the module proxy (about a minute once)"
    mkdir -p "$TOOLS/kind.tmp"
    (cd /tmp && GOBIN=$TOOLS/kind.tmp GOFLAGS=-mod=mod go install "sigs.k8s.io/kind@$KIND_VERSION") \
      || die "go install sigs.k8s.io/kind@$KIND_VERSION failed"
    mv "$TOOLS/kind.tmp/kind" "$KIND"; rmdir "$TOOLS/kind.tmp"
  fi
  ln -sfn "kind-$KIND_VERSION" "$TOOLS/kind"
}

inputs() {   # the mirror when it is missing; the image builders always, as each rebuilds only what changed
  local miss=0 n
  for n in kube-apiserver etcd coredns pause flannel flannel-cni-plugin; do
    [[ -f $LABC/mirror/images/$ARCH/$n.tar ]] || miss=1
  done
  [[ -x $KUBECTL && -f $LABC/mirror/manifests/flannel/v0.28.9/kube-flannel.yml ]] || miss=1
  if ((miss)); then
    # the mirror is assembled from the builds (as make lab-local does): Kubernetes, then the lab's binaries (etcd,
    # CoreDNS, flannel, kube-router, cilium, the CNI plugins), then the runner image
    step "the lab's mirror: Kubernetes v1.33.4 from source (scripts/e2e-argo/build.sh --k8s; cold: about 30 min)"
    "$REPO/scripts/e2e-argo/build.sh" --k8s
    step "the lab's mirror: the node and CNI binaries (scripts/lab-local/build.sh; cold: about 20 min)"
    "$REPO/scripts/lab-local/build.sh"
    "$REPO/scripts/e2e-argo/images.sh" build runner >/dev/null
    step "the lab's mirror (scripts/lab-local/mirror.sh build)"
    "$REPO/scripts/lab-local/mirror.sh" build
  fi
  # each builder keeps a hash of its inputs beside its outputs and rebuilds only what changed (the runner image
  # after a change of the project's code: seconds)
  step "Argo, MinIO, NATS and the runner images (scripts/e2e-argo: build.sh, images.sh; cold: about 30 min)"
  "$REPO/scripts/e2e-argo/build.sh" >/dev/null
  "$REPO/scripts/e2e-argo/images.sh" build >/dev/null
  "$REPO/scripts/e2e-argo/images.sh" build events >/dev/null
}

host_prepare() {
  # kind bind-mounts /lib/modules read-only into every node; a host without it gets an empty one, removed by down
  if [[ ! -e /lib/modules ]]; then mkdir /lib/modules; touch "$STATE/made-lib-modules"; fi
  # kind's known issue "too many open files": inotify limits are per uid, and uid 0 is shared by host and nodes
  local s v want
  for s in fs.inotify.max_user_instances:512 fs.inotify.max_user_watches:524288; do
    want=${s#*:} s=${s%%:*}
    v=$(sysctl -n "$s")
    [[ -e $STATE/$s ]] || echo "$v" >"$STATE/$s"
    ((v >= want)) || sysctl -qw "$s=$want"
  done
}

host_restore() {
  local s
  for s in fs.inotify.max_user_instances fs.inotify.max_user_watches; do
    [[ -s $STATE/$s ]] && sysctl -qw "$s=$(cat "$STATE/$s")"
  done
  if [[ -e $STATE/made-lib-modules ]]; then rmdir /lib/modules 2>/dev/null || true; fi
  return 0
}

up() {
  [[ $(id -u) == 0 ]] || die "needs root (an engine of its own, a node image built with chroot)"
  lock
  for c in go umoci skopeo debootstrap jq; do command -v $c >/dev/null || die "$c is not installed (make setup installs it)"; done
  [[ -f $CONFIG ]] || die "no kind config at $CONFIG"
  mkdir -p "$STATE"; : >"$STATE/up-times"
  step "engine"
  if engine_answers && [[ ! -e $STATE/started-engine ]]; then
    log "using the Docker engine that answers ($(docker info -f '{{.ServerVersion}}, default runtime {{.DefaultRuntime}}'))"
  else
    "$HERE/dockerd.sh" install
    "$HERE/dockerd.sh" up 9>&-   # the engine must not hold the lock
    touch "$STATE/started-engine"
    log "started edgebench's own engine (scripts/kind/dockerd.sh; make down stops it)"
  fi
  host_prepare
  kind_bin
  inputs
  step "node image (scripts/kind/node-image.sh; cached after the first build)"
  "$HERE/node-image.sh"
  step "kind cluster $CLUSTER"
  if "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
    log "cluster $CLUSTER exists"
  else
    "$KIND" create cluster --name "$CLUSTER" --config "$CONFIG" --retain \
      || { log "kind create failed; the nodes' logs: $KIND export logs --name $CLUSTER"; die "kind create cluster failed"; }
  fi
  step "the nodes Ready (the image's default CNI: flannel vxlan from the lab's mirror)"
  k -n kube-flannel rollout status ds/kube-flannel-ds --timeout=300s
  k wait --for=condition=Ready node --all --timeout=300s
  step "load the project's images (kind load image-archive)"
  local n tars=()
  for n in "${IMAGES[@]}"; do tars+=("$E2E/images/$n-$ARCH.tar"); done
  for n in "${tars[@]}"; do "$KIND" load image-archive "$n" --name "$CLUSTER"; done
  step "Argo Workflows v3.7.9, Argo Events v1.9.11, MinIO and edgebench (scripts/e2e-argo/install.sh)"
  "$REPO/scripts/e2e-argo/install.sh" "$KUBECTL" --context "kind-$CLUSTER"
  step "ready: kubectl --context kind-$CLUSTER; make submit"
}

down() {
  [[ $(id -u) == 0 ]] || die "needs root"
  lock
  if running; then
    log "deleting kind cluster $CLUSTER"
    "$KIND" delete cluster --name "$CLUSTER"
  fi
  if [[ -e $STATE/started-engine ]]; then
    "$HERE/dockerd.sh" down
  else
    log "the engine was not started by mgmt.sh up: left running"
  fi
  host_restore
  rm -rf "$STATE"
  rm -f "$REPO/kustomize/overlays/e2e/argo/upstream" "$REPO/kustomize/overlays/e2e/argo/upstream-events"
  log "down"
}

kubeconfig() {   # kind's kubeconfig for the cluster, in $STATE (kind also merges it into ~/.kube/config)
  mkdir -p "$STATE"
  "$KIND" get kubeconfig --name "$CLUSTER" >"$STATE/kubeconfig" || die "no kind cluster $CLUSTER: mgmt.sh up"
  echo "$STATE/kubeconfig"
}

submit() {
  local argo=$E2E/bin/argo sweep=${SWEEP:-$REPO/workflows/sweep.yaml}
  [[ -x $argo ]] || argo=$(command -v argo) || die "no argo CLI: scripts/e2e-argo/build.sh builds it"
  "$argo" --kubeconfig "$(kubeconfig)" -n edgebench submit "$sweep" --serviceaccount edgebench-runner --watch "$@"
}

gateway() {   # the kind network's gateway: the host address the pods reach (index servers, the lab's mirror)
  local gw
  gw=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' 2>/dev/null | awk '{print $1}')
  [[ -n $gw ]] || die "no kind network: mgmt.sh up"
  echo "$gw"
}

running() { [[ -x $KIND ]] && engine_answers && "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; }

e2e() {
  local gw py=${PY:-$REPO/.venv/bin/python}
  gw=$(gateway)
  KUBECTL=$KUBECTL "$py" "$REPO/scripts/e2e-argo/e2e.py" --kubeconfig "$(kubeconfig)" --minio-port-forward \
    --index-host "$gw" --report "$REPO/.edgebench/e2e-kind/report.json" "$@"
}

lab() {
  local gw py=${PY:-$REPO/.venv/bin/python}
  running || die "no kind cluster $CLUSTER: make up"
  gw=$(gateway)
  log "the runner image (rebuilt if this checkout changed) loaded into $CLUSTER"
  "$REPO/scripts/e2e-argo/images.sh" build runner >/dev/null
  "$KIND" load image-archive "$E2E/images/runner-$ARCH.tar" --name "$CLUSTER"
  KUBECTL=$KUBECTL PATH=$E2E/bin:$PATH "$py" "$REPO/scripts/lab-local/argo.py" --kubeconfig "$(kubeconfig)" \
    --minio-port-forward --index-host "$gw" "$@"
}

status() {
  if ! engine_answers; then echo "engine: not running"; return 0; fi
  echo "engine: $(docker info -f '{{.ServerVersion}}, default runtime {{.DefaultRuntime}}')"
  if [[ -x $KIND ]]; then echo "kind clusters: $("$KIND" get clusters 2>/dev/null | tr '\n' ' ')"; fi
}

usage() { awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; }

case ${1:-} in
  up) up ;;
  down) down ;;
  submit) shift; submit "$@" ;;
  e2e) shift; e2e "$@" ;;
  lab) shift; lab "$@" ;;
  running) running ;;
  kubeconfig) running || die "no kind cluster $CLUSTER: make up"; kubeconfig ;;
  status) status ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
