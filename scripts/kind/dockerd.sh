#!/usr/bin/env bash
# A Docker engine of edgebench's own for kind (install, up, down, status, leftovers).
# The entry point of scripts/kind/dockerd.py (the logic, stdlib Python 3); `dockerd.sh --help` says what it does.
exec "${EDGEBENCH_PYTHON:-python3}" "$(dirname "$0")/dockerd.py" "$@"
