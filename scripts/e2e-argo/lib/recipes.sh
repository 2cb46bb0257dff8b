# images.sh, sourced: the recipe of each image (Argo, MinIO and mc, NATS, Argo Events, the runner's two
# cached stages).
# shellcheck shell=bash

# ---- the images --------------------------------------------------------------------------------------------------

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
  if ! debootstrap_root "$root" "$mirror" "$w/debootstrap.log"; then
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
  for t in "${RUNNER_TOOLS[@]}"; do install -m 0755 "$(tools_dir)/$t" "$root/usr/local/bin/$t"; done
  for t in "${RUNNER_EXTRA[@]}"; do install -m 0755 "$t" "$root/usr/local/bin/$(basename "$t")"; done
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
    if [[ $ARCH != "$HOST_ARCH" && ${cmd[0]} == nft ]]; then # any nft command opens a netfilter socket first
      say "runner:   $c: not run under qemu (qemu-user has no NETLINK_NETFILTER sockets):" \
        "$(file -b "$root/usr/sbin/nft" | cut -d, -f1-2)"
      continue
    fi
    out=$(in_chroot "$root" "${cmd[@]}" 2>&1) || die "runner: $c fails in the image: $out"
    say "runner:   $c: ${out%%$'\n'*}"
  done
  out=$(in_chroot "$root" ddsperf help 2>&1) || true # ddsperf has no version option and its help exits 3
  [[ $out == "ddsperf help"* ]] || die "runner: ddsperf does not run in the image: $out"
  say "runner:   ddsperf help: ${out%%$'\n'*}"
  chroot_leave
  rm -rf "$root/src" "$root"/tmp/* "$root"/root/.cache
  : >"$root/etc/resolv.conf"
  finish_bundle "$tag" "$w/bundle" --history.created_by "edgebench venv (containers/runner), ${RUNNER_TOOLS[*]} ${RUNNER_EXTRA[*]##*/}"
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
