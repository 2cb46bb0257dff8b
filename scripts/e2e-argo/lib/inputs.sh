# images.sh, sourced: what each image is made of (its stamp, one input per line) and its key.
# shellcheck shell=bash

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
          declare -f stage_runner_base debootstrap_root; } | sum)
  echo "runner-base-$ARCH-${key:0:16}"
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
  echo "runner-venv-$ARCH-${key:0:16}"
}

inputs_runner_venv() {
  local t dir
  dir=$(tools_dir)
  echo "base $(runner_base_tag)"
  echo "sources $(runner_sources_sum)"
  for t in "${RUNNER_TOOLS[@]}"; do
    check_binary "$dir/$t" || return 1
    echo "$t $(file_sum "$dir/$t")"
  done
  for t in "${RUNNER_EXTRA[@]}"; do echo "$(basename "$t") $(file_sum "$t")"; done
}

inputs_of() {
  echo "arch $ARCH"
  case $1 in
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
    workflow-controller | argoexec) fns+=(recipe_argo add_base_files install_binary) ;;
    minio | mc) fns+=(recipe_tool add_base_files install_binary add_busybox) ;;
    runner) fns+=(recipe_runner) ;;
    nats) fns+=(recipe_nats add_base_files install_binary) ;;
    argo-events) fns+=(recipe_argo_events add_base_files install_binary) ;;
  esac
  { echo "$2"; declare -f "${fns[@]}"; } | sum
}
