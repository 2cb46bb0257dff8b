# images.sh, sourced: messages, names of images and groups, files and binaries, the OCI layout (umoci),
# cached stages and the chroot.
# shellcheck shell=bash

say() { echo "e2e-argo: $*"; }
warn() { echo "e2e-argo: $*" >&2; }
die() { warn "error: $*"; exit 1; }
sum() { sha256sum | cut -c1-64; }
file_sum() { sha256sum "$1" | cut -c1-64; }

ref_of() {
  case $1 in
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
  umoci config --no-history --image "$LAYOUT:$1" --os linux --architecture "$ARCH"
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

# export_tar TAG NAME: the image TAG of the layout as the docker-archive $IMAGES/NAME-ARCH.tar, named by its reference
export_tar() {
  local tar
  tar=$(tar_of "$2")
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
