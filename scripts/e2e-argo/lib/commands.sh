# images.sh, sourced: building one image (build_one) and the commands build and list.
# shellcheck shell=bash

# build_one NAME: in a subshell of its own (set -e, traps); returns non-zero when NAME could not be built
build_one() {
  local name=$1 tar stamp w=$WORK/$1-$ARCH inputs key t0=$SECONDS
  tar=$(tar_of "$1") stamp=$(tar_of "$1").inputs
  # also what debootstrap's second stage mounts in a foreign root (when it is interrupted)
  # shellcheck disable=SC2064 # w is fixed now
  trap "chroot_leave; if [[ -d '$w' ]]; then unmount_below '$w'; fi" EXIT
  trap 'exit 130' INT TERM
  if ! arch_has_recipe "$name"; then
    warn "$name: no recipe for $ARCH (for $ARCH: $(arch_names | xargs))"
    return 1
  fi
  if ! inputs=$(inputs_of "$name"); then
    warn "$name: not built, an input is missing (above)"
    return 1
  fi
  key=$(image_key "$name" "$inputs")
  if [[ -s $tar && -f $stamp && $(head -n1 "$stamp") == "key $key" ]]; then
    say "$name: up to date ($tar)"
    return 0
  fi
  say "$name: building $(ref_of "$name") for $ARCH"
  rm -f "$stamp"
  safe_rm "$w"
  mkdir -p "$w"
  case $name in
    workflow-controller | argoexec) recipe_argo "$name" "$w" ;;
    minio | mc) recipe_tool "$name" "$w" ;;
    runner) recipe_runner "$w" "$(sed -n '/^venv /q;/^arch /!p' <<<"$inputs")" ;;
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
  local names=() n rc failed=() t0=$SECONDS default=core
  [[ $ARCH == "$HOST_ARCH" ]] || default=$(arch_names | xargs)
  mapfile -t names < <(expand_names "${@:-$default}")
  check_names "${names[@]}"
  ((EUID == 0)) || die "build needs root (chroot, mount, file owners in the layers)"
  need umoci skopeo gcc readelf findmnt flock file
  for n in "${names[@]}"; do if [[ $n == runner ]]; then need debootstrap chroot; fi; done
  mkdir -p "$IMAGES" "$WORK" "$CACHE"
  exec 9>"$IMAGES/.lock"
  flock -n 9 || die "another images.sh build holds $IMAGES/.lock"
  [[ -e $LAYOUT/index.json ]] || umoci init --layout "$LAYOUT"
  if [[ $ARCH != "$HOST_ARCH" ]]; then
    ensure_emulation
    for n in "${names[@]}"; do if [[ $n == runner ]]; then cross_tools; fi; done
  fi
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
  say "images ($ARCH) ready in $IMAGES ($((SECONDS - t0)) s); make up loads them into kind (kind load image-archive)"
}

cmd_list() {
  local n tar stamp state inputs
  (($# == 0)) || die "list takes no arguments"
  printf '%-20s %-44s %-9s %-6s %s\n' NAME IMAGE STATE GROUP TARBALL
  for n in "${NAMES[@]}"; do
    tar=$(tar_of "$n") stamp=$(tar_of "$n").inputs state=missing
    if ! arch_has_recipe "$n"; then
      state=no-recipe
    elif [[ -s $tar && -f $stamp ]]; then
      state=cached
      if inputs=$(inputs_of "$n" 2>/dev/null) && [[ $(head -n1 "$stamp") != "key $(image_key "$n" "$inputs")" ]]; then
        state=stale
      fi
    fi
    printf '%-20s %-44s %-9s %-6s %s\n' "$n" "$(ref_of "$n")" "$state" "$(group_of "$n")" "$tar"
  done
}
