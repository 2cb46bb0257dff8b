#!/usr/bin/env bash
# A kind node image for Kubernetes v1.33.4, built here and offline (issue 44): no registry, no `kind build
# node-image` (its `ctr content fetch` always asks the registry), no Docker to build it (`docker load` at the end).
# What goes in, all of it already built by the project or from Debian:
#   - a Debian bookworm root (debootstrap) with systemd 252 as PID 1, Debian's containerd 1.6.20 + runc 1.1.5 and the
#     packages of kind's images/base/Dockerfile (a cached stage, $KINDC/rootfs/node-base)
#   - kind v0.33.0's images/base/files (entrypoint, systemd units, containerd config, /kind/bin/*), from the Go module
#     cache (the module zip of sigs.k8s.io/kind holds images/base)
#   - kubeadm, kubelet, kubectl v1.33.4 and the CNI plugins from the lab's mirror (scripts/lab-local/mirror.sh build),
#     crictl v1.37.0 (go install), runc-capdrop beside this file (the node's runc: a pod that adds a capability this
#     machine's bounding set lacks would otherwise not start)
#   - containerd's image store preloaded (namespace k8s.io, pinned, not unpacked, as kind's own build does): the
#     mirror's control plane, kube-proxy, etcd, CoreDNS, pause and flannel archives, under their upstream names
#   - the default CNI: kind's own (kindnetd) is not served by the module proxy (403), so /kind/manifests/default-cni.yaml
#     is the mirror's flannel manifest (vxlan, images preloaded), marked for kind to template its Network with the
#     cluster's pod subnet. A cluster that sets networking.disableDefaultCNI installs another CNI instead.
# Output: $KINDC/images/node.tar (docker-archive, $NODE_IMAGE), then `docker load` if an engine answers and holds an
# older build. Usage: node-image.sh [--no-load]   (root: debootstrap, chroot, file ownership)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
KINDC=${EDGEBENCH_KIND_CACHE:-$HOME/.local/share/edgebench/kind}
LABC=${EDGEBENCH_LAB_CACHE:-$HOME/.local/share/edgebench/lab}
K8S_VERSION=v1.33.4
KIND_VERSION=v0.33.0
CRICTL_VERSION=v1.37.0
NODE_IMAGE=${NODE_IMAGE:-edgebench.local/kind-node:$K8S_VERSION}
ARCH=amd64 SUITE=bookworm
MIRROR_URL=${EDGEBENCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=$KINDC/rootfs/node-base          # cached stage: debootstrap + packages + kind's systemd clean-up
WORK=$KINDC/work
ROOT=$WORK/node-rootfs                # the image's root while it is assembled
LAYOUT=$WORK/oci
OUT=$KINDC/images
MIMG=$LABC/mirror/images/$ARCH        # scripts/lab-local/mirror.sh build
FLANNEL_MANIFEST=$LABC/mirror/manifests/flannel/v0.28.9/kube-flannel.yml
PRELOAD=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd coredns pause flannel flannel-cni-plugin)
# kind's images/base/Dockerfile list, less what only rootless (fuse-overlayfs), storage e2e tests (nfs-common,
# open-iscsi) or the upstream build need; plus Debian's containerd and runc instead of kind's builds
PACKAGES=(systemd conntrack iptables nftables iproute2 ethtool util-linux mount kmod libseccomp2 pigz e2fsprogs
  bash ca-certificates curl jq procps containerd runc)
MOUNTS=()
say() { echo "kind-node: $*" >&2; }
die() { say "error: $*"; exit 1; }

chroot_enter() {   # /proc, a private /dev and /sys for apt's and systemctl's sake
  local r=$1
  mount -t proc proc "$r/proc"; MOUNTS+=("$r/proc")
  mount -t tmpfs -o mode=0755,size=16m tmpfs "$r/dev"; MOUNTS+=("$r/dev")
  local n; for n in "null c 1 3" "zero c 1 5" "full c 1 7" "random c 1 8" "urandom c 1 9" "tty c 5 0"; do
    set -- $n; mknod -m 0666 "$r/dev/$1" "$2" "$3" "$4"
  done
}
chroot_leave() { local i; for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}"; done; MOUNTS=(); }
in_chroot() { local r=$1; shift; chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
trap chroot_leave EXIT

# ---- stage 1: the Debian root (cached; delete $BASE to refresh the packages) ---------------------------------
base_stage() {
  [[ -e $BASE/.stamp ]] && return 0
  local t0=$SECONDS wip=$BASE.wip
  mkdir -p "$WORK"; rm -rf "$wip"
  say "debootstrap $SUITE (minbase) into $wip"
  debootstrap --variant=minbase --arch="$ARCH" "$SUITE" "$wip" "$MIRROR_URL" >"$WORK/debootstrap.log" 2>&1 \
    || die "debootstrap failed ($WORK/debootstrap.log)"
  cp /etc/resolv.conf "$wip/etc/resolv.conf"
  printf '#!/bin/sh\nexit 101\n' >"$wip/usr/sbin/policy-rc.d"; chmod 0755 "$wip/usr/sbin/policy-rc.d"   # start nothing
  chroot_enter "$wip"
  in_chroot "$wip" apt-get update -q >>"$WORK/debootstrap.log" 2>&1
  in_chroot "$wip" apt-get install -y -q --no-install-recommends "${PACKAGES[@]}" >>"$WORK/debootstrap.log" 2>&1 \
    || die "apt-get install failed ($WORK/debootstrap.log)"
  in_chroot "$wip" apt-get clean
  # kind's images/base/Dockerfile, first RUN: no units but the ones kind enables, no kmsg in journald
  in_chroot "$wip" sh -euc '
    find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
    rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
          /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
          /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
    echo "ReadKMsg=no" >> /etc/systemd/journald.conf
    ln -sf /usr/lib/systemd/systemd /sbin/init'
  # NOT kind's: systemd-sysctl in a privileged node writes the HOST's global sysctls; Debian's systemd brings
  # kernel.pid_max = 4194304 (this host: 32768) and fs.protected_*. Only kind's per-netns network files stay.
  rm -f "$wip"/usr/lib/sysctl.d/50-pid-max.conf "$wip"/usr/lib/sysctl.d/99-protect-links.conf "$wip"/etc/sysctl.d/99-sysctl.conf
  chroot_leave
  rm -f "$wip/etc/resolv.conf" "$wip/usr/sbin/policy-rc.d"
  rm -rf "$wip"/var/lib/apt/lists/* "$wip"/var/cache/apt/archives/*.deb "$wip"/usr/share/doc "$wip"/usr/share/man \
         "$wip"/usr/share/locale "$wip"/var/log/*
  rm -rf "$BASE"; mv "$wip" "$BASE"; date -u +%FT%TZ >"$BASE/.stamp"
  say "base root in $((SECONDS - t0)) s"
}

# ---- inputs --------------------------------------------------------------------------------------------------
kind_files() {   # kind v0.33.0's images/base/files, from the module cache
  local dir
  dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir)
  [[ -d $dir/images/base/files ]] || die "no images/base/files in the kind module ($dir)"
  echo "$dir/images/base/files"
}
crictl_bin() {
  local b=$KINDC/bin/crictl-$CRICTL_VERSION
  if [[ ! -x $b ]]; then
    mkdir -p "$KINDC/bin/crictl.tmp"
    (cd /tmp && GOBIN=$KINDC/bin/crictl.tmp CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION")
    mv "$KINDC/bin/crictl.tmp/crictl" "$b"; rmdir "$KINDC/bin/crictl.tmp"
  fi
  echo "$b"
}
check_inputs() {
  local miss=() f
  for f in kubeadm kubelet kubectl; do [[ -x $LABC/mirror/bin/$ARCH/$f ]] || miss+=("$LABC/mirror/bin/$ARCH/$f (scripts/lab-local/mirror.sh build)"); done
  for f in "${PRELOAD[@]}"; do [[ -f $MIMG/$f.tar ]] || miss+=("$MIMG/$f.tar (scripts/lab-local/mirror.sh build)"); done
  [[ -f $FLANNEL_MANIFEST ]] || miss+=("$FLANNEL_MANIFEST (mirror.sh build)")
  [[ -f $LABC/mirror/bin/$ARCH/cni-plugins.tgz ]] || miss+=("$LABC/mirror/bin/$ARCH/cni-plugins.tgz (mirror.sh build)")
  ((${#miss[@]} == 0)) || { printf 'kind-node: missing: %s\n' "${miss[@]}" >&2; exit 1; }
}

# ---- stage 2: the node's files ---------------------------------------------------------------------------------
assemble() {
  local files=$1 crictl=$2
  rm -rf "$ROOT"; mkdir -p "$ROOT"; cp -a "$BASE/." "$ROOT/"; rm -f "$ROOT/.stamp"
  # kind's COPY lines, with their modes
  install -d -m 0755 "$ROOT/kind" "$ROOT/kind/bin" "$ROOT/LICENSES" "$ROOT/etc/containerd" "$ROOT/etc/default" \
    "$ROOT/etc/sysctl.d" "$ROOT/etc/systemd/system/kubelet.service.d" "$ROOT/etc/kubernetes/manifests"
  install -m 0755 "$files"/usr/local/bin/* "$ROOT/usr/local/bin/"
  install -m 0644 "$files"/kind/README.txt "$ROOT/kind/"
  install -m 0755 "$files"/kind/bin/* "$ROOT/kind/bin/"
  install -m 0644 "$files"/etc/crictl.yaml "$ROOT/etc/"
  install -m 0644 "$files"/etc/default/kubelet "$ROOT/etc/default/"
  install -m 0644 "$files"/etc/sysctl.d/* "$ROOT/etc/sysctl.d/"
  install -m 0644 "$files"/etc/systemd/system/*.service "$files"/etc/systemd/system/*.slice "$ROOT/etc/systemd/system/"
  install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$ROOT/etc/systemd/system/kubelet.service.d/"
  # containerd: kind's config with three changes: no fuse-overlayfs proxy plugin (rootless only), OOM scores
  # clamped (lowering oom_score_adj needs CAP_SYS_RESOURCE, which this machine's bounding set lacks: the kubelet
  # asks -997/-998 for critical pods and sandboxes), and runc behind runc-capdrop (a pod that adds SYS_RESOURCE,
  # e.g. cilium's agent, would otherwise fail with "unable to apply caps")
  awk '/^\[proxy_plugins/ {skip = 1; next} /^\[/ && !/^\[proxy_plugins/ {skip = 0} !skip' "$files/etc/containerd/config.toml" \
    | sed -e 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' \
          -e 's/^\(\s*\)SystemdCgroup = true/\1SystemdCgroup = true\n\1BinaryName = "\/usr\/local\/sbin\/runc-capdrop"/' \
    >"$ROOT/etc/containerd/config.toml"
  grep -q 'restrict_oom_score_adj = true' "$ROOT/etc/containerd/config.toml" || die "containerd config: restrict_oom_score_adj not set"
  [[ $(grep -c 'BinaryName = "/usr/local/sbin/runc-capdrop"' "$ROOT/etc/containerd/config.toml") == 2 ]] || die "containerd config: BinaryName not set twice"
  install -m 0755 "$HERE/runc-capdrop" "$ROOT/usr/local/sbin/runc-capdrop"
  # kind's unit starts /usr/local/bin/containerd; Debian's is /usr/bin/containerd
  ln -sf /usr/bin/containerd "$ROOT/usr/local/bin/containerd"
  rm -f "$ROOT/etc/systemd/system/multi-user.target.wants/containerd.service"   # Debian's own enablement, if any
  # the base runtime spec: `ctr oci spec` + kind's createContainer hook, without rlimits (as the Dockerfile does)
  chroot_enter "$ROOT"
  in_chroot "$ROOT" ctr oci spec \
    | jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
    | jq 'del(.process.rlimits)' >"$ROOT/etc/containerd/cri-base.json"
  chroot_leave
  # Kubernetes, crictl, CNI plugins
  local b
  for b in kubeadm kubelet kubectl; do install -m 0755 -o root -g root "$LABC/mirror/bin/$ARCH/$b" "$ROOT/usr/bin/$b"; done
  install -m 0755 "$crictl" "$ROOT/usr/local/bin/crictl"
  install -d -m 0755 "$ROOT/opt/cni/bin"
  tar -xzf "$LABC/mirror/bin/$ARCH/cni-plugins.tgz" -C "$ROOT/opt/cni/bin"
  # what kind's node image build writes, and the default CNI (see the header): kind templates a manifest that holds
  # the marker line with Go's text/template ({{ .PodSubnet }}); the flannel manifest has no other braces
  printf '%s' "$K8S_VERSION" >"$ROOT/kind/version"
  install -d -m 0755 "$ROOT/kind/manifests"
  grep -q '"Network": "10.244.0.0/16"' "$FLANNEL_MANIFEST" || die "no \"Network\" line to template in $FLANNEL_MANIFEST"
  ! grep -q '{{' "$FLANNEL_MANIFEST" || die "$FLANNEL_MANIFEST holds template braces"
  { echo "# would you kindly template this file"
    echo "# edgebench: the lab mirror's flannel v0.28.9 (vxlan), kind's default CNI in this node image"
    sed 's|"Network": "10.244.0.0/16"|"Network": "{{ .PodSubnet }}"|' "$FLANNEL_MANIFEST"
  } >"$ROOT/kind/manifests/default-cni.yaml"
  # kind's second RUN: enable its units, never touch the kernel-global binfmt_misc
  # (the host's systemctl with --root: no chroot, no running systemd needed)
  systemctl --root="$ROOT" enable kubelet.service containerd.service undo-mount-hacks.service
  systemctl --root="$ROOT" mask systemd-binfmt.service
  rm -f "$ROOT/etc/machine-id"; : >"$ROOT/etc/machine-id"   # the entrypoint regenerates it per node
}

# ---- stage 3: containerd's store, preloaded ------------------------------------------------------------------
preload() {
  local st=/run/edgebench-kind-build sock cfg t0=$SECONDS f ref
  sock=$st/containerd.sock cfg=$st/config.toml
  rm -rf "$st"; mkdir -p "$st" "$ROOT/var/lib/containerd"
  # the node's own containerd binary (Debian's, as the host's), rooted in the image; no CRI (it is not needed to
  # import, and it would start a CNI watcher); the CRI plugin of the node finds the images at its start
  cat >"$cfg" <<EOF
version = 2
root = "$ROOT/var/lib/containerd"
state = "$st/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
EOF
  # the image's containerd binary (Debian's 1.6.20, dynamically linked like the host's: same libc) run from the
  # host side with absolute paths; ctr is the host's (same package)
  "$ROOT/usr/bin/containerd" --config "$cfg" >"$WORK/preload-containerd.log" 2>&1 &
  local cpid=$!
  for _ in $(seq 1 30); do [[ -S $sock ]] && ctr -a "$sock" version >/dev/null 2>&1 && break; sleep 0.5; done
  local tars=() n
  for n in "${PRELOAD[@]}"; do tars+=("$MIMG/$n.tar"); done
  for f in "${tars[@]}"; do
    ctr -a "$sock" -n k8s.io images import --all-platforms --no-unpack --digests "$f" >/dev/null \
      || { kill "$cpid"; die "import of $f failed"; }
    # ctr 1.6 has no `import --label`: pin afterwards (kubelet's image GC leaves pinned images alone)
    for ref in $(tar -xOf "$f" manifest.json | jq -r '.[].RepoTags[]'); do
      ctr -a "$sock" -n k8s.io images label "$ref" io.cri-containerd.pinned=pinned >/dev/null
    done
  done
  ctr -a "$sock" -n k8s.io images ls -q >"$WORK/preloaded.txt"
  kill -TERM "$cpid"; wait "$cpid" 2>/dev/null || true
  # no container ran: no shim, nothing mounted below $st
  rm -rf "$st"
  say "preloaded $(wc -l <"$WORK/preloaded.txt") image names in $((SECONDS - t0)) s"
}

# ---- stage 4: the image --------------------------------------------------------------------------------------
pack() {
  local t0=$SECONDS bundle=$WORK/node-bundle tag=node
  mkdir -p "$OUT" "$(dirname "$LAYOUT")"
  [[ -e $LAYOUT/oci-layout ]] || { rm -rf "$LAYOUT"; umoci init --layout "$LAYOUT"; }
  umoci ls --layout "$LAYOUT" | grep -qx "$tag" && umoci rm --image "$LAYOUT:$tag"
  rm -rf "$bundle"
  umoci new --image "$LAYOUT:$tag"
  umoci unpack --image "$LAYOUT:$tag" "$bundle" >/dev/null
  rmdir "$bundle/rootfs" && mv "$ROOT" "$bundle/rootfs"
  umoci repack --image "$LAYOUT:$tag" "$bundle"
  # kind's final stage: ENV container=docker, STOPSIGNAL SIGRTMIN+3, ENTRYPOINT [entrypoint, /sbin/init]
  umoci config --image "$LAYOUT:$tag" --os linux --architecture "$ARCH" \
    --config.env container=docker --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.stopsignal SIGRTMIN+3 \
    --config.entrypoint /usr/local/bin/entrypoint --config.entrypoint /sbin/init \
    --config.label "io.edgebench.kind-node.inputs=$(inputs_key)"
  rm -rf "$bundle" "$OUT/node.tar.tmp"
  skopeo --insecure-policy copy --quiet "oci:$LAYOUT:$tag" "docker-archive:$OUT/node.tar.tmp:$NODE_IMAGE"
  umoci rm --image "$LAYOUT:$tag"; umoci gc --layout "$LAYOUT"
  mv -f "$OUT/node.tar.tmp" "$OUT/node.tar"
  say "$NODE_IMAGE -> $OUT/node.tar ($(du -m "$OUT/node.tar" | cut -f1) MB) in $((SECONDS - t0)) s"
}

inputs_key() {   # what the image is made of: rebuild when it changes
  {
    cat "$BASE/.stamp"
    sha256sum "$HERE/node-image.sh" "$HERE/runc-capdrop" "$LABC/mirror/bin/$ARCH"/{kubeadm,kubelet,kubectl} "$FLANNEL_MANIFEST" \
      "$LABC/mirror/bin/$ARCH/cni-plugins.tgz" | cut -c1-64
    local n
    for n in "${PRELOAD[@]}"; do sha256sum "$MIMG/$n.tar" | cut -c1-64; done
    echo "$KIND_VERSION $CRICTL_VERSION $K8S_VERSION"
  } | sha256sum | cut -c1-16
}

main() {
  [[ $(id -u) == 0 ]] || die "needs root"
  for c in debootstrap umoci skopeo jq go ctr; do command -v $c >/dev/null || die "$c is not installed"; done
  check_inputs
  base_stage
  local key; key=$(inputs_key)
  if [[ -f $OUT/node.tar && $(cat "$OUT/node.tar.key" 2>/dev/null) == "$key" ]]; then
    say "cached: $OUT/node.tar ($NODE_IMAGE, inputs $key)"
  else
    local files crictl t0=$SECONDS
    files=$(kind_files); crictl=$(crictl_bin)
    assemble "$files" "$crictl"
    preload
    pack
    echo "$key" >"$OUT/node.tar.key"
    say "built in $((SECONDS - t0)) s"
  fi
  if [[ ${1:-} != --no-load ]] && docker info >/dev/null 2>&1; then
    if [[ $(docker image inspect -f '{{index .Config.Labels "io.edgebench.kind-node.inputs"}}' "$NODE_IMAGE" 2>/dev/null) != "$key" ]]; then
      docker load -i "$OUT/node.tar"
    fi
  fi
}

main "$@"
