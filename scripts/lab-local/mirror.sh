#!/usr/bin/env bash
# The local lab's artifact source: a directory laid out as containers/runner/src/edgebench/plan/catalog/
# artifacts.yaml says (binaries, CNI plugins, Debian's containerd + runc, kubelet unit files, OCI image archives,
# CNI manifests with their image references rewritten, cilium's Helm chart repository: cilium.sh), with an
# index.yaml saying which architectures each artifact has, served over HTTP to the nodes. Everything is built here from the Go module proxy and Debian
# (build.sh, scripts/e2e-argo/build.sh and images.sh), without Docker or a registry: umoci + skopeo.
#
#   mirror.sh build            assemble the mirror for ARCH (default: this machine's) from the cached builds
#   mirror.sh index            (re)write index.yaml
#   mirror.sh serve [ADDR]     serve the mirror on http://ADDR:8089 (default 10.77.0.1, the lab's bridge)
#   mirror.sh serve-stop
#   mirror.sh prove            every ARCH binary runs here (under qemu for a foreign ARCH), the images say ARCH
#   mirror.sh --print          what each artifact has, per architecture
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
ARCH=${ARCH:-$(dpkg --print-architecture)}
LABC=${EDGEBENCH_LAB_CACHE:-$HOME/.local/share/edgebench/lab}
MIRROR=${EDGEBENCH_MIRROR:-$LABC/mirror}
E2E=${EDGEBENCH_E2E:-$HOME/.local/share/edgebench/e2e-argo}
K8S_VERSION=v1.33.4
PY=${PY:-$REPO/.venv/bin/python}
PORT=${MIRROR_PORT:-8089}
BIN=$LABC/bin/$ARCH
FLANNEL_EXTRA="v0.28.10"   # flannel versions besides the pin (catalog artifacts.yaml `versions:`; build.sh builds them)
ROOTFS=$LABC/rootfs/base-$ARCH
WORK=$LABC/work
LAYOUT=$WORK/oci
say() { echo "lab-local: mirror: $*" >&2; }
warn() { say "$*"; }
die() { echo "lab-local: mirror: error: $*" >&2; exit 2; }
# the architecture helpers of the image builds: emulation of a foreign ARCH (binfmt_misc + qemu-user-static) and
# debootstrap in two stages for it
SUITE=bookworm HOST_ARCH=$(dpkg --print-architecture)
# shellcheck source=../e2e-argo/lib/arch.sh
source "$REPO/scripts/e2e-argo/lib/arch.sh"
check_arch "$ARCH"

k8s_bin() {   # where the Kubernetes binaries of ARCH are
  if [[ $ARCH == "$(dpkg --print-architecture)" ]]; then echo "$E2E/bin"; else echo "$BIN/k8s"; fi
}

base_files() {   # base_files ROOT: passwd, group, nsswitch, CA bundle, /tmp
  local root=$1
  install -d -m 0755 "$root/etc/ssl/certs" "$root/usr/local/bin"
  install -d -m 1777 "$root/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  printf 'hosts: files dns\n' > "$root/etc/nsswitch.conf"
  install -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
}

# image NAME REF BASE(static|debian) [--entrypoint X] FILE:DEST...: images/ARCH/NAME.tar, rebuilt when inputs change
image() {
  local name=$1 ref=$2 base=$3; shift 3
  local entry=() files=() f
  while (($#)); do
    if [[ $1 == --entrypoint ]]; then entry=(--config.entrypoint "$2"); shift 2; else files+=("$1"); shift; fi
  done
  local out=$MIRROR/images/$ARCH/$name.tar
  for f in "${files[@]}"; do [[ -x ${f%%:*} ]] || { say "$ARCH image $ref: ${f%%:*} not built, left out"; return 0; }; done
  local key; key=$( { echo "$ref $base ${entry[*]}"; for f in "${files[@]}"; do sha256sum "${f%%:*}"; done
                      if [[ $base == debian ]]; then cat "$ROOTFS/.stamp"; fi; } | sha256sum | cut -c1-16)
  if [[ -e $out && $(cat "$out.key" 2>/dev/null) == "$key" ]]; then return 0; fi
  local t0=$SECONDS tag=$name-$ARCH b=$WORK/bundle-$name
  mkdir -p "$(dirname "$out")" "$WORK"
  [[ -d $LAYOUT ]] || umoci init --layout "$LAYOUT"
  umoci ls --layout "$LAYOUT" | grep -qx "$tag" && umoci rm --image "$LAYOUT:$tag"
  rm -rf "$b"
  umoci new --image "$LAYOUT:$tag"
  umoci unpack --image "$LAYOUT:$tag" "$b" >/dev/null
  if [[ $base == debian ]]; then cp -a "$ROOTFS/." "$b/rootfs/"; rm -f "$b/rootfs/.stamp"; else base_files "$b/rootfs"; fi
  for f in "${files[@]}"; do install -D -m 0755 "${f%%:*}" "$b/rootfs/${f#*:}"; done
  :
  umoci repack --image "$LAYOUT:$tag" "$b" >/dev/null
  umoci config --image "$LAYOUT:$tag" --os linux --architecture "$ARCH" \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/bin "${entry[@]}" >/dev/null
  rm -rf "$b"
  skopeo --insecure-policy copy --quiet "oci:$LAYOUT:$tag" "docker-archive:$out.tmp:$ref"
  mv -f "$out.tmp" "$out"; echo "$key" > "$out.key"
  say "$ARCH image $ref ($(du -h "$out" | cut -f1), $((SECONDS - t0)) s)"
}

base_rootfs() {   # a Debian bookworm root with what the network agents exec: iptables, ipset, iproute2, conntrack
  [[ -e $ROOTFS/.stamp ]] && return 0
  local t0=$SECONDS
  mkdir -p "$(dirname "$ROOTFS")"; rm -rf "$ROOTFS.wip"
  say "debootstrap bookworm ($ARCH) for the network images (a few minutes once; a foreign ARCH's second stage and apt run under qemu)"
  mkdir -p "$WORK"
  debootstrap_root "$ROOTFS.wip" http://deb.debian.org/debian "$WORK/debootstrap-$ARCH.log" \
    || die "debootstrap failed (see $WORK/debootstrap-$ARCH.log)"
  cp /etc/resolv.conf "$ROOTFS.wip/etc/resolv.conf"
  chroot "$ROOTFS.wip" /bin/sh -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -q &&
      apt-get install -y -q --no-install-recommends iptables ipset iproute2 conntrack ipvsadm kmod ca-certificates nftables &&
      apt-get clean' >> "$WORK/debootstrap-$ARCH.log" 2>&1 \
    || die "apt in the network images' root failed (see $WORK/debootstrap-$ARCH.log)"
  rm -f "$ROOTFS.wip/etc/resolv.conf"
  rm -rf "$ROOTFS.wip"/var/cache/apt/archives/*.deb "$ROOTFS.wip"/var/lib/apt/lists/* "$ROOTFS.wip"/usr/share/doc \
         "$ROOTFS.wip"/usr/share/man "$ROOTFS.wip"/usr/share/locale
  rm -rf "$ROOTFS"; mv "$ROOTFS.wip" "$ROOTFS"; date -u +%FT%TZ > "$ROOTFS/.stamp"
  say "base root in $((SECONDS - t0)) s"
}

pause_bin() {   # the Kubernetes pause container, from the module's own source, linked statically
  local out=$BIN/pause src
  [[ -x $out ]] && { echo "$out"; return; }
  src=$(cd /tmp && GOFLAGS=-mod=mod GOSUMDB=off go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | awk -F'"' '/"Dir"/ {print $4}')
  local cc=gcc; [[ $ARCH == arm64 && $(dpkg --print-architecture) != arm64 ]] && cc=aarch64-linux-gnu-gcc
  command -v $cc >/dev/null || die "$cc is missing (apt: gcc-aarch64-linux-gnu libc6-dev-arm64-cross)"
  mkdir -p "$BIN"
  $cc -Os -static -DVERSION=v3.10 -o "$out" "$src/build/pause/linux/pause.c" >&2
  echo "$out"
}

debs() {   # Debian's containerd and runc for ARCH, as a tarball of .debs
  local out=$MIRROR/debs/$ARCH/containerd.tgz
  [[ -e $out ]] && return 0
  local d=$WORK/debs-$ARCH; rm -rf "$d"; mkdir -p "$d" "$(dirname "$out")"
  "$PY" - "$ARCH" "$d" <<'PY'
import lzma, sys, urllib.request
arch, dest = sys.argv[1], sys.argv[2]
base = "http://deb.debian.org/debian/"
idx = lzma.decompress(urllib.request.urlopen(f"{base}dists/bookworm/main/binary-{arch}/Packages.xz", timeout=120).read()).decode()
want = {"containerd", "runc"}
for stanza in idx.split("\n\n"):
    f = dict(l.split(": ", 1) for l in stanza.splitlines() if ": " in l and not l.startswith(" "))
    if f.get("Package") in want:
        name = f["Filename"].rsplit("/", 1)[1]
        urllib.request.urlretrieve(base + f["Filename"], f"{dest}/{name}")
        want.discard(f["Package"])
if want:
    sys.exit(f"not in bookworm/{arch}: {want}")
PY
  tar -czf "$out" -C "$d" .
  rm -rf "$d"
}

moddir() { (cd /tmp && GOFLAGS=-mod=mod GOSUMDB=off go mod download -json "$1" | awk -F'"' '/"Dir"/ {print $4}'); }

manifests() {   # every manifest artifact of the catalog, from its module at the artifact's own version
  local v srcs=()
  srcs+=("flannel-manifest=$(moddir github.com/flannel-io/flannel@v0.28.9)/Documentation/kube-flannel.yml")
  for v in $FLANNEL_EXTRA; do
    srcs+=("flannel-manifest@$v=$(moddir "github.com/flannel-io/flannel@$v")/Documentation/kube-flannel.yml")
  done
  srcs+=("kube-router-manifest=$(moddir github.com/cloudnativelabs/kube-router/v2@v2.1.0)/daemonset/kubeadm-kuberouter.yaml")
  "$PY" - "$MIRROR" "${srcs[@]}" <<'PY'
import sys
from pathlib import Path
from edgebench.substrates.clusters.install import artifacts as a
root, sources = Path(sys.argv[1]), dict(x.split("=", 1) for x in sys.argv[2:])
for name, art in a.spec()["artifacts"].items():
    if art["kind"] == "manifest":
        if name not in sources:
            sys.exit(f"mirror.sh: no source for manifest {name}")
        out = root / art["path"]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(a.rewrite_manifest(Path(sources[name]).read_text(), art.get("rewrites", {})))
PY
}

units() {
  mkdir -p "$MIRROR/units"
  cat > "$MIRROR/units/kubelet.service" <<'UNIT'
[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/local/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=2

[Install]
WantedBy=multi-user.target
UNIT
  # the documented drop-in, plus the lab's eviction thresholds (KUBELET_LAB_ARGS): the nodes' kubelets measure this
  # machine's disk, shared with everything else on it; the default imagefs.available<15% evicted the workload pods
  # ("The node had condition: [DiskPressure]") at 15.4 % free. Absolute sizes: systemd reads % as a specifier
  cat > "$MIRROR/units/10-kubeadm.conf" <<'UNIT'
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
Environment="KUBELET_LAB_ARGS=--eviction-hard=memory.available<100Mi,nodefs.available<2Gi,imagefs.available<2Gi"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS $KUBELET_LAB_ARGS
UNIT
}

build() {
  [[ $(id -u) == 0 ]] || die "needs root (image layers keep file ownership)"
  for c in umoci skopeo debootstrap go; do command -v $c >/dev/null || die "$c is not installed"; done
  local kb; kb=$(k8s_bin)
  local miss=() b
  for b in "$kb"/{kubelet,kubectl,kube-apiserver,kube-controller-manager,kube-scheduler,kube-proxy} \
           "$BIN"/{kubeadm,etcd,coredns,flanneld,kube-router,flannel,fortio,cni/bridge}; do   # kubeadm: build.sh's (go1.24)
    [[ -x $b ]] || miss+=("$b")
  done
  ((${#miss[@]} == 0)) || say "warning: not built yet, left out of the mirror (the index will say so): ${miss[*]} (scripts/e2e-argo/build.sh --k8s; ARCH=$ARCH scripts/lab-local/build.sh)"
  mkdir -p "$MIRROR/bin/$ARCH" "$WORK"
  for b in kubeadm kubelet kubectl; do
    if [[ -x $BIN/$b ]]; then install -m 0755 "$BIN/$b" "$MIRROR/bin/$ARCH/$b"   # kubeadm: built with go1.24 (build.sh)
    elif [[ -x $kb/$b ]]; then install -m 0755 "$kb/$b" "$MIRROR/bin/$ARCH/$b"; fi
  done
  [[ -x $BIN/cni/bridge ]] && tar -czf "$MIRROR/bin/$ARCH/cni-plugins.tgz" -C "$BIN/cni" .
  units; manifests; debs; base_rootfs
  local p; p=$(pause_bin)
  image pause registry.k8s.io/pause:3.10 static --entrypoint /pause "$p:/pause"
  image etcd registry.k8s.io/etcd:3.5.21-0 static "$BIN/etcd:/usr/local/bin/etcd"
  image coredns registry.k8s.io/coredns/coredns:v1.12.0 static --entrypoint /coredns "$BIN/coredns:/coredns"
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    image "$c" "registry.k8s.io/$c:$K8S_VERSION" static "$kb/$c:/usr/local/bin/$c"
  done
  image kube-proxy "registry.k8s.io/kube-proxy:$K8S_VERSION" debian "$kb/kube-proxy:/usr/local/bin/kube-proxy"
  image flannel ghcr.io/flannel-io/flannel:v0.28.9 debian "$BIN/flanneld:/opt/bin/flanneld" \
    "$BIN/flannel-install-conf:/opt/bin/install-conf"
  for v in $FLANNEL_EXTRA; do   # a second version for paired reruns (build.sh builds flanneld-$v)
    image "flannel-$v" "ghcr.io/flannel-io/flannel:$v" debian "$BIN/flanneld-$v:/opt/bin/flanneld" \
      "$BIN/flannel-install-conf:/opt/bin/install-conf"
  done
  image flannel-cni-plugin edgebench.local/flannel-cni-plugin:v0.9.1 debian "$BIN/flannel:/flannel"
  image kube-router docker.io/cloudnativelabs/kube-router:v2.1.0 debian --entrypoint /usr/local/bin/kube-router \
    "$BIN/kube-router:/usr/local/bin/kube-router"   # the manifest gives args only: the image names the program
  image http ghcr.io/edgebench/edgebench-http:0.1.0 static --entrypoint /usr/bin/fortio "$BIN/fortio:/usr/bin/fortio"
  # the runner image of scripts/e2e-argo/images.sh (named runner-<arch>.tar, or runner.tar for amd64 by older ones)
  local runner=${RUNNER_TAR:-$E2E/images/runner-$ARCH.tar}
  [[ -e $runner || -n ${RUNNER_TAR:-} || $ARCH != amd64 ]] || runner=$E2E/images/runner.tar
  if [[ -e $runner ]]; then
    local out=$MIRROR/images/$ARCH/runner.tar
    if [[ ! -e $out || $runner -nt $out ]]; then
      skopeo --insecure-policy copy --quiet "docker-archive:$runner" "docker-archive:$out.tmp:ghcr.io/edgebench/edgebench-runner:0.1.0"
      mv -f "$out.tmp" "$out"; say "$ARCH image ghcr.io/edgebench/edgebench-runner:0.1.0 (from $runner)"
    fi
  else
    say "warning: no runner image for $ARCH ($runner: scripts/e2e-argo/images.sh build runner); the index will say so"
  fi
  ARCH=$ARCH EDGEBENCH_MIRROR=$MIRROR "$HERE/cilium.sh" build   # binaries, agent + operator images, helm, the chart repository
  index
}

index() {
  "$PY" -m edgebench.substrates.clusters.install.artifacts index "$MIRROR" >/dev/null
  say "index: $MIRROR/index.yaml"
}

serve() {
  local addr=${1:-10.77.0.1}
  [[ -e $MIRROR/index.yaml ]] || die "no mirror at $MIRROR (mirror.sh build)"
  serve_stop
  setsid python3 -m http.server --bind "$addr" --directory "$MIRROR" "$PORT" > "$LABC/mirror-http.log" 2>&1 < /dev/null &
  echo $! > "$LABC/mirror-http.pid"
  for _ in $(seq 1 50); do curl -fsS -o /dev/null "http://$addr:$PORT/index.yaml" 2>/dev/null && break; sleep 0.1; done
  curl -fsS -o /dev/null "http://$addr:$PORT/index.yaml" || die "the mirror's HTTP server does not answer on $addr:$PORT"
  say "serving $MIRROR on http://$addr:$PORT"
}
serve_stop() {
  local p; p=$(cat "$LABC/mirror-http.pid" 2>/dev/null) || return 0
  kill "$p" 2>/dev/null || true; rm -f "$LABC/mirror-http.pid"
}

# prove: every binary of ARCH the mirror holds, or puts into an image, runs here (a foreign ARCH under qemu-user),
# every image archive says ARCH, and the cilium agent's clang compiles a BPF program in its root. Writes
# $MIRROR/proof-ARCH.txt (one line per check); exit 1 when a check fails.
prove() {
  local kb out=$MIRROR/proof-$ARCH.txt fails=0 tmp line
  kb=$(k8s_bin); tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  ensure_emulation
  : > "$out.tmp"
  check() {   # check NAME FILE CMD...: FILE is an ELF of ARCH and CMD prints something and exits 0
    local name=$1 file=$2; shift 2
    if [[ ! -e $file ]]; then line="MISSING $name ($file)"; fails=$((fails + 1))
    elif ! file -L "$file" | grep -q "$(elf_machine "$ARCH")"; then line="WRONG-ARCH $name: $(file -bL "$file" | cut -c1-60)"; fails=$((fails + 1))
    elif line=$(timeout 120 "$@" 2>&1) && line=${line%%$'\n'*} && [[ -n $line ]]; then line="ok $name: $line"
    else line="FAILED $name: $* -> ${line:-no output}"; fails=$((fails + 1)); fi
    echo "$line" | tee -a "$out.tmp" >&2
  }
  check kubeadm "$MIRROR/bin/$ARCH/kubeadm" "$MIRROR/bin/$ARCH/kubeadm" version -o short
  check kubelet "$MIRROR/bin/$ARCH/kubelet" "$MIRROR/bin/$ARCH/kubelet" --version
  check kubectl "$MIRROR/bin/$ARCH/kubectl" "$MIRROR/bin/$ARCH/kubectl" version --client
  local c
  for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do check "$c" "$kb/$c" "$kb/$c" --version; done
  check etcd "$BIN/etcd" "$BIN/etcd" --version
  check coredns "$BIN/coredns" "$BIN/coredns" -version
  check flanneld "$BIN/flanneld" "$BIN/flanneld" --version
  check flannel-install-conf "$BIN/flannel-install-conf" sh -c "'$BIN/flannel-install-conf' --help 2>&1 || true"
  check kube-router "$BIN/kube-router" "$BIN/kube-router" --version
  check fortio "$BIN/fortio" "$BIN/fortio" version
  check pause "$(pause_bin)" "$(pause_bin)" -v
  mkdir -p "$tmp/cni"; tar -xzf "$MIRROR/bin/$ARCH/cni-plugins.tgz" -C "$tmp/cni" 2>/dev/null || true
  check cni-bridge "$tmp/cni/bridge" env CNI_COMMAND=VERSION "$tmp/cni/bridge"
  check flannel-cni "$BIN/flannel" env CNI_COMMAND=VERSION "$BIN/flannel"
  check cilium-agent "$BIN/cilium/cilium-agent" "$BIN/cilium/cilium-agent" --version
  check cilium-operator-generic "$BIN/cilium/cilium-operator-generic" "$BIN/cilium/cilium-operator-generic" --version
  check cilium-cni "$BIN/cilium/cilium-cni" env CNI_COMMAND=VERSION "$BIN/cilium/cilium-cni"
  local agent=$LABC/rootfs/cilium-agent-$ARCH
  if [[ -x $agent/usr/bin/clang-19 ]]; then
    printf '%s\n' '__attribute__((section("socket"), used)) int prog(void *ctx) { return 0; }' > "$agent/tmp/eb-prove.c"
    check cilium-agent-clang "$agent/usr/bin/clang-19" sh -c "chroot '$agent' clang -target bpf -O2 -c /tmp/eb-prove.c -o /tmp/eb-prove.o \
      && file -b '$agent/tmp/eb-prove.o'"
    rm -f "$agent/tmp/eb-prove.c" "$agent/tmp/eb-prove.o"
  else
    line="MISSING cilium-agent-clang ($agent: cilium.sh rootfs)"; fails=$((fails + 1)); echo "$line" | tee -a "$out.tmp" >&2
  fi
  local t a
  for t in "$MIRROR/images/$ARCH"/*.tar; do
    a=$(skopeo inspect --config "docker-archive:$t" 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("architecture",""))')
    if [[ $a == "$ARCH" ]]; then line="ok image $(basename "$t" .tar): architecture $a"
    else line="WRONG-ARCH image $(basename "$t" .tar): architecture ${a:-unreadable}"; fails=$((fails + 1)); fi
    echo "$line" | tee -a "$out.tmp" >&2
  done
  mv -f "$out.tmp" "$out"
  ((fails == 0)) || { say "$fails check(s) failed for $ARCH: $out"; return 1; }
  say "every $ARCH artifact runs here$([[ $ARCH != "$HOST_ARCH" ]] && echo " (under qemu-$(qemu_of "$ARCH"))"): $out"
}

case ${1:-} in
  build) build ;;
  prove) prove ;;
  index) index ;;
  serve) shift; serve "$@" ;;
  serve-stop) serve_stop ;;
  --print) [[ -e $MIRROR/index.yaml ]] || die "no index at $MIRROR"; "$PY" -c "
import yaml,sys; d=yaml.safe_load(open('$MIRROR/index.yaml'))
for n,a in d['artifacts'].items(): print(f\"{n:26} {a.get('version','')!s:12} {','.join(a['arches']) or 'MISSING'}\")" ;;
  -h|--help|help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: mirror.sh build|index|prove|serve [ADDR]|serve-stop|--print (--help)" >&2; exit 2 ;;
esac
