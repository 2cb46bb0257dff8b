# images.sh, sourced: the target architecture of a build (ARCH) and the emulation of a foreign one
# (binfmt_misc + qemu-user-static), the Go tools cross-compiled for it, and the proof that an arm64 runner runs.
# shellcheck shell=bash

HOST_ARCH=$(dpkg --print-architecture)
KNOWN_ARCHES=(amd64 arm64)
# The ELF header of aarch64 executables (e_ident: ELF, 64-bit, little-endian, version 1, then e_type 2 or 3 and
# e_machine 0xb7), and its mask (any OS ABI byte, ET_EXEC and ET_DYN alike): qemu's qemu-binfmt-conf.sh and
# Debian's /usr/share/binfmts/qemu-aarch64 use the same. binfmt_misc parses the \x escapes itself.
BINFMT_AARCH64_MAGIC='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
BINFMT_AARCH64_MASK='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
BINFMT_DIR=/proc/sys/fs/binfmt_misc

# check_arch ARCH: one of KNOWN_ARCHES
check_arch() {
  case " ${KNOWN_ARCHES[*]} " in
    *" $1 "*) return 0 ;;
    *) die "ARCH=$1 is not supported (architectures: ${KNOWN_ARCHES[*]})" ;;
  esac
}

# qemu_of ARCH: qemu-user's name of a Debian architecture
qemu_of() {
  case $1 in
    arm64) echo aarch64 ;;
    amd64) echo x86_64 ;;
    *) return 1 ;;
  esac
}

# elf_machine ARCH: what `file` says of an ELF executable of ARCH
elf_machine() {
  case $1 in
    arm64) echo "ARM aarch64" ;;
    amd64) echo "x86-64" ;;
    *) return 1 ;;
  esac
}

# ensure_emulation: executables of a foreign ARCH run here (in chroots too). Mounts binfmt_misc when it is not
# mounted, registers qemu-aarch64 (Debian's update-binfmts when binfmt-support is installed, else directly with
# flag F, so that the kernel opens the interpreter now and it need not exist inside a chroot; P keeps argv[0]).
# The registration stays (it is the host's, like binfmt-support's). One message and exit 1 when it cannot be done.
ensure_emulation() {
  local q interp entry flags
  [[ $ARCH != "$HOST_ARCH" ]] || return 0
  [[ $ARCH == arm64 && $HOST_ARCH == amd64 ]] ||
    die "ARCH=$ARCH on a $HOST_ARCH host: only arm64 on amd64 is emulated (qemu-user-static)"
  q=$(qemu_of "$ARCH") interp=/usr/bin/qemu-$q-static entry=$BINFMT_DIR/qemu-$q
  [[ -x $interp ]] || die "ARCH=$ARCH needs $interp to emulate $ARCH (apt-get install qemu-user-static)"
  if [[ ! -e $BINFMT_DIR/register ]]; then
    grep -qw binfmt_misc /proc/filesystems ||
      die "ARCH=$ARCH: this kernel has no binfmt_misc (CONFIG_BINFMT_MISC): $ARCH executables cannot run here"
    mount -t binfmt_misc binfmt_misc "$BINFMT_DIR" 2>/dev/null ||
      die "ARCH=$ARCH: cannot mount binfmt_misc on $BINFMT_DIR (root, and not in an unprivileged container?)"
    say "mounted binfmt_misc on $BINFMT_DIR (it stays mounted)"
  fi
  if [[ ! -e $entry ]] && command -v update-binfmts >/dev/null && [[ -e /usr/share/binfmts/qemu-$q ]]; then
    update-binfmts --enable "qemu-$q" >/dev/null 2>&1 || true
  fi
  if [[ ! -e $entry ]]; then
    printf ':qemu-%s:M::%s:%s:%s:FP\n' "$q" "$BINFMT_AARCH64_MAGIC" "$BINFMT_AARCH64_MASK" "$interp" \
      >"$BINFMT_DIR/register" 2>/dev/null ||
      die "ARCH=$ARCH: the kernel refused to register qemu-$q in $BINFMT_DIR/register"
    say "registered qemu-$q ($interp, flags FP) in binfmt_misc (it stays registered)"
  fi
  head -n1 "$entry" | grep -qx enabled ||
    die "ARCH=$ARCH: qemu-$q is registered but disabled (echo 1 >$entry enables it)"
  flags=$(awk '$1 == "flags:" {print $2}' "$entry")
  [[ $flags == *F* ]] || die "ARCH=$ARCH: qemu-$q is registered without flag F, so chroots cannot find its" \
    "interpreter ($(awk '$1 == "interpreter" {print $2}' "$entry")); echo -1 >$entry removes it, then rerun"
}

# unmount_below DIR: unmounts whatever is mounted on or below DIR, deepest first (what a failed debootstrap
# second stage leaves: /proc, /sys of the chroot)
unmount_below() {
  local real m
  real=$(realpath "$1")
  findmnt -rn -o TARGET | awk -v p="$real" '$0 == p || index($0, p "/") == 1' | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" || warn "could not unmount $m"
  done
}

# debootstrap_root ROOT MIRROR LOG: debootstrap --variant=minbase of SUITE for ARCH into ROOT. A foreign ARCH in
# two stages: the first (download, unpack) here, the second (dpkg --configure) in the chroot under qemu.
debootstrap_root() {
  local root=$1 mirror=$2 log=$3 t0=$SECONDS rc=0
  if [[ $ARCH == "$HOST_ARCH" ]]; then
    debootstrap --variant=minbase --arch="$ARCH" "$SUITE" "$root" "$mirror" >"$log" 2>&1
    return
  fi
  ensure_emulation
  debootstrap --foreign --variant=minbase --arch="$ARCH" "$SUITE" "$root" "$mirror" >"$log" 2>&1 || return 1
  if ! chroot "$root" /bin/true >>"$log" 2>&1; then
    warn "the $ARCH root does not run here: chroot $root /bin/true fails (binfmt_misc: $BINFMT_DIR/qemu-$(qemu_of "$ARCH"))"
    return 1
  fi
  say "runner: debootstrap first stage ($ARCH) in $((SECONDS - t0)) s; second stage under qemu (slow)"
  chroot "$root" /debootstrap/debootstrap --second-stage >>"$log" 2>&1 || rc=$?
  unmount_below "$root"
  ((rc == 0)) || return "$rc"
  say "runner: debootstrap ($ARCH) in $((SECONDS - t0)) s"
}

# tools_dir: where the runner's Go tools for ARCH are: the host's from `make tools` ($TOOLS), a foreign ARCH's
# cross-compiled by cross_tools ($TOOLS/linux-ARCH)
tools_dir() {
  if [[ $ARCH == "$HOST_ARCH" ]]; then echo "$TOOLS"; else echo "$TOOLS/linux-$ARCH"; fi
}

# makefile_var NAME: a `NAME := value` of the Makefile (the pinned versions)
makefile_var() { awk -v n="$1" '$1 == n && $2 ~ /^[:?]?=$/ {print $3; exit}' "$REPO/Makefile"; }

# cross_tools: RUNNER_TOOLS for a foreign ARCH, cross-compiled (CGO_ENABLED=0 GOARCH=ARCH) into tools_dir: fortio at
# the Makefile's pin from the Go module proxy, the netem emulator and the relay from this repository. Go's build
# cache makes a rerun quick; -trimpath and no VCS stamps make the binaries (and so the image's key) reproducible.
cross_tools() {
  local dir fortio gopath log
  [[ $ARCH != "$HOST_ARCH" ]] || return 0
  need go
  dir=$(tools_dir) fortio=$(makefile_var FORTIO_VERSION) log=$WORK/cross-tools-$ARCH.log
  [[ -n $fortio ]] || die "no FORTIO_VERSION in $REPO/Makefile"
  mkdir -p "$dir" "$WORK"
  say "tools ($ARCH): cross-compiling fortio $fortio, edgebench-netem-emu, edgebench-relay into $dir (log: $log)"
  gopath=$(go env GOPATH)
  if ! {
    (cd /tmp && env GOBIN= CGO_ENABLED=0 GOOS=linux GOARCH="$ARCH" GOFLAGS=-buildvcs=false \
      go install -trimpath "fortio.org/fortio@$fortio") &&
      install -m 0755 "${gopath%%:*}/bin/linux_$ARCH/fortio" "$dir/fortio" &&
      (cd "$REPO/containers/netem-emulator" && env CGO_ENABLED=0 GOOS=linux GOARCH="$ARCH" GOFLAGS=-buildvcs=false \
        go build -trimpath -o "$dir/edgebench-netem-emu" .) &&
      (cd "$REPO/containers/relay" && env CGO_ENABLED=0 GOOS=linux GOARCH="$ARCH" GOFLAGS=-buildvcs=false \
        go build -trimpath -o "$dir/edgebench-relay" .)
  } >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    die "cross-compiling the runner's tools for $ARCH failed (log: $log)"
  fi
  check_arch_binaries "$dir/fortio" "$dir/edgebench-netem-emu" "$dir/edgebench-relay"
}

# check_arch_binaries FILE...: each is an ELF executable of ARCH (what `file` says), or one message and exit 1
check_arch_binaries() {
  local f m
  m=$(elf_machine "$ARCH")
  for f; do
    file -b "$f" | grep -q "ELF 64-bit.*, $m," || die "$f is not an $ARCH executable: $(file -b "$f")"
  done
}

# tar_of NAME: the cached docker-archive of image NAME for ARCH (every architecture's tarballs side by side)
tar_of() { echo "$IMAGES/$1-$ARCH.tar"; }

# arch_names: the images that have a recipe for ARCH, one per line: all on the host's own architecture; for a
# foreign one, the runner (the other recipes put the host's binaries, compiled here, into the image)
arch_names() {
  if [[ $ARCH == "$HOST_ARCH" ]]; then printf '%s\n' "${NAMES[@]}"; else echo runner; fi
}

arch_has_recipe() { arch_names | has_line "$1"; }

# cmd_prove_arm64: the cached arm64 runner runs here under qemu: its config says linux/arm64, its iperf3 and python3
# are aarch64 ELF files, and `iperf3 --version` and `edgebench --help` (as uid 10001, like the pod) work in a chroot
# of its unpacked root. Unpacks into a scratch directory that it removes again, with the chroot's mounts.
cmd_prove_arm64() {
  local tar dir root out platform f
  (($# == 0)) || die "prove-arm64 takes no arguments"
  ARCH=arm64
  tar=$(tar_of runner)
  ((EUID == 0)) || die "prove-arm64 needs root (chroot, mount)"
  need umoci skopeo file chroot
  [[ -s $tar ]] || die "no arm64 runner in $tar (build it: ARCH=arm64 $0 build runner)"
  ensure_emulation
  dir=$(mktemp -d "$IMAGES/prove-arm64.XXXXXX")
  # shellcheck disable=SC2064 # dir is fixed now
  trap "chroot_leave; unmount_below '$dir'; rm -rf --one-file-system '$dir'" EXIT
  say "prove-arm64: $tar"
  platform=$(skopeo inspect --config "docker-archive:$tar" |
    python3 -c 'import json, sys; c = json.load(sys.stdin); print(c["os"] + "/" + c["architecture"])')
  say "prove-arm64:   image config: $platform"
  [[ $platform == linux/arm64 ]] || die "the image's config says $platform, not linux/arm64"
  skopeo --insecure-policy copy --quiet "docker-archive:$tar" "oci:$dir/oci:runner"
  umoci unpack --image "$dir/oci:runner" "$dir/bundle" >/dev/null
  root=$dir/bundle/rootfs
  for f in /usr/bin/iperf3 "$(readlink -f "$root/usr/bin/python3" | sed "s|^$root||")" /usr/local/bin/fortio; do
    out=$(file -b "$root$f")
    say "prove-arm64:   file $f: ${out%%, BuildID*}"
    [[ $out == *"ARM aarch64"* ]] || die "$f in the image is not an aarch64 executable: $out"
  done
  chroot_enter "$root"
  out=$(in_chroot "$root" uname -m) || die "uname -m fails in the arm64 root"
  say "prove-arm64:   uname -m (in the chroot, under qemu): $out"
  [[ $out == aarch64 ]] || die "the chroot runs as $out, not aarch64"
  out=$(in_chroot "$root" /usr/bin/iperf3 --version 2>&1) || die "iperf3 --version fails in the arm64 runner: $out"
  printf '%s\n' "--- iperf3 --version" "$out"
  out=$(chroot --userspec=10001:10001 "$root" /usr/bin/env -i HOME=/home/edgebench LANG=C.UTF-8 \
    PATH=/opt/edgebench/bin:/usr/local/bin:/usr/bin:/bin edgebench --help 2>&1) ||
    die "edgebench --help fails in the arm64 runner (as uid 10001): $out"
  printf '%s\n' "--- edgebench --help (as uid 10001)" "$out"
  chroot_leave
  say "prove-arm64: ok: the arm64 runner's iperf3 and edgebench run under qemu-aarch64"
}
