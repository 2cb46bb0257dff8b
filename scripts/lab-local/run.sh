#!/usr/bin/env bash
# `make lab-local`: real CNIs on a real multi-node kubeadm cluster on this machine, through the `ssh` substrate.
#   1. build (once, cached) Kubernetes (scripts/e2e-argo/build.sh), etcd, CoreDNS, flanneld, kube-router, the CNI
#      plugins, fortio (build.sh), the runner image (scripts/e2e-argo/images.sh) and the artifact mirror (mirror.sh);
#   2. start the lab's nodes (lab.sh up: 1 control plane + 2 workers) and serve the mirror on the lab's LAN;
#   3. run the sweep from this machine through the ssh provider (`edgebench sweep -p substrate=ssh`): per cell,
#      kubeadm over SSH from the mirror, the CNI from its mirrored manifest, the default sweep's workloads in real
#      pods, teardown; then the same cells on the namespace testbed (`--local`) for the emulation-vs-real table;
#   4. build the warehouse; stop everything (lab.sh down checks that nothing is left), also on failure.
# KEEP=1 leaves the lab up; LAB_ONLY=1 builds, starts the lab and its mirror, and leaves it up without a sweep (for
# make papers-lab or make lab-argo). CNIS, REPS, SWEEP_ID, SKIP_TESTBED=1, SWEEP_ARGS (e.g. --cell-by-cell: one cluster per
# cell instead of one per cell and round) change the sweep; RUNNER_TAR=FILE takes that runner image. Stage times: .edgebench/lab-local/report.json.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
EB=${EB:-$REPO/.venv/bin/edgebench}
LAB=${EDGEBENCH_LAB:-/srv/edgebench-lab}
CNIS=${CNIS:-'["host","flannel:vxlan","flannel:host-gw","kube-router:bgp","cilium:vxlan","calico:bgp"]'}
REPS=${REPS:-3}
SWEEP_ID=${SWEEP_ID:-lab-local-kubeadm}
REPORT=$REPO/.edgebench/lab-local/report.json
E2E=${EDGEBENCH_E2E:-$HOME/.local/share/edgebench/e2e-argo}
export PATH=$E2E/bin:$PATH   # kubectl (the provider runs it on the runner, here) from the Kubernetes build
mkdir -p "$(dirname "$REPORT")"
t_start=$SECONDS
declare -A T
step() { echo "lab-local: == $* ($((SECONDS - t_start)) s)"; }
timed() { local name=$1 t0=$SECONDS; shift; "$@"; T[$name]=$((SECONDS - t0)); }
[[ $(id -u) == 0 ]] || { echo "lab-local: error: needs root (namespaces, containerd, kubelet)" >&2; exit 1; }

step "build binaries (cached after the first run)"
timed build_k8s "$REPO/scripts/e2e-argo/build.sh" --k8s
timed build_lab "$HERE/build.sh"
step "build the runner image and the artifact mirror (cached after the first run)"
if [[ -z ${RUNNER_TAR:-} ]]; then timed build_runner "$REPO/scripts/e2e-argo/images.sh" build runner; fi
timed build_mirror "$HERE/mirror.sh" build
# the sweeps run as children this script waits for: an interrupt (Ctrl-C, kill, a closed terminal) stops the running
# one (SIGTERM: it tears its cell down and gives the lab's lease back) instead of leaving it driving the lab alone
child=
stop_child() { if [[ -n $child ]] && kill -0 "$child" 2>/dev/null; then kill -TERM "$child"; wait "$child" || true; fi; }
trap 'stop_child; exit 130' INT TERM HUP
[[ ${LAB_ONLY:-0} == 1 ]] && KEEP=1
# our own sweep is gone by then, so its lease (if it died without giving it back) does not stop the teardown
if [[ ${KEEP:-0} != 1 ]]; then trap 'stop_child; FORCE=1 "$HERE/lab.sh" down' EXIT; else trap stop_child EXIT; fi
sweep() { "$EB" sweep "$@" & child=$!; wait "$child"; }
step "start the lab (1 control plane + 2 workers) and serve the mirror"
timed lab_up "$HERE/lab.sh" up 3
"$HERE/mirror.sh" serve 10.77.0.1
if [[ ${LAB_ONLY:-0} == 1 ]]; then
  step "the lab is up with its mirror (LAB_ONLY=1: no sweep; make lab-local-down stops it)"
  exit 0
fi
step "the sweep on the lab, through the ssh substrate"
rc=0
t0=$SECONDS
export EDGEBENCH_KNOWN_HOSTS=$LAB/known_hosts
sweep "$REPO/workflows/sweep.yaml" -p distribution=kubeadm -p "cnis=$CNIS" -p "repetitions=$REPS" \
  -p target=lab-local -p "sweep-id=$SWEEP_ID" --inventory "$LAB/inventory.yaml" --ssh-key "$LAB/id_ed25519" \
  --artifact-source http://10.77.0.1:8089 ${SWEEP_ARGS:-} || rc=$?
T[sweep_lab]=$((SECONDS - t0))
if [[ ${SKIP_TESTBED:-0} != 1 ]]; then
  step "the same cells on the namespace testbed (emulation)"
  t0=$SECONDS
  sweep "$REPO/workflows/sweep.yaml" --local -p "cnis=$CNIS" -p "repetitions=$REPS" \
    -p "sweep-id=$SWEEP_ID-testbed" || rc=$?
  T[sweep_testbed]=$((SECONDS - t0))
fi
step "warehouse"
timed warehouse "$EB" warehouse || rc=$?
{ echo "{"; for k in "${!T[@]}"; do echo "  \"$k\": ${T[$k]},"; done; echo "  \"total\": $((SECONDS - t_start))"; echo "}"; } > "$REPORT"
step "done (stage times in $REPORT)"
exit $rc
