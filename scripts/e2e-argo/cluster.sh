#!/usr/bin/env bash
# A single-node Kubernetes on this machine, without Docker, for the end-to-end Argo run (`make e2e-argo`):
# etcd (Debian), kube-apiserver / controller-manager / scheduler / kubelet / kube-proxy (scripts/e2e-argo/build.sh),
# containerd + runc (Debian) with the bridge CNI plugin (containernetworking-plugins), CoreDNS on the cluster DNS
# address. Every process, mount, interface and iptables chain it creates is removed by `down`.
#
#   cluster.sh up       start everything and wait for the node to be Ready (idempotent: an up cluster stays)
#   cluster.sh down     stop everything and remove all state (also after a crash)
#   cluster.sh status   which components run
#   cluster.sh env      print `export KUBECONFIG=...` for the admin kubeconfig
set -euo pipefail
E2E=${EDGEBENCH_E2E:-$HOME/.local/share/edgebench/e2e-argo}
BIN=$E2E/bin
RUN=${EDGEBENCH_E2E_RUN:-/var/lib/edgebench-e2e}   # cluster state (etcd, certs, kubelet, containerd)
SOCKDIR=/run/edgebench-e2e
NODE=edgebench-e2e
DUMMY=eb-e2e0                 # an empty bridge holding the node and cluster-DNS addresses
NODE_IP=10.250.0.1
DNS_IP=10.96.0.10
API_SVC_IP=10.96.0.1
SERVICE_CIDR=10.96.0.0/16
POD_CIDR=10.244.0.0/24
BRIDGE=eb-e2e-cni0
ETCD_PORT=23790
API_PORT=6443
COMPONENTS=(etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy coredns)

log() { echo "e2e-argo: $*" >&2; }
die() { echo "e2e-argo: error: $*" >&2; exit 1; }
pidfile() { echo "$RUN/pids/$1.pid"; }
running() { local p; p=$(cat "$(pidfile "$1")" 2>/dev/null) && kill -0 "$p" 2>/dev/null; }

start() {   # start NAME CMD...: in the background, logging to $RUN/logs/NAME.log
  local name=$1; shift
  if running "$name"; then return 0; fi
  setsid "$@" >"$RUN/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$(pidfile "$name")"
}

wait_for() {   # wait_for WHAT SECONDS CMD...
  local what=$1 secs=$2; shift 2
  local t0=$SECONDS
  until "$@" >/dev/null 2>&1; do
    (( SECONDS - t0 < secs )) || die "$what did not come up within ${secs}s (logs: $RUN/logs/)"
    sleep 1
  done
  log "$what up ($((SECONDS - t0)) s)"
}

KUBECTL=${KUBECTL:-$BIN/kubectl}
[[ -x $KUBECTL ]] || KUBECTL=$(command -v kubectl || echo "$BIN/kubectl")
kc() { "$KUBECTL" --kubeconfig "$RUN/pki/admin.kubeconfig" "$@"; }

pki() {
  local d=$RUN/pki
  [[ -e $d/.done ]] && return 0
  mkdir -p "$d"; cd "$d"
  log "certificates (openssl) in $d"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj "/CN=edgebench-e2e-ca" 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  cert() {   # cert NAME SUBJECT [SANS]
    local name=$1 subj=$2 sans=${3:-}
    openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null
    local ext; ext=$(mktemp)
    { echo "basicConstraints=CA:FALSE"; echo "keyUsage=digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=serverAuth,clientAuth"; [[ -n $sans ]] && echo "subjectAltName=$sans"; } > "$ext"
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" -days 30 \
      -extfile "$ext" 2>/dev/null
    rm -f "$ext" "$name.csr"
  }
  cert apiserver "/CN=kube-apiserver" \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$NODE_IP,IP:$API_SVC_IP"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  cert admin "/O=system:masters/CN=edgebench-e2e-admin"
  cert controller-manager "/CN=system:kube-controller-manager"
  cert scheduler "/CN=system:kube-scheduler"
  cert kubelet "/O=system:nodes/CN=system:node:$NODE" "DNS:$NODE,IP:$NODE_IP"
  cert kube-proxy "/CN=system:kube-proxy"
  cert coredns "/CN=edgebench-e2e-coredns"
  for who in admin controller-manager scheduler kubelet kube-proxy coredns; do
    cat > "$who.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "https://$NODE_IP:$API_PORT", certificate-authority: "$d/ca.crt"}
users:
- name: $who
  user: {client-certificate: "$d/$who.crt", client-key: "$d/$who.key"}
contexts:
- name: e2e
  context: {cluster: e2e, user: $who}
current-context: e2e
EOF
  done
  touch .done; cd - >/dev/null
}

network() {
  ip link show "$DUMMY" >/dev/null 2>&1 || {
    ip link add "$DUMMY" type bridge   # (no dummy module on every kernel; an empty bridge holds local addresses as well)
    ip addr add "$NODE_IP/32" dev "$DUMMY"
    ip addr add "$DNS_IP/32" dev "$DUMMY"
    ip link set "$DUMMY" up
  }
  sysctl -qw net.ipv4.ip_forward=1
  modprobe br_netfilter 2>/dev/null || true
  [[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] && sysctl -qw net.bridge.bridge-nf-call-iptables=1
  mkdir -p "$RUN/cni/net.d"
  cat > "$RUN/cni/net.d/10-edgebench-e2e.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "edgebench-e2e",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

containerd_config() {
  local cni_bin=/usr/lib/cni
  [[ -x $cni_bin/bridge ]] || cni_bin=/opt/cni/bin
  cat > "$RUN/containerd.toml" <<EOF
version = 2
root = "$RUN/containerd/root"
state = "$SOCKDIR/containerd"
[grpc]
  address = "$SOCKDIR/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "edgebench.local/pause:3.10"
  # the kubelet asks for negative OOM scores (-998 for sandboxes); a sandboxed host may refuse lowering them
  # (runc: "failed to update /proc/self/oom_score_adj: Permission denied"): clamp to containerd's own score
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$cni_bin"
    conf_dir = "$RUN/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
EOF
}

kubelet_config() {
  cat > "$RUN/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$RUN/pki/ca.crt"}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
clusterDNS: ["$DNS_IP"]
clusterDomain: cluster.local
containerRuntimeEndpoint: "unix://$SOCKDIR/containerd.sock"
failSwapOn: false
failCgroupV1: false
tlsCertFile: "$RUN/pki/kubelet.crt"
tlsPrivateKeyFile: "$RUN/pki/kubelet.key"
resolvConf: /etc/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
maxPods: 50
EOF
}

up() {
  [[ $(id -u) == 0 ]] || die "the e2e cluster needs root (network, mounts, containerd)"
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy coredns; do
    [[ -x $BIN/$b ]] || die "$BIN/$b is missing: run scripts/e2e-argo/build.sh (make e2e-argo builds it)"
  done
  [[ -x $KUBECTL ]] || die "kubectl is missing: run scripts/e2e-argo/build.sh"
  for b in etcd containerd runc; do command -v $b >/dev/null || die "$b is not installed (apt: etcd-server containerd runc)"; done
  mkdir -p "$RUN"/{pids,logs} "$SOCKDIR"
  pki; network; containerd_config; kubelet_config
  local t0=$SECONDS
  start etcd etcd --name e2e --data-dir "$RUN/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls http://127.0.0.1:23800 \
    --initial-advertise-peer-urls http://127.0.0.1:23800 --initial-cluster e2e=http://127.0.0.1:23800
  wait_for etcd 60 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
  start containerd containerd --config "$RUN/containerd.toml"
  local p=$RUN/pki
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --advertise-address "$NODE_IP" --bind-address 0.0.0.0 --secure-port "$API_PORT" \
    --service-cluster-ip-range "$SERVICE_CIDR" --allow-privileged=true \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --client-ca-file "$p/ca.crt" --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key" \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local --kubelet-preferred-address-types InternalIP
  wait_for kube-apiserver 120 kc get --raw /readyz
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$p/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$p/controller-manager.kubeconfig" --authorization-kubeconfig "$p/controller-manager.kubeconfig" \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --use-service-account-credentials --leader-elect=false --controllers '*,-cloud-node-lifecycle'
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$p/scheduler.kubeconfig" \
    --authentication-kubeconfig "$p/scheduler.kubeconfig" --authorization-kubeconfig "$p/scheduler.kubeconfig" \
    --leader-elect=false
  wait_for containerd 60 ctr -a "$SOCKDIR/containerd.sock" version
  "$(dirname "$0")/images.sh" import --address "$SOCKDIR/containerd.sock" || log "warning: some images are not imported (images.sh build)"
  start kubelet "$BIN/kubelet" --config "$RUN/kubelet.yaml" --kubeconfig "$p/kubelet.kubeconfig" \
    --root-dir "$RUN/kubelet" --hostname-override "$NODE" --node-ip "$NODE_IP"
  start kube-proxy "$BIN/kube-proxy" --kubeconfig "$p/kube-proxy.kubeconfig" --hostname-override "$NODE" \
    --proxy-mode iptables --cluster-cidr "${POD_CIDR%.*}.0/16" --conntrack-max-per-core 0
  cat > "$RUN/Corefile" <<EOF
.:53 {
    bind $DNS_IP
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $p/coredns.kubeconfig e2e
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
    cache 5
}
EOF
  start coredns "$BIN/coredns" -conf "$RUN/Corefile"
  wait_for "node $NODE Ready" 180 kc wait --for=condition=Ready "node/$NODE" --timeout=2s
  # CoreDNS reads Services, EndpointSlices, Namespaces and Pods cluster-wide (its identity is a client cert)
  kc create clusterrolebinding edgebench-e2e-coredns --clusterrole=view --user=edgebench-e2e-coredns \
    --dry-run=client -o yaml | kc apply -f - >/dev/null
  kc create clusterrole edgebench-e2e-coredns-slices --verb=list,watch --resource=endpointslices.discovery.k8s.io \
    --dry-run=client -o yaml | kc apply -f - >/dev/null
  kc create clusterrolebinding edgebench-e2e-coredns-slices --clusterrole=edgebench-e2e-coredns-slices \
    --user=edgebench-e2e-coredns --dry-run=client -o yaml | kc apply -f - >/dev/null
  log "single-node cluster up in $((SECONDS - t0)) s: export KUBECONFIG=$RUN/pki/admin.kubeconfig"
}

down() {
  log "stopping the e2e cluster and removing its state"
  # kill every container first (the kubelet would restart them); the loop below then stops the components
  if [[ -S $SOCKDIR/containerd.sock ]]; then
    for t in $(ctr -a "$SOCKDIR/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$SOCKDIR/containerd.sock" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
  fi
  local c
  for c in coredns kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver containerd etcd; do
    if running "$c"; then
      local p; p=$(cat "$(pidfile "$c")")
      kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
      for _ in $(seq 1 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
      kill -KILL -- "-$p" 2>/dev/null || true
    fi
  done
  # containerd-shim processes outlive containerd by design: kill the shims of this instance and their containers
  pkill -KILL -f "containerd-shim-runc-v2 .*-address $SOCKDIR/containerd.sock" 2>/dev/null || true
  kill_pod_cgroups
  [[ -x $BIN/kube-proxy ]] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
  # what kube-proxy --cleanup leaves: the kubelet's own chains (KUBE-FIREWALL drops non-loopback traffic to
  # 127.0.0.0/8 on the host!), the canaries and KUBE-IPTABLES-HINT, in both address families
  local ipt table chain n
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for table in filter nat mangle; do
      for chain in INPUT OUTPUT FORWARD PREROUTING POSTROUTING; do
        for n in $($ipt -t $table -L $chain -n --line-numbers 2>/dev/null | awk '$2 ~ /^KUBE-/ {print $1}' | sort -rn); do
          $ipt -t $table -D $chain "$n" 2>/dev/null || true
        done
      done
      for chain in $($ipt -t $table -S 2>/dev/null | awk '/^-N KUBE-/ {print $2}'); do $ipt -t $table -F "$chain" 2>/dev/null || true; done
      for chain in $($ipt -t $table -S 2>/dev/null | awk '/^-N KUBE-/ {print $2}'); do $ipt -t $table -X "$chain" 2>/dev/null || true; done
    done
  done
  # mounts below the state dirs (pod volumes, rootfs, netns bind mounts, shm), deepest first
  local m
  for m in $(awk -v a="$RUN" -v b="$SOCKDIR" '$2 ~ "^"a || $2 ~ "^"b {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  for m in $(awk '$2 ~ "^/run/netns/cni-" {print $2}' /proc/mounts); do umount -l "$m" 2>/dev/null || true; done
  rm -f /run/netns/cni-* 2>/dev/null || true
  local v
  for v in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$v" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  ip link del "$DUMMY" 2>/dev/null || true
  rm -rf /var/lib/cni/networks/edgebench-e2e /var/lib/cni/results/edgebench-e2e-* 2>/dev/null || true
  # iptables rules the bridge plugin's ipMasq added for the pod CIDR: POSTROUTING jumps to CNI-* chains (deleted by
  # rule number, last first, since their comments hold quotes), then the chains
  local n
  for n in $(iptables -t nat -L POSTROUTING -n --line-numbers 2>/dev/null | awk '$2 ~ /^CNI-/ {print $1}' | sort -rn); do
    iptables -t nat -D POSTROUTING "$n" 2>/dev/null || true
  done
  for ch in $(iptables -t nat -S 2>/dev/null | awk '/^-N CNI-/ {print $2}'); do
    iptables -t nat -F "$ch" 2>/dev/null || true; iptables -t nat -X "$ch" 2>/dev/null || true
  done
  rm -rf "$RUN" "$SOCKDIR"
  if leftovers >/dev/null; then log "down: nothing of the e2e cluster is left"
  else leftovers >&2; die "down: something of the e2e cluster is left (above)"; fi
}

# the kubelet's pod cgroups (kubepods, at the root of every hierarchy: its cgroup root is /): processes in them
# (pause, containers that outlived their shim, e.g. a nats-server reparented to PID 1) are killed, then the
# cgroups removed deepest first
cg_mounts() { awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/mounts; }
kill_pod_cgroups() {
  local h pids i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(for h in $(cg_mounts); do [[ -d $h/kubepods ]] && find "$h/kubepods" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -u)
    [[ -z $pids ]] && break
    kill -KILL $pids 2>/dev/null || true
    sleep 0.3
  done
  for h in $(cg_mounts); do [[ -d $h/kubepods ]] && find "$h/kubepods" -depth -type d -exec rmdir {} \; 2>/dev/null; done
  return 0
}

# what the cluster could leave on the machine, one line each; exit 1 if anything
leftovers() {
  local found=0 h c p v
  for h in $(cg_mounts); do
    [[ -d $h/kubepods ]] || continue
    echo "cgroup: $h/kubepods ($(find "$h/kubepods" -name cgroup.procs -exec cat {} + 2>/dev/null | wc -l) processes)"; found=1
  done
  for c in "${COMPONENTS[@]}" pause nats-server containerd-shim; do
    for p in $(pgrep -x "$c" 2>/dev/null || true); do
      # the local lab's nodes run their own: only processes outside the lab's cgroups count
      grep -q edgebench-lab "/proc/$p/cgroup" 2>/dev/null && continue
      # nor edgebench's Docker engine (scripts/kind/dockerd.sh: its containerd, kind nodes and their pods)
      grep -q edgebench-docker "/proc/$p/cgroup" 2>/dev/null && continue
      tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q /run/edgebench-docker && continue
      echo "process: $p $c"; found=1
    done
  done
  for v in $(ip -o link show type veth 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^veth' || true); do
    echo "interface: $v"; found=1
  done
  for v in "$BRIDGE" "$DUMMY"; do ip link show "$v" >/dev/null 2>&1 && { echo "interface: $v"; found=1; }; done
  awk -v a="$RUN" -v b="$SOCKDIR" '$2 ~ "^"a || $2 ~ "^"b {print "mount: " $2; f = 1} END {exit !f}' /proc/mounts && found=1
  [[ -d $RUN ]] && { echo "state: $RUN"; found=1; }
  return $((found))
}

status() {
  local c
  for c in "${COMPONENTS[@]}"; do if running "$c"; then echo "$c running"; else echo "$c stopped"; fi; done
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  leftovers) leftovers ;;
  env) echo "export KUBECONFIG=$RUN/pki/admin.kubeconfig" ;;
  -h|--help|help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: cluster.sh up|down|status|env (--help)" >&2; exit 2 ;;
esac
