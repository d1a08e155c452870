#!/usr/bin/env bash
# Starts a throwaway FerretDB 1.x (a server that speaks MongoDB's wire protocol) on 127.0.0.1 for the MongoDB store's
# tests, over the PostgreSQL of .ci/services/postgres.sh (started first when COSID_TEST_POSTGRES_URL is unset; its
# documents go to their own schema, named after the MongoDB database), and prints the lines that point the tests at
# it:
#
#     eval "$(bash .ci/services/ferretdb.sh)"     # sets COSID_TEST_MONGODB_URL and COSID_FERRETDB_BIN
#
# No MongoDB server is packaged for Debian; FerretDB is a Go program, built here from the Go module proxy (about two
# minutes the first time, then reused). What a test on it proves, and what it does not for a MongoDB replica set, is
# in docs/stores.md. Idempotent: a server this script already started is reused.
# Settings (environment):
#   COSID_FERRETDB_PORT     port (default 12718, so a MongoDB on the usual port is left alone)
#   COSID_FERRETDB_DIR      state and log folder (default ${TMPDIR:-/tmp}/cosid-ferretdb-$PORT)
#   COSID_FERRETDB_VERSION  the FerretDB module version to build (default v1.24.2)
#   COSID_TOOLS_DIR         where the binary is kept between runs (default ~/.cache/cosid-tools)
# Everything but the final `export` lines goes to stderr.
set -euo pipefail

port="${COSID_FERRETDB_PORT:-12718}"
dir="${COSID_FERRETDB_DIR:-${TMPDIR:-/tmp}/cosid-ferretdb-$port}"
version="${COSID_FERRETDB_VERSION:-v1.24.2}"
tools="${COSID_TOOLS_DIR:-$HOME/.cache/cosid-tools}"
bin="$tools/ferretdb-$version"
url="mongodb://127.0.0.1:$port/cosid_test"

log() { echo "ferretdb.sh: $*" >&2; }

if [ ! -x "$bin" ]; then
    command -v go >/dev/null 2>&1 || { log "needs Go (to build FerretDB from the Go module proxy)"; exit 1; }
    log "building FerretDB $version from the Go module proxy"
    export GOFLAGS=-mod=mod
    src=$(go mod download -json "github.com/FerretDB/FerretDB@$version" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
    [ -d "$src" ] || { log "cannot find the module's source after download"; exit 1; }
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    cp -r "$src" "$work/ferretdb"
    chmod -R u+w "$work/ferretdb"
    # The module zip leaves out the version file its build reads (made by `git describe` in their repository).
    echo "$version" >"$work/ferretdb/build/version/version.txt"
    mkdir -p "$tools"
    (cd "$work/ferretdb" && go build -trimpath -o "$bin.tmp" ./cmd/ferretdb) >&2
    mv "$bin.tmp" "$bin"
fi

# `ping` over the wire protocol would need a client; a listening port that the process behind it owns will do.
serving() {
    [ -f "$dir/ferretdb.pid" ] && kill -0 "$(cat "$dir/ferretdb.pid")" 2>/dev/null &&
        timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null
}

if serving; then
    log "reusing the server on 127.0.0.1:$port ($dir)"
else
    if [ -z "${COSID_TEST_POSTGRES_URL:-}" ]; then
        eval "$(bash "$(dirname "$0")/postgres.sh")"
    fi
    mkdir -p "$dir"
    # A server that ran here before and is gone: the end of its log says why, where a later step would only see a
    # refused connection.
    [ -s "$dir/ferretdb.log" ] && { log "no server answers; the last one here logged:"; tail -n 15 "$dir/ferretdb.log" >&2; }
    log "starting FerretDB $version on 127.0.0.1:$port"
    # Over PostgreSQL, FerretDB's main backend, which also evaluates equality filters in SQL (its SQLite backend
    # filters every document of a collection in Go). Telemetry off (no network here); the debug listener on a
    # free port, out of the way.
    # Its own session (setsid), as `cosid serve` has: no signal meant for the script's process group reaches it.
    echo "---- started $(date -u +%FT%TZ)" >>"$dir/ferretdb.log"
    setsid nohup "$bin" --handler=postgresql --postgresql-url="$COSID_TEST_POSTGRES_URL" --listen-addr="127.0.0.1:$port" \
        --debug-addr=127.0.0.1:0 --telemetry=disable --log-level=warn --state-dir="$dir" \
        >>"$dir/ferretdb.log" 2>&1 </dev/null &
    echo $! >"$dir/ferretdb.pid"
    for _ in $(seq 1 100); do
        serving && break
        sleep 0.1
    done
    serving || { log "FerretDB did not listen within 10 s"; tail -n 30 "$dir/ferretdb.log" >&2 || true; exit 1; }
fi

log "ready: $url"
echo "export COSID_TEST_MONGODB_URL='$url'"
echo "export COSID_FERRETDB_BIN='$bin'"
