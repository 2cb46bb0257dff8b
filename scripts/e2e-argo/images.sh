#!/usr/bin/env bash
# Build, without Docker, the OCI images the kind management cluster runs (Argo's controller and executor, MinIO and
# mc, the edgebench runner; the optional group `events`: NATS and Argo Events) and cache them as docker-archive
# tarballs in $E2E/images, which `make up` loads into kind (`kind load image-archive`) and the lab's mirror serves
# (the runner). Tools: gcc (static glibc), debootstrap + chroot, umoci (layers and configs in an OCI layout), skopeo
# (OCI layout -> docker-archive, named after its RepoTags).
# Every tarball has a stamp (<tar>.inputs) with a hash of its inputs: a rerun with unchanged inputs builds nothing.
# `images.sh --help` prints the usage. Needs root (chroot, mount, file ownership inside the layers).
# ARCH=arm64 (or --arch arm64) builds the runner for arm64 under qemu-user-static (lib/arch.sh); tarballs and
# stamps are named <name>-<arch>.tar so that the architectures coexist in the cache.
# The functions are in lib/*.sh (sourced below: each read whole before anything runs).
# shellcheck source-path=SCRIPTDIR disable=SC2317 # the stage functions and chroot_leave are called indirectly (ensure_stage, trap)
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
CORE_NAMES=(workflow-controller argoexec minio mc runner) # group core: `build` without NAME
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
RUNNER_EXTRA=()       # binaries by path into the runner's /usr/local/bin (kubectl, helm: set below when built)
# applets of busybox linked in the mc image (the make-bucket Job runs `/bin/sh -c 'until mc ...; do sleep 3; done'`)
BUSYBOX_APPLETS=(sh ash cat cp echo env false id ls mkdir mv printf rm sleep test true)
MOUNTS=()             # what chroot_enter mounted, unmounted by chroot_leave (also on exit)
# the functions, in pieces: lib/common.sh (helpers, umoci layout, chroot), lib/inputs.sh (stamps and keys),
# lib/recipes.sh (the images), lib/commands.sh (build, import, list), lib/arch.sh (ARCH, emulation, prove-arm64)
# shellcheck source=lib/common.sh
source "$HERE/lib/common.sh"
# shellcheck source=lib/inputs.sh
source "$HERE/lib/inputs.sh"
# shellcheck source=lib/recipes.sh
source "$HERE/lib/recipes.sh"
# shellcheck source=lib/commands.sh
source "$HERE/lib/commands.sh"
# shellcheck source=lib/arch.sh
source "$HERE/lib/arch.sh"

usage() {
  cat <<EOF
Usage: scripts/e2e-argo/images.sh [--arch ARCH] COMMAND [ARGS]

Builds without Docker the OCI images of the kind management cluster and caches each as a docker-archive
tarball $IMAGES/<name>-<arch>.tar, next to a stamp <name>-<arch>.tar.inputs
(the hash of its inputs): a rerun with unchanged inputs builds nothing.

Architectures (--arch ARCH or ARCH=...; default: this host's, $HOST_ARCH): ${KNOWN_ARCHES[*]}.
  A foreign one (arm64 on amd64) is built under emulation: binfmt_misc is mounted if it is not, qemu-aarch64
  (qemu-user-static) registered with flag F (both stay), debootstrap --foreign + its second stage in the chroot,
  the runner's Go tools cross-compiled (CGO_ENABLED=0 GOARCH=arm64) into \$EDGEBENCH_TOOLS/linux-arm64.
  For arm64 only the runner has a recipe (~30 min cold on 2 busy cores, mostly emulated dpkg and pip).

Commands:
  build [NAME|GROUP...]           build the images (default: group core) whose inputs changed; prints each one's
                                  time. Exits 1 when one failed or its input is missing (e.g. an Argo binary),
                                  after building the others.
  list                            each image: name, reference, state (cached, stale, missing, no-recipe for ARCH),
                                  group and tarball.
  prove-arm64                     unpack the cached arm64 runner and run its iperf3 --version and edgebench --help
                                  (as uid 10001) in a chroot under qemu-aarch64; checks with file(1) that they are
                                  aarch64 and that the image config says linux/arm64. Exit 1 with the reason.
  -h, --help                      this text.

Groups: core (${CORE_NAMES[*]}), events (${EVENTS_NAMES[*]}: optional,
  Argo Events; argo-events needs make events-tools), all (both).
  E.g. images.sh build events, or images.sh build nats argo-events.

Images (NAME  reference  built from):
  workflow-controller  edgebench.local/workflow-controller:$ARGO_E2E_VERSION
                                                           \$E2E/bin/workflow-controller (scripts/e2e-argo/build.sh)
  argoexec             edgebench.local/argoexec:$ARGO_E2E_VERSION     \$E2E/bin/argoexec (scripts/e2e-argo/build.sh)
  minio                edgebench.local/minio:e2e           \$EDGEBENCH_TOOLS/minio
  mc                   edgebench.local/mc:e2e              \$EDGEBENCH_TOOLS/mc + busybox-static (/bin/sh)
  runner               edgebench.local/edgebench-runner:e2e
                                                           debootstrap $SUITE + apt packages (cached stage), then a
                                                           venv with containers/runner and \$EDGEBENCH_TOOLS/{fortio,
                                                           edgebench-netem-emu,edgebench-relay,edgebench-ddsrr
                                                           (this host's arch only)} (cached stage)
  nats                 edgebench.local/nats:${NATS_VERSION#v}        \$E2E/bin/nats-server (scripts/e2e-argo/build.sh)
  argo-events          edgebench.local/argo-events:$ARGO_EVENTS_VERSION
                                                           \$EDGEBENCH_TOOLS/argo-events (make events-tools) +
                                                           the host's /usr/share/zoneinfo (tzdata)

Environment:
  ARCH              the architecture to build (now ${ARCH:-$HOST_ARCH}); also --arch
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
Needs root, gcc with static glibc (libc6-dev), umoci, skopeo, debootstrap, apt-get, file;
for arm64 qemu-user-static and go.
EOF
}

main() {
  ARCH=${ARCH:-$HOST_ARCH}
  while [[ ${1:-} == --arch || ${1:-} == --arch=* ]]; do
    if [[ $1 == --arch ]]; then ARCH=${2:?--arch needs an architecture}; shift 2; else ARCH=${1#*=}; shift; fi
  done
  case $ARCH in # uname -m's names too
    x86_64) ARCH=amd64 ;;
    aarch64) ARCH=arm64 ;;
  esac
  check_arch "$ARCH"
  # the round-robin DDS pinger (C, linked against Debian's libddsc0debian, which the runner's cyclonedds-tools
  # brings): built by `make tools` for this host only; a foreign ARCH's runner records its runs as failed
  [[ $ARCH != "$HOST_ARCH" ]] || RUNNER_TOOLS+=(edgebench-ddsrr)
  # a cluster cell's pods (substrates ssh and kind) drive the target cluster with kubectl, and install cilium's chart
  # with helm: this host's Kubernetes build (build.sh --k8s) and helm (scripts/lab-local/cilium.sh), where built
  if [[ $ARCH == "$HOST_ARCH" ]]; then
    for t in "$E2E/bin/kubectl" "$(tools_dir)/helm"; do [[ -x $t ]] && RUNNER_EXTRA+=("$t"); done
  fi
  case ${1:-} in
    build) shift; cmd_build "$@" ;;
    list) shift; cmd_list "$@" ;;
    prove-arm64) shift; cmd_prove_arm64 "$@" ;;
    -h | --help | help) usage ;;
    "") usage >&2; exit 2 ;;
    *) warn "unknown command $1"; usage >&2; exit 2 ;;
  esac
}

main "$@"; exit # on one line: bash never reads past it, so editing this file cannot derail a running build
