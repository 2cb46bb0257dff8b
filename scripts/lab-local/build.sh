#!/usr/bin/env bash
# The lab's Go builds (etcd, CoreDNS, flanneld, kube-router, the CNI plugins, fortio, kubeadm; a foreign ARCH's
# Kubernetes), once, stamped. The entry point of labbuild.py beside it; `build.sh --help` says what it does.
#   build.sh [build|--print]
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-$HERE/../../.venv/bin/python}
[[ -x $PY ]] || PY=python3
exec "$PY" "$HERE/labbuild.py" "$@"
