#!/usr/bin/env bash
# Start/stop the local MinIO that `make sweep` and `make warehouse` use (data under .edgebench/minio).
# Usage: scripts/minio.sh start|stop|status
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${EDGEBENCH_TOOLS:-$HOME/.local/share/edgebench/tools}
STATE=${EDGEBENCH_STATE:-$PWD/.edgebench}
ENDPOINT=${EDGEBENCH_S3_ENDPOINT:-http://127.0.0.1:9000}
ADDR=${ENDPOINT#*://}
export MINIO_ROOT_USER=${EDGEBENCH_S3_ACCESS_KEY:-edgebench}
export MINIO_ROOT_PASSWORD=${EDGEBENCH_S3_SECRET_KEY:-edgebench-secret}
BUCKET=${EDGEBENCH_BUCKET:-edgebench}
PIDFILE=$STATE/minio.pid

live() { curl -fsS -o /dev/null --max-time 2 "$ENDPOINT/minio/health/live" 2>/dev/null; }

case "${1:-}" in
  start)
    mkdir -p "$STATE/minio"
    if live; then
      echo "minio: already answering at $ENDPOINT"
    else
      echo "minio: starting at $ENDPOINT (data in $STATE/minio, log in $STATE/minio.log)"
      nohup "$TOOLS/minio" server "$STATE/minio" --address "$ADDR" --console-address "${ADDR%:*}:9001" \
        >"$STATE/minio.log" 2>&1 &
      echo $! >"$PIDFILE"
      for _ in $(seq 1 60); do live && break; sleep 0.5; done
      live || { echo "minio: did not come up; see $STATE/minio.log" >&2; tail -n 20 "$STATE/minio.log" >&2; exit 1; }
    fi
    MC_CONFIG_DIR="$STATE/mc" "$TOOLS/mc" alias set edgebench-local "$ENDPOINT" "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" >/dev/null
    MC_CONFIG_DIR="$STATE/mc" "$TOOLS/mc" mb --ignore-existing "edgebench-local/$BUCKET" >/dev/null
    echo "minio: bucket $BUCKET ready"
    ;;
  stop)
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      kill "$(cat "$PIDFILE")" && echo "minio: stopped"
    fi
    rm -f "$PIDFILE"
    ;;
  status)
    if live; then echo "minio: up at $ENDPOINT"; else echo "minio: down"; exit 1; fi
    ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
