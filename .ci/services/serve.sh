#!/usr/bin/env bash
# Starts `cosid serve` (the lease proxy) on 127.0.0.1 in front of an SQLite file of its own, for the bindings' and
# the C library's store tests, which then run through it with the `http://` store, and prints the line that points
# them at it:
#
#     eval "$(bash .ci/services/serve.sh)"     # sets COSID_TEST_HTTP_URL
#
# Uses target/release/cosid (scripts/dist.sh builds it; built here if missing), or COSID_BIN. Unlike the other
# services' servers, a server this script started earlier is stopped and started again: it is the project's own
# code, and the tests must run against the binary just built. Settings (environment):
#   COSID_SERVE_PORT    TCP port (default 18080)
#   COSID_SERVE_DIR     folder of its SQLite file, pid file and log (default ${TMPDIR:-/tmp}/cosid-serve-$PORT)
#   COSID_SERVE_STORE   the store it fronts (default sqlite://$COSID_SERVE_DIR/leases.db)
# Everything but the final `export` line goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

port="${COSID_SERVE_PORT:-18080}"
dir="${COSID_SERVE_DIR:-${TMPDIR:-/tmp}/cosid-serve-$port}"
store="${COSID_SERVE_STORE:-sqlite://$dir/leases.db}"
url="http://127.0.0.1:$port"
# shellcheck source=scripts/release-env.sh
. "$root/scripts/release-env.sh"
bin="${COSID_BIN:-$release_target_dir/release/cosid}"

log() { echo "serve.sh: $*" >&2; }

if [ ! -x "$bin" ]; then
    log "building the cosid command (release, the released stores)"
    release_run cargo build --release -q --locked -p cosid-cli --features cosid-cli/release >&2
    release_link
fi

mkdir -p "$dir"
if [ -f "$dir/serve.pid" ]; then
    old=$(cat "$dir/serve.pid")
    if kill -0 "$old" 2>/dev/null; then
        log "stopping the server this script started earlier (pid $old)"
        kill -TERM "$old" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$old" 2>/dev/null || break
            sleep 0.1
        done
    fi
    rm -f "$dir/serve.pid"
fi

ready() { [ "$(curl -fsS --max-time 2 "$url/readyz" 2>/dev/null)" != "" ]; }

log "starting $("$bin" --version) on 127.0.0.1:$port in front of $store"
# Its own session, so that it outlives the script (and the CI step) that started it, as the other servers do.
# Every test process of every language is one client here (127.0.0.1, no token), so the per-client rate limit and
# connection cap would throttle the test suites against each other rather than protect anyone: they are off, and
# tested on their own in cli/tests/serve_limits.rs.
env -u COSID_STORE setsid "$bin" serve --store "$store" --listen "127.0.0.1:$port" \
    --rate-limit 0 --max-connections-per-client 0 \
    >"$dir/serve.log" 2>&1 </dev/null &
echo $! >"$dir/serve.pid"
for _ in $(seq 1 100); do
    ready && break
    sleep 0.1
done
ready || { log "cosid serve did not answer within 10 s"; tail -n 30 "$dir/serve.log" >&2 || true; exit 1; }

log "ready: $url"
echo "export COSID_TEST_HTTP_URL='$url'"
