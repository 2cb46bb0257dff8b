#!/usr/bin/env bash
# Cilium for the lab's mirror (binaries, agent root, images, helm, chart repository), each step cached:
#   cilium.sh [build] | bins | rootfs | images | chart | helm
# The entry point of cilium_image.py beside it; `cilium.sh --help` says what it does. mirror.sh build calls it.
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-$HERE/../../.venv/bin/python}
[[ -x $PY ]] || PY=python3
exec "$PY" "$HERE/cilium_image.py" "$@"
