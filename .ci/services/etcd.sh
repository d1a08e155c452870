#!/usr/bin/env bash
# Starts a throwaway one-member etcd v3 cluster on 127.0.0.1 for the etcd store's tests, and prints the line that
# points the tests at it:
#
#     eval "$(bash .ci/services/etcd.sh)"     # sets COSID_TEST_ETCD_URL
#
# Installs Debian's `etcd-server` and `etcd-client` when they are missing, and `protobuf-compiler`, which the
# `etcd-client` crate needs to build (needs root). Idempotent: a server this script already started is reused.
# Settings (environment):
#   COSID_ETCD_PORT       client port (default 12379); the peer port is the next one
#   COSID_ETCD_DIR        data folder (default ${TMPDIR:-/tmp}/cosid-etcd-$PORT)
# Everything but the final `export` line goes to stderr.
set -euo pipefail

port="${COSID_ETCD_PORT:-12379}"
peer=$((port + 1))
dir="${COSID_ETCD_DIR:-${TMPDIR:-/tmp}/cosid-etcd-$port}"
endpoint="127.0.0.1:$port"
url="etcd://$endpoint"

log() { echo "etcd.sh: $*" >&2; }

missing=()
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${missing[@]}" >&2 || { apt-get update -q >&2 && apt-get install -y -q "${missing[@]}" >&2; }
fi

healthy() { ETCDCTL_API=3 etcdctl --endpoints="$endpoint" --dial-timeout=1s endpoint health >/dev/null 2>&1; }

if healthy; then
    log "reusing the server on $endpoint ($dir)"
else
    mkdir -p "$dir"
    # A server that ran here before and is gone: the end of its log says why, where a later step would only see a
    # refused connection.
    [ -s "$dir/etcd.log" ] && { log "no server answers; the last one here logged:"; tail -n 15 "$dir/etcd.log" >&2; }
    log "starting on $endpoint"
    echo "---- started $(date -u +%FT%TZ)" >>"$dir/etcd.log"
    # No --unsafe-no-fsync: the store's safety claim needs every committed write on disk.
    setsid nohup etcd --name cosid-test --data-dir "$dir/data" \
        --listen-client-urls "http://$endpoint" --advertise-client-urls "http://$endpoint" \
        --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "cosid-test=http://127.0.0.1:$peer" --initial-cluster-state new \
        >>"$dir/etcd.log" 2>&1 </dev/null &
    echo $! >"$dir/etcd.pid"
    for _ in $(seq 1 300); do
        healthy && break
        sleep 0.1
    done
    healthy || { log "etcd did not answer within 30 s"; tail -n 30 "$dir/etcd.log" >&2 || true; exit 1; }
fi

log "ready: $url"
echo "export COSID_TEST_ETCD_URL='$url'"
