#!/usr/bin/env bash
# The chaos profile for CI (about 6 minutes after the build): cosid against a real Redis under faults, then the
# negative control that shows the checker can see lost writes. See docs/reliability.md.
#
#     bash .ci/chaos.sh
#
# 1. the harness's unit tests (the checker's planted-fault self-test among them);
# 2. `cosid-chaos run --profile ci`: 3 minutes, 4 workers on 2 slots, Redis with appendfsync always, a fault every
#    2 to 6 s; fails on any duplicate, any id outside a window granted to its holder, any overlapping windows, any
#    store-regression alarm, or a failed sanity check of the checker;
# 3. `cosid-chaos run --profile ci --negative`: 5 rounds of 30 s with appendfsync everysec and an older copy of
#    Redis' data restored while the workers run; fails unless at least one round is caught (duplicates or the
#    store-regression alarm), and prints the detection rate.
#
# Installs Debian's `redis-server` when it is missing (needs root); the harness starts its own servers on free
# ports of 127.0.0.1, in temporary folders. Settings (environment):
#   COSID_CHAOS_SEED   replay the nemesis' decisions of an earlier run (each run prints its seed)
#   COSID_CHAOS_OUT    where the run folders go (default ${TMPDIR:-/tmp}/cosid-chaos)
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

out="${COSID_CHAOS_OUT:-${TMPDIR:-/tmp}/cosid-chaos}"
mkdir -p "$out"

log "building the harness (release)"
cargo build --release -p cosid-chaos
cargo test --release -p cosid-chaos

bin=target/release/cosid-chaos
status=0

log "positive run: cosid-chaos run --profile ci"
if "$bin" run --profile ci --out "$out"; then
    log "positive run: valid"
else
    code=$?
    log "positive run FAILED (exit $code): see the report above and the run folder it names"
    status=1
fi

log "negative control: cosid-chaos run --profile ci --negative"
if "$bin" run --profile ci --negative --out "$out"; then
    log "negative control: the checker caught the lost writes"
else
    code=$?
    log "negative control FAILED (exit $code): the checker did not show that it can see lost writes"
    status=1
fi

exit "$status"
