#!/usr/bin/env bash
# The chaos profile for CI (about 14 minutes after the build): cosid against a real Redis, then one SQLite file
# shared by 8 processes, then a private PostgreSQL, then a private 3-member etcd cluster, then a private 3-server
# ZooKeeper ensemble, then 3 `cosid serve` replicas in front of one SQLite file, each under faults, each followed by
# the negative control that shows the checker can see lost writes. See docs/reliability.md.
#
#     bash .ci/chaos.sh
#
# 1. (the harness's unit tests, the checker's planted-fault self-test among them: scripts/test-all.sh's Rust
#    step runs them on the debug build);
# 2. `cosid-chaos run --profile ci`: 60 s, 4 workers on 2 slots, Redis with appendfsync always, a fault every
#    2 to 6 s; fails on any duplicate, any id outside a window granted to its holder, any overlapping windows, any
#    store-regression alarm, or a failed sanity check of the checker;
# 3. `cosid-chaos run --profile ci --negative`: up to 4 rounds of 30 s with appendfsync everysec and an older copy of
#    Redis' data restored while the workers run; fails unless at least one round is caught (duplicates or the
#    store-regression alarm), and prints the detection rate;
# 4. `cosid-chaos run --store sqlite --profile ci`: 45 s, 8 workers on 4 slots of one SQLite file, SIGKILL and
#    SIGSTOP of workers, a worker restarted through a hard link to the file, a fresh file renamed over it;
# 5. `cosid-chaos run --store sqlite --profile ci --negative`: up to 2 rounds of 30 s with an older copy of the file
#    written back in place while the workers run;
# 6. `cosid-chaos run --store postgres --profile ci`: 45 s, 4 workers on 2 slots, a private server (initdb in the
#    run folder, free port), killed with -9 and started again, stopped with SIGSTOP, its connections cut;
# 7. `cosid-chaos run --store postgres --profile ci --negative`: up to 2 rounds of 30 s, the server crashed and started on
#    an older copy of its data folder;
# 8. `cosid-chaos run --store etcd --profile ci`: 45 s, 4 workers on 2 slots, a private 3-member cluster on
#    127.0.0.2-4 (free ports), its leader killed with -9 and restarted or stopped with SIGSTOP, a member cut off by
#    an nftables rule on its address, every client connection cut (`ss -K`);
# 9. `cosid-chaos run --store etcd --profile ci --negative`: up to 2 rounds of 30 s, the whole cluster crashed and started
#    on older copies of its three data folders;
# 10. `cosid-chaos run --store zookeeper --profile ci`: 45 s, 4 workers on 2 slots, a private 3-server ensemble on
#    127.0.0.2-4 (free client, quorum and election ports; tickTime 500 ms, forceSync on), its leader killed with -9
#    and restarted or stopped with SIGSTOP, a server cut off by an nftables rule on its address, every client
#    connection cut (`ss -K`);
# 11. `cosid-chaos run --store zookeeper --profile ci --negative`: up to 2 rounds of 30 s, the whole ensemble crashed and
#    started on older copies of its three data folders (snapshots, transaction logs, myid);
# 12. `cosid-chaos run --store serve --profile ci`: 45 s, 4 workers on 2 slots on the `http://` store, through a
#    round-robin TCP proxy, in front of 3 `cosid serve` replicas (free ports) on one SQLite file; a replica killed
#    with -9 and started again on its port, a replica stopped with SIGSTOP, every replica restarted, every
#    connection through the proxy cut, and the worker faults (kill, stop, clock shifts);
# 13. `cosid-chaos run --store serve --profile ci --negative`: up to 2 rounds of 30 s, an older copy of the SQLite file
#    written back in place under the replicas while the workers run.
# Each run prints how long it took. The long profiles (`--profile long`, 30 minutes each) are not run here.
#
# Installs Debian's `redis-server`, `postgresql`, `etcd-server`, `zookeeper` (with Java) and `nftables` when they
# are missing (needs root); the harness starts its own servers on free ports of 127.0.0.1 (etcd, ZooKeeper:
# 127.0.0.2 to 127.0.0.4), in temporary folders (PostgreSQL as the `postgres` user, each etcd member and each
# ZooKeeper server under a uid of its own, when run as root). Without `nft` (or root) an etcd or ZooKeeper partition
# is emulated by SIGSTOP of the member. Settings (environment):
#   COSID_CHAOS_SEED   replay the nemesis' decisions of an earlier run (each run prints its seed)
#   COSID_CHAOS_OUT    where the run folders go (default ${TMPDIR:-/tmp}/cosid-chaos)
#   COSID_BIN          the `cosid` binary the serve runs start (default target/release/cosid, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

log() { echo "chaos.sh: $*" >&2; }

if ! command -v redis-server >/dev/null 2>&1; then
    log "installing redis-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q redis-server >&2 || { apt-get update -q >&2 && apt-get install -y -q redis-server >&2; }
fi
redis-server --version >&2
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    log "installing postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q postgresql >&2 || { apt-get update -q >&2 && apt-get install -y -q postgresql >&2; }
fi
for tool in etcd:etcd-server nft:nftables ss:iproute2; do
    if ! command -v "${tool%%:*}" >/dev/null 2>&1; then
        log "installing ${tool#*:}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q "${tool#*:}" >&2 || { apt-get update -q >&2 && apt-get install -y -q "${tool#*:}" >&2; } ||
            log "cannot install ${tool#*:}"
    fi
done
etcd --version 2>&1 | sed -n 1p >&2  # sed reads it all: `head` could make etcd die of SIGPIPE under pipefail
if [ ! -f /usr/share/java/zookeeper.jar ] || ! command -v java >/dev/null 2>&1; then
    log "installing zookeeper"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends zookeeper >&2 ||
        { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends zookeeper >&2; } ||
        log "cannot install zookeeper"
fi

out="${COSID_CHAOS_OUT:-${TMPDIR:-/tmp}/cosid-chaos}"
mkdir -p "$out"

log "building the harness (release)"
# In the environment of scripts/dist.sh's build (glibc 2.17, Zig; scripts/release-env.sh) when it ran in this target
# folder: the core and the dependencies it compiled are reused, as a native build reuses a native one.
root=$PWD
# shellcheck source=scripts/release-env.sh
. scripts/release-env.sh
release_run cargo build --release -p cosid-chaos
# Its unit tests run in scripts/test-all.sh's Rust step (`cargo test -p cosid-chaos`), on the debug build.

bin=$release_dir/cosid-chaos
status=0

# The serve runs start `cosid serve` replicas: scripts/dist.sh's build, else one made here.
COSID_BIN="${COSID_BIN:-$release_target_dir/release/cosid}"
if [ ! -x "$COSID_BIN" ]; then
    log "building cosid (release) for the serve runs"
    release_run cargo build --release -q -p cosid-cli
    release_link
fi
export COSID_BIN

for store in redis sqlite postgres etcd zookeeper serve; do
    started=$SECONDS
    log "$store positive run: cosid-chaos run --store $store --profile ci"
    if "$bin" run --store "$store" --profile ci --out "$out"; then
        log "$store positive run: valid ($((SECONDS - started)) s)"
    else
        code=$?
        log "$store positive run FAILED (exit $code, $((SECONDS - started)) s): see the report above and the run folder it names"
        status=1
    fi

    started=$SECONDS
    log "$store negative control: cosid-chaos run --store $store --profile ci --negative"
    if "$bin" run --store "$store" --profile ci --negative --out "$out"; then
        log "$store negative control: the checker caught the lost writes ($((SECONDS - started)) s)"
    else
        code=$?
        log "$store negative control FAILED (exit $code, $((SECONDS - started)) s): the checker did not show that it can see lost writes"
        status=1
    fi
done

exit "$status"
