#!/usr/bin/env bash
# The local lab's nodes (namespaces of this kernel, sshd, a Pi-format inventory) and the hook to its VM nodes:
#   lab.sh up [N] | down | status | exec NODE CMD | leftovers | env | vm CMD ...
# The entry point of nodes.py beside it (stdlib only: root's system Python); `lab.sh --help` says what it does.
# EDGEBENCH_LAB_SH: this script's name as called, for nodes.py's messages ("FORCE=1 $0 down").
HERE=$(cd "$(dirname "$0")" && pwd)
EDGEBENCH_LAB_SH=$0 exec python3 "$HERE/nodes.py" "$@"
