#!/usr/bin/env bash
# Build, without Docker, the OCI images the single-node e2e-argo cluster runs (the pod sandbox, Argo's controller
# and executor, MinIO and mc, the edgebench runner; the optional group `events`: NATS and Argo Events), cache them as
# docker-archive tarballs in $E2E/images and import them into a containerd. Tools: gcc (static glibc), debootstrap +
# chroot, umoci (layers and configs in an OCI layout), skopeo (OCI layout -> docker-archive, which
# `ctr images import` names after its RepoTags).
# Every tarball has a stamp (<tar>.inputs) with a hash of its inputs: a rerun with unchanged inputs builds nothing.
# `images.sh --help` prints the usage. Needs root (chroot, mount, file ownership inside the layers).
# shellcheck disable=SC2317 # the stage functions and chroot_leave are called indirectly (ensure_stage, trap)
set -euo pipefail

E2E=${EDGEBENCH_E2E:-$HOME/.local/share/edgebench/e2e-argo}
TOOLS=${EDGEBENCH_TOOLS:-$HOME/.local/share/edgebench/tools}
ARGO_E2E_VERSION=${ARGO_E2E_VERSION:-v3.7.9}
NATS_VERSION=${NATS_VERSION:-v2.10.29}                # scripts/e2e-argo/build.sh's
ARGO_EVENTS_VERSION=${ARGO_EVENTS_VERSION:-v1.9.11}   # the Makefile's (make events-tools)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
IMAGES=$E2E/images
LAYOUT=$IMAGES/oci    # umoci's OCI layout: the cached stages of the runner, and each image while it is built
WORK=$IMAGES/work     # bundles and scratch space of a build, removed afterwards
CACHE=$IMAGES/cache   # downloads (busybox-static .deb)
SUITE=bookworm
CORE_NAMES=(pause workflow-controller argoexec minio mc runner) # group core: `build` and `import` without NAME
EVENTS_NAMES=(nats argo-events) # group events (optional): Argo Events' EventBus server and its controller/services
NAMES=("${CORE_NAMES[@]}" "${EVENTS_NAMES[@]}")
# Debian packages of the runner: the apt-get install list of containers/runner/Dockerfile (read from it, so the two
# images cannot drift apart), plus the Python its python:slim base image brings (kubectl, helm and kind, which the
# Dockerfile downloads, are left out: no registry here, and the e2e cells run on the local substrate)
mapfile -t RUNNER_PACKAGES < <(awk '/apt-get install -y --no-install-recommends/ {on = 1; next}
  on && /&& rm -rf/ {on = 0} on {gsub(/\\/, ""); for (i = 1; i <= NF; i++) print $i}' \
  "$REPO/containers/runner/Dockerfile")
(( ${#RUNNER_PACKAGES[@]} )) || { echo "e2e-argo: no apt-get install list in containers/runner/Dockerfile" >&2; exit 1; }
RUNNER_PACKAGES+=(python3 python3-venv)
RUNNER_TOOLS=(fortio edgebench-netem-emu edgebench-relay)
# applets of busybox linked in the mc image (the make-bucket Job runs `/bin/sh -c 'until mc ...; do sleep 3; done'`)
BUSYBOX_APPLETS=(sh ash cat cp echo env false id ls mkdir mv printf rm sleep test true)
MOUNTS=()             # what chroot_enter mounted, unmounted by chroot_leave (also on exit)

usage() {
  cat <<EOF
Usage: scripts/e2e-argo/images.sh COMMAND [ARGS]

Builds without Docker the OCI images of the single-node e2e-argo cluster and caches each as a docker-archive
tarball $IMAGES/<name>.tar, next to a stamp <name>.tar.inputs
(the hash of its inputs): a rerun with unchanged inputs builds nothing.

Commands:
  build [NAME|GROUP...]           build the images (default: group core) whose inputs changed; prints each one's
                                  time. Exits 1 when one failed or its input is missing (e.g. an Argo binary),
                                  after building the others.
  import --address SOCK [--snapshotter NAME] [NAME|GROUP...]
                                  import the cached tarballs into namespace k8s.io of the containerd listening on
                                  SOCK (ctr -a SOCK -n k8s.io images import). Default: group core (each must be
                                  built) and those of group events that are built.
  list                            each image: name, reference, state (cached, stale, missing), group and tarball.
  -h, --help                      this text.

Groups: core (${CORE_NAMES[*]}), events (${EVENTS_NAMES[*]}: optional,
  Argo Events; argo-events needs make events-tools), all (both).
  E.g. images.sh build events, or images.sh build nats argo-events.

Images (NAME  reference  built from):
  pause                edgebench.local/pause:3.10          scripts/e2e-argo/pause.c, gcc -static
  workflow-controller  edgebench.local/workflow-controller:$ARGO_E2E_VERSION
                                                           \$E2E/bin/workflow-controller (scripts/e2e-argo/build.sh)
  argoexec             edgebench.local/argoexec:$ARGO_E2E_VERSION     \$E2E/bin/argoexec (scripts/e2e-argo/build.sh)
  minio                edgebench.local/minio:e2e           \$EDGEBENCH_TOOLS/minio
  mc                   edgebench.local/mc:e2e              \$EDGEBENCH_TOOLS/mc + busybox-static (/bin/sh)
  runner               edgebench.local/edgebench-runner:e2e
                                                           debootstrap $SUITE + apt packages (cached stage), then a
                                                           venv with containers/runner and \$EDGEBENCH_TOOLS/{fortio,
                                                           edgebench-netem-emu,edgebench-relay} (cached stage)
  nats                 edgebench.local/nats:${NATS_VERSION#v}        \$E2E/bin/nats-server (scripts/e2e-argo/build.sh)
  argo-events          edgebench.local/argo-events:$ARGO_EVENTS_VERSION
                                                           \$EDGEBENCH_TOOLS/argo-events (make events-tools) +
                                                           the host's /usr/share/zoneinfo (tzdata)

Environment:
  EDGEBENCH_E2E     state directory (now $E2E)
  EDGEBENCH_TOOLS   tools built by make tools (now $TOOLS);
                    glibc-linked ones (cgo) get the host's loader and libc.so.6 in the image
  ARGO_E2E_VERSION  Argo version of the binaries and image tags (now $ARGO_E2E_VERSION)
  NATS_VERSION, ARGO_EVENTS_VERSION
                    versions of nats-server and argo-events (their stamps) and image tags
                    (now $NATS_VERSION, $ARGO_EVENTS_VERSION)
  EDGEBENCH_DEBIAN_MIRROR, EDGEBENCH_DEBIAN_SECURITY
                    Debian mirrors for the runner (default: the ones this host's apt uses)
To refresh the runner's Debian packages, delete $LAYOUT (the cached stages).
Needs root, gcc with static glibc (libc6-dev), umoci, skopeo, debootstrap, apt-get; ctr for import.
EOF
}

say() { echo "e2e-argo: $*"; }
warn() { echo "e2e-argo: $*" >&2; }
die() { warn "error: $*"; exit 1; }
sum() { sha256sum | cut -c1-64; }
file_sum() { sha256sum "$1" | cut -c1-64; }

ref_of() {
  case $1 in
    pause) echo edgebench.local/pause:3.10 ;;
    workflow-controller | argoexec) echo "edgebench.local/$1:$ARGO_E2E_VERSION" ;;
    minio | mc) echo "edgebench.local/$1:e2e" ;;
    runner) echo edgebench.local/edgebench-runner:e2e ;;
    nats) echo "edgebench.local/nats:${NATS_VERSION#v}" ;;
    argo-events) echo "edgebench.local/argo-events:$ARGO_EVENTS_VERSION" ;;
    *) return 1 ;;
  esac
}

group_of() {
  case " ${EVENTS_NAMES[*]} " in
    *" $1 "*) echo events ;;
    *) echo core ;;
  esac
}

# expand_names NAME|GROUP...: the image names, one per line, the groups core, events and all expanded, each once
expand_names() {
  local n
  for n; do
    case $n in
      core) printf '%s\n' "${CORE_NAMES[@]}" ;;
      events) printf '%s\n' "${EVENTS_NAMES[@]}" ;;
      all) printf '%s\n' "${NAMES[@]}" ;;
      *) printf '%s\n' "$n" ;;
    esac
  done | awk '!seen[$0]++'
}

need() {
  local c
  for c; do command -v "$c" >/dev/null || die "$c is not installed"; done
}

# has_line LINE: stdin has LINE (reads all of stdin: no SIGPIPE for the writer under pipefail)
has_line() { awk -v l="$1" '$0 == l {f = 1} END {exit !f}'; }

is_static() {
  local h
  h=$(readelf -l "$1" 2>/dev/null) || return 1
  [[ $h != *"program interpreter"* ]]
}

# check_binary PATH [HINT]: an executable the image needs; explains on stderr what is wrong
check_binary() {
  [[ -x $1 ]] || { warn "$1 is missing${2:+ ($2)}"; return 1; }
  readelf -h "$1" >/dev/null 2>&1 || { warn "$1 is not an ELF executable"; return 1; }
}

# install_binary SRC ROOT DEST: SRC as ROOT/DEST. A dynamically linked SRC (Go built with cgo, like the Makefile's
# tools) brings along the host's libraries that ldd names (glibc's loader, libc.so.6), at the same paths.
install_binary() {
  local src=$1 root=$2 dest=$3 lib
  install -D -m 0755 "$src" "$root$dest"
  if is_static "$src"; then return 0; fi
  for lib in $(ldd "$src" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}'); do
    [[ -e $root$lib ]] || install -D -m 0755 "$(realpath "$lib")" "$root$lib"
  done
}

# mounted_below DIR: something is mounted on DIR or below it
mounted_below() {
  local real
  real=$(realpath "$1")
  findmnt -rn -o TARGET | awk -v p="$real" '$0 == p || index($0, p "/") == 1 {f = 1} END {exit !f}'
}

# rm -rf that refuses when something is mounted below the directory (a chroot left mounted)
safe_rm() {
  local d
  for d; do
    [[ -e $d ]] || continue
    if mounted_below "$d"; then die "refusing to delete $d: something is still mounted below it"; fi
    rm -rf --one-file-system "$d"
  done
}

# ---- the OCI layout (umoci) -----------------------------------------------------------------------------------

layout_has() { umoci ls --layout "$LAYOUT" | has_line "$1"; }

# new_bundle TAG BUNDLE: a new empty image TAG, unpacked into BUNDLE (its files go to BUNDLE/rootfs)
new_bundle() {
  layout_has "$1" && umoci rm --image "$LAYOUT:$1"
  safe_rm "$2"
  umoci new --image "$LAYOUT:$1"
  umoci unpack --image "$LAYOUT:$1" "$2" >/dev/null
}

# finish_bundle TAG BUNDLE [umoci config options...]: BUNDLE/rootfs becomes a new layer of TAG, then the config
finish_bundle() {
  local tag=$1 bundle=$2
  shift 2
  if mounted_below "$bundle"; then die "$bundle still has mounts: not packing it"; fi
  umoci repack --image "$LAYOUT:$tag" "$bundle"
  if (($#)); then umoci config --image "$LAYOUT:$tag" "$@"; fi
  safe_rm "$bundle"
}

# /etc/passwd and /etc/group (root, nobody and USER:UID...), nsswitch.conf, the host's CA bundle, /tmp (1777):
# what a static Go program expects of its root filesystem
add_base_files() {
  local root=$1 u name id
  shift
  install -d -m 0755 "$root/bin" "$root/usr/bin" "$root/etc/ssl/certs"
  install -d -m 1777 "$root/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\n' >"$root/etc/group"
  for u; do
    name=${u%:*} id=${u#*:}
    printf '%s:x:%s:%s:%s:/tmp:/sbin/nologin\n' "$name" "$id" "$id" "$name" >>"$root/etc/passwd"
    printf '%s:x:%s:\n' "$name" "$id" >>"$root/etc/group"
  done
  printf 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >>"$root/etc/passwd"
  printf 'nogroup:x:65534:\n' >>"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  install -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
}

# export_tar TAG NAME: the image TAG of the layout as the docker-archive $IMAGES/NAME.tar, named by its reference
export_tar() {
  local tar=$IMAGES/$2.tar
  rm -f "$tar.tmp"
  skopeo --insecure-policy copy --quiet "oci:$LAYOUT:$1" "docker-archive:$tar.tmp:$(ref_of "$2")"
  mv -f "$tar.tmp" "$tar"
}

# ensure_stage TAG FUNCTION [ARGS...]: a cached stage of an image. Unless the layout has TAG (<stage>-<key>),
# FUNCTION ARGS... WIP_TAG builds it under a temporary tag, renamed to TAG once complete; older keys go.
ensure_stage() {
  local tag=$1 prefix=${1%-*} old t0=$SECONDS
  shift
  if layout_has "$tag"; then
    say "${prefix}: cached stage $tag"
    return 0
  fi
  for old in $(umoci ls --layout "$LAYOUT" | grep -E "^(wip-)?${prefix}-" || true); do umoci rm --image "$LAYOUT:$old"; done
  "$@" "wip-$tag"
  umoci tag --image "$LAYOUT:wip-$tag" "$tag"
  umoci rm --image "$LAYOUT:wip-$tag"
  say "${prefix}: stage $tag built in $((SECONDS - t0)) s"
}

# ---- chroot ------------------------------------------------------------------------------------------------------

# /proc and a private /dev (tmpfs with the usual nodes: the host's /dev stays out of reach of rm -rf)
chroot_enter() {
  local root=$1
  mount -t proc proc "$root/proc"
  MOUNTS+=("$root/proc")
  mount -t tmpfs -o mode=0755,size=16m tmpfs "$root/dev"
  MOUNTS+=("$root/dev")
  mknod -m 0666 "$root/dev/null" c 1 3
  mknod -m 0666 "$root/dev/zero" c 1 5
  mknod -m 0666 "$root/dev/full" c 1 7
  mknod -m 0666 "$root/dev/random" c 1 8
  mknod -m 0666 "$root/dev/urandom" c 1 9
  mknod -m 0666 "$root/dev/tty" c 5 0
  ln -s /proc/self/fd "$root/dev/fd"
  ln -s /proc/self/fd/0 "$root/dev/stdin"
  ln -s /proc/self/fd/1 "$root/dev/stdout"
  ln -s /proc/self/fd/2 "$root/dev/stderr"
  mkdir -m 1777 "$root/dev/shm"
}

chroot_leave() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || warn "could not unmount ${MOUNTS[i]}"
  done
  MOUNTS=()
}

# in_chroot ROOT COMMAND...: COMMAND in ROOT with a clean environment (plus VAR=value arguments of env)
in_chroot() {
  local root=$1
  shift
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# ---- inputs: what each image is made of (its stamp), printed one per line ----------------------------------------

argo_binary() { echo "$E2E/bin/$1"; }

check_argo_binary() {
  local bin stamp
  bin=$(argo_binary "$1") stamp=$E2E/bin/.$1-$ARGO_E2E_VERSION
  check_binary "$bin" "scripts/e2e-argo/build.sh builds it" || return 1
  [[ -e $stamp ]] || { warn "$bin has no stamp $stamp: build.sh has not finished it"; return 1; }
}

# check_stamped BIN STAMP HINT: BIN is there and its builder has finished it (STAMP names the version)
check_stamped() {
  check_binary "$1" "$3" || return 1
  [[ -e $2 ]] || { warn "$1 has no stamp $2 ($3)"; return 1; }
}

nats_binary() { echo "$E2E/bin/nats-server"; }

check_nats_binary() {
  check_stamped "$(nats_binary)" "$E2E/bin/.nats-server-$NATS_VERSION" "scripts/e2e-argo/build.sh builds it"
}

check_events_binary() {
  check_stamped "$TOOLS/argo-events" "$TOOLS/argo-events-$ARGO_EVENTS_VERSION" "make events-tools builds it"
}

# apt_site SUITE: the mirror this host's apt fetches SUITE from ($(SITE) is apt's field syntax, not the shell's)
apt_site() {
  # shellcheck disable=SC2016
  apt-get indextargets --format '$(SITE) $(RELEASE)' 'Created-By: Packages' 2>/dev/null |
    awk -v s="$1" '$2 == s && !f {print $1; f = 1}'
}

debian_mirror() {
  local m=${EDGEBENCH_DEBIAN_MIRROR:-}
  [[ -n $m ]] || m=$(apt_site "$SUITE")
  echo "${m:-http://deb.debian.org/debian}"
}

debian_security() {
  local m=${EDGEBENCH_DEBIAN_SECURITY:-}
  [[ -n $m ]] || m=$(apt_site "$SUITE-security")
  echo "${m:-http://deb.debian.org/debian-security}"
}

busybox_version() {
  local v
  v=$(apt-cache policy busybox-static 2>/dev/null | awk '$1 == "Candidate:" {print $2}')
  [[ -n $v && $v != "(none)" ]] || { warn "apt knows no busybox-static (apt-get update?)"; return 1; }
  echo "$v"
}

runner_base_tag() {
  local key
  key=$({ printf '%s\n' "$ARCH" "$SUITE" "$(debian_mirror)" "$(debian_security)" "${RUNNER_PACKAGES[*]}"
          declare -f stage_runner_base; } | sum)
  echo "runner-base-${key:0:16}"
}

runner_sources_sum() {
  (cd "$REPO" && {
    sha256sum requirements.txt containers/runner/pyproject.toml
    find containers/runner/src -type f ! -name '*.pyc' ! -path '*/__pycache__/*' ! -path '*.egg-info/*' -print0 |
      sort -z | xargs -0 sha256sum
  } | sum)
}

# the commit recorded in the runner (EDGEBENCH_COMMIT), "+dirty" when tracked files differ (like provenance.py)
edgebench_commit() {
  local c
  c=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null) || { echo unknown; return 0; }
  [[ -z $(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null) ]] || c+=+dirty
  echo "$c"
}

runner_venv_tag() { # $1: the inputs of the venv stage
  local key
  key=$({ echo "$1"; declare -f stage_runner_venv chroot_enter in_chroot; } | sum)
  echo "runner-venv-${key:0:16}"
}

inputs_runner_venv() {
  local t
  echo "base $(runner_base_tag)"
  echo "sources $(runner_sources_sum)"
  for t in "${RUNNER_TOOLS[@]}"; do
    check_binary "$TOOLS/$t" || return 1
    echo "$t $(file_sum "$TOOLS/$t")"
  done
}

inputs_of() {
  case $1 in
    pause)
      echo "pause.c $(file_sum "$HERE/pause.c")"
      echo "gcc $(gcc -dumpfullversion) libc6-dev $(dpkg-query -W -f '${Version}' libc6-dev)"
      ;;
    workflow-controller | argoexec)
      check_argo_binary "$1" || return 1
      echo "$1 $ARGO_E2E_VERSION $(file_sum "$(argo_binary "$1")")"
      echo "ca-certificates.crt $(file_sum /etc/ssl/certs/ca-certificates.crt)"
      echo "libc6 $(dpkg-query -W -f '${Version}' libc6)"
      ;;
    minio | mc)
      check_binary "$TOOLS/$1" "EDGEBENCH_TOOLS=$TOOLS" || return 1
      echo "$1 $(file_sum "$TOOLS/$1")"
      echo "ca-certificates.crt $(file_sum /etc/ssl/certs/ca-certificates.crt)"
      echo "libc6 $(dpkg-query -W -f '${Version}' libc6)"
      if [[ $1 == mc ]]; then echo "busybox-static $(busybox_version)"; fi
      ;;
    runner)
      local venv
      venv=$(inputs_runner_venv) || return 1
      echo "$venv"
      echo "venv $(runner_venv_tag "$venv")"
      echo "commit $(edgebench_commit)"
      ;;
    nats)
      check_nats_binary || return 1
      echo "nats-server $NATS_VERSION $(file_sum "$(nats_binary)")"
      echo "ca-certificates.crt $(file_sum /etc/ssl/certs/ca-certificates.crt)"
      echo "libc6 $(dpkg-query -W -f '${Version}' libc6)"
      ;;
    argo-events)
      local tz
      check_events_binary || return 1
      if ! tz=$(dpkg-query -W -f '${Version}' tzdata 2>/dev/null) || [[ ! -d /usr/share/zoneinfo ]]; then
        warn "argo-events: the host has no tzdata (/usr/share/zoneinfo; apt-get install tzdata)"
        return 1
      fi
      [[ -e $E2E/bin/.argo-$ARGO_E2E_VERSION ]] || { warn "argo-events: $E2E/bin/argo is missing (the CLI the argoWorkflow trigger runs; scripts/e2e-argo/build.sh builds it)"; return 1; }
      echo "argo-events $ARGO_EVENTS_VERSION $(file_sum "$TOOLS/argo-events")"
      echo "argo $ARGO_E2E_VERSION $(file_sum "$E2E/bin/argo")"
      echo "ca-certificates.crt $(file_sum /etc/ssl/certs/ca-certificates.crt)"
      echo "libc6 $(dpkg-query -W -f '${Version}' libc6)"
      echo "tzdata $tz"
      ;;
  esac
}

# the key of an image: its inputs and the code that builds it
image_key() {
  local fns=(new_bundle finish_bundle export_tar)
  case $1 in
    pause) fns+=(recipe_pause) ;;
    workflow-controller | argoexec) fns+=(recipe_argo add_base_files install_binary) ;;
    minio | mc) fns+=(recipe_tool add_base_files install_binary add_busybox) ;;
    runner) fns+=(recipe_runner) ;;
    nats) fns+=(recipe_nats add_base_files install_binary) ;;
    argo-events) fns+=(recipe_argo_events add_base_files install_binary) ;;
  esac
  { echo "$2"; declare -f "${fns[@]}"; } | sum
}

# ---- the images --------------------------------------------------------------------------------------------------

recipe_pause() {
  local w=$1
  new_bundle pause "$w/bundle"
  gcc -static -Os -s -Wall -Wextra -o "$w/bundle/rootfs/pause" "$HERE/pause.c"
  "$w/bundle/rootfs/pause" -v >/dev/null
  finish_bundle pause "$w/bundle" --config.entrypoint /pause --config.user 65535:65535
}

recipe_argo() { # $1: workflow-controller or argoexec
  local cmd=$1 w=$2 root=$2/bundle/rootfs
  check_argo_binary "$cmd"
  new_bundle "$cmd" "$w/bundle"
  add_base_files "$root" argo:8737
  # emissary: `argoexec init` copies /bin/argoexec into the pod's shared volume
  install_binary "$(argo_binary "$cmd")" "$root" "/bin/$cmd"
  finish_bundle "$cmd" "$w/bundle" --config.entrypoint "$cmd" --config.env PATH=/bin:/usr/bin --config.user 8737
}

# busybox from Debian's busybox-static as /bin/busybox, with the links of BUSYBOX_APPLETS
add_busybox() {
  local root=$1 w=$2 v dir debs a
  v=$(busybox_version)
  dir=$CACHE/busybox-static/$v
  debs=("$dir"/*.deb)
  if [[ ! -f ${debs[0]} ]]; then
    mkdir -p "$dir"
    (cd "$dir" && apt-get download -q -o APT::Sandbox::User=root "busybox-static=$v")
    debs=("$dir"/*.deb)
  fi
  dpkg-deb -x "${debs[0]}" "$w/busybox"
  install -m 0755 "$w/busybox/bin/busybox" "$root/bin/busybox"
  is_static "$root/bin/busybox" || die "busybox from ${debs[0]} is not static"
  for a in "${BUSYBOX_APPLETS[@]}"; do ln -sf busybox "$root/bin/$a"; done
}

recipe_tool() { # $1: minio or mc, run as uid 1000 like kustomize/base/minio
  local name=$1 w=$2 root=$2/bundle/rootfs
  check_binary "$TOOLS/$name"
  new_bundle "$name" "$w/bundle"
  add_base_files "$root" "$name:1000"
  install_binary "$TOOLS/$name" "$root" "/usr/bin/$name"
  if [[ $name == mc ]]; then add_busybox "$root" "$w"; fi
  finish_bundle "$name" "$w/bundle" --config.entrypoint "$name" --config.env PATH=/usr/bin:/bin \
    --config.env HOME=/tmp --config.user 1000:1000
}

recipe_nats() { # uid 1000 like kustomize/overlays/e2e/nats-deployment.yaml; JetStream's store in /data (1777)
  local w=$1 root=$1/bundle/rootfs
  check_nats_binary
  new_bundle nats "$w/bundle"
  add_base_files "$root" nats:1000
  install_binary "$(nats_binary)" "$root" /usr/bin/nats-server
  # the path in argo-events-controller-config's startCommand, should the controller run NATS itself (like nats:*)
  ln -s /usr/bin/nats-server "$root/nats-server"
  install -d -m 1777 "$root/data"
  finish_bundle nats "$w/bundle" --config.entrypoint nats-server --config.env PATH=/usr/bin:/bin \
    --config.env HOME=/tmp --config.user 1000:1000
}

# Argo Events' controller, EventSource and Sensor services are one binary (a subcommand each): like upstream's image
# (Dockerfile of the module) /bin/argo-events as entrypoint, the CA bundle and the zone database; uid 9731, the
# runAsUser of upstream's controller-manager Deployment (upstream's image itself sets no user)
recipe_argo_events() {
  local w=$1 root=$1/bundle/rootfs
  check_events_binary
  new_bundle argo-events "$w/bundle"
  add_base_files "$root" argo-events:9731
  install_binary "$TOOLS/argo-events" "$root" /bin/argo-events
  # the Sensor's argoWorkflow trigger runs `argo submit` (upstream's image has the CLI at /usr/local/bin/argo)
  install_binary "$E2E/bin/argo" "$root" /usr/local/bin/argo
  install -d -m 0755 "$root/usr/share"
  cp -a /usr/share/zoneinfo "$root/usr/share/zoneinfo"
  finish_bundle argo-events "$w/bundle" --config.entrypoint /bin/argo-events --config.env PATH=/usr/local/bin:/bin:/usr/bin \
    --config.user 9731
}

# stage 1 of the runner: debootstrap --variant=minbase + the apt packages, cleaned (one layer)
stage_runner_base() {
  local w=$1 tag=$2 root=$1/bundle/rootfs mirror security
  mirror=$(debian_mirror) security=$(debian_security)
  new_bundle "$tag" "$w/bundle"
  say "runner: debootstrap --variant=minbase $SUITE ($ARCH) from $mirror (log: $w/debootstrap.log)"
  if ! debootstrap --variant=minbase --arch="$ARCH" "$SUITE" "$root" "$mirror" >"$w/debootstrap.log" 2>&1; then
    tail -n 20 "$w/debootstrap.log" >&2
    die "debootstrap failed (log: $w/debootstrap.log)"
  fi
  safe_rm "$root/dev" && install -d -m 0755 "$root/dev" # containers get their own /dev
  printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
    "$mirror" "$SUITE" "$mirror" "$SUITE" "$security" "$SUITE" >"$root/etc/apt/sources.list"
  # like Debian's slim images: no documentation, manual pages or translations (the copyright files stay)
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/info/*' \
    'path-exclude /usr/share/locale/*' 'path-exclude /usr/share/lintian/*' 'path-exclude /usr/share/linda/*' \
    >"$root/etc/dpkg/dpkg.cfg.d/edgebench-slim"
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" # no service starts in the chroot
  chmod 0755 "$root/usr/sbin/policy-rc.d"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  chroot_enter "$root"
  say "runner: apt-get install ${RUNNER_PACKAGES[*]} (log: $w/apt.log)"
  if ! { in_chroot "$root" apt-get update &&
         in_chroot "$root" apt-get install -y --no-install-recommends "${RUNNER_PACKAGES[@]}" &&
         in_chroot "$root" apt-get clean; } >"$w/apt.log" 2>&1; then
    tail -n 20 "$w/apt.log" >&2
    die "apt-get in the runner's chroot failed (log: $w/apt.log)"
  fi
  chroot_leave
  rm -f "$root/usr/sbin/policy-rc.d" "$root"/var/cache/apt/*.bin "$root"/var/log/*.log "$root"/var/log/apt/*
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/debconf/*-old "$root"/tmp/* "$root"/var/tmp/*
  # what debootstrap installed before the excludes existed
  find "$root/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/{man,groff,info,locale,lintian,linda}/*
  : >"$root/etc/resolv.conf" # the runtime mounts its own
  : >"$root/etc/hostname"
  chmod 0644 "$root/etc/resolv.conf" "$root/etc/hostname" # debootstrap copied the host's modes
  finish_bundle "$tag" "$w/bundle" --history.created_by "debootstrap --variant=minbase $SUITE; apt-get install ${RUNNER_PACKAGES[*]}"
}

# stage 2 of the runner: user edgebench, the Go tools, the venv /opt/edgebench with containers/runner (one layer)
stage_runner_venv() {
  local base=$1 w=$2 tag=$3 root=$2/bundle/rootfs t v c out cmd env=()
  safe_rm "$w/bundle"
  umoci unpack --image "$LAYOUT:$base" "$w/bundle" >/dev/null
  chroot_enter "$root"
  in_chroot "$root" groupadd --gid 10001 edgebench
  in_chroot "$root" useradd --uid 10001 --gid 10001 --create-home --home-dir /home/edgebench \
    --shell /usr/sbin/nologin edgebench
  for t in "${RUNNER_TOOLS[@]}"; do install -m 0755 "$TOOLS/$t" "$root/usr/local/bin/$t"; done
  install -d "$root/src/runner"
  install -m 0644 "$REPO/requirements.txt" "$root/src/requirements.txt"
  tar -C "$REPO/containers/runner" --exclude=__pycache__ --exclude='*.pyc' --exclude='*.egg-info' \
    -cf - pyproject.toml src | tar -C "$root/src/runner" -xf -
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  # pip trusts the host's CA bundle during the build (PyPI may be reached through a TLS-inspecting proxy);
  # the image keeps Debian's own bundle
  install -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/tmp/build-ca.crt"
  env=(PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_CERT=/tmp/build-ca.crt
       "PIP_DEFAULT_TIMEOUT=${PIP_DEFAULT_TIMEOUT:-120}")
  for v in PIP_INDEX_URL PIP_EXTRA_INDEX_URL http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    if [[ -n ${!v:-} ]]; then env+=("$v=${!v}"); fi
  done
  say "runner: venv /opt/edgebench, pip install --constraint requirements.txt containers/runner (log: $w/pip.log)"
  if ! { in_chroot "$root" python3 -m venv /opt/edgebench &&
         in_chroot "$root" "${env[@]}" /opt/edgebench/bin/pip install --constraint /src/requirements.txt /src/runner
       } >"$w/pip.log" 2>&1; then
    tail -n 20 "$w/pip.log" >&2
    die "pip in the runner's chroot failed (log: $w/pip.log)"
  fi
  say "runner: sanity checks in the chroot"
  chroot --userspec=10001:10001 "$root" /usr/bin/env -i HOME=/home/edgebench PATH=/opt/edgebench/bin:/usr/bin:/bin \
    edgebench --help >/dev/null || die "runner: edgebench --help fails in the image (as uid 10001)"
  say "runner:   edgebench --help: ok (as uid 10001)"
  for c in "iperf3 --version" "fortio version" "ip -V" "nft --version" "curl --version"; do
    read -ra cmd <<<"$c"
    out=$(in_chroot "$root" "${cmd[@]}" 2>&1) || die "runner: $c fails in the image: $out"
    say "runner:   $c: ${out%%$'\n'*}"
  done
  out=$(in_chroot "$root" ddsperf help 2>&1) || true # ddsperf has no version option and its help exits 3
  [[ $out == "ddsperf help"* ]] || die "runner: ddsperf does not run in the image: $out"
  say "runner:   ddsperf help: ${out%%$'\n'*}"
  chroot_leave
  rm -rf "$root/src" "$root"/tmp/* "$root"/root/.cache
  : >"$root/etc/resolv.conf"
  finish_bundle "$tag" "$w/bundle" --history.created_by "edgebench venv (containers/runner), ${RUNNER_TOOLS[*]}"
}

recipe_runner() { # $1: workdir, $2: the venv stage's inputs
  local w=$1 venv_inputs=$2 base venv
  base=$(runner_base_tag)
  venv=$(runner_venv_tag "$venv_inputs")
  ensure_stage "$base" stage_runner_base "$w"
  ensure_stage "$venv" stage_runner_venv "$base" "$w"
  layout_has runner && umoci rm --image "$LAYOUT:runner"
  umoci config --image "$LAYOUT:$venv" --tag runner \
    --config.env PATH=/opt/edgebench/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env "EDGEBENCH_COMMIT=$(edgebench_commit)" --config.env PYTHONUNBUFFERED=1 \
    --config.env HOME=/home/edgebench --config.env LANG=C.UTF-8 --config.workingdir /home/edgebench \
    --config.user 10001:10001 --config.entrypoint edgebench --config.cmd=--help
}

# build_one NAME: in a subshell of its own (set -e, traps); returns non-zero when NAME could not be built
build_one() {
  local name=$1 tar=$IMAGES/$1.tar stamp=$IMAGES/$1.tar.inputs w=$WORK/$1 inputs key t0=$SECONDS
  trap chroot_leave EXIT
  trap 'exit 130' INT TERM
  if ! inputs=$(inputs_of "$name"); then
    warn "$name: not built, an input is missing (above)"
    return 1
  fi
  key=$(image_key "$name" "$inputs")
  if [[ -s $tar && -f $stamp && $(head -n1 "$stamp") == "key $key" ]]; then
    say "$name: up to date ($tar)"
    return 0
  fi
  say "$name: building $(ref_of "$name")"
  rm -f "$stamp"
  safe_rm "$w"
  mkdir -p "$w"
  case $name in
    pause) recipe_pause "$w" ;;
    workflow-controller | argoexec) recipe_argo "$name" "$w" ;;
    minio | mc) recipe_tool "$name" "$w" ;;
    runner) recipe_runner "$w" "$(sed -n '/^venv /q;p' <<<"$inputs")" ;;
    nats) recipe_nats "$w" ;;
    argo-events) recipe_argo_events "$w" ;;
  esac
  export_tar "$name" "$name"
  umoci rm --image "$LAYOUT:$name"
  { echo "key $key"; echo "$inputs"; } >"$stamp"
  safe_rm "$w"
  say "$name: built in $((SECONDS - t0)) s: $tar ($(du -h "$tar" | cut -f1))"
}

# ---- commands ----------------------------------------------------------------------------------------------------

check_names() {
  local n
  for n; do ref_of "$n" >/dev/null || die "unknown image $n (images: ${NAMES[*]}; groups: core events all)"; done
}

cmd_build() {
  local names=() n rc failed=() t0=$SECONDS
  mapfile -t names < <(expand_names "${@:-core}")
  check_names "${names[@]}"
  ((EUID == 0)) || die "build needs root (chroot, mount, file owners in the layers)"
  need umoci skopeo gcc readelf findmnt flock
  for n in "${names[@]}"; do if [[ $n == runner ]]; then need debootstrap chroot; fi; done
  mkdir -p "$IMAGES" "$WORK" "$CACHE"
  exec 9>"$IMAGES/.lock"
  flock -n 9 || die "another images.sh build holds $IMAGES/.lock"
  [[ -e $LAYOUT/index.json ]] || umoci init --layout "$LAYOUT"
  trap 'die "interrupted"' INT TERM
  for n in "${names[@]}"; do
    set +e
    (
      set -e
      build_one "$n"
    )
    rc=$?
    set -e
    ((rc == 0)) || failed+=("$n")
    ((rc != 130)) || die "interrupted"
  done
  umoci gc --layout "$LAYOUT"
  if ((${#failed[@]})); then
    warn "not built: ${failed[*]} (see above; logs stay in $WORK); the others are in $IMAGES ($((SECONDS - t0)) s)"
    exit 1
  fi
  safe_rm "$WORK"
  say "images ready in $IMAGES ($((SECONDS - t0)) s); import: $0 import --address <containerd socket>"
}

cmd_import() {
  local addr="" snap="" names=() n tar missing=() ref
  while (($#)); do
    case $1 in
      --address) addr=${2:?--address needs a socket path}; shift 2 ;;
      --address=*) addr=${1#*=}; shift ;;
      --snapshotter) snap=${2:?--snapshotter needs a name}; shift 2 ;;
      --snapshotter=*) snap=${1#*=}; shift ;;
      -h | --help) usage; exit 0 ;;
      -*) die "import: unknown option $1" ;;
      *) names+=("$1"); shift ;;
    esac
  done
  [[ -n $addr ]] || die "import needs --address <containerd socket>"
  [[ -S $addr ]] || die "$addr is not a socket (is containerd running?)"
  need ctr
  if ((${#names[@]})); then
    mapfile -t names < <(expand_names "${names[@]}")
  else # group core, and the optional images that are built
    names=("${CORE_NAMES[@]}")
    for n in "${EVENTS_NAMES[@]}"; do if [[ -s $IMAGES/$n.tar ]]; then names+=("$n"); fi; done
  fi
  check_names "${names[@]}"
  for n in "${names[@]}"; do
    tar=$IMAGES/$n.tar ref=$(ref_of "$n")
    if [[ ! -s $tar ]]; then
      warn "$n: no $tar (images.sh build $n)"
      missing+=("$n")
      continue
    fi
    say "$n: importing $ref into $addr (namespace k8s.io)"
    ctr -a "$addr" -n k8s.io images import ${snap:+--snapshotter "$snap"} "$tar" >/dev/null
    ctr -a "$addr" -n k8s.io images ls -q | has_line "$ref" || die "$n: $ref is not in containerd after the import"
  done
  if ((${#missing[@]})); then
    warn "not imported (not built): ${missing[*]}"
    exit 1
  fi
  say "imported: ${names[*]}"
}

cmd_list() {
  local n tar stamp state inputs
  (($# == 0)) || die "list takes no arguments"
  printf '%-20s %-44s %-8s %-6s %s\n' NAME IMAGE STATE GROUP TARBALL
  for n in "${NAMES[@]}"; do
    tar=$IMAGES/$n.tar stamp=$IMAGES/$n.tar.inputs state=missing
    if [[ -s $tar && -f $stamp ]]; then
      state=cached
      if inputs=$(inputs_of "$n" 2>/dev/null) && [[ $(head -n1 "$stamp") != "key $(image_key "$n" "$inputs")" ]]; then
        state=stale
      fi
    fi
    printf '%-20s %-44s %-8s %-6s %s\n' "$n" "$(ref_of "$n")" "$state" "$(group_of "$n")" "$tar"
  done
}

main() {
  ARCH=$(dpkg --print-architecture)
  case ${1:-} in
    build) shift; cmd_build "$@" ;;
    import) shift; cmd_import "$@" ;;
    list) shift; cmd_list "$@" ;;
    -h | --help | help) usage ;;
    "") usage >&2; exit 2 ;;
    *) warn "unknown command $1"; usage >&2; exit 2 ;;
  esac
}

main "$@"; exit # on one line: bash never reads past it, so editing this file cannot derail a running build
