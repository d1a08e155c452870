#!/usr/bin/env bash
# Starts a throwaway standalone ZooKeeper (Debian's `zookeeperd`, 3.8) on 127.0.0.1 for the ZooKeeper store's
# tests, and prints the line that points the tests at it:
#
#     eval "$(bash .ci/services/zookeeper.sh)"     # sets COSID_TEST_ZOOKEEPER_URL
#
# Installs Debian's `zookeeper` when it is missing (needs root). The server runs with a configuration and data
# folder of its own, not the system service's (which this script neither starts nor changes). Idempotent: a server
# this script already started is reused.
# Settings (environment):
#   COSID_ZOOKEEPER_PORT  client port (default 12181)
#   COSID_ZOOKEEPER_DIR   configuration and data folder (default ${TMPDIR:-/tmp}/cosid-zookeeper-$PORT)
# Everything but the final `export` line goes to stderr.
set -euo pipefail

port="${COSID_ZOOKEEPER_PORT:-12181}"
dir="${COSID_ZOOKEEPER_DIR:-${TMPDIR:-/tmp}/cosid-zookeeper-$port}"
url="zookeeper://127.0.0.1:$port"
jar=/usr/share/java/zookeeper.jar

log() { echo "zookeeper.sh: $*" >&2; }

if [ ! -f "$jar" ] || ! command -v java >/dev/null 2>&1; then
    log "installing zookeeper"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends zookeeper >&2 \
        || { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends zookeeper >&2; }
fi

# `srvr` answers with the server's mode once it serves requests (not merely once it listens).
serving() {
    local reply
    reply=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf srvr >&3 && cat <&3" 2>/dev/null) || return 1
    [[ "$reply" == *"Mode: "* ]]
}

if serving; then
    log "reusing the server on 127.0.0.1:$port ($dir)"
else
    mkdir -p "$dir/conf" "$dir/data"
    # forceSync stays on (the default): the store's safety claim needs every committed write on disk.
    cat >"$dir/conf/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok
autopurge.purgeInterval=1
CFG
    cat >"$dir/conf/log4j.properties" <<'CFG'
log4j.rootLogger=WARN, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p %c{1}: %m%n
CFG
    [ -s "$dir/zookeeper.log" ] && { log "no server answers; the last one here logged:"; tail -n 15 "$dir/zookeeper.log" >&2; }
    log "starting on 127.0.0.1:$port"
    # A small heap and the client compiler: the tests need little, and this keeps startup to a second or two.
    echo "---- started $(date -u +%FT%TZ)" >>"$dir/zookeeper.log"
    setsid nohup java -Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dzookeeper.log.dir="$dir" -Dlog4j.configuration="file:$dir/conf/log4j.properties" \
        -cp "$dir/conf:$jar" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/conf/zoo.cfg" \
        >>"$dir/zookeeper.log" 2>&1 </dev/null &
    echo $! >"$dir/zookeeper.pid"
    for _ in $(seq 1 300); do
        serving && break
        sleep 0.1
    done
    serving || { log "ZooKeeper did not answer within 30 s"; tail -n 30 "$dir/zookeeper.log" >&2 || true; exit 1; }
fi

log "ready: $url"
echo "export COSID_TEST_ZOOKEEPER_URL='$url'"
