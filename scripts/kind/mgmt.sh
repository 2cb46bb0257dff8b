#!/usr/bin/env bash
# The kind management cluster offline: make up, down, submit, e2e-argo, lab-argo.
# The entry point of scripts/kind/mgmt.py (the logic, stdlib Python 3); `mgmt.sh --help` says what it does.
exec "${EDGEBENCH_PYTHON:-python3}" "$(dirname "$0")/mgmt.py" "$@"
