#!/usr/bin/env bash
# The Go binaries of the management cluster's images and of the lab's mirror (Kubernetes, Argo Workflows, NATS),
# once, stamped. The entry point of binaries.py beside it; `build.sh --help` says what it does.
#   build.sh [build|--k8s|--print]
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-$HERE/../../.venv/bin/python}
[[ -x $PY ]] || PY=python3
exec "$PY" "$HERE/binaries.py" "$@"
