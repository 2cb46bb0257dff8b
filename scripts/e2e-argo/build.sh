#!/usr/bin/env bash
# Build (once, cached) from the Go module proxy the binaries of the management cluster's images and of the lab's
# mirror: Kubernetes control plane + kubelet + kube-proxy + kubectl + kubeadm ($K8S_VERSION: the mirror's images and
# packages, the kind node image), Argo Workflows' controller, executor and CLI ($ARGO_E2E_VERSION) and the NATS server
# ($NATS_VERSION, JetStream for Argo Events' EventBus). Kubernetes and Argo carry `replace` directives, so
# `go install mod@version` refuses them; a small wrapper module that repeats the replaces builds them instead (NATS:
# go install). CoreDNS is the lab's build (scripts/lab-local/build.sh).
# Usage: build.sh [--print|--k8s]   (--print: list the binaries and whether they are cached, build nothing;
#        --k8s: only the Kubernetes binaries, what the local lab needs)
set -euo pipefail
E2E=${EDGEBENCH_E2E:-$HOME/.local/share/edgebench/e2e-argo}
K8S_VERSION=${K8S_VERSION:-v1.33.4}
ARGO_E2E_VERSION=${ARGO_E2E_VERSION:-v3.7.9}
NATS_VERSION=${NATS_VERSION:-v2.10.29}
BIN=$E2E/bin
K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl kubeadm)   # kubeadm: the local lab (make lab-local)
ARGO_CMDS=(workflow-controller argoexec argo)   # argo: the CLI Argo Events' argoWorkflow trigger runs

stamp() { echo "$BIN/.$1-$2"; }   # a binary is cached when its version stamp exists
# missing VERSION CMD...: the commands that have no stamp for VERSION yet
missing() { local v=$1 c; shift; for c in "$@"; do [[ -e $(stamp "$c" "$v") ]] || echo "$c"; done; }
# build_cmds MODULE_DIR VERSION VERSION_VAR PACKAGE_PREFIX CMD...: `go build` each command from the wrapper module
# (its version linked into VERSION_VAR) into $BIN, and stamp it
build_cmds() {
  local mod=$1 v=$2 var=$3 prefix=$4 c t0
  shift 4
  (cd "$mod" && go mod tidy)
  for c in "$@"; do
    t0=$SECONDS
    (cd "$mod" && go build -trimpath -ldflags "-s -w -X $var=$v" -o "$BIN/$c" "$prefix/$c")
    touch "$(stamp "$c" "$v")"; echo "e2e-argo: $c built in $((SECONDS - t0)) s"
  done
}

if [[ ${1:-} == --print ]]; then
  for c in "${K8S_CMDS[@]}"; do [[ -e $(stamp "$c" "$K8S_VERSION") ]] && s=cached || s=missing; echo "$c $K8S_VERSION $s"; done
  for c in "${ARGO_CMDS[@]}"; do [[ -e $(stamp "$c" "$ARGO_E2E_VERSION") ]] && s=cached || s=missing; echo "$c $ARGO_E2E_VERSION $s"; done
  [[ -e $(stamp nats-server "$NATS_VERSION") ]] && s=cached || s=missing; echo "nats-server $NATS_VERSION $s"
  exit 0
fi
command -v go >/dev/null || { echo "e2e-argo: go is not installed (make apt installs golang-go)" >&2; exit 1; }
mkdir -p "$BIN" "$E2E/src"
export GOFLAGS="-buildvcs=false -mod=mod" CGO_ENABLED=0
# The wrapper modules have no go.sum of their own and this machine's checksum-database mirror answers 404 for some
# k8s.io modules (seen: k8s.io/cloud-provider v0.33.5); v1.33.4 because the proxy refuses some v0.33.5 staging modules (k8s.io/endpointslice: 403); the modules still come from the module proxy.
export GOSUMDB=${GOSUMDB:-off}

mapfile -t k8s_missing < <(missing "$K8S_VERSION" "${K8S_CMDS[@]}")
if (( ${#k8s_missing[@]} )); then
  mod=$E2E/src/k8s-$K8S_VERSION; mkdir -p "$mod"
  staging=v0.${K8S_VERSION#v1.}
  # the staging modules k8s.io/kubernetes replaces with ./staging/src/...: the same code, published as v0.x
  {
    echo "module edgebench.local/e2e/k8s"; echo; echo "go 1.24.0"; echo
    echo "require k8s.io/kubernetes $K8S_VERSION"; echo
    curl -fsS "https://proxy.golang.org/k8s.io/kubernetes/@v/$K8S_VERSION.mod" \
      | awk -v v="$staging" '/=> \.\/staging\/src\//{print "replace " $1 " => " $1 " " v}'
  } > "$mod/go.mod"
  printf 'package e2e\n\nimport _ "k8s.io/kubernetes/cmd/kubelet/app"\n' > "$mod/tools.go"
  echo "e2e-argo: building ${k8s_missing[*]} $K8S_VERSION (wrapper module $mod; ~7 min cold on 2 cores)"
  build_cmds "$mod" "$K8S_VERSION" k8s.io/component-base/version.gitVersion k8s.io/kubernetes/cmd "${k8s_missing[@]}"
fi

if [[ ${1:-} == --k8s ]]; then echo "e2e-argo: Kubernetes binaries in $BIN (--k8s: Argo and NATS not built)"; exit 0; fi
mapfile -t argo_missing < <(missing "$ARGO_E2E_VERSION" "${ARGO_CMDS[@]}")
if (( ${#argo_missing[@]} )); then
  mod=$E2E/src/argo-$ARGO_E2E_VERSION; mkdir -p "$mod"
  {
    echo "module edgebench.local/e2e/argo"; echo; echo "go 1.24.10"; echo
    echo "require github.com/argoproj/argo-workflows/v3 $ARGO_E2E_VERSION"; echo
    curl -fsS "https://proxy.golang.org/github.com/argoproj/argo-workflows/v3/@v/$ARGO_E2E_VERSION.mod" \
      | awk '/^replace /{print}'
    echo "replace github.com/argoproj/argo-workflows/v3 => ./argo-workflows"
  } > "$mod/go.mod"
  # a writable copy of the module with our build patches (scripts/e2e-argo/patches/argo-<version>/: files the
  # proxy's copy lacks for Linux)
  (cd /tmp && go mod download "github.com/argoproj/argo-workflows/v3@$ARGO_E2E_VERSION")
  rm -rf "$mod/argo-workflows"
  cp -r "$(go env GOMODCACHE)/github.com/argoproj/argo-workflows/v3@$ARGO_E2E_VERSION" "$mod/argo-workflows"
  chmod -R u+w "$mod/argo-workflows"
  patches=$(cd "$(dirname "$0")" && pwd)/patches/argo-$ARGO_E2E_VERSION
  [[ -d $patches ]] && cp -r "$patches/." "$mod/argo-workflows/"
  # cmd/argo embeds the web UI's build (ui/dist/app, not in the module): a placeholder page instead, the CLI is
  # all that is used
  mkdir -p "$mod/argo-workflows/ui/dist/app"
  echo '<!doctype html><title>Argo UI not built (edgebench e2e)</title>' > "$mod/argo-workflows/ui/dist/app/index.html"
  printf 'package e2e\n\nimport _ "github.com/argoproj/argo-workflows/v3/workflow/controller"\n' > "$mod/tools.go"
  echo "e2e-argo: building ${argo_missing[*]} $ARGO_E2E_VERSION (wrapper module $mod; ~5 min cold)"
  build_cmds "$mod" "$ARGO_E2E_VERSION" github.com/argoproj/argo-workflows/v3.version \
    github.com/argoproj/argo-workflows/v3/cmd "${argo_missing[@]}"
fi
if [[ ! -e $(stamp nats-server "$NATS_VERSION") ]]; then
  echo "e2e-argo: building nats-server $NATS_VERSION (go install; ~1 min cold)"
  t0=$SECONDS
  (cd /tmp && GOBIN=$BIN go install "github.com/nats-io/nats-server/v2@$NATS_VERSION")
  touch "$(stamp nats-server "$NATS_VERSION")"; echo "e2e-argo: nats-server built in $((SECONDS - t0)) s"
fi
echo "e2e-argo: binaries in $BIN"
