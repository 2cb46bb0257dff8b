#!/usr/bin/env bash
# Argo Workflows v3.7.9, Argo Events v1.9.11 and edgebench (MinIO, templates, EventSource, Sensor) on a management
# cluster, from the modules' own manifests and kustomize/overlays/e2e: the one install sequence of `make up` (kind,
# scripts/kind/mgmt.sh) and `make e2e-argo`.
#   install.sh KUBECTL [ARGS...]    e.g. install.sh kubectl --context kind-edgebench
# Each step waits for what it started (rollouts, the bucket job) and prints its elapsed time.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
(($#)) || { echo "usage: install.sh KUBECTL [ARGS...]" >&2; exit 2; }
kc=("$@")
t0=$SECONDS
step() { echo "install: == $* ($((SECONDS - t0)) s)" >&2; }

step "Argo Workflows v3.7.9 and the Argo Events CRDs (from their Go modules)"
modcache=$(go env GOMODCACHE)
for m in github.com/argoproj/argo-workflows/v3@v3.7.9 github.com/argoproj/argo-events@v1.9.11; do
  [[ -d $modcache/$m/manifests ]] || (cd /tmp && GOFLAGS=-mod=mod GOSUMDB=off go mod download "$m") \
    || { echo "install: error: go mod download $m failed (the Go module proxy)" >&2; exit 2; }
done
ln -sfn "$modcache/github.com/argoproj/argo-workflows/v3@v3.7.9/manifests" "$REPO/kustomize/overlays/e2e/argo/upstream"
ln -sfn "$modcache/github.com/argoproj/argo-events@v1.9.11/manifests" "$REPO/kustomize/overlays/e2e/argo/upstream-events"
"${kc[@]}" apply --server-side -k "$REPO/kustomize/overlays/e2e/argo" >/dev/null
"${kc[@]}" -n argo rollout status deploy/workflow-controller --timeout=300s
step "Argo Events v1.9.11"
"${kc[@]}" apply --server-side -k "$REPO/kustomize/overlays/e2e/events" >/dev/null
"${kc[@]}" -n argo-events rollout status deploy/controller-manager --timeout=300s
step "edgebench: MinIO, templates, EventSource and Sensor (kustomize/overlays/e2e)"
"${kc[@]}" apply --server-side -k "$REPO/kustomize/overlays/e2e" >/dev/null
"${kc[@]}" -n edgebench rollout status deploy/minio --timeout=300s
"${kc[@]}" -n edgebench wait --for=condition=complete job/minio-make-bucket --timeout=300s
"${kc[@]}" -n edgebench rollout status deploy/e2e-nats --timeout=300s
step "installed"
