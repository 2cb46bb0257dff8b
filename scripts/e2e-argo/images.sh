#!/usr/bin/env bash
# The kind management cluster's OCI images (Argo, MinIO, mc, NATS, Argo Events, the runner), built without Docker
# and cached. The entry point of images.py beside it (PY: the repository's venv, else python3 >= 3.11 for tomllib);
# `images.sh --help` says what it does.
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-$HERE/../../.venv/bin/python}
[[ -x $PY ]] || PY=python3
exec "$PY" "$HERE/images.py" "$@"
