#!/usr/bin/env bash
# Cilium for the local lab's artifact source, from the Go module github.com/cilium/cilium (no registry, no GitHub):
#   - the binaries (agent, operator-generic, CNI plugin, health, dbg, mount, sysctlfix, bugtool), built as upstream's
#     Makefile.defs does (static, -tags osusergo, the version and Envoy SHA in the ldflags);
#   - the agent image quay.io/cilium/cilium:VERSION: a Debian bookworm root (mirror.sh's base) with clang-19 (the agent
#     compiles its BPF programs at run time), bpftool and iptables-wrapper (images/runtime), the binaries, the BPF
#     sources in /var/lib/cilium/bpf and the chart's init scripts; the operator image quay.io/cilium/operator-generic:
#     VERSION: the operator on a static base. No Envoy (the lab's values turn the L7 proxy off), no Hubble;
#   - helm (helm.sh/helm/v3, in the tools directory if missing) and the Helm chart install/kubernetes/cilium as a chart
#     repository (mirror/charts/cilium: the packaged chart + index.yaml), so that `helm repo add` takes the mirror.
# Called by mirror.sh build; every step is cached (binaries by version, the agent root by its stamp, images by key).
#   cilium.sh build | bins | rootfs | images | chart | helm
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ARCH=${ARCH:-$(dpkg --print-architecture)}
LABC=${EDGEBENCH_LAB_CACHE:-$HOME/.local/share/edgebench/lab}
MIRROR=${EDGEBENCH_MIRROR:-$LABC/mirror}
TOOLS=${EDGEBENCH_TOOLS:-$HOME/.local/share/edgebench/tools}
VERSION=${CILIUM_VERSION:-1.18.0}
HELM_VERSION=v3.18.4
K8S_VERSION=v1.33.4   # `helm template` / `helm lint` of a go-installed helm assume Kubernetes v1.20 without it
BIN=$LABC/bin/$ARCH/cilium
SRC=$LABC/src/cilium-v$VERSION
BASE=$LABC/rootfs/base-$ARCH
ROOTFS=$LABC/rootfs/cilium-agent-$ARCH
WORK=$LABC/work
LAYOUT=$WORK/oci
say() { echo "lab-local: cilium: $*" >&2; }
warn() { say "$*"; }
die() { echo "lab-local: cilium: error: $*" >&2; exit 2; }
SUITE=bookworm HOST_ARCH=$(dpkg --print-architecture)
# shellcheck source=../e2e-argo/lib/arch.sh
source "$HERE/../e2e-argo/lib/arch.sh"   # ensure_emulation: a foreign ARCH's agent root gets its apt under qemu
check_arch "$ARCH"

module() {   # module FIELD: a field of `go mod download -json` for the module (Dir, Info)
  (cd /tmp && GOFLAGS=-mod=mod GOSUMDB=off go mod download -json "github.com/cilium/cilium@v$VERSION") |
    awk -F'"' -v f="\"$1\"" '$0 ~ f {print $4}'
}

src() {   # a writable copy of the module (the module cache is read-only; no vendor/: built with -mod=mod)
  [[ -e $SRC/.edgebench-src ]] && return 0
  local mod info
  mod=$(module Dir)
  [[ -d $mod ]] || die "go mod download github.com/cilium/cilium@v$VERSION failed"
  rm -rf "$SRC"; mkdir -p "$(dirname "$SRC")"; cp -a "$mod" "$SRC"; chmod -R u+w "$SRC"
  # Makefile.defs' GIT_VERSION ("<short hash> <date>", the agent parses it) from the proxy's .info of the tag
  info=$(module Info)
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["Origin"]["Hash"][:8], d["Time"])' \
    "$info" > "$SRC/GIT_VERSION"
  echo "$mod" > "$SRC/.edgebench-src"
}

bins() {
  src
  local want=(cilium-agent:./daemon cilium-cni:./plugins/cilium-cni cilium-operator-generic:./operator
              cilium-health:./cilium-health cilium-health-responder:./cilium-health/responder cilium-dbg:./cilium-dbg
              cilium-mount:./tools/mount cilium-sysctlfix:./tools/sysctlfix cilium-bugtool:./bugtool)
  local envoy ld w name pkg tags t0
  # images/cilium/Dockerfile's Envoy image tag: its SHA is what the agent checks an external Envoy against
  envoy=$(sed -E -e 's/^ARG CILIUM_ENVOY_IMAGE=([^ ]*)/\1/p;d' < "$SRC/images/cilium/Dockerfile" | sed -E -e 's/[^/]*\/[^:]*:(.*-)?([^:@]*).*/\2/p;d')
  ld="-s -w -X 'github.com/cilium/cilium/pkg/version.ciliumVersion=$VERSION $(cat "$SRC/GIT_VERSION")'"
  ld+=" -X github.com/cilium/cilium/pkg/envoy.requiredEnvoyVersionSHA=$envoy"
  mkdir -p "$BIN"
  for w in "${want[@]}"; do
    name=${w%%:*} pkg=${w#*:} tags=osusergo
    [[ $name == cilium-operator-generic ]] && tags+=,ipam_provider_operator
    [[ -x $BIN/$name && $(cat "$BIN/.$name.version" 2>/dev/null) == "$VERSION" ]] && continue
    t0=$SECONDS
    (cd "$SRC" && GOFLAGS=-mod=mod GOSUMDB=off CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH \
       nice -n 10 go build -ldflags "$ld" -tags "$tags" -o "$BIN/$name" "$pkg") > "$BIN/.$name.log" 2>&1 \
      || { tail -20 "$BIN/.$name.log" >&2; die "go build $name failed (see $BIN/.$name.log)"; }
    echo "$VERSION" > "$BIN/.$name.version"
    say "$name ($((SECONDS - t0)) s)"
  done
}

rootfs() {   # the agent's root: the lab's Debian base + clang-19 and bpftool from Debian, iptables-wrapper
  [[ -e $ROOTFS/.stamp && $ROOTFS/.stamp -nt $BASE/.stamp ]] && return 0
  [[ -e $BASE/.stamp ]] || die "no base root $BASE (mirror.sh build makes it)"
  src
  local t0=$SECONDS r=$ROOTFS.wip
  rm -rf "$r"; cp -a "$BASE/." "$r/"; rm -f "$r/.stamp"
  cp /etc/resolv.conf "$r/etc/resolv.conf"
  ensure_emulation
  say "clang-19 and bpftool into the agent's root (apt, a few minutes once; under qemu for a foreign ARCH: longer)"
  chroot "$r" /bin/sh -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -q &&
      apt-get install -y -q --no-install-recommends clang-19 bpftool &&
      apt-get purge -y -q --auto-remove llvm-19 llvm-19-runtime 2>/dev/null; apt-get clean' > "$WORK/cilium-agent-apt.log" 2>&1 \
    || die "apt in the agent's root failed (see $WORK/cilium-agent-apt.log)"
  ln -sf clang-19 "$r/usr/bin/clang"
  # images/runtime/Dockerfile: iptables (legacy or nft, whichever the node uses) through iptables-wrapper
  install -m 0755 "$SRC/images/runtime/iptables-wrapper-installer.sh" "$r/iptables-wrapper-installer.sh"
  chroot "$r" /iptables-wrapper-installer.sh --no-sanity-check >> "$WORK/cilium-agent-apt.log" 2>&1 \
    || die "iptables-wrapper-installer.sh failed (see $WORK/cilium-agent-apt.log)"
  rm -f "$r/iptables-wrapper-installer.sh" "$r/etc/resolv.conf"
  rm -rf "$r"/var/lib/apt/lists/* "$r"/usr/share/doc "$r"/usr/share/man "$r"/usr/share/locale
  rm -rf "$ROOTFS"; mv "$r" "$ROOTFS"; date -u +%FT%TZ > "$ROOTFS/.stamp"
  say "agent root in $((SECONDS - t0)) s ($(du -sh "$ROOTFS" | cut -f1))"
}

# oci_image NAME REF KEY FILL-FUNCTION CONFIG-ARGS...: mirror/images/ARCH/NAME.tar (docker-archive), rebuilt when KEY changes
oci_image() {
  local name=$1 ref=$2 key=$3 fill=$4; shift 4
  local out=$MIRROR/images/$ARCH/$name.tar tag=$name-$ARCH b=$WORK/bundle-$name t0=$SECONDS
  [[ -e $out && $(cat "$out.key" 2>/dev/null) == "$key" ]] && return 0
  mkdir -p "$(dirname "$out")" "$WORK"
  [[ -d $LAYOUT ]] || umoci init --layout "$LAYOUT"
  umoci ls --layout "$LAYOUT" | grep -qx "$tag" && umoci rm --image "$LAYOUT:$tag"
  rm -rf "$b"
  umoci new --image "$LAYOUT:$tag"
  umoci unpack --image "$LAYOUT:$tag" "$b" >/dev/null
  "$fill" "$b/rootfs"
  umoci repack --image "$LAYOUT:$tag" "$b" >/dev/null
  umoci config --image "$LAYOUT:$tag" --os linux --architecture "$ARCH" \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@" >/dev/null
  rm -rf "$b"
  rm -f "$out.tmp"
  skopeo --insecure-policy copy --quiet "oci:$LAYOUT:$tag" "docker-archive:$out.tmp:$ref"
  umoci rm --image "$LAYOUT:$tag" && umoci gc --layout "$LAYOUT"   # the layout only stages: the archive is the artifact
  mv -f "$out.tmp" "$out"; echo "$key" > "$out.key"
  say "image $ref ($(du -h "$out" | cut -f1), $((SECONDS - t0)) s)"
}

fill_agent() {
  local r=$1 f
  cp -a "$ROOTFS/." "$r/"; rm -f "$r/.stamp"
  for f in cilium-agent cilium-dbg cilium-health cilium-health-responder cilium-bugtool cilium-mount cilium-sysctlfix; do
    install -D -m 0755 "$BIN/$f" "$r/usr/bin/$f"
  done
  # plugins/cilium-cni: the plugin and its default config; images/cilium/Dockerfile: the scripts the chart runs at /
  install -D -m 0755 "$BIN/cilium-cni" "$r/opt/cni/bin/cilium-cni"
  install -D -m 0644 "$SRC/plugins/cilium-cni/05-cilium-cni.conf" "$r/etc/cni/net.d/05-cilium-cni.conf"
  install -m 0755 "$SRC/images/cilium/init-container.sh" "$SRC/plugins/cilium-cni/install-plugin.sh" \
    "$SRC/plugins/cilium-cni/cni-uninstall.sh" "$r/"
  # install-plugin.sh copies /cni/loopback to a node that lacks one (upstream: the CNI plugins' release)
  [[ -x $LABC/bin/$ARCH/cni/loopback ]] && install -D -m 0755 "$LABC/bin/$ARCH/cni/loopback" "$r/cni/loopback"
  # Makefile install-bpf: the BPF sources the agent compiles, /var/lib/cilium/bpf
  install -d -m 0750 "$r/var/lib/cilium"
  (cd "$SRC" && find bpf -type f ! -name '*.o' ! -name '*.i' ! -name '*.s' ! -name .gitignore -print0 |
     xargs -0 -I{} install -D -m 0644 {} "$r/var/lib/cilium/{}")
  install -d -m 0755 "$r/home/cilium" "$r/var/run/cilium"
}

fill_operator() {
  local r=$1
  install -d -m 0755 "$r/etc/ssl/certs" "$r/usr/bin"
  install -d -m 1777 "$r/tmp"
  install -d -m 0777 "$r/home/gops"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' > "$r/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$r/etc/group"
  printf 'hosts: files dns\n' > "$r/etc/nsswitch.conf"
  install -m 0644 /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/ca-certificates.crt"
  install -m 0755 "$BIN/cilium-operator-generic" "$r/usr/bin/cilium-operator-generic"
}

images() {
  local key
  key=$( { echo "agent $VERSION"; cat "$ROOTFS/.stamp"; sha256sum "$BIN"/cilium-* | cut -d' ' -f1; } | sha256sum | cut -c1-16)
  oci_image cilium "quay.io/cilium/cilium:v$VERSION" "$key" fill_agent \
    --config.env INITSYSTEM=SYSTEMD --config.env HUBBLE_SERVER=unix:///var/run/cilium/hubble.sock \
    --config.workingdir /home/cilium --config.cmd /usr/bin/cilium-dbg
  key=$( { echo "operator $VERSION"; sha256sum "$BIN/cilium-operator-generic" | cut -d' ' -f1; } | sha256sum | cut -c1-16)
  oci_image operator-generic "quay.io/cilium/operator-generic:v$VERSION" "$key" fill_operator \
    --config.env GOPS_CONFIG_DIR=/home/gops --config.workingdir / --config.cmd /usr/bin/cilium-operator-generic
}

helm_bin() {   # helm for the runner (it installs the chart) in the tools directory, where edgebench.sh.which looks
  [[ -x $TOOLS/helm ]] && { echo "$TOOLS/helm"; return; }
  local t0=$SECONDS
  mkdir -p "$TOOLS"
  (cd /tmp && GOBIN=$TOOLS GOFLAGS=-mod=mod nice -n 10 go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION") >&2 \
    || die "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed"
  say "helm $HELM_VERSION into $TOOLS ($((SECONDS - t0)) s)"
  echo "$TOOLS/helm"
}

chart() {   # the chart repository mirror/charts/cilium: cilium-VERSION.tgz + index.yaml
  src
  local helm out=$MIRROR/charts/cilium
  helm=$(helm_bin)
  [[ -e $out/cilium-$VERSION.tgz && -e $out/index.yaml ]] && return 0
  mkdir -p "$out"
  "$helm" package "$SRC/install/kubernetes/cilium" --destination "$out" >/dev/null
  [[ -e $out/cilium-$VERSION.tgz ]] || die "helm package did not write $out/cilium-$VERSION.tgz"
  "$helm" repo index "$out"
  say "chart repository $out (cilium-$VERSION.tgz)"
}

build() {
  [[ $(id -u) == 0 ]] || die "needs root (chroot, image layers keep file ownership)"
  for c in umoci skopeo go chroot; do command -v $c >/dev/null || die "$c is not installed"; done
  bins; rootfs; images; chart
}

case ${1:-build} in
  build|bins|rootfs|images|chart) "${1:-build}" ;;
  helm) helm_bin ;;
  *) echo "usage: cilium.sh build|bins|rootfs|images|chart|helm" >&2; exit 2 ;;
esac
