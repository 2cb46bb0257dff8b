#!/usr/bin/env bash
# Build (once, cached) the binaries of the local lab's artifact source, from the Go module proxy, for one
# architecture (ARCH=amd64|arm64; Go cross-compiles): etcd, CoreDNS, flanneld, kube-router, the CNI plugins and
# flannel's CNI plugin. Kubernetes itself (kubeadm, kubelet, kubectl, the control plane, kube-proxy) comes from
# scripts/e2e-argo/build.sh for this machine's architecture; a foreign one's (ARCH=arm64) is cross-compiled here
# from the same wrapper module. Each module is required at its pinned
# version by a small wrapper module (dependencies' replace directives stay out of the way), built with
# CGO_ENABLED=0, and stamped: a rerun builds nothing.
#   build.sh [--print]      (--print: what is cached, what is missing)
set -euo pipefail
ARCH=${ARCH:-$(dpkg --print-architecture)}
LABC=${EDGEBENCH_LAB_CACHE:-$HOME/.local/share/edgebench/lab}
OUT=$LABC/bin/$ARCH
SRC=$LABC/src
# name  module@version  package  ldflags-version-variable
ETCD_VERSION=v3.5.21          # kubeadm v1.33's etcd (registry.k8s.io/etcd:3.5.21-0)
COREDNS_VERSION=v1.12.0       # kubeadm v1.33's CoreDNS
FLANNEL_VERSION=v0.28.9       # the catalog's pin
FLANNEL_EXTRA="v0.28.10"      # flannel versions besides the pin, for paired reruns (artifacts.yaml `versions:`)
KUBE_ROUTER_VERSION=v2.1.0    # the catalog pins v2.11.1; the module proxy answers 403 for its go.mod
CNI_PLUGINS_VERSION=v1.1.1    # Debian bookworm's containernetworking-plugins
FLANNEL_CNI_VERSION=v0.9.1    # the last containernetworking/plugins with meta/flannel (flannel-io/cni-plugin: 403)
FORTIO_VERSION=v1.66.5        # the HTTP test services (the Makefile's pin), static for a distroless-like image
K8S_VERSION=${K8S_VERSION:-v1.33.4}
K8S_FOREIGN=(kubelet kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy)   # a foreign ARCH only
CNI_MAIN=(bridge host-device ipvlan loopback macvlan ptp vlan)
CNI_IPAM=(host-local static dhcp)
CNI_META=(bandwidth firewall portmap sbr tuning vrf)

stamp() { echo "$OUT/.$1-$2"; }
have() { [[ -e $(stamp "$1" "$2") ]]; }
if [[ ${1:-} == --print ]]; then
  for nv in "etcd $ETCD_VERSION" "coredns $COREDNS_VERSION" "flanneld $FLANNEL_VERSION" "kube-router $KUBE_ROUTER_VERSION" \
            "cni-plugins $CNI_PLUGINS_VERSION" "flannel-cni $FLANNEL_CNI_VERSION" "fortio $FORTIO_VERSION"; do
    set -- $nv; have "$1" "$2" && s=cached || s=missing; echo "$ARCH $1 $2 $s"
  done
  have kubeadm-go1.24 "$K8S_VERSION" && s=cached || s=missing; echo "$ARCH kubeadm $K8S_VERSION $s"
  for v in $FLANNEL_EXTRA; do have flanneld-extra "$v" && s=cached || s=missing; echo "$ARCH flanneld $v $s"; done
  if [[ $ARCH != "$(dpkg --print-architecture)" ]]; then
    for c in "${K8S_FOREIGN[@]}"; do have "k8s-$c" "$K8S_VERSION" && s=cached || s=missing; echo "$ARCH $c $K8S_VERSION $s"; done
  fi
  exit 0
fi
command -v go >/dev/null || { echo "lab-local: go is not installed" >&2; exit 1; }
mkdir -p "$OUT" "$SRC"
export GOFLAGS="-buildvcs=false -mod=mod" CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH GOSUMDB=${GOSUMDB:-off}

# wrapper NAME MODULE VERSION [MAIN_GO]: a module requiring MODULE@VERSION (and holding MAIN_GO as main.go)
wrapper() {
  local dir=$SRC/$1-$3; mkdir -p "$dir"
  printf 'module edgebench.local/lab/%s\n\ngo 1.24.0\n\nrequire %s %s\n' "$1" "$2" "$3" > "$dir/go.mod"
  if [[ -n ${4:-} ]]; then printf '%s\n' "$4" > "$dir/main.go"
  else printf 'package tools\n\nimport _ "%s"\n' "$5" > "$dir/tools.go"; fi
  (cd "$dir" && go mod tidy >/dev/null 2>&1 || go mod tidy)
  echo "$dir"
}
built() { touch "$(stamp "$1" "$2")"; echo "lab-local: $ARCH $1 $2 built in $(( SECONDS - t0 )) s"; }

if ! have etcd $ETCD_VERSION; then
  t0=$SECONDS
  d=$(wrapper etcd go.etcd.io/etcd/server/v3 $ETCD_VERSION \
    'package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }')
  (cd "$d" && go build -trimpath -ldflags "-s -w" -o "$OUT/etcd" .)
  built etcd $ETCD_VERSION
fi
if ! have coredns $COREDNS_VERSION; then
  t0=$SECONDS
  d=$(wrapper coredns github.com/coredns/coredns $COREDNS_VERSION "" github.com/coredns/coredns/core/plugin)
  (cd "$d" && go build -trimpath -ldflags "-s -w" -o "$OUT/coredns" github.com/coredns/coredns)
  built coredns $COREDNS_VERSION
fi
if ! have flanneld $FLANNEL_VERSION; then
  t0=$SECONDS
  d=$(wrapper flannel github.com/flannel-io/flannel $FLANNEL_VERSION "" github.com/flannel-io/flannel/pkg/version)
  # flannel links every backend; the module proxy answers 403 for the Tencent Cloud VPC SDK it pins (v1.3.149), so
  # the tencentvpc backend (a cloud route table API, never used here) builds against the served v1.0.1000 instead.
  # The udp backend is cgo on amd64: flanneld is linked against the Debian root's glibc (the image has it).
  grep -q tencentcloud/vpc "$d/go.mod" || printf '\nreplace %s => %s v1.0.1000\n' \
    github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc >> "$d/go.mod"
  (cd "$d" && CGO_ENABLED=$([[ $ARCH == "$(go env GOHOSTARCH)" ]] && echo 1 || echo 0) go build -trimpath -ldflags "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION" \
     -o "$OUT/flanneld" github.com/flannel-io/flannel)
  # the manifest's install-cni init container runs /opt/bin/install-conf (cmd/install_conf, as flannel's image has it)
  (cd "$d" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT/flannel-install-conf" \
     github.com/flannel-io/flannel/cmd/install_conf)
  built flanneld $FLANNEL_VERSION
fi
for v in $FLANNEL_EXTRA; do   # flanneld-<version>, the same way (mirror.sh makes its image)
  have flanneld-extra "$v" && continue
  t0=$SECONDS
  d=$(wrapper "flannel-$v" github.com/flannel-io/flannel "$v" "" github.com/flannel-io/flannel/pkg/version)
  grep -q tencentcloud/vpc "$d/go.mod" || printf '\nreplace %s => %s v1.0.1000\n' \
    github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc >> "$d/go.mod"
  (cd "$d" && CGO_ENABLED=$([[ $ARCH == "$(go env GOHOSTARCH)" ]] && echo 1 || echo 0) go build -trimpath -ldflags "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$v" \
     -o "$OUT/flanneld-$v" github.com/flannel-io/flannel)
  built flanneld-extra "$v"
done
if ! have kube-router $KUBE_ROUTER_VERSION; then
  t0=$SECONDS
  d=$(wrapper kube-router github.com/cloudnativelabs/kube-router/v2 $KUBE_ROUTER_VERSION "" \
      github.com/cloudnativelabs/kube-router/v2/pkg/version)
  (cd "$d" && go build -trimpath -ldflags "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" \
     -o "$OUT/kube-router" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router)
  built kube-router $KUBE_ROUTER_VERSION
fi
if ! have cni-plugins $CNI_PLUGINS_VERSION; then
  t0=$SECONDS
  d=$(wrapper cni-plugins github.com/containernetworking/plugins $CNI_PLUGINS_VERSION "" \
      github.com/containernetworking/plugins/pkg/ip)
  mkdir -p "$OUT/cni"
  for p in "${CNI_MAIN[@]}"; do (cd "$d" && go build -trimpath -ldflags "-s -w" -o "$OUT/cni/$p" "github.com/containernetworking/plugins/plugins/main/$p"); done
  for p in "${CNI_IPAM[@]}"; do (cd "$d" && go build -trimpath -ldflags "-s -w" -o "$OUT/cni/$p" "github.com/containernetworking/plugins/plugins/ipam/$p"); done
  for p in "${CNI_META[@]}"; do (cd "$d" && go build -trimpath -ldflags "-s -w" -o "$OUT/cni/$p" "github.com/containernetworking/plugins/plugins/meta/$p"); done
  built cni-plugins $CNI_PLUGINS_VERSION
fi
if ! have flannel-cni $FLANNEL_CNI_VERSION; then
  t0=$SECONDS
  d=$(wrapper flannel-cni github.com/containernetworking/plugins $FLANNEL_CNI_VERSION "" \
      github.com/containernetworking/plugins/pkg/ip)
  (cd "$d" && go build -trimpath -ldflags "-s -w" -o "$OUT/flannel" github.com/containernetworking/plugins/plugins/meta/flannel)
  built flannel-cni $FLANNEL_CNI_VERSION
fi
if ! have fortio $FORTIO_VERSION; then
  t0=$SECONDS
  d=$(wrapper fortio fortio.org/fortio $FORTIO_VERSION "" fortio.org/fortio/version)
  (cd "$d" && go build -trimpath -ldflags "-s -w" -o "$OUT/fortio" fortio.org/fortio)
  built fortio $FORTIO_VERSION
fi
# kubeadm v1.33.4 with go1.24.7: its preflight check HTTPProxyCIDR formats an IPv4 address (16-byte form) as
# "https://[10.96.0.1]:1234/", which net/url rejects from go1.24.8 / go1.25.2 on (the bracketed-host fix of
# CVE-2025-47912): built by this machine's Go, kubeadm init fails with "[ERROR HTTPProxyCIDR] ... invalid
# IP-literal". go1.24.7 is the last toolchain that parses it; it comes from the module proxy (golang.org/toolchain).
# Only kubeadm is built with it; the other binaries are the e2e build's.
KUBEADM_GOTOOLCHAIN=go1.24.7
src=${EDGEBENCH_E2E:-$HOME/.local/share/edgebench/e2e-argo}/src/k8s-$K8S_VERSION
if ! have kubeadm-go1.24 "$K8S_VERSION"; then
  t0=$SECONDS
  [[ -e $src/go.mod ]] || { echo "lab-local: $src is missing: run scripts/e2e-argo/build.sh --k8s first" >&2; exit 1; }
  (cd "$src" && GOTOOLCHAIN=$KUBEADM_GOTOOLCHAIN GONOSUMDB=golang.org/toolchain GOSUMDB=sum.golang.org \
     go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION" \
     -o "$OUT/kubeadm" k8s.io/kubernetes/cmd/kubeadm)
  built kubeadm-go1.24 "$K8S_VERSION"
fi
# A foreign architecture's other Kubernetes binaries (this machine's come from scripts/e2e-argo/build.sh): the same
# wrapper module, cross-compiled, into $OUT/k8s (where mirror.sh looks for a foreign ARCH's)
if [[ $ARCH != "$(go env GOHOSTARCH)" ]]; then
  [[ -e $src/go.mod ]] || { echo "lab-local: $src is missing: run scripts/e2e-argo/build.sh --k8s first" >&2; exit 1; }
  for c in "${K8S_FOREIGN[@]}"; do
    have "k8s-$c" "$K8S_VERSION" && continue
    t0=$SECONDS
    (cd "$src" && go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION" \
       -o "$OUT/k8s/$c" "k8s.io/kubernetes/cmd/$c")
    built "k8s-$c" "$K8S_VERSION"
  done
fi
echo "lab-local: $ARCH binaries in $OUT"
