#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on 127.0.0.1 for the PostgreSQL store's tests, and prints the line that
# points the tests at it:
#
#     eval "$(bash .ci/services/postgres.sh)"     # sets COSID_TEST_POSTGRES_URL
#
# Installs Debian's `postgresql` when it is missing (needs root). The cluster lives in a temporary folder, owned by
# the `postgres` user when run as root (the server refuses to run as root); the test role `cosid` logs in with a
# password over TCP. Idempotent: a server already answering on the port is reused, a stopped one is started again.
# Settings (environment):
#   COSID_POSTGRES_PORT   TCP port (default 15432)
#   COSID_POSTGRES_DIR    cluster folder (default ${TMPDIR:-/tmp}/cosid-postgres-$PORT)
# Everything but the final `export` line goes to stderr.
set -euo pipefail

port="${COSID_POSTGRES_PORT:-15432}"
dir="${COSID_POSTGRES_DIR:-${TMPDIR:-/tmp}/cosid-postgres-$port}"
user=cosid
password=cosid
database=cosid_test
url="postgres://$user:$password@127.0.0.1:$port/$database"

log() { echo "postgres.sh: $*" >&2; }

find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
bin="$(find_bin)"
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    log "installing postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q postgresql >&2 || { apt-get update -q >&2 && apt-get install -y -q postgresql >&2; }
    bin="$(find_bin)"
fi

# The server may not run as root: run every server-side command as `postgres` then.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

ready() { "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" >/dev/null 2>&1; }

if ready; then
    log "reusing the server on 127.0.0.1:$port"
else
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    chmod 700 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        log "creating a cluster in $dir/data"
        as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
            -E UTF8 --locale=C.UTF-8 >&2
    fi
    log "starting on 127.0.0.1:$port"
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start >&2 \
        || { tail -n 30 "$dir/postgres.log" >&2 || true; exit 1; }
fi

# Create the test role and database once (over the Unix socket, as the superuser). Skipped when reusing a server
# this script did not start (no socket in $dir): the URL's role must exist there already.
if [ -S "$dir/.s.PGSQL.$port" ]; then
    psql_admin() { as_owner "$bin/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -qtA "$@"; }
    if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$user'")" != 1 ]; then
        psql_admin -c "CREATE ROLE $user LOGIN PASSWORD '$password'" >&2
    fi
    if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$database'")" != 1 ]; then
        psql_admin -c "CREATE DATABASE $database OWNER $user" >&2
    fi
fi

log "ready: $url"
echo "export COSID_TEST_POSTGRES_URL='$url'"
