#!/usr/bin/env bash
# The lab's air-gapped artifact mirror: build | index | serve [ADDR] | serve-stop | prove | --print.
# The entry point of mirror.py beside it (PY: the repository's venv, for PyYAML); `mirror.sh --help` says what it does.
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-$HERE/../../.venv/bin/python}
[[ -x $PY ]] || PY=python3
exec "$PY" "$HERE/mirror.py" "$@"
