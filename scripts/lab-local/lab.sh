#!/usr/bin/env bash
# The local lab (`make lab-local`): a control-plane node and workers on this machine, each a machine of its own as
# far as one kernel allows (node-init.sh): its own PID, mount, network, UTS, IPC and cgroup namespaces, its own
# /etc, /var/lib, /run, /opt/cni, hostname and cgroup parent (/edgebench-lab/<node> in every hierarchy), sshd
# with a generated key and a user `edgebench` with sudo - what the `ssh` substrate expects of a Pi lab. The nodes
# hang off one bridge (the emulated LAN; each node's uplink is the host-side veth eblab-<n>, where link conditions
# and rate limits apply as on the testbed). It writes an inventory in the Pi lab's format.
#
# The nodes share this machine's kernel and cores, and have no systemd (PID 1 here is not systemd): a minimal
# service supervisor (systemctl.py) answers the systemctl verbs the provider's steps use.
#
#   lab.sh up [N]        start N nodes (default 3: lab-cp, lab-w1, lab-w2); prints the inventory path
#   lab.sh down          stop every node and remove everything (processes, mounts, namespaces, veths, cgroups);
#                        refused while a live sweep holds the lab's lease (FORCE=1 overrides)
#   lab.sh status        the nodes and whether sshd answers
#   lab.sh exec NODE CMD run CMD inside a node (as root, in its namespaces and cgroup)
#   lab.sh leftovers     print what a lab left on this machine; exit 1 if anything
#   lab.sh env           print the variables a sweep needs (EDGEBENCH_INVENTORY, EDGEBENCH_SSH_KEY, EDGEBENCH_KNOWN_HOSTS)
#   lab.sh vm CMD ...    VM nodes with a kernel of their own (qemu, TCG): vm up x86:1,arm64:1 | down | status | ...
#                        (scripts/lab-local/vm.py --help); VMS=x86:1 lab.sh up [N] starts them after the N nodes
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LAB=${EDGEBENCH_LAB:-/srv/edgebench-lab}
BRIDGE=eblab0
NET=10.77.0
HOST_IP=$NET.1
CG=edgebench-lab
VM="python3 $HERE/vm.py"   # the VM nodes' lifecycle (vm.py: qemu argv, base image cache, taps, state)
export EDGEBENCH_LAB=$LAB
log() { echo "lab-local: $*" >&2; }
die() { echo "lab-local: error: $*" >&2; exit 2; }

node_names() {   # node_names N: lab-cp lab-w1 ... lab-w(N-1)
  local n=$1 i; echo lab-cp; for ((i = 1; i < n; i++)); do echo "lab-w$i"; done
}
hierarchies() {   # name and mount options of every cgroup hierarchy: "cpu cpu", "systemd none,name=systemd", "unified cgroup2"
  awk '$3 == "cgroup" {n = $2; sub(".*/", "", n); split($4, o, ","); opts = ""
         for (i in o) if (o[i] != "rw" && o[i] != "relatime" && o[i] != "nosuid" && o[i] != "nodev" && o[i] != "noexec")
           opts = opts (opts == "" ? "" : ",") o[i]
         if (opts ~ /^name=/) opts = "none," opts
         print n, opts}
       $3 == "cgroup2" {n = $2; sub(".*/", "", n); if ($2 != "/sys/fs/cgroup") print n, "cgroup2"}' /proc/mounts
}
# the directory of every cgroup hierarchy the lab's cgroups go below; EDGEBENCH_LAB_FREEZER_PARENT=G puts them below G
# in the freezer hierarchy (a machine shared with benchmarks that freeze G while they measure: the nodes pause too)
# (up keeps it in $LAB/freezer-parent for down and leftovers)
cg_dirs() {
  awk -v fp="${EDGEBENCH_LAB_FREEZER_PARENT:-$(cat "$LAB/freezer-parent" 2>/dev/null)}" '$3 == "cgroup" || $3 == "cgroup2" {
    d = $2; if (fp != "" && $4 ~ /(^|,)freezer(,|$)/) d = d "/" fp; print d}' /proc/mounts
}
join_cgroup() {   # join_cgroup NODE PID: PID into /edgebench-lab/NODE of every hierarchy
  local node=$1 pid=$2 h
  for h in $(cg_dirs); do
    [[ -d $h/$CG/$node ]] || continue
    echo "$pid" > "$h/$CG/$node/cgroup.procs"
  done
}
make_cgroups() {
  local node=$1 h
  for h in $(cg_dirs); do
    mkdir -p "$h/$CG/$node"
    if [[ -e $h/cpuset.cpus ]]; then   # cgroup v1 cpuset: a child needs cpus and mems before it takes a task
      cat "$h/cpuset.cpus" > "$h/$CG/cpuset.cpus"; cat "$h/cpuset.mems" > "$h/$CG/cpuset.mems"
      cat "$h/cpuset.cpus" > "$h/$CG/$node/cpuset.cpus"; cat "$h/cpuset.mems" > "$h/$CG/$node/cpuset.mems"
    fi
  done
}
init_pid() { cat "$LAB/nodes/$1/pid" 2>/dev/null; }
alive() { local p; p=$(init_pid "$1") && [[ -n $p ]] && kill -0 "$p" 2>/dev/null; }

node_exec() {   # node_exec NODE CMD...: CMD in the node's namespaces and cgroup
  local node=$1; shift
  alive "$node" || die "node $node is not running (lab.sh up)"
  local p; p=$(init_pid "$node")
  CGDIRS=$(cg_dirs) bash -c 'for h in $CGDIRS; do
             [[ -d $h/'"$CG/$node"' ]] && echo $$ > "$h/'"$CG/$node"'/cgroup.procs"; done
           exec "$@"' _ nsenter -t "$p" -a -- "$@"
}

up() {
  local n=${1:-3}
  [[ $(id -u) == 0 ]] || die "the lab needs root (namespaces, mounts, cgroups)"
  [[ $LAB != /tmp/* && $LAB != /run/* ]] || die "EDGEBENCH_LAB=$LAB: not below /tmp or /run (each node mounts its own)"
  (( n >= 2 )) || die "a lab needs at least 2 nodes (1 control plane + workers); got $n"
  (( n <= 9 )) || die "at most 9 nodes (2 cores here); got $n"
  for c in unshare nsenter ip sshd ssh ssh-keygen sudo python3; do
    command -v "$c" >/dev/null || die "$c is not installed (make lab-local installs openssh-server, sudo, util-linux)"
  done
  mkdir -p "$LAB/nodes"
  if [[ -n ${EDGEBENCH_LAB_FREEZER_PARENT:-} ]]; then
    [[ -d /sys/fs/cgroup/freezer/$EDGEBENCH_LAB_FREEZER_PARENT ]] ||
      die "EDGEBENCH_LAB_FREEZER_PARENT=$EDGEBENCH_LAB_FREEZER_PARENT: no such freezer cgroup"
    echo "$EDGEBENCH_LAB_FREEZER_PARENT" > "$LAB/freezer-parent"
  elif ! alive lab-cp; then rm -f "$LAB/freezer-parent"; fi
  # host-wide sysctls a CNI agent writes from a node (one kernel): kept to be restored by `down` (cilium sets
  # kernel.timer_migration=0; its kernel.unprivileged_bpf_disabled=1 cannot be undone before a reboot)
  [[ -e $LAB/host-sysctls ]] || echo "kernel.timer_migration=$(sysctl -n kernel.timer_migration 2>/dev/null || echo 1)" > "$LAB/host-sysctls"
  [[ -e $LAB/id_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -C edgebench-lab -f "$LAB/id_ed25519"
  chmod 600 "$LAB/id_ed25519"
  ip link show "$BRIDGE" >/dev/null 2>&1 || {
    ip link add "$BRIDGE" type bridge; ip addr add "$HOST_IP/24" dev "$BRIDGE"; ip link set "$BRIDGE" up; }
  # kube-proxy and the CNIs expect bridged traffic to pass the nodes' iptables; the host's own rules stay off it
  modprobe br_netfilter 2>/dev/null || true
  local names hosts="" i=0 node
  mapfile -t names < <(node_names "$n")
  for node in "${names[@]}"; do hosts+="$NET.$((11 + i)) $node"$'\n'; i=$((i + 1)); done
  hierarchies > "$LAB/cgroups"
  i=0
  for node in "${names[@]}"; do
    local addr=$NET.$((11 + i)) st=$LAB/nodes/$node veth=eblab-$i
    i=$((i + 1))
    if alive "$node"; then log "$node already up ($addr)"; continue; fi
    mkdir -p "$st"; rm -f "$st/ready"; cp "$LAB/cgroups" "$st/cgroups"
    # the node mounts its own /tmp and /run: what it needs from this checkout (which may live there) is copied first
    install -m 755 "$HERE/systemctl.py" "$st/systemctl.py"
    make_cgroups "$node"
    # the new process joins the node's cgroup first, so its cgroup namespace is rooted there. The cgroup directories
    # are read here, not in the background job: a command substitution there forks children of $outer, which the
    # pgrep below could take for the node's init (in this machine's network namespace: "File exists" for eth0)
    local cgdirs; cgdirs=$(cg_dirs)
    CGDIRS=$cgdirs setsid bash -c 'for h in $CGDIRS; do
                      echo $$ > "$h/'"$CG/$node"'/cgroup.procs"; done
                    exec unshare --fork --pid --mount --net --uts --ipc --cgroup --propagation private \
                      "$0" "$@"' "$HERE/node-init.sh" "$node" "$st" "$addr" "$(cat "$LAB/id_ed25519.pub")" \
      "$hosts" "$st/systemctl.py" > "$st/init.log" 2>&1 < /dev/null &
    local outer=$! p=""
    # the node's init: $outer's child once it lives in a network namespace of its own (before, it is not the node)
    local here_net net; here_net=$(readlink /proc/$$/ns/net)
    for _ in $(seq 1 300); do
      p=$(pgrep -P "$outer" 2>/dev/null | head -1) || true   # nothing yet: pgrep fails (pipefail)
      net=$( [[ -n $p ]] && readlink "/proc/$p/ns/net" 2>/dev/null) || net=""
      [[ -n $net && $net != "$here_net" ]] && break
      p=""; sleep 0.1
    done
    [[ -n $p ]] || die "$node did not start: $(tail -n 3 "$st/init.log" 2>/dev/null | tr '\n' ' ')(log: $st/init.log)"
    echo "$p" > "$st/pid"
    ip link del "$veth" 2>/dev/null || true
    ip link add "$veth" type veth peer name eth0 netns "$p"
    ip link set "$veth" master "$BRIDGE" up
    nsenter -t "$p" -n sh -c "ip link set lo up && ip addr add $addr/24 dev eth0 && ip link set eth0 up && ip route add default via $HOST_IP"
    for _ in $(seq 1 600); do [[ -e $st/ready ]] && break; kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    [[ -e $st/ready ]] || die "$node did not come up: $(tail -n 3 "$st/init.log" 2>/dev/null | tr '\n' ' ')(log: $st/init.log)"
    log "$node up: $addr (PID $p, cgroup /$CG/$node, uplink $veth)"
  done
  inventory "${names[@]}"
  for node in "${names[@]}"; do wait_ssh "$node"; done
  # every `up` gives the nodes new host keys: pin this lab's in a known_hosts of its own (the sweep's --known-hosts),
  # or the user's ~/.ssh/known_hosts, which accepted the previous lab's keys for the same addresses, refuses them
  : > "$LAB/known_hosts"
  for node in "${names[@]}"; do
    echo "$(node_addr "$node") $(cut -d' ' -f1-2 "$LAB/nodes/$node/host_ed25519.pub")" >> "$LAB/known_hosts"
  done
  log "inventory: $LAB/inventory.yaml; key: $LAB/id_ed25519; host keys: $LAB/known_hosts"
  if [[ -n ${VMS:-} ]]; then $VM up "$VMS"; fi   # VM nodes join the inventory as agents
}

node_addr() { awk -v n="$1" '$2 == n {print $1}' <(grep -E '^[0-9]' "$LAB/hosts" 2>/dev/null); }

inventory() {
  local i=0 node role
  : > "$LAB/hosts"
  {
    echo "# written by scripts/lab-local/lab.sh: the local lab's nodes share this machine's kernel and cores"
    echo "target: lab-local"
    echo "artifact_source: http://$HOST_IP:8089   # the lab's mirror (mirror.sh serve $HOST_IP), for sweeps and Argo"
    echo "nodes:"
    for node in "$@"; do
      role=agent; [[ $i == 0 ]] && role=server
      echo "  - {name: $node, address: $NET.$((11 + i)), arch: $(dpkg --print-architecture), role: $role, user: edgebench, port: 22}"
      echo "$NET.$((11 + i)) $node" >> "$LAB/hosts"
      i=$((i + 1))
    done
  } > "$LAB/inventory.yaml"
}

wait_ssh() {
  local node=$1 addr; addr=$(node_addr "$node")
  for _ in $(seq 1 50); do
    ssh -i "$LAB/id_ed25519" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
      -o ConnectTimeout=2 -o LogLevel=ERROR "edgebench@$addr" -- sudo -n true 2>/dev/null && return 0
    sleep 0.2
  done
  die "sshd on $node ($addr) does not answer (see $LAB/nodes/$node/init.log and its /var/log/sshd.log)"
}

# held_by: the live holder of the lab's lease (substrates/clusters/lease.py: /var/lib/edgebench/lab.lease on lab-cp,
# renewed by the sweep that drives the lab), or nothing when the lab is free, down, or the lease has lapsed
held_by() {
  alive lab-cp || return 0
  node_exec lab-cp sh -c 'f=/var/lib/edgebench/lab.lease; [ -f $f ] || exit 0
    exp=$(sed -n "s/^expires=//p" $f); now=$(date +%s)
    [ "${exp:-0}" -gt "$now" ] && echo "$(sed -n "s/^holder=//p" $f) (lease lapses in $((exp - now)) s unless renewed)"' \
    2>/dev/null || true
}

down() {
  local node p holder
  holder=$(held_by)
  if [[ -n $holder && ${FORCE:-0} != 1 ]]; then
    die "the lab is in use by $holder: stop that sweep first (it tears its cluster down), or FORCE=1 $0 down"
  fi
  [[ -z $holder ]] || log "FORCE=1: removing the lab under its holder $holder"
  $VM down || log "down: the VM nodes were not all removed (vm.py down, above)"
  for d in "$LAB"/nodes/*/; do
    [[ -d $d ]] || continue
    node=$(basename "$d")
    p=$(init_pid "$node" || true)
    # PID 1 of the node's PID namespace: when it dies, the kernel kills every process of the node
    [[ -n ${p:-} ]] && kill -KILL "$p" 2>/dev/null || true
  done
  # processes that entered a node's cgroup without its PID namespace (lab.sh exec of an old lab): kill them too
  local h t
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    local left=0
    for h in $(cg_dirs); do
      [[ -d $h/$CG ]] || continue
      for t in $(find "$h/$CG" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -KILL "$t" 2>/dev/null || true; left=1; done
    done
    (( left )) || break
    sleep 0.3
  done
  for h in $(cg_dirs); do
    [[ -d $h/$CG ]] && find "$h/$CG" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  for v in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^eblab-' || true); do
    ip link del "$v" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  "$HERE/mirror.sh" serve-stop 2>/dev/null || true
  # the nodes' state (overlay upper dirs, containerd's images, etcd); the mirror and the key stay (cached)
  local m
  for m in $(awk -v l="$LAB/nodes" 'index($2, l) == 1 {print $2}' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$LAB/nodes" "$LAB/hosts" "$LAB/inventory.yaml" "$LAB/cgroups" "$LAB/known_hosts"
  if [[ -e $LAB/host-sysctls ]]; then   # what a CNI agent changed on the shared kernel (up kept the values)
    sysctl -q -p "$LAB/host-sysctls" >/dev/null 2>&1 || log "down: could not restore $(tr '\n' ' ' < "$LAB/host-sysctls")"
    rm -f "$LAB/host-sysctls"
  fi
  if leftovers >/dev/null; then log "down: nothing of the lab is left"
  else leftovers; die "down: something of the lab is left (above)"; fi
}

leftovers() {   # what the lab leaves on the machine: one line per thing; exit 1 if anything
  local found=0 h
  for h in $(cg_dirs); do
    [[ -d $h/$CG ]] || continue
    echo "cgroup: $h/$CG ($(find "$h/$CG" -name cgroup.procs -exec cat {} + 2>/dev/null | wc -l) processes)"; found=1
  done
  local v
  for v in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^(eblab-[0-9]|$BRIDGE$)" || true); do
    echo "interface: $v"; found=1
  done
  $VM leftovers || found=1   # qemu processes, taps (eblab-v*), overlays and state of VM nodes
  local m
  for m in $(awk -v l="$LAB" 'index($2, l) == 1 {print $2}' /proc/mounts); do echo "mount: $m"; found=1; done
  local p
  for p in $(pgrep -f "$HERE/node-init.sh|$LAB/nodes/.*/systemctl.py" || true); do echo "process: $p $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)"; found=1; done
  [[ -d $LAB/nodes ]] && { echo "state: $LAB/nodes"; found=1; }
  return $((found))
}

status() {
  local node
  if [[ -e $LAB/hosts ]]; then
    while read -r addr node; do
      if alive "$node"; then echo "$node $addr up (PID $(init_pid "$node"))"; else echo "$node $addr down"; fi
    done < "$LAB/hosts"
  else echo "no lab (lab.sh up)"; fi
  [[ ! -d $LAB/vms ]] || $VM status
}

case ${1:-} in
  up) shift; up "$@" ;;
  down) down ;;
  status) status ;;
  exec) shift; [[ $# -ge 2 ]] || die "usage: lab.sh exec NODE CMD..."; node_exec "$@" ;;
  leftovers) leftovers ;;
  vm) shift; exec $VM "$@" ;;
  env) echo "export EDGEBENCH_INVENTORY=$LAB/inventory.yaml EDGEBENCH_SSH_KEY=$LAB/id_ed25519 EDGEBENCH_KNOWN_HOSTS=$LAB/known_hosts" ;;
  -h|--help|help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: lab.sh up [N]|down|status|exec NODE CMD|leftovers|env|vm CMD (--help)" >&2; exit 2 ;;
esac
