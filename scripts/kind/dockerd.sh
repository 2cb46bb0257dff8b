#!/usr/bin/env bash
# A Docker engine of edgebench's own on a machine whose PID 1 is not systemd, for kind (issue 44, first step; run
# here 2026-11-28: `up` about 1 s, a privileged container started, `PURGE=1 down` 3.8 s and nothing left;
# docs/substrates.md, "kind on this machine").
# Debian's docker.io (dockerd 20.10.24, containerd 1.6.20, runc 1.1.5), its own data and exec roots, its own cgroup
# parent, and runc-capdrop (beside this file) as the default OCI runtime, so that `docker run --privileged` (kind's
# nodes) works although this machine's capability bounding set lacks CAP_SYS_RESOURCE. Everything it starts or
# creates is removed by `down`, which leaves the image cache (data root) unless PURGE=1.
#
#   dockerd.sh install    apt: docker.io without starting it (policy-rc.d), the wrapper into $WRAPPER
#   dockerd.sh up         start dockerd (idempotent) and wait for `docker info`; prints the DOCKER_HOST to use
#   dockerd.sh down       stop every container, remove networks, stop dockerd, remove what it left (PURGE=1: images too)
#   dockerd.sh status     running or not, and `docker info`'s security options / runtimes
#   dockerd.sh leftovers  what an engine left on this machine; exit 1 if anything
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${EDGEBENCH_DOCKER_DATA:-/var/lib/edgebench-docker}    # images, containers, volumes (kept by down)
RUN=${EDGEBENCH_DOCKER_RUN:-/run/edgebench-docker}          # exec root: the managed containerd, netns, pid file
SOCK=${EDGEBENCH_DOCKER_SOCK:-/var/run/docker.sock}        # the default socket: kind and the runner call plain `docker`
CGROUP_PARENT=/edgebench-docker                            # every container under /edgebench-docker in each hierarchy
POOL=${EDGEBENCH_DOCKER_POOL:-172.30.0.0/16}               # address pool of user networks (kind's "kind" network)
WRAPPER=${EDGEBENCH_DOCKER_WRAPPER:-/usr/local/lib/edgebench/runc-capdrop}  # where `install` puts runc-capdrop
IPTABLES=${EDGEBENCH_DOCKER_IPTABLES:-true}                # false: no DOCKER chains on the host (untested: Docker's embedded DNS may need them)
LOG=$RUN.log                                               # beside the exec root: survives its removal
STATE=$DATA/.edgebench                                     # what up found, restored by down (FORWARD policy, sysctls)
log() { echo "dockerd: $*" >&2; }
die() { echo "dockerd: error: $*" >&2; exit 1; }
dk() { docker -H "unix://$SOCK" "$@"; }
pid() { cat "$RUN/dockerd.pid" 2>/dev/null; }
running() { local p; p=$(pid) && [[ -n $p ]] && kill -0 "$p" 2>/dev/null; }

install() {
  [[ $(id -u) == 0 ]] || die "needs root"
  if ! command -v dockerd >/dev/null; then
    # the package's maintainer scripts must not start a default dockerd (/var/lib/docker, docker0): a
    # policy-rc.d that refuses, only if there is none, removed afterwards
    local prc=/usr/sbin/policy-rc.d made=0
    if [[ ! -e $prc ]]; then printf '#!/bin/sh\nexit 101\n' >"$prc"; chmod 0755 "$prc"; made=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io || { ((made)) && rm -f "$prc"; die "apt-get install docker.io failed"; }
    ((made)) && rm -f "$prc"
  fi
  command install -D -m 0755 "$HERE/runc-capdrop" "$WRAPPER"
}

config() {
  mkdir -p "$RUN" "$DATA"
  cat >"$RUN/daemon.json" <<EOF
{
  "data-root": "$DATA",
  "exec-root": "$RUN",
  "pidfile": "$RUN/dockerd.pid",
  "hosts": ["unix://$SOCK"],
  "storage-driver": "overlay2",
  "exec-opts": ["native.cgroupdriver=cgroupfs"],
  "cgroup-parent": "$CGROUP_PARENT",
  "default-cgroupns-mode": "private",
  "runtimes": {"edgebench-runc": {"path": "$WRAPPER"}},
  "default-runtime": "edgebench-runc",
  "default-address-pools": [{"base": "$POOL", "size": 24}],
  "bridge": "none",
  "iptables": $IPTABLES,
  "ip-forward": true,
  "live-restore": false,
  "log-driver": "json-file",
  "log-opts": {"max-size": "20m", "max-file": "2"},
  "features": {"buildkit": false}
}
EOF
}

up() {
  [[ $(id -u) == 0 ]] || die "needs root"
  command -v dockerd >/dev/null || die "dockerd is not installed: dockerd.sh install"
  [[ -x $WRAPPER ]] || die "$WRAPPER is missing: dockerd.sh install"
  if running; then log "already running (pid $(pid))"; return 0; fi
  if [[ -S $SOCK ]] && docker -H "unix://$SOCK" info >/dev/null 2>&1; then die "another engine answers on $SOCK"; fi
  config
  # remember what dockerd may change on the host, for down
  mkdir -p "$STATE"
  iptables -S FORWARD 2>/dev/null | awk '$1 == "-P" {print $3}' >"$STATE/forward-policy" || true
  for s in net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables; do
    sysctl -n "$s" 2>/dev/null >"$STATE/$s" || rm -f "$STATE/$s"
  done
  # cpuset: a cgroup v1 child needs cpus and mems before it takes a task (runc copies them for the container's
  # own cgroup; the parent is created here so that its values are the root's)
  local h
  for h in $(awk '$3 == "cgroup" {print $2}' /proc/mounts); do
    mkdir -p "$h$CGROUP_PARENT"
    if [[ -e $h/cpuset.cpus ]]; then
      cat "$h/cpuset.cpus" >"$h$CGROUP_PARENT/cpuset.cpus"; cat "$h/cpuset.mems" >"$h$CGROUP_PARENT/cpuset.mems"
    fi
  done
  log "starting dockerd (data $DATA, exec root $RUN, socket $SOCK; log $LOG)"
  # PATH: the package's binaries (dockerd, containerd, containerd-shim-runc-v2, runc, docker-proxy, docker-init)
  PATH=/usr/sbin:/usr/bin:/sbin:/bin setsid dockerd --config-file "$RUN/daemon.json" >"$LOG" 2>&1 </dev/null &
  local t0=$SECONDS
  until dk info >/dev/null 2>&1; do
    ((SECONDS - t0 < 60)) || die "dockerd did not answer within 60 s (log: $LOG)"
    sleep 1
  done
  log "up in $((SECONDS - t0)) s (pid $(pid)); default runtime: $(dk info -f '{{.DefaultRuntime}}')"
  [[ $SOCK == /var/run/docker.sock ]] || echo "export DOCKER_HOST=unix://$SOCK"
}

# pids of this engine's containerd and shims: their command line names $RUN's containerd socket
engine_pids() {
  local p
  for p in /proc/[0-9]*; do
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF "$RUN/containerd/containerd.sock" && echo "${p#/proc/}"
  done
  return 0
}
cg_dirs() { awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/mounts; }

down() {
  log "stopping the engine and removing what it left"
  if running; then
    # kind clusters first (their nodes' systemd stops on SIGRTMIN+3), then whatever else runs
    if command -v kind >/dev/null; then
      local c
      for c in $(DOCKER_HOST=unix://$SOCK kind get clusters 2>/dev/null); do DOCKER_HOST=unix://$SOCK kind delete cluster --name "$c" || true; done
    fi
    local ids; ids=$(dk ps -aq 2>/dev/null || true)
    [[ -n $ids ]] && dk rm -f -v $ids >/dev/null 2>&1 || true
    dk network prune -f >/dev/null 2>&1 || true
    dk volume prune -f >/dev/null 2>&1 || true
    local p; p=$(pid)
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$p" 2>/dev/null || true
  fi
  # the managed containerd and shims that outlived dockerd, by pid (their command line names this engine's socket)
  local p
  for p in $(engine_pids); do kill -KILL "$p" 2>/dev/null || true; done
  # processes still in the engine's cgroups (a node's systemd, kubelet, pods), then the cgroups, deepest first
  local h pids i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(for h in $(cg_dirs); do
             if [[ -d $h$CGROUP_PARENT ]]; then find "$h$CGROUP_PARENT" -name cgroup.procs -exec cat {} + 2>/dev/null; fi
           done | sort -u)
    [[ -z $pids ]] && break
    kill -KILL $pids 2>/dev/null || true
    sleep 0.3
  done
  for h in $(cg_dirs); do
    if [[ -d $h$CGROUP_PARENT ]]; then find "$h$CGROUP_PARENT" -depth -type d -exec rmdir {} \; 2>/dev/null || true; fi
  done
  # mounts below the data and exec roots (overlay2 merged dirs, netns files, shm), deepest first
  local m
  for m in $(awk -v a="$DATA" -v b="$RUN" 'index($2, a) == 1 || index($2, b) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  # interfaces: the bridges of its networks (br-<12 hex>, docker0 if ever made) and veths still attached to them
  local br v
  for br in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^(br-[0-9a-f]{12}|docker0)$' || true); do
    for v in $(ip -o link show master "$br" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do ip link del "$v" 2>/dev/null || true; done
    ip link del "$br" 2>/dev/null || true
  done
  # iptables: the jumps into DOCKER* chains and the MASQUERADE rules for its pool, then the chains
  local ipt table chain n
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for table in filter nat; do
      for chain in INPUT OUTPUT FORWARD PREROUTING POSTROUTING; do
        for n in $($ipt -t $table -L $chain -n --line-numbers 2>/dev/null \
                   | awk -v pool="${POOL%%/*}" '$2 ~ /^DOCKER/ || ($2 == "MASQUERADE" && index($0, substr(pool, 1, 7))) {print $1}' | sort -rn); do
          $ipt -t $table -D $chain "$n" 2>/dev/null || true
        done
      done
      for chain in $($ipt -t $table -S 2>/dev/null | awk '/^-N DOCKER/ {print $2}'); do $ipt -t $table -F "$chain" 2>/dev/null || true; done
      for chain in $($ipt -t $table -S 2>/dev/null | awk '/^-N DOCKER/ {print $2}'); do $ipt -t $table -X "$chain" 2>/dev/null || true; done
    done
  done
  # what dockerd changed on the host
  [[ -s $STATE/forward-policy ]] && iptables -P FORWARD "$(cat "$STATE/forward-policy")" 2>/dev/null || true
  local s
  for s in net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables; do
    [[ -s $STATE/$s ]] && sysctl -qw "$s=$(cat "$STATE/$s")" 2>/dev/null || true
  done
  rm -rf "$RUN"
  if [[ ${PURGE:-0} == 1 ]]; then rm -rf "$DATA"; else rm -rf "$STATE"; fi
  if leftovers >/dev/null; then log "down: nothing of the engine is left"
  else leftovers >&2; die "down: something of the engine is left (above)"; fi
}

leftovers() {
  local found=0 p h v
  for p in $(engine_pids); do echo "process: $p $(tr '\0' ' ' </proc/$p/cmdline | cut -c1-80)"; found=1; done
  p=$(pid) && [[ -n $p ]] && kill -0 "$p" 2>/dev/null && { echo "process: $p dockerd"; found=1; }
  for h in $(cg_dirs); do
    [[ -d $h$CGROUP_PARENT ]] || continue
    echo "cgroup: $h$CGROUP_PARENT ($(find "$h$CGROUP_PARENT" -name cgroup.procs -exec cat {} + 2>/dev/null | wc -l) processes)"; found=1
  done
  awk -v a="$DATA" -v b="$RUN" 'index($2, a) == 1 || index($2, b) == 1 {print "mount: " $2; f = 1} END {exit !f}' /proc/mounts && found=1
  for v in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^(br-[0-9a-f]{12}|docker0)$' || true); do
    echo "interface: $v"; found=1
  done
  iptables -S 2>/dev/null | grep -q '^-N DOCKER' && { echo "iptables: DOCKER chains (filter)"; found=1; }
  iptables -t nat -S 2>/dev/null | grep -q '^-N DOCKER' && { echo "iptables: DOCKER chains (nat)"; found=1; }
  [[ -d $RUN ]] && { echo "state: $RUN"; found=1; }
  return $((found))
}

status() {
  if running; then
    echo "dockerd running (pid $(pid), socket $SOCK)"
    dk info -f 'runtimes: {{range $k, $v := .Runtimes}}{{$k}} {{end}}default: {{.DefaultRuntime}} cgroup: {{.CgroupDriver}} v{{.CgroupVersion}}'
  else
    echo "dockerd stopped"
  fi
}

case ${1:-} in
  install) install ;;
  up) up ;;
  down) down ;;
  status) status ;;
  leftovers) leftovers ;;
  *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
