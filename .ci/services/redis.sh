#!/usr/bin/env bash
# Starts a throwaway Redis server on 127.0.0.1 for the Redis store's tests, and prints the line that points the
# tests at it:
#
#     eval "$(bash .ci/services/redis.sh)"     # sets COSID_TEST_REDIS_URL
#
# The server runs with the settings the store's safety claim needs (appendonly yes, appendfsync always,
# maxmemory-policy noeviction) and no RDB snapshots. Installs Debian's `redis-server` when it is missing (needs
# root). Idempotent: a server already answering on the port is reused. Settings (environment):
#   COSID_REDIS_PORT   TCP port (default 16379)
#   COSID_REDIS_DIR    data folder (default ${TMPDIR:-/tmp}/cosid-redis-$PORT)
# Everything but the final `export` line goes to stderr.
set -euo pipefail

port="${COSID_REDIS_PORT:-16379}"
dir="${COSID_REDIS_DIR:-${TMPDIR:-/tmp}/cosid-redis-$port}"
url="redis://127.0.0.1:$port/0"

log() { echo "redis.sh: $*" >&2; }

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    log "installing redis-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q redis-server >&2 || { apt-get update -q >&2 && apt-get install -y -q redis-server >&2; }
fi

ready() { [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = "PONG" ]; }

if ready; then
    log "reusing the server on 127.0.0.1:$port"
else
    mkdir -p "$dir"
    log "starting on 127.0.0.1:$port ($dir)"
    redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" \
        --appendonly yes --appendfsync always --maxmemory-policy noeviction --save "" \
        --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
    for _ in $(seq 1 100); do
        ready && break
        sleep 0.1
    done
    ready || { log "redis did not answer within 10 s"; tail -n 30 "$dir/redis.log" >&2 || true; exit 1; }
fi

log "ready: $url"
echo "export COSID_TEST_REDIS_URL='$url'"
