#!/usr/bin/env bash
# Starts a throwaway MariaDB server on 127.0.0.1 for the MySQL store's tests, and prints the line that points the
# tests at it:
#
#     eval "$(bash .ci/services/mariadb.sh)"     # sets COSID_TEST_MYSQL_URL
#
# Installs Debian's `mariadb-server` when it is missing (needs root). Idempotent: a server this script already
# started is reused. Settings (environment):
#   COSID_MARIADB_PORT  TCP port (default 13306)
#   COSID_MARIADB_DIR   data and socket folder (default ${TMPDIR:-/tmp}/cosid-mariadb-$PORT)
# Everything but the final `export` line goes to stderr.
set -euo pipefail

port="${COSID_MARIADB_PORT:-13306}"
dir="${COSID_MARIADB_DIR:-${TMPDIR:-/tmp}/cosid-mariadb-$port}"
sock="$dir/mysqld.sock"
url="mysql://cosid:cosid@127.0.0.1:$port/cosid_test"

log() { echo "mariadb.sh: $*" >&2; }

if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
    log "installing mariadb-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q mariadb-server >&2 || { apt-get update -q >&2 && apt-get install -y -q mariadb-server >&2; }
fi
PATH="$PATH:/usr/sbin"

ping() { mariadb-admin --no-defaults --socket="$sock" -uroot ping >/dev/null 2>&1; }

if ping; then
    log "reusing the server on port $port ($dir)"
else
    mkdir -p "$dir"
    user="$(id -un)"
    if [ ! -d "$dir/data/mysql" ]; then
        log "initialising $dir/data"
        mariadb-install-db --no-defaults --datadir="$dir/data" --user="$user" \
            --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 \
            || { cat "$dir/install.log" >&2; exit 1; }
    fi
    log "starting on 127.0.0.1:$port"
    # Durability stays at the defaults the safety claim needs (innodb_flush_log_at_trx_commit = 1).
    [ -s "$dir/error.log" ] && { log "no server answers; the last one here logged:"; tail -n 15 "$dir/error.log" >&2; }
    setsid nohup mariadbd --no-defaults --datadir="$dir/data" --socket="$sock" --pid-file="$dir/mysqld.pid" \
        --port="$port" --bind-address=127.0.0.1 --skip-name-resolve --user="$user" \
        --log-error="$dir/error.log" --default-storage-engine=InnoDB >/dev/null 2>&1 </dev/null &
    for _ in $(seq 1 300); do
        ping && break
        sleep 0.1
    done
    ping || { log "the server did not answer within 30 s"; tail -n 30 "$dir/error.log" >&2 || true; exit 1; }
fi

mariadb --no-defaults --socket="$sock" -uroot <<'SQL'
CREATE DATABASE IF NOT EXISTS cosid_test;
CREATE USER IF NOT EXISTS 'cosid'@'127.0.0.1' IDENTIFIED BY 'cosid';
CREATE USER IF NOT EXISTS 'cosid'@'localhost' IDENTIFIED BY 'cosid';
GRANT ALL PRIVILEGES ON cosid_test.* TO 'cosid'@'127.0.0.1';
GRANT ALL PRIVILEGES ON cosid_test.* TO 'cosid'@'localhost';
SQL

log "ready: $url"
echo "export COSID_TEST_MYSQL_URL='$url'"
