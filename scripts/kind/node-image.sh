#!/usr/bin/env bash
# kind's node image for Kubernetes v1.33.4, built here offline with umoci and skopeo.
# The entry point of scripts/kind/node_image.py (the logic, stdlib Python 3); `node-image.sh --help` says what it does.
exec "${EDGEBENCH_PYTHON:-python3}" "$(dirname "$0")/node_image.py" "$@"
